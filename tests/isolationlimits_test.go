//go:build unix

package tests

// Limits on 'isolation: session' destinations (issue 21): children being stopped count against the
// session cap, past which initialize gets 503; with auth, a client at the cap evicts only its own
// idle sessions.

import (
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

// TestIsolatedChildrenStayWithinTheCap: on an 'isolation: session'
// destination whose server is slow to stop, clients that initialize in a
// loop (and never DELETE) cannot multiply processes (issue 21: eight loops
// drove 292 processes under -max-sessions 10): children being stopped
// count against the session cap, and beyond it initialize gets 503 with
// Retry-After. A client of another destination is served meanwhile.
func TestIsolatedChildrenStayWithinTheCap(t *testing.T) {
	const maxSessions, loops, attackFor = 4, 8, 4 * time.Second
	config := destinationsFile(t, map[string]string{"iso": fakemcp.ModeStubborn, "other": fakemcp.ModeServer},
		map[string]string{"iso": "    isolation: session\n"})
	p := startBinary(t, config, "-max-sessions", strconv.Itoa(maxSessions), "-stop-grace", "400ms")
	other := newClient(t, p.base+"/other/mcp")
	other.initialize()
	pid := p.cmd.Process.Pid
	atRest := len(descendants(pid))

	var peak atomic.Int64
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Add(1)
	go func() {
		defer sampler.Done()
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if n := int64(len(descendants(pid))); n > peak.Load() {
					peak.Store(n)
				}
			}
		}
	}()
	var statuses sync.Map // status → *atomic.Int64
	count := func(status int) {
		v, _ := statuses.LoadOrStore(status, new(atomic.Int64))
		v.(*atomic.Int64).Add(1)
	}
	deadline := time.Now().Add(attackFor)
	var wg sync.WaitGroup
	for range loops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				r, err := request(http.MethodPost, p.base+"/iso/mcp", "", initBody)
				if err != nil {
					count(-1)
					continue
				}
				count(r.status)
				if r.status == http.StatusServiceUnavailable && r.header.Get("Retry-After") == "" {
					count(-2)
				}
			}
		}()
	}
	served := 0
	for time.Now().Before(deadline) {
		if r := other.callTool("1", "echo", map[string]string{"text": "meanwhile"}); r.status == http.StatusOK {
			served++
		}
		time.Sleep(100 * time.Millisecond) // a steady, modest load, not a synchronisation
	}
	wg.Wait()
	close(stop)
	sampler.Wait()
	got := map[int]int64{}
	statuses.Range(func(k, v any) bool { got[k.(int)] = v.(*atomic.Int64).Load(); return true })
	// Each child runs under a reaper: two processes a child.
	bound := int64(atRest + 2*maxSessions + 2)
	t.Logf("%d loops of initialize for %s under -max-sessions %d: answers %v; processes below the bridge peaked at %d (%d at rest, bound %d); the other destination answered %d calls", loops, attackFor, maxSessions, got, peak.Load(), atRest, bound, served)
	if peak.Load() > bound {
		t.Errorf("processes below the bridge peaked at %d; want at most %d (%d sessions' children and their reapers)", peak.Load(), bound, maxSessions)
	}
	if got[-1]+got[-2] > 0 {
		t.Errorf("%d initializes failed without an answer, %d 503s without Retry-After", got[-1], got[-2])
	}
	if got[http.StatusOK] == 0 || served == 0 {
		t.Errorf("%d sessions started, %d calls of another destination served; want both", got[http.StatusOK], served)
	}
}

// TestAtTheCapAClientEvictsOnlyItsOwn: with auth, a token's initialize at
// the session cap evicts only that token's own idle sessions (issue 21:
// anyone with a token could end everyone else's).
func TestAtTheCapAClientEvictsOnlyItsOwn(t *testing.T) {
	t.Setenv("STELAE_AUTH_TOKENS", "token-of-alice,token-of-bob")
	p := startBinary(t, fakeDestinations(t, map[string]string{"fake": fakemcp.ModeServer}), "-max-sessions", "2")
	url := p.base + "/fake/mcp"
	as := func(token string) *client {
		c := newClient(t, url)
		c.http = &http.Client{Timeout: 30 * time.Second, Transport: authTransport{token: token}}
		return c
	}
	a1, a2 := as("token-of-alice"), as("token-of-alice")
	a1.initialize()
	a2.initialize()
	b1 := as("token-of-bob")
	if r := b1.post(initBody); r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" {
		t.Errorf("bob's initialize with alice's two idle sessions at the cap: %d %s; want 503 with Retry-After", r.status, r.body)
	}
	for i, c := range []*client{a1, a2} {
		if r := c.callTool("1", "echo", map[string]string{"text": "mine"}); r.status != http.StatusOK {
			t.Errorf("alice's session %d after bob's initialize: %d %s", i+1, r.status, r.body)
		}
	}
	// Alice may replace her own.
	a3 := as("token-of-alice")
	if r := a3.post(initBody); r.status != http.StatusOK {
		t.Errorf("alice's third initialize: %d %s; want her least recently used session evicted", r.status, r.body)
	}
}

// authTransport adds a bearer token to every request.
type authTransport struct{ token string }

func (a authTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+a.token)
	return http.DefaultTransport.RoundTrip(r)
}
