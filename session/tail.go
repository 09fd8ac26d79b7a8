package session

import (
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
}

// tail hands p's entry to the tail. The message still aliases the POST's
// body here, which goes back to its pool when the POST ends: every string
// is a copy (Go's conversions from bytes copy; jsonrpc.String shares only
// constants), never an unsafe view of the body — TestTailOwnsItsStrings
// fails on one.
func (ep *Endpoint) tail(p *post) {
	rec := &p.rec
	e := AccessEntry{Time: rec.end(), Destination: ep.name, Era: rec.era, Method: field(rec.method), RPCID: field(string(rec.rpcID)),
		Status: rec.status, Latency: rec.end().Sub(p.start), Principal: p.principal}
	if len(rec.session) >= 8 {
		e.Session = rec.session[:8]
	}
	switch rec.method {
	case "tools/call", "prompts/get":
		e.Tool = field(jsonrpc.String(jsonrpc.Member(p.m.Params, "name")))
	case "resources/read":
		e.Tool = field(jsonrpc.String(jsonrpc.Member(p.m.Params, "uri")))
	}
	ep.opts.Tail.Access(e)
}
