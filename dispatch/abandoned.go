package dispatch

import "time"

// Abandoned calls. A call the bridge gives up on — the client cancelled
// it, it timed out, its session ended — leaves the pending calls at once
// (its answer, if one comes, goes nowhere) and the child is sent its
// cancellation, but the child may not have read the cancellation yet and
// may still send a request or a log line on its behalf. Until then such a
// call still counts as its user's call in flight for attribution
// (attribution.go): what the child sends is never taken for another
// user's. On an interactive destination it also keeps its turn (turns.go).
//
// The call stops counting when the child answers it; when the child
// answers a request written to it after the cancellation (stdin is read in
// order, so it has read the cancellation, and a server that has sends
// nothing more for that call: the SDKs refuse a cancelled handler's
// requests and related notifications) — the bridge sends a ping right
// after the cancellation for that answer; when the child exits; or, at
// the latest, abandonGrace after it was abandoned (a child that does not
// answer pings while it works).
//
// That relies on the child stopping what it does for a request once it has
// read its cancellation, as the protocol asks ("SHOULD stop processing")
// and the SDKs enforce for requests. A child that answers a call after it
// read the call's cancellation shows that it does not stop; from then on,
// until it exits, an abandoned call counts until the child answers it (or
// strictGrace passes), and the operator is told once. What such a child
// sent for the first call it went on with may have reached another user:
// the bridge could not know before.

// abandonGrace is how long an abandoned call counts as in flight when the
// child does not answer it (many servers never answer a cancelled
// request): the time a child takes to notice a cancellation, generously.
const abandonGrace = 3 * time.Second

// strictGrace replaces abandonGrace for a child that went on with a call
// after reading its cancellation.
const strictGrace = 30 * time.Second

// settledKept bounds the abandoned calls remembered once the child read
// their cancellation (settled), to tell one it answers anyway.
const settledKept = 256

// abandonedCall is what is kept of an abandoned call.
type abandonedCall struct {
	// user is the user of the call's session (Session.User).
	user any
	// turn is the turn the call held, kept until the entry goes.
	turn turn
	// parked: the call was parked (turns.go); new calls that run alone
	// wait for the entry as for a parked call, until it goes.
	parked bool
	until  time.Time
	// after is the last upstream id handed out when the call's
	// cancellation had been written to the child (0: not yet): an answer
	// to a later id means the child has read the cancellation.
	after uint64
}

// abandonLocked records call, just taken out of the pending calls by the
// path that ends it, as abandoned; it takes over the call's turn. d.pmu
// must be held. The bridge's own calls are not recorded.
func (d *Dispatcher) abandonLocked(call *Call, now time.Time) (atChild bool) {
	if call.waiting {
		// It waited for its session's input (modern.go): the child
		// answered it, and works on nothing of it.
		d.dropInputsLocked(call)
		return false
	}
	if call.sess == nil {
		return true
	}
	grace := d.grace
	if d.goesOn {
		grace = max(grace, strictGrace)
	}
	a := abandonedCall{user: call.sess.User(), turn: call.turn, until: now.Add(grace), parked: call.parked != noTurn}
	d.abandoned[call.up] = a
	if a.parked && a.until.After(d.turns.heldUntil) {
		d.turns.heldUntil = a.until // it stays counted in turns.parked
	}
	if call.turn != noTurn {
		// The calls waiting for the turn now wait for the grace to pass
		// too: they look again.
		d.turns.wake()
	}
	call.turn, call.parked = noTurn, noTurn
	return true
}

// dropAbandonedLocked forgets abandoned call up, giving back what it held.
// d.pmu must be held.
func (d *Dispatcher) dropAbandonedLocked(up uint64, a abandonedCall) {
	delete(d.abandoned, up)
	d.turns.give(a.turn)
	if a.parked {
		d.turns.unpark()
	}
}

// cancelsWritten records that the cancellations of abandoned calls ups
// have been written to child c — every request with a later upstream id
// is written after them — and pings c, whose answer shows it has read
// them.
func (d *Dispatcher) cancelsWritten(c *child, ups ...uint64) {
	d.pmu.Lock()
	after := d.seq.Load()
	n := 0
	for _, up := range ups {
		if a, ok := d.abandoned[up]; ok {
			a.after = after
			d.abandoned[up] = a
			n++
		}
	}
	d.pmu.Unlock()
	switch {
	case n > 0 && c.modern:
		// 2026-07-28 has no ping: any answer will do.
		d.fireAndForget(c, "server/discover", withEnvelope(nil, d.ownEnvelope(), false))
	case n > 0:
		d.fireAndForget(c, "ping", nil)
	}
}

// answeredLocked notes the child's answer to upstream id up (result: a
// result, not an error), which no pending call waits for: the abandoned
// call up, and — unless the child goes on with cancelled calls — those
// whose cancellation was written before request up, are done with. A
// result for a call settled so means the child went on with it after
// reading its cancellation (an error is a server's way to say it
// stopped). d.pmu must be held.
func (d *Dispatcher) answeredLocked(up uint64, result bool) {
	if _, ok := d.settled[up]; ok && result && !d.goesOn {
		d.goesOn = true
		d.log.Warn("the child answered a call after reading its cancellation: it goes on with cancelled requests, so what it sends for them could reach another user; until it restarts, a cancelled call counts as its user's until the child answers it (up to "+strictGrace.String()+")",
			"fix", "make the server stop working on a request once it reads notifications/cancelled (the MCP SDKs do), or give each session a child of its own ('isolation: session')")
	}
	for id, a := range d.abandoned {
		if id != up && (d.goesOn || a.after == 0 || up <= a.after) {
			continue
		}
		d.dropAbandonedLocked(id, a)
		if id != up {
			d.settleLocked(id)
		}
	}
}

// settleLocked remembers abandoned call id, dropped because the child
// read its cancellation. d.pmu must be held.
func (d *Dispatcher) settleLocked(id uint64) {
	if d.settled == nil {
		d.settled = map[uint64]struct{}{}
	}
	if len(d.settledOrder) >= settledKept {
		delete(d.settled, d.settledOrder[0])
		d.settledOrder = d.settledOrder[1:]
	}
	d.settled[id] = struct{}{}
	d.settledOrder = append(d.settledOrder, id)
}

// expireAbandoned drops the abandoned calls whose grace has passed and
// returns when the next of the others expires (zero: none left). d.pmu
// must be held.
func (d *Dispatcher) expireAbandoned(now time.Time) (next time.Time) {
	for up, a := range d.abandoned {
		if !now.Before(a.until) {
			d.dropAbandonedLocked(up, a)
			continue
		}
		if next.IsZero() || a.until.Before(next) {
			next = a.until
		}
	}
	return next
}

// clearAbandonedLocked drops every abandoned call, and what is known of
// the child's ways: it has exited. d.pmu must be held.
func (d *Dispatcher) clearAbandonedLocked() {
	for up, a := range d.abandoned {
		d.dropAbandonedLocked(up, a)
	}
	clear(d.settled)
	d.settledOrder, d.goesOn = d.settledOrder[:0], false
}
