package session

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/stelae-bridge/stelae-bridge/jsonrpc"
)

// The tail: what the access log says of each POST, handed to
// Options.Tail as a value the operator console keeps (its live log). It
// carries no bodies: the method, the tool or prompt a call names, the
// JSON-RPC id, status, latency, session and principal — what the access
// log line says, plus whose the call was.

// Tail receives the access entries of an endpoint's POSTs. Access is
// called on the POST's goroutine after it was answered: it must not
// block.
type Tail interface {
	Access(e AccessEntry)
}

// The eras an AccessEntry names.
const (
	EraSession     = "2025"        // a request of a 2025 session (or its initialize)
	EraStateless   = "2026-07-28"  // a stateless request of the 2026-07-28 era
	EraSessionless = "sessionless" // a 2025 request without a session (sessionless: accept)
)

// AccessEntry is one POST as the tail sees it. Every string is its own
// (copied out of the request's pooled body, which is recycled when the
// POST ends): the receiver may keep the entry.
type AccessEntry struct {
	Time        time.Time
	Destination string
	// Era is how the POST was served (EraSession, …); "" for one refused
	// before that was known (a malformed body).
	Era    string
	Method string
	// Tool is the name a tools/call, prompts/get or resources/read names
	// (capped as the log caps values).
	Tool      string
	RPCID     string
	Status    int
	Latency   time.Duration
	Session   string // the session id's first 8 characters, as the console shows it
	Principal Principal
	// User is the operator's name for whose call it was (a named token's
	// or a signed-in user's name; "" when anonymous or unnamed).
	User string
	// Client is the client's "name version": its session's initialize
	// clientInfo, or a 2026-07-28 request's ("" for none).
	Client string
	// Outcome is what became of it: "ok", a JSON-RPC error's code,
	// "tool_error" for an isError result, or the HTTP outcome (the error
	// types of the operation metrics).
	Outcome string
	// TraceID is the W3C trace the request belongs to: its span's with
	// tracing on, else the client's traceparent header's ("" for none).
	TraceID string
	// Arguments, Result and Error are set only with Options.TailBodies:
	// the arguments of a tools/call or prompts/get, the result of one or
	// of a resources/read, and any request's error, each a copy (shrunk,
	// shrinkBody).
	Arguments, Result, Error json.RawMessage
}

// tail hands p's entry to the tail. The message still aliases the POST's
// body here, which goes back to its pool when the POST ends: every string
// is a copy (Go's conversions from bytes copy; jsonrpc.String shares only
// constants), never an unsafe view of the body — TestTailOwnsItsStrings
// fails on one.
func (ep *Endpoint) tail(p *post) {
	rec := &p.rec
	e := AccessEntry{Time: rec.end(), Destination: ep.name, Era: rec.era, Method: field(rec.method), RPCID: field(string(rec.rpcID)),
		Status: rec.status, Latency: rec.end().Sub(p.start), Principal: p.principal, User: field(p.user.Name), Client: rec.client,
		Outcome: rec.errorType(), TraceID: rec.span.TraceID()}
	if e.Outcome == "" {
		e.Outcome = "ok"
	}
	if e.TraceID == "" {
		e.TraceID = traceIDOf(p.traceparent)
	}
	if len(rec.session) >= 8 {
		e.Session = rec.session[:8]
	}
	switch rec.method {
	case "tools/call", "prompts/get":
		e.Tool = field(jsonrpc.String(jsonrpc.Member(p.m.Params, "name")))
	case "resources/read":
		e.Tool = field(jsonrpc.String(jsonrpc.Member(p.m.Params, "uri")))
	}
	if n := ep.opts.TailBodies; n > 0 {
		// A call's arguments and result; any request's error. (What the
		// other methods answer is the server's catalogue, not a user's
		// data: kept, it would be most of the trail.)
		call := rec.method == "tools/call" || rec.method == "prompts/get"
		if call {
			e.Arguments = shrinkBody(jsonrpc.Member(p.m.Params, "arguments"), n)
		}
		if rec.respBody != nil {
			if call || rec.method == "resources/read" {
				e.Result = shrinkBody(jsonrpc.Member(rec.respBody, "result"), n)
			}
			e.Error = shrinkBody(jsonrpc.Member(rec.respBody, "error"), n)
		}
	}
	ep.opts.Tail.Access(e)
}

// keepMember is the longest member value shrinkBody keeps of a body it
// shrinks.
const keepMember = 4 << 10

// shrinkBody returns a copy of body, a JSON value, for an entry to keep: as
// it is when at most max bytes; else, an object, with each member value
// longer than keepMember (and every member once max bytes are kept)
// replaced by a string saying its size; anything else (or an object with
// a key longer than keepMember) by such a string.
// The receiver redacts it: what was replaced is not kept at all. It runs
// in one pass over body, without copying what it drops.
func shrinkBody(body []byte, max int) json.RawMessage {
	switch {
	case body == nil:
		return nil
	case len(body) <= max:
		return bytes.Clone(body)
	case body[0] != '{':
		return notKept(nil, len(body))
	}
	out := make([]byte, 0, min(len(body), max)+64)
	out = append(out, '{')
	whole := true
	jsonrpc.EachMemberRaw(body, func(rawKey []byte, start, end int) bool {
		if len(rawKey) > keepMember {
			whole = false
			return false
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(append(out, rawKey...), ':')
		if v := body[start:end]; len(v) <= keepMember && len(out)+len(v) <= max {
			out = append(out, v...)
		} else {
			out = notKept(out, len(v))
		}
		return true
	})
	if !whole {
		return notKept(out[:0], len(body))
	}
	return append(out, '}')
}

// notKept appends the string that stands for a value of n bytes not kept.
func notKept(b []byte, n int) []byte {
	b = append(b, `"[not kept: `...)
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, ` bytes]"`...)
}

// traceIDOf is the trace id of a W3C traceparent header value
// ("00-<32 hex>-<16 hex>-<2 hex>"), "" when it is not one.
func traceIDOf(h string) string {
	if len(h) < 55 || h[2] != '-' || h[35] != '-' || h[52] != '-' || h[:2] == "ff" {
		return ""
	}
	id := h[3:35]
	zero := true
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return ""
		}
		zero = zero && c == '0'
	}
	if zero {
		return ""
	}
	return strings.Clone(id)
}

// clientLabel is a clientInfo object as "name version", capped as the log
// caps values ("" for none).
func clientLabel(info []byte) string {
	if info == nil {
		return ""
	}
	return field(strings.TrimSpace(jsonrpc.String(jsonrpc.Member(info, "name")) + " " + jsonrpc.String(jsonrpc.Member(info, "version"))))
}
