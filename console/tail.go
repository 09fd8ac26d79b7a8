package console

import (
	"sync"
	"time"

	"github.com/stelae-bridge/stelae-bridge/session"
)

// tailSize is how many access entries the console keeps.
const tailSize = 1000

// Tail keeps the last tailSize access entries of every endpoint and
// counts each destination's POSTs and errors; it is the session.Tail the
// bridge gives its endpoints. Access is the only cost on the call path:
// one short locked store of a value (the entry's strings are its own,
// session.AccessEntry).
type Tail struct {
	// mu guards ring, seq, counts and names.
	mu   sync.Mutex
	ring [tailSize]session.AccessEntry
	seqs [tailSize]uint64
	seq  uint64
	// counts are each destination's POSTs and errors since the start.
	counts map[string]*traffic
	// names are the operator's names of principals (named static tokens),
	// shown instead of their hashes.
	names map[session.Principal]string
}

// Name shows p as name (a named static token's principal).
func (t *Tail) Name(p session.Principal, name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.names == nil {
		t.names = map[session.Principal]string{}
	}
	t.names[p] = name
}

// label is how the page shows p. t.mu must be held.
func (t *Tail) label(p session.Principal) string {
	if n, ok := t.names[p]; ok {
		return n
	}
	return p.Short()
}

type traffic struct{ calls, errors uint64 }

// NewTail returns an empty tail.
func NewTail() *Tail { return &Tail{counts: map[string]*traffic{}} }

// Access records e (session.Tail).
func (t *Tail) Access(e session.AccessEntry) {
	// The audit trail's bodies are not kept here.
	e.Arguments, e.Result, e.Error = nil, nil, nil
	t.mu.Lock()
	t.seq++
	i := t.seq % tailSize
	t.ring[i], t.seqs[i] = e, t.seq
	c := t.counts[e.Destination]
	if c == nil {
		c = &traffic{}
		t.counts[e.Destination] = c
	}
	c.calls++
	if e.Status >= 400 {
		c.errors++
	}
	t.mu.Unlock()
}

// LogEntry is an access entry as the page gets it.
type LogEntry struct {
	Seq         uint64    `json:"seq"`
	Time        time.Time `json:"time"`
	Destination string    `json:"destination"`
	Era         string    `json:"era"`
	Method      string    `json:"method"`
	Tool        string    `json:"tool"`
	RPCID       string    `json:"rpc_id"`
	Status      int       `json:"status"`
	LatencyMs   float64   `json:"latency_ms"`
	Session     string    `json:"session"`
	Principal   string    `json:"principal"`
	// User is the operator's name for the caller (Principal shows it
	// too, for a named token); Client its "name version"; Outcome what
	// became of the call ("ok", an error's code, tool_error, the HTTP
	// outcome); TraceID its trace: the audit trail's fields.
	User    string `json:"user,omitempty"`
	Client  string `json:"client,omitempty"`
	Outcome string `json:"outcome,omitempty"`
	TraceID string `json:"trace_id,omitempty"`
}

// since returns the newest entries after seq, at most limit (and
// tailSize), oldest first, and the newest seq. Only those are copied
// under the lock, which every POST takes: a reader never holds it long.
func (t *Tail) since(seq uint64, limit int) ([]LogEntry, uint64) {
	limit = min(limit, tailSize)
	t.mu.Lock()
	last := t.seq
	first := seq + 1
	if last >= uint64(limit) && first <= last-uint64(limit) {
		first = last - uint64(limit) + 1
	}
	n := 0
	if last >= first {
		n = int(last - first + 1)
	}
	raw, seqs := make([]session.AccessEntry, 0, n), make([]uint64, 0, n)
	for s := first; s <= last; s++ {
		i := s % tailSize
		if t.seqs[i] == s {
			raw, seqs = append(raw, t.ring[i]), append(seqs, s)
		}
	}
	labels := make([]string, len(raw))
	for i, e := range raw {
		labels[i] = t.label(e.Principal)
	}
	t.mu.Unlock()
	out := make([]LogEntry, len(raw))
	for i, e := range raw {
		out[i] = LogEntry{Seq: seqs[i], Time: e.Time, Destination: e.Destination, Era: e.Era, Method: e.Method, Tool: e.Tool, RPCID: e.RPCID,
			Status: e.Status, LatencyMs: float64(e.Latency.Microseconds()) / 1000, Session: e.Session, Principal: labels[i],
			User: e.User, Client: e.Client, Outcome: e.Outcome, TraceID: e.TraceID}
	}
	return out, last
}

// traffic returns each destination's counts.
func (t *Tail) traffic() map[string]traffic {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]traffic, len(t.counts))
	for d, c := range t.counts {
		out[d] = *c
	}
	return out
}
