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

// postWatcher follows one POSTed call for the handler that waits on it, and
// switches its answer to an SSE stream when the call needs one. It runs on
// the POST handler's goroutine, the only one that writes the response.
type postWatcher struct {
	ep            *Endpoint
	s             *Session
	w             http.ResponseWriter
	sseOK, jsonOK bool
	sw            *sseWriter // set once the answer is a stream
	stream        uint64
	timer         *time.Timer
}

// watcherPool holds postWatchers. Owner: sessionPost, from newWatcher until
// putWatcher, which clears what it refers to (its timer, stopped, is kept).
var watcherPool = sync.Pool{New: func() any { return new(postWatcher) }}

func (ep *Endpoint) newWatcher(w http.ResponseWriter, s *Session, sseOK, jsonOK bool) *postWatcher {
	pw := watcherPool.Get().(*postWatcher)
	timer := pw.timer
	*pw = postWatcher{ep: ep, s: s, w: w, sseOK: sseOK, jsonOK: jsonOK, timer: timer}
	return pw
}

func putWatcher(pw *postWatcher) {
	if pw.timer != nil {
		pw.timer.Stop()
	}
	pw.ep, pw.s, pw.w, pw.sw = nil, nil, nil, nil
	watcherPool.Put(pw)
}

// related sends a message that belongs to the call on its stream; a client
// that takes only JSON gets it on its GET stream instead.
func (pw *postWatcher) related(msg []byte) {
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
func (pw *postWatcher) tick() <-chan time.Time {
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
func (pw *postWatcher) ticked() {
	pw.switchSSE()
	pw.sw.comment()
	pw.timer.Reset(pw.ep.opts.KeepAlive)
}

// switchSSE turns the answer into an SSE stream: headers now, then a priming
// event for sessions that negotiated 2025-11-25 or later.
func (pw *postWatcher) switchSSE() {
	if pw.sw != nil {
		return
	}
	pw.stream = pw.s.openPost()
	pw.sw = pw.ep.newSSEWriter(pw.w)
	if pw.sw.start(pw.w, pw.s.id) && pw.s.primes() {
		pw.sw.event(pw.s.prime(pw.stream, 'p'))
	}
}
