package session

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/stelae-bridge/stelae-bridge/dispatch"
)

// children tracks the per-session dispatchers of an isolated destination.
type children struct {
	// mu guards every field below but closing and stopTimeout.
	mu   sync.Mutex
	live map[*dispatch.Dispatcher]struct{}
	// tools is the last tool catalogue a child reported, kept for the
	// manifest while no child runs.
	tools      []json.RawMessage
	toolsKnown bool
	// restarts counts the restarts of children already closed, logsDropped
	// the log messages they dropped, refused the requests of theirs that
	// went to nobody (by reason).
	restarts, logsDropped uint64
	refused               map[string]uint64
	// stopping counts the children being stopped: a child slow to stop
	// still holds its processes, so it counts against the session cap
	// with the live ones (admitChild). stopped is closed and replaced when
	// one of them is gone (nil while nobody waits).
	stopping int
	stopped  chan struct{}
	// spawns limits how fast new children start (admitChild).
	spawns *rate.Limiter
	// closing counts the dispatchers being closed; Shutdown waits for them.
	closing sync.WaitGroup
	// stopTimeout bounds one child's stop.
	stopTimeout time.Duration
}

// spawnRate is how many children an isolated destination starts per
// second at most, for a cap of max sessions: a burst of twice the cap (20
// at least), then half the cap a second (5 at least). The cap bounds the
// processes; this bounds the churn of a client that makes and drops
// sessions in a loop.
func spawnRate(max int) *rate.Limiter {
	return rate.NewLimiter(rate.Limit(math.Max(5, float64(max)/2)), int(math.Max(20, float64(2*max))))
}

// admitChild lets a new session of an isolated destination start its
// child, or says why not (the caller answers 503 with Retry-After): the
// children alive and being stopped must stay within the session cap (a
// child slow to stop, or a client that makes and drops sessions in a loop,
// must not multiply processes), and children start at most at the spawn
// rate. It waits, within the request's context and at most maxWait, for
// children being stopped to be gone. live counts the new session's.
func (ep *Endpoint) admitChild(ctx context.Context, maxWait time.Duration) (ok bool, why string) {
	k := &ep.kids
	deadline := time.NewTimer(maxWait)
	defer deadline.Stop()
	for {
		k.mu.Lock()
		if len(k.live)+k.stopping <= ep.opts.MaxSessions {
			allowed := k.spawns.Allow()
			k.mu.Unlock()
			if !allowed {
				return false, fmt.Sprintf("destination %q gives each session a child of its own and is starting them faster than %.0f a second; retry shortly", ep.name, float64(k.spawns.Limit()))
			}
			return true, ""
		}
		if k.stopped == nil {
			k.stopped = make(chan struct{})
		}
		stopped, stopping := k.stopped, k.stopping
		k.mu.Unlock()
		select {
		case <-stopped:
		case <-deadline.C:
			return false, fmt.Sprintf("destination %q gives each session a child of its own and has its maximum of %d, %d of them still stopping; retry shortly, or raise MAX_STDIO_CONNECTIONS (-max-sessions)", ep.name, ep.opts.MaxSessions, stopping)
		case <-ctx.Done():
			return false, "the client went away"
		}
	}
}

// dispatcherFor returns the dispatcher a new session is served by: the
// shared one, or a fresh one of its own.
func (ep *Endpoint) dispatcherFor() *dispatch.Dispatcher {
	if ep.perSession == nil {
		return ep.shared
	}
	d := ep.perSession()
	ep.kids.mu.Lock()
	ep.kids.live[d] = struct{}{}
	ep.kids.mu.Unlock()
	return d
}

// closeOwnChild closes a session's own dispatcher in the background; Shutdown
// waits for every such close. The shared dispatcher is closed by its owner.
func (ep *Endpoint) closeOwnChild(d *dispatch.Dispatcher) {
	if ep.perSession == nil {
		return
	}
	ep.kids.mu.Lock()
	if _, ok := ep.kids.live[d]; !ok {
		ep.kids.mu.Unlock()
		return
	}
	delete(ep.kids.live, d)
	if tools, known := d.Tools(); known {
		ep.kids.tools, ep.kids.toolsKnown = tools, true
	}
	ep.kids.stopping++
	ds := d.Status()
	ep.kids.restarts += ds.RestartsTotal
	ep.kids.logsDropped += ds.LogsDropped
	if ep.kids.refused == nil {
		ep.kids.refused = map[string]uint64{}
	}
	for r, n := range ds.Refused {
		ep.kids.refused[r] += n
	}
	ep.kids.closing.Add(1)
	ep.kids.mu.Unlock()
	go func() {
		defer ep.kids.closing.Done()
		ctx, cancel := context.WithTimeout(context.Background(), ep.kids.stopTimeout)
		defer cancel()
		if err := d.Close(ctx); err != nil {
			ep.log.Error("session's child did not stop in time", "error", err)
		}
		ep.kids.mu.Lock()
		ep.kids.stopping--
		if ep.kids.stopped != nil {
			close(ep.kids.stopped)
			ep.kids.stopped = nil
		}
		ep.kids.mu.Unlock()
	}()
}

// waitReleased waits until the children being closed are gone or ctx ends.
func (ep *Endpoint) waitOwnChildren(ctx context.Context) { waitGroup(ctx, &ep.kids.closing) }

// Status reports the destination's state: its shared child's, or for an
// isolated destination a summary of its children (running when any runs).
func (ep *Endpoint) Status() dispatch.Status {
	if ep.users != nil {
		return ep.users.status()
	}
	if ep.perSession == nil {
		return ep.shared.Status()
	}
	ep.kids.mu.Lock()
	defer ep.kids.mu.Unlock()
	st := dispatch.Status{}
	st.State, st.RestartsTotal, st.LogsDropped = dispatch.StateIdle, ep.kids.restarts, ep.kids.logsDropped
	st.Refused = maps.Clone(ep.kids.refused)
	if st.Refused == nil {
		st.Refused = map[string]uint64{}
	}
	for d := range ep.kids.live {
		addChild(&st, d.Status())
	}
	return st
}

// Catalogue returns the destination's tools as clients see them (filtered),
// and whether they are known (a child has run).
func (ep *Endpoint) Catalogue() ([]json.RawMessage, bool) {
	if ep.users != nil {
		return ep.users.catalogue()
	}
	if ep.perSession == nil {
		return ep.shared.Tools()
	}
	ep.kids.mu.Lock()
	defer ep.kids.mu.Unlock()
	for d := range ep.kids.live {
		if tools, known := d.Tools(); known {
			ep.kids.tools, ep.kids.toolsKnown = tools, true
			break
		}
	}
	return ep.kids.tools, ep.kids.toolsKnown
}

// addChild adds one child's status to an endpoint's sum of its children
// (a child per session, or per user): counts add up, the last exit is that
// of the child added last that has one (not necessarily the latest), and
// the endpoint runs when any child runs. st.Refused must be made.
func addChild(st *dispatch.Status, ds dispatch.Status) {
	st.RestartsTotal += ds.RestartsTotal
	st.Restarts += ds.Restarts
	st.LogsDropped += ds.LogsDropped
	for r, n := range ds.Refused {
		st.Refused[r] += n
	}
	if ds.LastExit != "" {
		st.LastExit = ds.LastExit
	}
	if ds.State == dispatch.StateRunning {
		st.State = dispatch.StateRunning
		st.Children++
	}
}
