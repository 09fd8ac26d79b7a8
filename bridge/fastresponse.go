package bridge

import (
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stelae-bridge/stelae-bridge/recycle"
	"github.com/stelae-bridge/stelae-bridge/session"
)

// fastResponse is the ResponseWriter of one fast-path request, part of its
// fastRequest: made for the request, never reused. An answer the
// handler does not flush goes out in one write (head and body, with
// Content-Length) when the handler returns; a flush sends the head and
// what was written so far, and the rest follows chunked (unless the
// handler set a Content-Length), as net/http does. It supports what
// http.ResponseController offers except Hijack and read deadlines (the
// body is in memory already). Once the handler has returned, every use
// fails (errAfterReturn) and reaches nothing: the connection's next answer
// is another request's, maybe another user's.
type fastResponse struct {
	fr *fastRequest // its request: mu, done, the connection
	// header is the handler's header map, made for the request.
	header http.Header
	// The fields below are guarded by fr.mu until fr.done; then they are
	// the connection's goroutine's.
	status int // 0 until WriteHeader
	// sent: the head is out; chunked: the body follows chunked (else as
	// it is, after the Content-Length the head gave).
	sent, chunked bool
	closeAfter    bool
	deadlineSet   bool
	err           error       // a write failed: later ones fail too
	bufs          *answerBufs // from the pool while a request is served
	body          []byte      // written, not yet sent
	out           []byte      // what goes out in the next write
}

// errAfterReturn is what a use of a fast-path ResponseWriter returns once
// its handler has returned.
var errAfterReturn = errors.New("bridge: ResponseWriter used after its handler returned (the answer was complete; a goroutine that outlives the handler must not keep its ResponseWriter)")

// keepBuffer is the largest buffer returned to the pool.
const keepBuffer = 64 << 10

// flushAt is how much body is held before it goes out without a flush.
const flushAt = 64 << 10

func (w *fastResponse) Header() http.Header { return w.header }

func (w *fastResponse) WriteHeader(code int) {
	fr := w.fr
	fr.mu.Lock()
	defer fr.mu.Unlock()
	if fr.done {
		return
	}
	w.writeHeader(code)
}

// writeHeader is WriteHeader, under fr.mu (or once fr.done).
func (w *fastResponse) writeHeader(code int) {
	if code < 100 || code > 999 {
		panic("invalid WriteHeader code " + strconv.Itoa(code))
	}
	if w.status != 0 || code < 200 {
		return // a second call, or an informational answer: not sent
	}
	w.status = code
}

func (w *fastResponse) Write(p []byte) (int, error) {
	fr := w.fr
	fr.mu.Lock()
	defer fr.mu.Unlock()
	if fr.done {
		return 0, errAfterReturn
	}
	if w.status == 0 {
		w.writeHeader(http.StatusOK)
	}
	if w.err != nil {
		return 0, w.err
	}
	if !bodyAllowed(w.status) {
		return 0, http.ErrBodyNotAllowed
	}
	w.take()
	w.body = append(w.body, p...)
	if len(w.body) >= flushAt {
		if err := w.flush(); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// Flush sends the head and the body so far.
func (w *fastResponse) Flush() { _ = w.FlushError() }

// FlushError is Flush for http.ResponseController.
func (w *fastResponse) FlushError() error {
	fr := w.fr
	fr.mu.Lock()
	defer fr.mu.Unlock()
	if fr.done {
		return errAfterReturn
	}
	if w.status == 0 {
		w.writeHeader(http.StatusOK)
	}
	return w.flush()
}

// flush sends the head and the body so far (status set).
func (w *fastResponse) flush() error {
	if w.err != nil {
		return w.err
	}
	if !w.sent {
		w.appendHead(true)
	}
	w.appendBody()
	return w.write()
}

// SetWriteDeadline sets the connection's write deadline (until the request
// ends).
func (w *fastResponse) SetWriteDeadline(t time.Time) error {
	fr := w.fr
	fr.mu.Lock()
	defer fr.mu.Unlock()
	if fr.done {
		return errAfterReturn
	}
	w.deadlineSet = true
	return fr.c.nc.SetWriteDeadline(t)
}

// SetReadDeadline does nothing: the body is read already.
func (w *fastResponse) SetReadDeadline(time.Time) error { return w.used() }

// EnableFullDuplex does nothing: the body is read already.
func (w *fastResponse) EnableFullDuplex() error { return w.used() }

// used is errAfterReturn once the handler has returned.
func (w *fastResponse) used() error {
	fr := w.fr
	fr.mu.Lock()
	defer fr.mu.Unlock()
	if fr.done {
		return errAfterReturn
	}
	return nil
}

// finish sends what the handler left; false when the connection must
// close. The connection's goroutine calls it once fr.done is set.
func (w *fastResponse) finish() bool {
	if w.status == 0 {
		w.writeHeader(http.StatusOK)
	}
	if w.err == nil {
		if !w.sent {
			w.appendHead(false)
		}
		w.appendBody()
		if w.chunked {
			w.out = append(w.out, "0\r\n\r\n"...)
		}
		_ = w.write()
	}
	if w.deadlineSet {
		_ = w.fr.c.nc.SetWriteDeadline(time.Time{})
	}
	// An idle connection holds no buffers.
	w.release()
	return w.err == nil
}

// answerBufs are the buffers an answer is built in, pooled.
//
// Ownership: a pooled answerBufs is bufsPool's. take hands it to one
// fastResponse, which owns it (under its request's mu while the handler
// runs, then the connection's goroutine) until release gives it back, once
// its last write has returned; nothing else ever refers to it. release
// poisons both buffers (recycle.Poison, under -race), so a reference kept
// past the hand-back reads 0xFE instead of the next user's answer.
type answerBufs struct{ body, out []byte }

var bufsPool = sync.Pool{New: func() any { return &answerBufs{body: make([]byte, 0, 1<<10), out: make([]byte, 0, 2<<10)} }}

// take gives w pooled buffers, unless it has them.
func (w *fastResponse) take() {
	if w.bufs == nil {
		w.bufs = bufsPool.Get().(*answerBufs)
		w.body, w.out = w.bufs.body[:0], w.bufs.out[:0]
	}
}

// release returns w's buffers to the pool, poisoned (unless they grew
// large: then they go to the collector).
func (w *fastResponse) release() {
	if w.bufs == nil {
		return
	}
	if cap(w.body) <= keepBuffer && cap(w.out) <= keepBuffer {
		w.bufs.body, w.bufs.out = w.body[:0], w.out[:0]
		recycle.Poison(w.bufs.body)
		recycle.Poison(w.bufs.out)
		bufsPool.Put(w.bufs)
	}
	w.bufs, w.body, w.out = nil, nil, nil
}

// write writes out.
func (w *fastResponse) write() error {
	if len(w.out) > 0 {
		_, w.err = w.fr.c.nc.Write(w.out)
		w.out = w.out[:0]
	}
	return w.err
}

// appendBody moves the body written so far to out, framed.
func (w *fastResponse) appendBody() {
	if len(w.body) == 0 {
		return
	}
	if w.chunked {
		w.out = strconv.AppendInt(w.out, int64(len(w.body)), 16)
		w.out = append(w.out, "\r\n"...)
		w.out = append(w.out, w.body...)
		w.out = append(w.out, "\r\n"...)
	} else {
		w.out = append(w.out, w.body...)
	}
	w.body = w.body[:0]
}

// appendHead appends the response head to out; streaming: more body may
// follow what was written so far.
func (w *fastResponse) appendHead(streaming bool) {
	w.sent = true
	w.take()
	h := w.header
	w.out = append(w.out, "HTTP/1.1 "...)
	w.out = strconv.AppendInt(w.out, int64(w.status), 10)
	w.out = append(w.out, ' ')
	w.out = append(w.out, http.StatusText(w.status)...)
	w.out = append(w.out, "\r\n"...)
	if _, ok := h["Date"]; !ok {
		w.out = append(w.out, "Date: "...)
		w.out = appendDate(w.out)
		w.out = append(w.out, "\r\n"...)
	}
	if _, ok := h["Content-Type"]; !ok && len(w.body) > 0 {
		w.out = append(w.out, "Content-Type: "...)
		w.out = append(w.out, http.DetectContentType(w.body)...)
		w.out = append(w.out, "\r\n"...)
	}
	if strings.EqualFold(session.Header(h, "Connection"), "close") || w.fr.c.s.closing.Load() {
		w.closeAfter = true
	}
	var keyArray [16]string
	keys := keyArray[:0]
	for k := range h {
		switch k {
		case "Content-Length", "Transfer-Encoding", "Connection", "Trailer":
		default:
			if tokenString(k) {
				keys = append(keys, k)
			}
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range h[k] {
			w.out = append(w.out, k...)
			w.out = append(w.out, ": "...)
			w.out = appendFieldValue(w.out, v)
			w.out = append(w.out, "\r\n"...)
		}
	}
	switch cl := session.Header(h, "Content-Length"); {
	case !bodyAllowed(w.status):
	case !streaming:
		w.out = append(w.out, "Content-Length: "...)
		w.out = strconv.AppendInt(w.out, int64(len(w.body)), 10)
		w.out = append(w.out, "\r\n"...)
	case cl != "":
		w.out = append(w.out, "Content-Length: "...)
		w.out = appendFieldValue(w.out, cl)
		w.out = append(w.out, "\r\n"...)
	default:
		w.chunked = true
		w.out = append(w.out, "Transfer-Encoding: chunked\r\n"...)
	}
	if w.closeAfter {
		w.out = append(w.out, "Connection: close\r\n"...)
	}
	w.out = append(w.out, "\r\n"...)
}

// bodyAllowed reports whether a response with status may have a body.
func bodyAllowed(status int) bool {
	return status != http.StatusNoContent && status != http.StatusNotModified
}

// appendFieldValue appends v with CR and LF made spaces (as net/http does),
// so no value can split the head.
func appendFieldValue(b []byte, v string) []byte {
	if strings.IndexAny(v, "\r\n") < 0 {
		return append(b, v...)
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c == '\r' || c == '\n' {
			c = ' '
		}
		b = append(b, c)
	}
	return b
}

// dateLine is the Date header's value for one second.
type dateLine struct {
	sec int64
	b   []byte
}

var lastDate atomic.Pointer[dateLine]

// appendDate appends the current time in HTTP's format (formatted once a
// second).
func appendDate(b []byte) []byte {
	now := time.Now()
	d := lastDate.Load()
	if d == nil || d.sec != now.Unix() {
		d = &dateLine{sec: now.Unix(), b: now.UTC().AppendFormat(nil, http.TimeFormat)}
		lastDate.Store(d)
	}
	return append(b, d.b...)
}
