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

// abandonGrace is how long an abandoned call counts as in flight when the
// child does not answer it (many servers never answer a cancelled
// request): the time a child takes to notice a cancellation, generously.
const abandonGrace = 3 * time.Second

// abandonedCall is what is kept of an abandoned call.
type abandonedCall struct {
	// user is the user of the call's session (Session.User).
	user any
	// turn is the turn the call held, kept until the entry goes.
	turn  turn
	until time.Time
	// after is the last upstream id handed out when the call's
	// cancellation had been written to the child (0: not yet): an answer
	// to a later id means the child has read the cancellation.
	after uint64
}

// abandonLocked records call, just taken out of the pending calls by the
// path that ends it, as abandoned; it takes over the call's turn. d.pmu
// must be held. The bridge's own calls are not recorded.
func (d *Dispatcher) abandonLocked(call *Call, now time.Time) {
	if call.sess == nil {
		return
	}
	d.abandoned[call.up] = abandonedCall{user: call.sess.User(), turn: call.turn, until: now.Add(d.grace)}
	if call.turn != noTurn {
		// The calls waiting for the turn now wait for the grace to pass
		// too: they look again.
		d.turns.wake()
	}
	if call.parked {
		d.turns.parked--
	}
	call.turn, call.parked = noTurn, false
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
	if n > 0 {
		d.fireAndForget(c, "ping", nil)
	}
}

// answeredLocked notes the child's answer to upstream id up: the abandoned
// call up, and those whose cancellation was written before request up,
// are done with. d.pmu must be held.
func (d *Dispatcher) answeredLocked(up uint64) {
	for id, a := range d.abandoned {
		if id == up || (a.after != 0 && up > a.after) {
			delete(d.abandoned, id)
			d.turns.give(a.turn)
		}
	}
}

// expireAbandoned drops the abandoned calls whose grace has passed and
// returns when the next of the others expires (zero: none left). d.pmu
// must be held.
func (d *Dispatcher) expireAbandoned(now time.Time) (next time.Time) {
	for up, a := range d.abandoned {
		if !now.Before(a.until) {
			delete(d.abandoned, up)
			d.turns.give(a.turn)
			continue
		}
		if next.IsZero() || a.until.Before(next) {
			next = a.until
		}
	}
	return next
}

// clearAbandonedLocked drops every abandoned call: their child has exited.
// d.pmu must be held.
func (d *Dispatcher) clearAbandonedLocked() {
	for up, a := range d.abandoned {
		delete(d.abandoned, up)
		d.turns.give(a.turn)
	}
}
