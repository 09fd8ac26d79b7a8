package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"strings"
	"time"

	"github.com/stelae-bridge/stelae-bridge/redact"
	"github.com/stelae-bridge/stelae-bridge/session"
)

// record is one line of the trail. Its fields are documented for
// operators in the README ("Audit trail").
type record struct {
	Time string `json:"time"`
	// Event is "call" for an entry, "dropped" for entries the queue had
	// no room for (Dropped counts them).
	Event       string `json:"event"`
	Dropped     uint64 `json:"dropped,omitempty"`
	Destination string `json:"destination,omitempty"`
	Profile     string `json:"profile,omitempty"`
	User        string `json:"user,omitempty"`
	Principal   string `json:"principal,omitempty"`
	Client      string `json:"client,omitempty"`
	Era         string `json:"era,omitempty"`
	Session     string `json:"session,omitempty"`
	Method      string `json:"method,omitempty"`
	Tool        string `json:"tool,omitempty"`
	Prompt      string `json:"prompt,omitempty"`
	URI         string `json:"uri,omitempty"`
	RPCID       string `json:"rpc_id,omitempty"`
	Outcome     string `json:"outcome,omitempty"`
	Status      int    `json:"status,omitempty"`
	// DurationMs is from the POST's arrival to its answer.
	DurationMs float64 `json:"duration_ms,omitempty"`
	TraceID    string  `json:"trace_id,omitempty"`
	// Arguments, Result and Error are redacted JSON (or, longer than
	// MaxBody, a capped string); with Hash, their SHA-256 instead.
	Arguments       json.RawMessage `json:"arguments,omitempty"`
	Result          json.RawMessage `json:"result,omitempty"`
	Error           json.RawMessage `json:"error,omitempty"`
	ArgumentsSHA256 string          `json:"arguments_sha256,omitempty"`
	ResultSHA256    string          `json:"result_sha256,omitempty"`
	ErrorSHA256     string          `json:"error_sha256,omitempty"`
}

// encoder builds lines. Owner: the writer goroutine; buf holds one line
// from entry (or dropped) until the writer's bufio.Writer has copied it,
// before the next line is built.
type encoder struct {
	hash bool
	buf  bytes.Buffer
}

// entry is e's line.
func (c *encoder) entry(e *session.AccessEntry) []byte {
	r := record{Time: stamp(e.Time), Event: "call", Destination: e.Destination, User: e.User, Principal: e.Principal.Short(),
		Client: e.Client, Era: e.Era, Session: e.Session, Method: e.Method, RPCID: e.RPCID, Outcome: e.Outcome, Status: e.Status,
		DurationMs: float64(e.Latency.Microseconds()) / 1000, TraceID: e.TraceID}
	if p, ok := strings.CutPrefix(e.Destination, "p/"); ok {
		r.Destination, r.Profile = "", p
	}
	switch e.Method {
	case "tools/call":
		r.Tool = e.Tool
	case "prompts/get":
		r.Prompt = e.Tool
	case "resources/read":
		r.URI = e.Tool
	}
	if c.hash {
		r.ArgumentsSHA256, r.ResultSHA256, r.ErrorSHA256 = digest(e.Arguments), digest(e.Result), digest(e.Error)
	} else {
		r.Arguments, r.Result, r.Error = body(e.Arguments), body(e.Result), body(e.Error)
	}
	return c.line(&r)
}

// dropped is the line saying n entries were dropped.
func (c *encoder) dropped(n uint64) []byte {
	return c.line(&record{Time: stamp(time.Now()), Event: "dropped", Dropped: n})
}

func (c *encoder) line(r *record) []byte {
	c.buf.Reset()
	enc := json.NewEncoder(&c.buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		// Every field is a string, a number or JSON body checked below:
		// this does not happen; a line still says a call was made.
		c.buf.Reset()
		_ = enc.Encode(record{Time: r.Time, Event: r.Event, Destination: r.Destination, Method: r.Method, Outcome: "unencodable"})
	}
	return c.buf.Bytes()
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// body is b redacted as the log's audit of bodies is: JSON when it fits
// MaxBody, else a capped string.
func body(b []byte) json.RawMessage {
	if b == nil {
		return nil
	}
	text := redact.JSON(b, math.MaxInt)
	if len(text) <= MaxBody && json.Valid([]byte(text)) {
		return json.RawMessage(text)
	}
	s, _ := json.Marshal(redact.Cap(text, MaxBody))
	return s
}

// digest is the SHA-256, in hex, of b redacted: equal bodies hash equal,
// and a secret in them is not in what was hashed (a hash of a short
// secret could be reversed by guessing).
func digest(b []byte) string {
	if b == nil {
		return ""
	}
	sum := sha256.Sum256([]byte(redact.JSON(b, math.MaxInt)))
	return hex.EncodeToString(sum[:])
}
