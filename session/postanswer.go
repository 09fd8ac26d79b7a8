package session

import (
	"net/http"
	"sync"
	"time"
)

// Response modes for POSTed requests.
const (
	// ModeAuto answers with JSON unless the call needs a stream: a progress
	// notification or a request from the child arrives for it, or it takes
	// longer than the keepalive interval.
	ModeAuto = "auto"
	// ModeJSON answers with JSON whenever the client accepts it.
	ModeJSON = "json"
	// ModeSSE answers with an SSE stream whenever the client accepts it.
	ModeSSE = "sse"
)

// postAnswer is the form of a 2025 session POST's answer: JSON until the
// call needs a stream (progress or a request for it, or a keepalive), then
// an SSE stream of the session's, resumable. It runs on
// the POST handler's goroutine, the only one that writes the response.
type postAnswer struct {
	ep            *Endpoint
	s             *Session
	w             http.ResponseWriter
	sseOK, jsonOK bool
	sw            *sseWriter // set once the answer is a stream
	stream        uint64
	timer         *time.Timer
}

// postAnswerPool holds postAnswers. Owner: sessionPost, from newPostAnswer until
// putPostAnswer, which clears what it refers to (its timer, stopped, is kept).
var postAnswerPool = sync.Pool{New: func() any { return new(postAnswer) }}

func (ep *Endpoint) newPostAnswer(w http.ResponseWriter, s *Session, sseOK, jsonOK bool) *postAnswer {
	pw := postAnswerPool.Get().(*postAnswer)
	timer := pw.timer
	*pw = postAnswer{ep: ep, s: s, w: w, sseOK: sseOK, jsonOK: jsonOK, timer: timer}
	return pw
}

func putPostAnswer(pw *postAnswer) {
	if pw.timer != nil {
		pw.timer.Stop()
	}
	pw.ep, pw.s, pw.w, pw.sw = nil, nil, nil, nil
	postAnswerPool.Put(pw)
}

// related sends a message that belongs to the call on its stream; a client
// that takes only JSON gets it on its GET stream instead.
func (pw *postAnswer) related(msg []byte) {
	if !pw.sseOK || (pw.ep.opts.ResponseMode == ModeJSON && pw.jsonOK) {
		pw.s.Deliver(msg)
		return
	}
	pw.switchSSE()
	pw.sw.event(pw.s.emitPost(pw.stream, msg, false))
}

// tick returns the keepalive ticks of the call (nil for none), which in
// auto mode also switch a slow call to a stream so that proxies do not cut
// it for silence.
func (pw *postAnswer) tick() <-chan time.Time {
	if !pw.sseOK || (pw.ep.opts.ResponseMode == ModeJSON && pw.jsonOK) {
		return nil
	}
	if pw.timer == nil {
		pw.timer = time.NewTimer(pw.ep.opts.KeepAlive)
	} else {
		pw.timer.Reset(pw.ep.opts.KeepAlive)
	}
	return pw.timer.C
}

// ticked sends a keepalive, switching to a stream first.
func (pw *postAnswer) ticked() {
	pw.switchSSE()
	pw.sw.comment()
	pw.timer.Reset(pw.ep.opts.KeepAlive)
}

// switchSSE turns the answer into an SSE stream: headers now, then a priming
// event for sessions that negotiated 2025-11-25 or later.
func (pw *postAnswer) switchSSE() {
	if pw.sw != nil {
		return
	}
	pw.stream = pw.s.openPost()
	pw.sw = pw.ep.newSSEWriter(pw.w)
	if pw.sw.start(pw.w, pw.s.id) && pw.s.primes() {
		pw.sw.event(pw.s.prime(pw.stream, 'p'))
	}
}
