package session

import (
	"net/http"
	"sync"
	"time"

	"github.com/stelae-bridge/stelae-bridge/dispatch"
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

// postAnswer is the form of a 2025 session POST's answer (answering): JSON
// until the call needs a stream (progress or a request for it, or a
// keepalive), then an SSE stream of the session's, resumable.
type postAnswer struct {
	ep            *Endpoint
	s             *Session
	p             *post
	w             http.ResponseWriter
	sseOK, jsonOK bool
	sw            *sseWriter // set once the answer is a stream
	stream        uint64
	timer         *time.Timer
	// tick is the keepalive timer's channel while the call has one.
	tick <-chan time.Time
}

// postAnswerPool holds postAnswers. Owner: sessionPost, from newPostAnswer until
// putPostAnswer, which clears what it refers to (its timer, stopped, is kept).
var postAnswerPool = sync.Pool{New: func() any { return new(postAnswer) }}

// newPostAnswer is the answer of p, a call of session s; in auto or SSE
// mode its keepalive timer runs from now.
func (ep *Endpoint) newPostAnswer(w http.ResponseWriter, s *Session, p *post) *postAnswer {
	pw := postAnswerPool.Get().(*postAnswer)
	timer := pw.timer
	*pw = postAnswer{ep: ep, s: s, p: p, w: w, sseOK: p.sseOK, jsonOK: p.jsonOK, timer: timer}
	if pw.sseOK && (ep.opts.ResponseMode == ModeSSE || !pw.jsonOK) {
		pw.switchSSE()
	}
	if !pw.sseOK || (ep.opts.ResponseMode == ModeJSON && pw.jsonOK) {
		return pw // a JSON answer: no keepalives
	}
	if pw.timer == nil {
		pw.timer = time.NewTimer(ep.opts.KeepAlive)
	} else {
		pw.timer.Reset(ep.opts.KeepAlive)
	}
	pw.tick = pw.timer.C
	return pw
}

func putPostAnswer(pw *postAnswer) {
	if pw.timer != nil {
		pw.timer.Stop()
	}
	pw.ep, pw.s, pw.p, pw.w, pw.sw, pw.tick = nil, nil, nil, nil, nil, nil
	postAnswerPool.Put(pw)
}

// related sends a message that belongs to the call on its stream; a client
// that takes only JSON gets it on its GET stream instead.
func (pw *postAnswer) related(msg []byte) bool {
	if !pw.sseOK || (pw.ep.opts.ResponseMode == ModeJSON && pw.jsonOK) {
		pw.s.Deliver(msg)
		return true
	}
	pw.switchSSE()
	pw.sw.event(pw.s.emitPost(pw.stream, msg, false))
	return true
}

// ticks are the call's keepalives, which in auto mode also switch a slow
// call to a stream so that proxies do not cut it for silence.
func (pw *postAnswer) ticks() <-chan time.Time { return pw.tick }

// ticked sends a keepalive, switching to a stream first.
func (pw *postAnswer) ticked() bool {
	pw.switchSSE()
	pw.sw.comment()
	pw.timer.Reset(pw.ep.opts.KeepAlive)
	return true
}

// done writes the call's answer: as JSON, or as the last event of the
// stream the call switched to.
func (pw *postAnswer) done(ev dispatch.Event) {
	ep, p := pw.ep, pw.p
	if pw.sw == nil {
		ep.writeResult(pw.w, ev.Answer, ev.Err, &p.rec)
		return
	}
	resp := ep.streamedAnswer(p.m.ID, ev.Answer, ev.Err, p.rec.era == EraStateless)
	p.rec.noteAnswer(resp)
	pw.sw.event(pw.s.emitPost(pw.stream, resp, true))
	if ep.keepsAnswers() {
		p.rec.respBody = resp
	}
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
