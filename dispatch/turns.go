package dispatch

import (
	"fmt"
	"time"

	"github.com/stelae-bridge/stelae-bridge/jsonrpc"
	"github.com/stelae-bridge/stelae-bridge/supervisor"
)

// Interactive destinations. A child that asks its clients things
// (sampling, elicitation, roots) during calls has its requests routed only
// while every client call in flight belongs to one user (attribution.go);
// otherwise the bridge cannot know whose they are, and refuses them. An
// interactive destination arranges that calls which may ask run alone: such
// a call waits until no other client call is in flight, and while it runs
// the other calls wait, so every request and log line the child sends
// meanwhile is its own.
//
//   - Options.Interactive: every client call runs alone (calls are served
//     one at a time).
//   - Options.InteractiveTool: the calls of the tools it names run alone;
//     every other call runs together with the others as usual, but not
//     beside one of those. A tool that asks without being named is still
//     never misrouted: while calls of several users are in flight its
//     requests are refused.
//
// A call that ran alone and was abandoned (cancelled, timed out, its
// session ended) keeps the child until the child answers it or
// abandonGrace passes (abandoned.go): a child that has not read the
// cancellation yet may still ask on its behalf. Once a call that runs
// alone waits, calls that would run together wait behind it, so it is
// not starved. The bridge's own calls (the tool catalogue's fetch) take no
// turn.

// turn is the kind of turn a call takes.
type turn uint8

const (
	noTurn   turn = iota
	together      // beside any other call that runs together
	alone         // with no other client call in flight
)

// turns is a destination's schedule of client calls. It is guarded by
// d.pmu, with the abandoned calls that still hold their turns.
type turns struct {
	alone    bool // a call, or an abandoned one, runs alone
	together int  // calls (and abandoned ones) running together
	// aloneWaiting counts the calls waiting to run alone: calls that
	// would run together wait behind them. waiting counts every call
	// waiting for a turn.
	aloneWaiting int
	waiting      int
	// changed is closed when a turn is given back or a wait is given up
	// while calls wait; nil while none waits.
	changed chan struct{}
}

// take takes a turn of kind k, if it is free now.
func (t *turns) take(k turn) bool {
	switch {
	case k == alone && !t.alone && t.together == 0:
		t.alone = true
	case k == together && !t.alone && t.aloneWaiting == 0:
		t.together++
	default:
		return false
	}
	return true
}

// give gives back a turn of kind k (noTurn: nothing).
func (t *turns) give(k turn) {
	switch k {
	case alone:
		t.alone = false
	case together:
		t.together--
	default:
		return
	}
	t.wake()
}

// wake wakes the calls waiting for a turn.
func (t *turns) wake() {
	if t.changed != nil {
		close(t.changed)
		t.changed = nil
	}
}

// waitChan is closed at the next change of the turns.
func (t *turns) waitChan() <-chan struct{} {
	if t.changed == nil {
		t.changed = make(chan struct{})
	}
	return t.changed
}

// turnFor is the turn a client's request m takes.
func (d *Dispatcher) turnFor(m *jsonrpc.Message) turn {
	switch {
	case d.opts.Interactive:
		return alone
	case d.opts.InteractiveTool == nil:
		return noTurn
	case m.Method == "tools/call" && d.opts.InteractiveTool(jsonrpc.String(jsonrpc.Member(m.Params, "name"))):
		return alone
	}
	return together
}

// hold takes the turn k for a client call, waiting for the calls in its
// way (and for abandoned calls to be answered or to expire), within the
// call's own timeout and context. It reports false, with the call
// finished, when the wait ended first.
func (call *Call) hold(k turn) bool {
	d := call.d
	if k == noTurn || call.sess == nil || call.turn != noTurn {
		return true
	}
	waiting := false // counted in aloneWaiting
	var expiry *time.Timer
	defer func() {
		if expiry != nil {
			expiry.Stop()
		}
	}()
	for {
		d.pmu.Lock()
		next := d.expireAbandoned(time.Now())
		if d.turns.take(k) {
			if waiting {
				d.turns.waiting--
				if k == alone {
					d.turns.aloneWaiting--
				}
			}
			call.turn = k
			d.pmu.Unlock()
			return true
		}
		if !waiting {
			waiting = true
			d.turns.waiting++
			if k == alone {
				d.turns.aloneWaiting++
			}
		}
		changed := d.turns.waitChan()
		d.pmu.Unlock()
		var expired <-chan time.Time
		if !next.IsZero() {
			if expiry == nil {
				expiry = time.NewTimer(time.Until(next))
			} else {
				expiry.Reset(time.Until(next))
			}
			expired = expiry.C
		}
		select {
		case <-changed:
		case <-expired:
		case <-call.timer.C:
			d.stopWaiting(k)
			call.finish(nil, fmt.Errorf("%w: destination %q is interactive (calls that ask their clients things run alone) and the calls in flight did not end in time", ErrTimeout, d.opts.Name))
			return false
		case <-call.ctx.Done():
			d.stopWaiting(k)
			call.finish(nil, supervisor.ContextErr(call.ctx))
			return false
		}
	}
}

// stopWaiting ends the wait of a call for a turn of kind k, which it did
// not get: the calls it held back may go.
func (d *Dispatcher) stopWaiting(k turn) {
	d.pmu.Lock()
	d.turns.waiting--
	if k == alone {
		d.turns.aloneWaiting--
		d.turns.wake()
	}
	d.pmu.Unlock()
}

// giveTurn gives back the turn of a call that ended.
func (call *Call) giveTurn() {
	if call.turn == noTurn {
		return
	}
	d := call.d
	d.pmu.Lock()
	d.turns.give(call.turn)
	d.pmu.Unlock()
	call.turn = noTurn
}
