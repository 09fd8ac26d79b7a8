package session

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// serveGet opens an SSE stream of the session's notifications and the
// requests the child sends it.
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
	s, errStatus := ep.sessionFrom(w, r)
	if s == nil {
		status = errStatus
		return
	}
	st, ok := s.openStream()
	if !ok {
		status = writeError(w, http.StatusNotFound, codeSessionNotFound, "session ended: send initialize to start a new one")
		return
	}
	defer s.closeStream(st)

	rc := http.NewResponseController(w)
	h := w.Header()
	setSSEHeaders(h)
	h.Set(headerSessionID, s.id)
	w.WriteHeader(http.StatusOK)
	if err := rc.Flush(); err != nil {
		return
	}
	keepalive := time.NewTicker(ep.opts.KeepAlive)
	defer keepalive.Stop()
	var buf []byte
	write := func(b []byte) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(ep.opts.WriteTimeout))
		if _, err := w.Write(b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	for {
		select {
		case msg := <-st.ch:
			buf = appendEvent(buf[:0], s.eventSeq.Add(1), msg)
			// Send what else is queued in the same flush.
			for more := true; more && len(buf) < 64<<10; {
				select {
				case msg = <-st.ch:
					buf = appendEvent(buf, s.eventSeq.Add(1), msg)
				default:
					more = false
				}
			}
			if !write(buf) {
				return
			}
		case <-keepalive.C:
			if !write([]byte(": keepalive\n\n")) {
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

// appendEvent writes one SSE event carrying a JSON-RPC message.
func appendEvent(dst []byte, id uint64, msg []byte) []byte {
	dst = append(dst, "event: message\nid: "...)
	dst = strconv.AppendUint(dst, id, 10)
	dst = append(dst, "\ndata: "...)
	dst = append(dst, msg...)
	return append(dst, "\n\n"...)
}

// acceptsSSE reports whether an Accept header allows text/event-stream.
func acceptsSSE(accept string) bool {
	if accept == "" {
		return false
	}
	for _, part := range strings.Split(accept, ",") {
		mt, params, _ := strings.Cut(part, ";")
		switch strings.ToLower(strings.TrimSpace(mt)) {
		case "text/event-stream", "*/*", "text/*":
			if !zeroQuality(params) {
				return true
			}
		}
	}
	return false
}

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
