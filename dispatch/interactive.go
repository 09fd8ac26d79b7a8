package dispatch

import (
	"fmt"

	"github.com/stelae-bridge/stelae-bridge/supervisor"
)

// An interactive destination (Options.Interactive) serves its clients'
// calls one at a time: a call takes the destination's one serial token
// before it is written to the child and gives it back when it ends (its
// answer, its cancellation, its session's end). While it holds the token it
// is the only client call in flight, so every request and log line the
// child sends meanwhile is attributed to it exactly (see attribution.go).
// The bridge's own calls (the tool catalogue's fetch) do not wait.

// hold takes the serial token for a client call of an interactive
// destination, waiting for the call in flight to end, within the call's
// own timeout and context. It reports false, with the call finished, when
// the wait ended first.
func (call *Call) hold() bool {
	d := call.d
	if d.serial == nil || call.sess == nil || call.held {
		return true
	}
	select {
	case d.serial <- struct{}{}:
		call.held = true
		return true
	default:
	}
	select {
	case d.serial <- struct{}{}:
		call.held = true
		return true
	case <-call.timer.C:
		call.finish(nil, fmt.Errorf("%w: destination %q is interactive (one call at a time) and the call in flight did not end in time", ErrTimeout, d.opts.Name))
	case <-call.ctx.Done():
		call.finish(nil, supervisor.ContextErr(call.ctx))
	}
	return false
}
