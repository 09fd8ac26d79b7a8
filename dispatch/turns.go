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
//   - Options.InteractiveTool: the calls of the tools (and the prompts/get
//     of the prompts) it names run alone;
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
// d.pmu, with the abandoned calls that still hold their turns and every
// call's turn and parked fields.
type turns struct {
	alone    bool // a call, or an abandoned one, runs alone
	together int  // calls (and abandoned ones) running together
	// aloneWaiting counts the calls waiting to run alone: calls that
	// would run together wait behind them. waiting counts every call
	// waiting for a turn.
	aloneWaiting int
	waiting      int
	// unparking counts the parked calls waiting to take their turn back
	// (Unpark): they go before new calls that run alone (the child is
	// waiting on them, and beside them the new calls' requests could not
	// be routed).
	unparking int
	// parked counts the calls parked for their clients' input (Park),
	// and the abandoned ones that were parked until their entries go;
	// new calls that run alone wait for them until heldUntil, the grace
	// after the latest park or such abandonment (see Park).
	parked    int
	heldUntil time.Time
	// changed is closed when a turn is given back or a wait is given up
	// while calls wait; nil while none waits.
	changed chan struct{}
}

// take takes a turn of kind k, if it is free at now. A new call that runs
// alone also waits for the parked calls taking their turns back, and for
// parked calls until the hold passes (pastHold: it waited long enough); a
// parked call taking its turn back (resuming) waits only for the turns in
// use.
func (t *turns) take(k turn, now time.Time, resuming, pastHold bool) bool {
	switch {
	case k == alone && !t.alone && t.together == 0 && (resuming || t.unparking == 0 && (pastHold || !t.held(now))):
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

// held reports whether new calls that run alone still wait for parked
// calls at now.
func (t *turns) held(now time.Time) bool { return t.parked > 0 && now.Before(t.heldUntil) }

// unpark notes that a parked call is parked no more.
func (t *turns) unpark() {
	t.parked--
	if t.parked == 0 {
		t.heldUntil = time.Time{}
		t.wake()
	}
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

// scheduled reports whether the destination's calls take turns.
func (d *Dispatcher) scheduled() bool { return d.opts.Interactive || d.opts.InteractiveTool != nil }

// turnFor is the turn a client's request m takes.
func (d *Dispatcher) turnFor(m *jsonrpc.Message) turn {
	switch {
	case d.opts.Interactive:
		return alone
	case d.opts.InteractiveTool == nil:
		return noTurn
	case (m.Method == "tools/call" || m.Method == "prompts/get") && d.opts.InteractiveTool(jsonrpc.String(jsonrpc.Member(m.Params, "name"))):
		return alone
	}
	return together
}

// hold takes the turn k for a client call, waiting for the calls in its
// way (and for abandoned calls to be answered or to expire), within the
// call's own timeout and context. It reports false, with the call
// finished, when the wait ended first.
func (call *Call) hold(k turn) bool {
	if k == noTurn || call.sess == nil || call.turn != noTurn {
		return true
	}
	return call.waitTurn(k == alone, func(t *turns, now time.Time) bool {
		if !t.take(k, now, false, !now.Before(call.heldBy)) {
			return false
		}
		call.turn = k
		return true
	})
}

// waitTurn waits until take (called with d.pmu held) takes the call's
// turn; forAlone: the call waits to run alone. It reports false, with the
// call finished, when the call's timeout or context ended first.
func (call *Call) waitTurn(forAlone bool, take func(*turns, time.Time) bool) bool {
	d := call.d
	waiting := false    // counted in waiting (and aloneWaiting)
	var since time.Time // when it began to wait (traced)
	var expiry *time.Timer
	defer func() {
		if expiry != nil {
			expiry.Stop()
		}
	}()
	for {
		d.pmu.Lock()
		now := time.Now()
		next := d.expireAbandoned(now)
		if take(&d.turns, now) {
			if waiting {
				d.stopWaitingLocked(forAlone)
			}
			d.pmu.Unlock()
			if waiting {
				call.tracedWait("turn", since, nil)
			}
			return true
		}
		if !waiting {
			waiting, since = true, now
			d.turns.waiting++
			if forAlone {
				d.turns.aloneWaiting++
			}
		}
		if forAlone && d.turns.held(now) {
			wake := d.turns.heldUntil
			if !call.heldBy.IsZero() && call.heldBy.Before(wake) {
				wake = call.heldBy
			}
			if next.IsZero() || wake.Before(next) {
				next = wake
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
		var err error
		select {
		case <-changed:
			continue
		case <-expired:
			continue
		case <-call.timer.C:
			err = fmt.Errorf("%w: destination %q is interactive (calls that ask their clients things run alone) and the calls in flight did not end in time", ErrTimeout, d.opts.Name)
		case <-call.ctx.Done():
			err = supervisor.ContextErr(call.ctx)
		}
		d.pmu.Lock()
		d.stopWaitingLocked(forAlone)
		d.pmu.Unlock()
		call.tracedWait("turn", since, err)
		call.finish(nil, err)
		return false
	}
}

// tracedWait records a wait of the call's that is over (tracing on).
func (call *Call) tracedWait(what string, since time.Time, err error) {
	if call.d.opts.TraceWait != nil && call.ctx != nil {
		call.d.opts.TraceWait(call.ctx, what, since)(err)
	}
}

// stopWaitingLocked ends a call's wait for a turn: if it waited to run
// alone, the calls it held back may go. d.pmu must be held.
func (d *Dispatcher) stopWaitingLocked(forAlone bool) {
	d.turns.waiting--
	if forAlone {
		d.turns.aloneWaiting--
		d.turns.wake()
	}
}

// Park gives up the turn of a call that waits for its client's input (a
// 2026-07-28 call answered input_required, which may wait minutes for the
// retry), so that the other calls go on meanwhile, on an interactive:
// true destination too. The parked call is still in flight: whatever the
// child sends while another user's call is in flight too is refused or
// dropped, never taken for the parked call's or theirs. So that a retry
// that comes at once (a client that answers without asking a person, or
// an abandoned park that ends) does not make a new asking call's requests
// ambiguous, new calls that run alone wait for parked calls up to the
// abandoned calls' grace after the latest park (and at most a third of
// their own timeout); past it they go, and their requests are refused
// while a parked call of another user is still in flight. Unpark takes
// the turn back (before new calls that run alone) before the client's
// answers are written to the child, so what the child sends after them is
// exact again. Both are for the call's owner (the request that parks it,
// the one that resumes it).
func (call *Call) Park() {
	d := call.d
	if !d.scheduled() {
		return
	}
	d.pmu.Lock()
	if call.turn != noTurn {
		call.parked = call.turn
		d.turns.give(call.turn)
		call.turn = noTurn
		d.turns.parked++
		if until := time.Now().Add(d.grace); until.After(d.turns.heldUntil) {
			d.turns.heldUntil = until
		}
	}
	d.pmu.Unlock()
}

// Unpark takes a parked call's turn back, within the call's timeout and
// context. It reports false when the wait ended first: the call is then
// abandoned (the child is told) and ends with the wait's error.
func (call *Call) Unpark() bool {
	d := call.d
	if !d.scheduled() {
		return true
	}
	d.pmu.Lock()
	k := call.parked
	call.parked = noTurn
	if k != noTurn {
		d.turns.unpark()
		d.turns.unparking++
	}
	d.pmu.Unlock()
	if k == noTurn {
		return true
	}
	ok := call.waitTurn(k == alone, func(t *turns, now time.Time) bool {
		if !t.take(k, now, true, true) {
			return false
		}
		t.unparking--
		call.turn = k
		return true
	})
	if ok {
		return true
	}
	d.pmu.Lock()
	d.turns.unparking--
	d.turns.wake()
	d.pmu.Unlock()
	// waitTurn ended the call, which the child still works on: abandon it
	// (the child is told) rather than leave it pending.
	end := call.end
	call.ended = false
	call.abandon(end.err, "the call waited too long for its turn")
	return false
}

// giveTurn gives back the turn of a call that ended (nothing when an
// abandoned entry took it over).
func (call *Call) giveTurn() {
	d := call.d
	if d == nil || !d.scheduled() {
		return
	}
	d.pmu.Lock()
	d.turns.give(call.turn)
	if call.parked != noTurn {
		d.turns.unpark()
	}
	call.turn, call.parked = noTurn, noTurn
	d.pmu.Unlock()
}
