package supervisor

import (
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
)

func TestDefaultRestartPolicy(t *testing.T) {
	p := DefaultRestartPolicy
	if p.MaxRestarts != 3 || p.Initial != 500*time.Millisecond || p.StableAfter <= 0 {
		t.Errorf("DefaultRestartPolicy = %+v", p)
	}
	b := p.NewBackOff()
	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, backoff.Stop, backoff.Stop}
	for i, w := range want {
		if got := b.NextBackOff(); got != w {
			t.Errorf("delay %d = %v; want %v", i, got, w)
		}
	}
	// A fresh schedule starts over; so does Reset.
	b2 := p.NewBackOff()
	if got := b2.NextBackOff(); got != 500*time.Millisecond {
		t.Errorf("fresh schedule starts at %v", got)
	}
	b.Reset()
	if got := b.NextBackOff(); got != 500*time.Millisecond {
		t.Errorf("after Reset: %v; want 500ms", got)
	}
}

func TestRestartPolicyCustom(t *testing.T) {
	b := RestartPolicy{MaxRestarts: 5, Initial: 100 * time.Millisecond}.NewBackOff()
	want := []time.Duration{100, 200, 400, 800, 1600}
	for i, w := range want {
		if got := b.NextBackOff(); got != w*time.Millisecond {
			t.Errorf("delay %d = %v; want %v", i, got, w*time.Millisecond)
		}
	}
	if got := b.NextBackOff(); got != backoff.Stop {
		t.Errorf("after 5 restarts: %v; want backoff.Stop", got)
	}
	// Zero restarts: stop at once.
	if got := (RestartPolicy{MaxRestarts: 0, Initial: time.Second}).NewBackOff().NextBackOff(); got != backoff.Stop {
		t.Errorf("MaxRestarts 0: %v; want backoff.Stop", got)
	}
}

// TestRestartPolicyMaxDelay: the delays stop doubling at MaxDelay (30 s by
// default), so a long run of restarts never waits an hour.
func TestRestartPolicyMaxDelay(t *testing.T) {
	b := RestartPolicy{MaxRestarts: 12, Initial: time.Second, MaxDelay: 5 * time.Second}.NewBackOff()
	want := []time.Duration{1, 2, 4, 5, 5, 5}
	for i, w := range want {
		if got := b.NextBackOff(); got != w*time.Second {
			t.Errorf("delay %d = %v; want %v", i, got, w*time.Second)
		}
	}
	b = RestartPolicy{MaxRestarts: 20, Initial: time.Second}.NewBackOff()
	var last time.Duration
	for range 20 {
		last = b.NextBackOff()
	}
	if last != 30*time.Second {
		t.Errorf("the 20th delay without MaxDelay = %v; want the 30 s default cap", last)
	}
}
