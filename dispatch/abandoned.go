package dispatch

import "time"

// Abandoned calls. A call the bridge gives up on — the client cancelled
// it, it timed out, its session ended — leaves the pending calls at once
// (its answer, if one comes, goes nowhere), but the child may not have
// read the cancellation yet and may still send a request or a log line on
// its behalf. Until the child answers it, exits, or abandonGrace passes,
// such a call still counts as its user's call in flight for attribution
// (attribution.go): what the child sends then is never taken for another
// user's. On an interactive destination it also keeps its turn (turns.go).

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
	call.turn = noTurn
}

// forgetAbandonedLocked drops abandoned call up (the child answered it),
// giving back its turn. d.pmu must be held.
func (d *Dispatcher) forgetAbandonedLocked(up uint64) bool {
	a, ok := d.abandoned[up]
	if ok {
		delete(d.abandoned, up)
		d.turns.give(a.turn)
	}
	return ok
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
