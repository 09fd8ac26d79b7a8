package session

import (
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/stelae-bridge/stelae-bridge/recycle"
)

// The access log: one line per POST, at info, with the same fields and
// bytes as hclog's text format writes them ("2026-11-24T22:51:27.418Z
// [INFO]  stelae-bridge.http: POST: destination=everything
// mcp_method=tools/list rpc_id=2 status_code=200 latency_ms=2.841
// session=…"), but written without hclog's generic machinery: hclog costs
// about 1.6 µs and 11 allocations a line, which at 25,000 calls/s is a
// tenth of the bridge's throughput. The line is built in a pooled buffer
// with no reflection, the timestamp formatted once per second. A value
// hclog would escape beyond quoting (non-ASCII, control characters), JSON
// output and audit bodies go through hclog itself.

// accessLog writes access lines to the logger's own output.
type accessLog struct {
	out io.Writer
	// head is everything between the timestamp and the fields:
	// " [INFO]  stelae-bridge.http: POST: destination=NAME".
	head string
	// stamp caches the formatted timestamp of the current second.
	stamp atomic.Pointer[timeStamp]
}

type timeStamp struct {
	sec  int64
	text []byte
}

// accessBufs hold the lines being built. Owner: write, from Get until
// its out.Write returns (an io.Writer does not keep what it is given) and
// the buffer goes back, poisoned under -race.
var accessBufs = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

// newAccessLog returns the fast access log for log, which writes text to
// out; nil when it cannot write what log would (JSON, or an implied
// argument it cannot reproduce).
func newAccessLog(log hclog.Logger, out io.Writer, json bool) *accessLog {
	if out == nil || json {
		return nil
	}
	head := append([]byte(" [INFO]  "), log.Name()...)
	head = append(head, ": POST:"...)
	implied := log.ImpliedArgs()
	for i := 0; i+1 < len(implied); i += 2 {
		k, ok1 := implied[i].(string)
		v, ok2 := implied[i+1].(string)
		if !ok1 || !ok2 || v == "" || !plain(v) {
			return nil
		}
		head = append(append(append(append(head, ' '), k...), '='), v...)
	}
	return &accessLog{out: out, head: string(head)}
}

// write writes one POST line; false when a value needs hclog's escaping
// (the caller then logs through hclog).
func (a *accessLog) write(now time.Time, method, rpcID string, status int, latencyMs float64, session string) bool {
	if !quotable(method) || !quotable(rpcID) || !quotable(session) {
		return false
	}
	bp := accessBufs.Get().(*[]byte)
	b := a.appendStamp((*bp)[:0], now)
	b = append(b, a.head...)
	b = appendField(b, " mcp_method=", method)
	b = appendField(b, " rpc_id=", rpcID)
	b = strconv.AppendInt(append(b, " status_code="...), int64(status), 10)
	var fb [32]byte
	b = appendField(b, " latency_ms=", strconv.AppendFloat(fb[:0], latencyMs, 'g', -1, 64))
	if session != "" {
		b = appendField(b, " session=", session)
	}
	b = append(b, '\n')
	_, _ = a.out.Write(b)
	recycle.Poison(b)
	*bp = b[:0]
	accessBufs.Put(bp)
	return true
}

// appendStamp appends now as hclog writes it (hclog.TimeFormat, local
// time). The text is formatted once per second, and its milliseconds are
// written in place: formatting is costly, and the formatter's deep frames
// grew the stack of the goroutine that happened to log first in each new
// millisecond (see session.post on stacks).
func (a *accessLog) appendStamp(b []byte, now time.Time) []byte {
	sec := now.Unix()
	st := a.stamp.Load()
	if st == nil || st.sec != sec {
		st = &timeStamp{sec: sec, text: now.Truncate(time.Second).AppendFormat(make([]byte, 0, len(hclog.TimeFormat)+2), hclog.TimeFormat)}
		a.stamp.Store(st)
	}
	n := len(b)
	b = append(b, st.text...)
	ms := now.Nanosecond() / int(time.Millisecond)
	d := b[n+stampMillis : n+stampMillis+3]
	d[0], d[1], d[2] = byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10)
	return b
}

// stampMillis is where hclog.TimeFormat writes the milliseconds.
const stampMillis = len("2006-01-02T15:04:05.")

// appendField appends key and v as hclog writes a string value: as it is
// when every byte is '-' through '~', "" when empty, else quoted with its
// quotes escaped (v is printable ASCII: quotable).
func appendField[S string | []byte](b []byte, key string, v S) []byte {
	b = append(b, key...)
	switch {
	case len(v) == 0:
		return append(b, `""`...)
	case plain(v):
		return append(b, v...)
	}
	b = append(b, '"')
	for i := 0; i < len(v); i++ {
		if v[i] == '"' {
			b = append(b, '\\')
		}
		b = append(b, v[i])
	}
	return append(b, '"')
}

// plain reports whether hclog writes v unquoted: every byte '-' through '~'.
func plain[S string | []byte](v S) bool {
	for i := 0; i < len(v); i++ {
		if v[i] < 0x2D || v[i] > 0x7E {
			return false
		}
	}
	return true
}

// quotable reports whether v is printable ASCII, which hclog quotes
// without escaping anything but '"'.
func quotable(v string) bool {
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] > 0x7E {
			return false
		}
	}
	return true
}
