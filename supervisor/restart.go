package supervisor

import (
	"time"

	"github.com/cenkalti/backoff/v4"
)

// RestartPolicy says how a crashed child is restarted.
type RestartPolicy struct {
	// MaxRestarts is how many restarts are tried before the destination is
	// marked failed.
	MaxRestarts int
	// Initial is the first delay; each next one doubles it.
	Initial time.Duration
	// StableAfter is how long a child must run for the count to reset.
	StableAfter time.Duration
	// MaxDelay caps the delay between restarts (default 30 s).
	MaxDelay time.Duration
}

// DefaultRestartPolicy is 3 restarts after 0.5 s, 1 s and 2 s.
var DefaultRestartPolicy = RestartPolicy{MaxRestarts: 3, Initial: 500 * time.Millisecond, StableAfter: 30 * time.Second, MaxDelay: 30 * time.Second}

// NewBackOff returns a fresh schedule of restart delays; it answers
// backoff.Stop once the restarts are used up.
func (p RestartPolicy) NewBackOff() backoff.BackOff {
	eb := backoff.NewExponentialBackOff()
	eb.InitialInterval = p.Initial
	eb.Multiplier = 2
	eb.RandomizationFactor = 0
	eb.MaxInterval = p.MaxDelay
	if eb.MaxInterval <= 0 {
		eb.MaxInterval = 30 * time.Second
	}
	eb.MaxElapsedTime = 0
	eb.Reset()
	return backoff.WithMaxRetries(eb, uint64(p.MaxRestarts))
}
