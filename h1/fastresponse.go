package h1

import (
	"errors"
	"github.com/stelae-bridge/stelae-bridge/httpx"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stelae-bridge/stelae-bridge/recycle"
)

// fastResponse is the ResponseWriter of one fast-path request, part of its
// fastRequest: made for the request, never reused. It answers as net/http's
// does, as a client sees it (FuzzFastResponse holds it to net/http):
//
//   - the head is the header map as it is at WriteHeader (or the first
//     Write or Flush): later changes to the map are not sent;
//   - an answer the handler does not flush goes out in one write when the
//     handler returns, head and body, with a Content-Length (net/http chunks
//     one past 2 KiB; here up to flushAt is held); a flush sends the head and
//     what was written so far, and the rest follows chunked, unless the
//     handler declared a Content-Length;
//   - a declared Content-Length is sent as the handler set it and held to:
//     a Write past it fails with http.ErrContentLength and is not sent, and
//     a handler that wrote less or more than it declared has its connection
//     closed after the answer (net/http: "Did not write enough. Avoid
//     getting out of sync."); an invalid one is dropped;
//   - 1xx answers (but 101) go out at once; 204, 304 and 1xx have no body,
//     Content-Length or Transfer-Encoding (304 no Content-Type); a code
//     without a status text gets net/http's "NNN status code NNN";
//   - Date, and a sniffed Content-Type (unless one is set, even empty, or
//     a Content-Encoding), are added as net/http adds them.
//
// It does not send Transfer-Encoding or Trailer headers set by the
// handler, nor trailers: it frames the body itself.
//
// It supports what http.ResponseController offers except Hijack and read
// deadlines (the body is in memory already). Once the handler has
// returned, every use fails (errAfterReturn) and reaches nothing: the
// connection's next answer is another request's, maybe another user's.
type fastResponse struct {
	fr *fastRequest // its request: mu, done, the connection
	// header is the handler's header map, made for the request.
	header http.Header
	// The fields below are guarded by fr.mu until fr.done; then they are
	// the connection's goroutine's.
	status int // 0 until WriteHeader (a 1xx leaves it 0)
	// declared is the Content-Length the header held at WriteHeader (-1:
	// none, or one net/http would drop); written counts the body bytes the
	// handler wrote, refused ones included, as net/http counts them.
	declared, written int64
	// What the head's end depends on, as of WriteHeader: the handler set a
	// Content-Type (even empty), a Date, a Content-Encoding; sayClose: the
	// head gets a Connection: close of ours (the server is shutting down).
	hasType, hasDate, encoded, sayClose bool
	// sent: the head is complete in out or gone; chunked: the body
	// follows chunked (else as it is, after a Content-Length).
	sent, chunked bool
	closeAfter    bool  // the connection closes after this answer
	deadlineSet   bool  // the handler set a write deadline
	err           error // a write failed: later ones fail too
	// bufs are the answer's buffers from bufsPool, taken at WriteHeader
	// (or a 1xx answer), given back by release; body and out are slices
	// of them (or their growth).
	bufs *answerBufs
	body []byte // written, not yet sent
	out  []byte // what goes out in the next write: the head (at first), framed body
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
	if w.status != 0 {
		return // a second call: net/http logs it and ignores it
	}
	if code < 100 || code > 999 {
		panic("invalid WriteHeader code " + strconv.Itoa(code))
	}
	if code < 200 && code != http.StatusSwitchingProtocols {
		w.interim(code)
		return
	}
	w.status = code
	h := w.header
	w.declared = -1
	if cl := httpx.Header(h, "Content-Length"); cl != "" {
		// As net/http reads it (strconv.ParseInt), and drops it when
		// invalid.
		if v, err := strconv.ParseInt(cl, 10, 64); err == nil && v >= 0 {
			w.declared = v
		} else {
			w.fr.c.s.log.Debug("dropped an invalid Content-Length the handler set", "value", cl, "remote", w.fr.c.remote)
			delete(h, "Content-Length")
		}
	}
	_, w.hasType = h["Content-Type"]
	_, w.hasDate = h["Date"]
	w.encoded = httpx.Header(h, "Content-Encoding") != ""
	w.closeAfter = httpx.Header(h, "Connection") == "close" // exactly, as net/http
	if w.fr.c.s.closing.Load() {
		w.closeAfter, w.sayClose = true, true
	}
	skip := skipFraming
	switch {
	case code == http.StatusNotModified:
		skip |= skipLength | skipType
	case !bodyAllowed(code):
		skip |= skipLength
	}
	if w.sayClose {
		skip |= skipConnection
	}
	w.take()
	w.out = appendStatusLine(w.out, code)
	w.out = appendFields(w.out, h, skip)
}

// interim sends a 1xx answer at once: the header map but Content-Length
// and Transfer-Encoding, as net/http sends it.
func (w *fastResponse) interim(code int) {
	if w.err != nil {
		return
	}
	w.take()
	w.out = appendStatusLine(w.out, code)
	w.out = appendFields(w.out, w.header, skipLength|skipTransferEncoding)
	w.out = append(w.out, "\r\n"...)
	_ = w.write()
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
	if len(p) == 0 {
		return 0, nil
	}
	if !bodyAllowed(w.status) {
		return 0, http.ErrBodyNotAllowed
	}
	w.written += int64(len(p))
	if w.declared >= 0 && w.written > w.declared {
		return 0, http.ErrContentLength
	}
	if w.err != nil {
		return 0, w.err
	}
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
		w.endHead(true)
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
			w.endHead(false)
		}
		w.appendBody()
		if w.chunked {
			w.out = append(w.out, "0\r\n\r\n"...)
		}
		_ = w.write()
	}
	if w.declared >= 0 && w.written != w.declared && bodyAllowed(w.status) {
		// As net/http: "Did not write enough. Avoid getting out of sync."
		// (written counts what was refused: one that wrote too much
		// closes too).
		w.closeAfter = true
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

// endHead appends the end of the head to out (after the status line and
// the handler's fields, which writeHeader appended): Date, a sniffed
// Content-Type, the framing, Connection: close. streaming: more body may
// follow what was written so far.
func (w *fastResponse) endHead(streaming bool) {
	w.sent = true
	if !w.hasDate {
		w.out = append(w.out, "Date: "...)
		w.out = appendDate(w.out)
		w.out = append(w.out, "\r\n"...)
	}
	allowed := bodyAllowed(w.status)
	if allowed && !w.hasType && !w.encoded && len(w.body) > 0 {
		w.out = append(w.out, "Content-Type: "...)
		w.out = append(w.out, http.DetectContentType(w.body)...)
		w.out = append(w.out, "\r\n"...)
	}
	switch {
	case !allowed, w.declared >= 0:
		// No body, or the handler's Content-Length, among its fields.
	case !streaming:
		w.out = append(w.out, "Content-Length: "...)
		w.out = strconv.AppendInt(w.out, int64(len(w.body)), 10)
		w.out = append(w.out, "\r\n"...)
	default:
		w.chunked = true
		w.out = append(w.out, "Transfer-Encoding: chunked\r\n"...)
	}
	if !w.sayClose && w.fr.c.s.closing.Load() {
		// Shutdown began after WriteHeader: a handler's Connection field,
		// if any, is out already; a second one says close.
		w.closeAfter, w.sayClose = true, true
	}
	if w.sayClose {
		w.out = append(w.out, "Connection: close\r\n"...)
	}
	w.out = append(w.out, "\r\n"...)
}

// Fields appendFields leaves out.
const (
	skipTransferEncoding = 1 << iota
	skipTrailer
	skipLength
	skipType
	skipConnection

	skipFraming = skipTransferEncoding | skipTrailer // the fast path frames the body itself
)

// appendFields appends h's fields but those skip names, in key order,
// each value a line, as net/http writes a header map (a name that is not
// a token is dropped; CR and LF in a value become spaces).
func appendFields(b []byte, h http.Header, skip int) []byte {
	var keyArray [16]string
	keys := keyArray[:0]
	for k := range h {
		var bit int
		switch k {
		case "Transfer-Encoding":
			bit = skipTransferEncoding
		case "Trailer":
			bit = skipTrailer
		case "Content-Length":
			bit = skipLength
		case "Content-Type":
			bit = skipType
		case "Connection":
			bit = skipConnection
		}
		if skip&bit == 0 && tokenString(k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range h[k] {
			b = append(b, k...)
			b = append(b, ": "...)
			b = appendFieldValue(b, v)
			b = append(b, "\r\n"...)
		}
	}
	return b
}

// appendStatusLine appends an HTTP/1.1 status line for code, as net/http
// writes it (a code without a status text as "NNN status code NNN").
func appendStatusLine(b []byte, code int) []byte {
	b = append(b, "HTTP/1.1 "...)
	b = strconv.AppendInt(b, int64(code), 10)
	if text := http.StatusText(code); text != "" {
		b = append(b, ' ')
		b = append(b, text...)
	} else {
		b = append(b, " status code "...)
		b = strconv.AppendInt(b, int64(code), 10)
	}
	return append(b, "\r\n"...)
}

// bodyAllowed reports whether a response with status may have a body
// (net/http's bodyAllowedForStatus).
func bodyAllowed(status int) bool {
	switch {
	case status >= 100 && status <= 199:
		return false
	case status == http.StatusNoContent, status == http.StatusNotModified:
		return false
	}
	return true
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
