package session

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// sseWriter writes server-sent events on one HTTP response. Every write has
// its own deadline, so a client that stops reading cannot hold a goroutine.
type sseWriter struct {
	ep      *endpoint
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	buf     []byte
	alive   bool
}

func (ep *endpoint) newSSEWriter(w http.ResponseWriter) *sseWriter {
	return &sseWriter{ep: ep, w: w, rc: http.NewResponseController(w), timeout: ep.opts.WriteTimeout, alive: true}
}

// start sends the SSE headers at once.
func (sw *sseWriter) start(sessionID string) bool {
	h := sw.w.Header()
	setSSEHeaders(h)
	h.Set(headerSessionID, sessionID)
	sw.w.WriteHeader(http.StatusOK)
	return sw.flush()
}

// retryMillis is the reconnection delay sent with priming events.
const retryMillis = 1000

// event writes one event; a priming event (nil data) carries retry:.
func (sw *sseWriter) event(ev event) bool {
	sw.buf = appendEvent(sw.buf[:0], ev)
	return sw.write(sw.buf)
}

func (sw *sseWriter) comment() bool { return sw.write([]byte(": keepalive\n\n")) }

func (sw *sseWriter) write(b []byte) bool {
	if !sw.alive {
		return false
	}
	_ = sw.rc.SetWriteDeadline(time.Now().Add(sw.timeout))
	n, err := sw.w.Write(b)
	sw.ep.m.bytesOut.Add(float64(n))
	if err != nil {
		sw.alive = false
		return false
	}
	return sw.flush()
}

func (sw *sseWriter) flush() bool {
	if err := sw.rc.Flush(); err != nil {
		sw.alive = false
	}
	return sw.alive
}

// appendEvent writes one SSE event: a JSON-RPC message, or a priming event
// (an id, a retry field and empty data).
func appendEvent(dst []byte, ev event) []byte {
	if ev.data == nil {
		dst = append(dst, "id: "...)
		dst = ev.appendID(dst)
		dst = append(dst, "\nretry: "...)
		dst = strconv.AppendInt(dst, retryMillis, 10)
		return append(dst, "\ndata: \n\n"...)
	}
	dst = append(dst, "event: message\nid: "...)
	dst = ev.appendID(dst)
	dst = append(dst, "\ndata: "...)
	dst = append(dst, ev.data...)
	return append(dst, "\n\n"...)
}

// serveGet opens an SSE stream of the session's notifications and the
// requests the child sends it, or resumes a stream with Last-Event-ID.
func (ep *endpoint) serveGet(w http.ResponseWriter, r *http.Request, shutdown <-chan struct{}) {
	start := time.Now()
	status := http.StatusOK
	defer func() {
		ep.log.Info("GET", "destination", ep.name, "status_code", status, "latency_ms", ms(start))
	}()
	if !acceptsSSE(r.Header.Get("Accept")) {
		status = writeError(w, http.StatusNotAcceptable, codeServer, "a GET on an MCP endpoint opens an SSE stream: send Accept: text/event-stream")
		return
	}
	s, errStatus := ep.sessionFor(w, r)
	if s == nil {
		status = errStatus
		return
	}
	st, replay, done, resumed, ok := s.openGet(r.Header.Get("Last-Event-ID"))
	if !ok {
		status = writeError(w, http.StatusNotFound, codeSessionNotFound, "session ended: send initialize to start a new one")
		return
	}
	ep.m.streams.Inc()
	defer ep.m.streams.Dec()
	defer s.closeStream(st)
	if resumed {
		ep.log.Debug("SSE stream resumed", "session", s.id, "destination", ep.name, "replayed", len(replay))
	}

	sw := ep.newSSEWriter(w)
	if !sw.start(s.id) {
		return
	}
	if s.primes() && !sw.event(s.prime(st.id, st.kind)) {
		return
	}
	for _, ev := range replay {
		if !sw.event(ev) || ev.last {
			return
		}
	}
	if done {
		return
	}
	keepalive := time.NewTicker(ep.opts.KeepAlive)
	defer keepalive.Stop()
	for {
		select {
		case ev := <-st.ch:
			if !sw.event(ev) || ev.last {
				return
			}
		case <-keepalive.C:
			if !sw.comment() {
				return
			}
		case <-st.kicked:
			return
		case <-s.ctx.Done():
			return
		case <-r.Context().Done():
			return
		case <-shutdown:
			return
		}
	}
}

// accepts reports whether an Accept header allows the media type full
// (type/subtype), directly or through a wildcard, with a non-zero quality.
func accepts(accept, full string) bool {
	typ, _, _ := strings.Cut(full, "/")
	for _, part := range strings.Split(accept, ",") {
		mt, params, _ := strings.Cut(part, ";")
		switch strings.ToLower(strings.TrimSpace(mt)) {
		case full, "*/*", typ + "/*":
			if !zeroQuality(params) {
				return true
			}
		}
	}
	return false
}

// acceptsSSE reports whether an Accept header allows text/event-stream.
func acceptsSSE(accept string) bool { return accept != "" && accepts(accept, "text/event-stream") }

// zeroQuality reports whether media-type parameters say q=0 ("not
// acceptable").
func zeroQuality(params string) bool {
	for _, p := range strings.Split(params, ";") {
		k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
		if strings.EqualFold(k, "q") {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return err == nil && f == 0
		}
	}
	return false
}
