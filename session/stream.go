package session

import (
	"fmt"
	"github.com/stelae-bridge/stelae-bridge/httpx"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stelae-bridge/stelae-bridge/recycle"
)

// A GET stream lives long and mostly idles, and a connector server may hold
// thousands. So once its checks pass, serveGet takes the connection over
// from net/http (Hijack): it writes the response head itself (the body runs
// until the connection closes, "Connection: close"), and hands the stream
// to a goroutine of its own while the handler returns. That frees what
// net/http keeps per request (buffers, the request and response, the
// handler's stack): an idle stream holds its connection, its stream, a
// keepalive ticker and two small goroutines — the writer, and a reader that
// notices when the client goes.

// serveGet opens an SSE stream of the session's notifications and the
// requests the child sends it, or resumes a stream with Last-Event-ID.
func (ep *Endpoint) serveGet(w http.ResponseWriter, r *http.Request, shutdown <-chan struct{}) {
	start := time.Now()
	logged := false
	status := http.StatusOK
	defer func() {
		if !logged {
			ep.log.Info("GET", "status_code", status, "latency_ms", ms(start))
		}
	}()
	if !httpx.AcceptsSSE(r.Header.Get("Accept")) {
		status = httpx.WriteError(w, http.StatusNotAcceptable, codeServer, "a GET on an MCP endpoint opens an SSE stream: send Accept: text/event-stream")
		return
	}
	s, errStatus := ep.sessionFor(w, r)
	if s == nil {
		status = errStatus
		return
	}
	if !ep.limits.streams.take(1) {
		w.Header().Set("Retry-After", "5")
		status = httpx.WriteError(w, http.StatusServiceUnavailable, codeServer, fmt.Sprintf("the bridge has its maximum of %d open streams; retry later, or raise -max-streams", ep.limits.MaxStreams))
		return
	}
	// The stream can be kicked from the moment it is registered; its
	// connection is known only after the takeover.
	var conn atomic.Pointer[net.Conn]
	abort := func() {
		if c := conn.Load(); c != nil {
			_ = (*c).SetWriteDeadline(time.Now())
		}
	}
	st, resumed, done, ok, full := s.openGet(r.Header.Get("Last-Event-Id"), abort)
	switch {
	case !ok:
		ep.limits.streams.give(1)
		status = httpx.WriteError(w, http.StatusNotFound, codeSessionNotFound, "session ended: send initialize to start a new one")
		return
	case full:
		ep.limits.streams.give(1)
		w.Header().Set("Retry-After", "5")
		status = httpx.WriteError(w, http.StatusTooManyRequests, codeServer, fmt.Sprintf("this session already has its maximum of %d open streams; close one first (raise -max-streams-per-session)", ep.opts.MaxStreamsPerSession))
		return
	}
	head := responseHead(w.Header(), s.id)
	c, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		s.closeStream(st)
		ep.limits.streams.give(1)
		status = httpx.WriteError(w, http.StatusHTTPVersionNotSupported, codeServer, "SSE streams need HTTP/1.1: "+err.Error())
		return
	}
	_ = brw // its buffers stay with net/http: the client sends nothing more
	if tc, ok := c.(*net.TCPConn); ok {
		// What the kernel holds for a client that stopped reading is
		// work and memory spent on a doomed stream: keep it small.
		_ = tc.SetWriteBuffer(streamSendBuffer)
	}
	conn.Store(&c)
	logged = true
	if resumed {
		ep.log.Debug("SSE stream resumed", "session", s.id)
	}
	ep.pumps.Add(1)
	go ep.pump(s, st, c, head, done, start, shutdown)
}

// streamSendBuffer is the kernel's send buffer for a GET stream.
const streamSendBuffer = 64 << 10

// framePool holds the buffers GET streams build their writes in. Owner:
// the stream's pump, from Get until the write returns and it puts the
// buffer back (poisoned under -race; nothing else ever sees it).
var framePool = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// responseHead is the HTTP head of a stream whose connection was taken
// over: the headers set so far (CORS) and the SSE ones.
func responseHead(h http.Header, sessionID string) []byte {
	h = h.Clone()
	httpx.SetSSEHeaders(h)
	h.Set(httpx.HeaderSessionID, sessionID)
	h.Set("Connection", "close")
	h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	var b strings.Builder
	b.WriteString("HTTP/1.1 200 OK\r\n")
	_ = h.Write(&b)
	b.WriteString("\r\n")
	return []byte(b.String())
}

// pump writes a GET stream until it ends: its last event (a POST stream's
// answer), a kick, the session's end, the client's going, the bridge's
// shutdown, or a failed write. It owns the connection and closes it.
func (ep *Endpoint) pump(s *Session, st *stream, conn net.Conn, head []byte, done bool, start time.Time, shutdown <-chan struct{}) {
	defer ep.pumps.Done()
	ep.m.Streams.Inc()
	gone := make(chan struct{})
	go func() {
		// The client sends nothing on a stream; a read ends when it
		// closes its side (or the connection is closed below).
		var b [1]byte
		_, _ = conn.Read(b[:])
		close(gone)
	}()
	defer func() {
		conn.Close()
		<-gone
		s.closeStream(st)
		ep.limits.streams.give(1)
		ep.m.Streams.Dec()
		ep.log.Info("GET", "status_code", http.StatusOK, "latency_ms", ms(start))
	}()
	sw := ep.newConnWriter(conn)
	// A kick before now found no connection to abort; this writer checks
	// stop before every write.
	sw.stop = st.kicked
	if !sw.write(head) {
		return
	}
	if s.primes() && !sw.event(s.prime(st.id, st.kind)) {
		return
	}
	keepalive := time.NewTicker(ep.opts.KeepAlive)
	defer keepalive.Stop()
	for {
		// An idle stream holds no buffer: each batch is built in a
		// pooled one and written at once.
		bp := framePool.Get().(*[]byte)
		frames, last, kicked := s.appendNew(st, (*bp)[:0])
		ok := !kicked && (len(frames) == 0 || sw.write(frames))
		if cap(frames) <= 64<<10 {
			recycle.Poison(frames)
			*bp = frames[:0]
			framePool.Put(bp)
		}
		if !ok || last || done {
			return
		}
		select {
		case <-st.wake:
		case <-keepalive.C:
			if !sw.comment() {
				return
			}
		case <-st.kicked:
			return
		case <-s.ctx.Done():
			return
		case <-gone:
			return
		case <-shutdown:
			return
		}
	}
}
