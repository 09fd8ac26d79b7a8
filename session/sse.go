package session

import (
	"github.com/stelae-bridge/stelae-bridge/httpx"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"
)

// sseWriter writes server-sent events: on an HTTP response (a POST answered
// as a stream), or straight on a GET stream's connection once the stream
// has taken it over (see serveGet). Every write has its own deadline, so a
// client that stops reading cannot hold a goroutine.
type sseWriter struct {
	ep  *Endpoint
	out io.Writer
	// flushFn sends what out buffered; nil when out is the connection.
	flushFn func() error
	// deadline sets the connection's write deadline; safe to call from
	// any goroutine (net.Conn deadlines are).
	deadline func(time.Time) error
	timeout  time.Duration
	buf      []byte
	alive    bool
	// stop, when closed, ends the writer: its stream was kicked (nil for
	// POST streams, which are never kicked).
	stop <-chan struct{}
}

// newSSEWriter writes on an HTTP response.
func (ep *Endpoint) newSSEWriter(w http.ResponseWriter) *sseWriter {
	rc := http.NewResponseController(w)
	return &sseWriter{ep: ep, out: w, flushFn: rc.Flush, deadline: rc.SetWriteDeadline, timeout: ep.opts.WriteTimeout, alive: true}
}

// newConnWriter writes straight on a connection the stream took over.
func (ep *Endpoint) newConnWriter(conn net.Conn) *sseWriter {
	return &sseWriter{ep: ep, out: conn, deadline: conn.SetWriteDeadline, timeout: ep.opts.WriteTimeout, alive: true}
}

// start sends the SSE headers of an HTTP response at once.
func (sw *sseWriter) start(w http.ResponseWriter, sessionID string) bool {
	h := w.Header()
	httpx.SetSSEHeaders(h)
	h.Set(httpx.HeaderSessionID, sessionID)
	w.WriteHeader(http.StatusOK)
	return sw.flush()
}

// retryMillis is the reconnection delay sent with priming events.
const retryMillis = 1000

// event writes one event; a priming event (nil data) carries retry:.
func (sw *sseWriter) event(ev event) bool {
	sw.buf = appendEvent(sw.buf[:0], ev)
	return sw.write(sw.buf)
}

// abort makes the connection's writes fail at once, even one blocked on a
// client that stopped reading; it may be called from any goroutine.
func (sw *sseWriter) abort() { _ = sw.deadline(time.Now()) }

func (sw *sseWriter) comment() bool { return sw.write([]byte(": keepalive\n\n")) }

func (sw *sseWriter) write(b []byte) bool {
	if !sw.alive {
		return false
	}
	_ = sw.deadline(time.Now().Add(sw.timeout))
	// Checked after setting the deadline: a kick closes stop before it
	// aborts, so either this sees it or the abort's deadline wins.
	select {
	case <-sw.stop:
		sw.alive = false
		return false
	default:
	}
	n, err := sw.out.Write(b)
	sw.ep.m.BytesOut.Add(float64(n))
	if cap(sw.buf) > 64<<10 {
		sw.buf = nil // one large event does not pin its buffer
	}
	if err != nil {
		sw.alive = false
		return false
	}
	return sw.flush()
}

func (sw *sseWriter) flush() bool {
	if sw.flushFn != nil && sw.flushFn() != nil {
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
