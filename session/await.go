package session

import (
	"github.com/stelae-bridge/stelae-bridge/httpx"
	"time"

	"github.com/stelae-bridge/stelae-bridge/dispatch"
	"github.com/stelae-bridge/stelae-bridge/jsonrpc"
)

// answering is what differs between the eras while a POSTed call is
// waited for: the form of its answer (postAnswer for a 2025 session's
// call, requestAnswer for a request without a session). await is the one
// loop both run, on the POST handler's goroutine, which owns the wait and
// alone writes the response.
type answering interface {
	// ticks is the channel of the call's next timed step (a keepalive, or
	// the end of the grace in which it may become a task); nil for none.
	// It is read again after every step.
	ticks() <-chan time.Time
	// ticked takes that step; related takes a message the child sent for
	// the call (progress, a log line, a request of its own). Either
	// returns false when the wait ends there (the call was parked for its
	// client's input, became a task, or ended).
	ticked() bool
	related(msg []byte) bool
	// done writes the call's answer (or error).
	done(ev dispatch.Event)
}

// await waits for call's answer, handing each step to a.
func await(call *dispatch.Call, a answering) {
	for {
		ev := call.Next(a.ticks())
		switch {
		case ev.Done:
			a.done(ev)
			return
		case ev.Related != nil:
			if !a.related(ev.Related) {
				return
			}
		default:
			if !a.ticked() {
				return
			}
		}
	}
}

// streamedAnswer is the last message of a call answered on a stream: its
// answer, or its error as a JSON-RPC error under id (a stream's status is
// already sent).
func (ep *Endpoint) streamedAnswer(id, resp []byte, err error, modern bool) []byte {
	if err == nil {
		return resp
	}
	st, msg := statusFor(ep.name, err)
	return jsonrpc.ErrorResponse(id, httpx.EraCode(modern, st, codeServer), msg)
}
