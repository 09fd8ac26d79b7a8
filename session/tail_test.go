package session

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/stelae-bridge/stelae-bridge/dispatch"
	"github.com/stelae-bridge/stelae-bridge/supervisor"
)

// keptTail keeps every entry it is given.
type keptTail struct {
	mu      sync.Mutex
	entries []AccessEntry
}

func (k *keptTail) Access(e AccessEntry) {
	k.mu.Lock()
	k.entries = append(k.entries, e)
	k.mu.Unlock()
}

// TestTailOwnsItsStrings: the tail keeps entries after their POSTs end,
// when each POST's pooled body has been recycled (poisoned under -race,
// reused by the next POST): every string an entry holds must be its own
// copy. It fails if the method, tool name, id or arguments alias the body.
func TestTailOwnsItsStrings(t *testing.T) {
	d := dispatch.New(dispatch.Options{Name: "tail", Launch: func(context.Context) (supervisor.Child, error) { return newEchoChild(), nil }})
	defer d.Close(context.Background())
	tail := &keptTail{}
	ep := NewEndpoint("tail", d, nil, NewLimits(64<<20, 10<<20, 100), nil, Options{
		Logger: hclog.New(&hclog.LoggerOptions{Output: io.Discard, Level: hclog.Info}), LogOutput: io.Discard, Tail: tail, TailBodies: 1 << 10})
	defer ep.Shutdown(context.Background())
	sid := startBenchSession(t, ep, Principal{1, 2, 3, 4})
	post := func(body, sid string) { postTo(ep, body, sid, Principal{1, 2, 3, 4}) }
	// Calls whose names and ids differ but whose bodies are alike, so
	// that each reuses the last one's buffer.
	const n = 40
	for i := range n {
		post(fmt.Sprintf(`{"jsonrpc":"2.0","id":"id-%03d","method":"tools/call","params":{"name":"tool-%03d","arguments":{"n":"%03d"}}}`, i, i, i), sid)
		post(fmt.Sprintf(`{"jsonrpc":"2.0","id":"x-%03d","method":"x/odd-%03d","params":{}}`, i, i), sid)
	}
	tail.mu.Lock()
	defer tail.mu.Unlock()
	if len(tail.entries) != 1+2*n {
		t.Fatalf("%d entries, want %d", len(tail.entries), 1+2*n)
	}
	if e := tail.entries[0]; e.Method != "initialize" || e.Era != EraSession || e.Status != http.StatusOK || e.Destination != "tail" {
		t.Errorf("initialize's entry: %+v", e)
	}
	for i := range n {
		call, odd := tail.entries[1+2*i], tail.entries[2+2*i]
		if call.Method != "tools/call" || call.Tool != fmt.Sprintf("tool-%03d", i) || call.RPCID != fmt.Sprintf(`"id-%03d"`, i) ||
			call.Session != sid[:8] || call.Principal.Short() != "u:01020304" || string(call.Arguments) != fmt.Sprintf(`{"n":"%03d"}`, i) ||
			(call.Result == nil && call.Error == nil) {
			t.Fatalf("call %d's entry changed after its POST: %+v", i, call)
		}
		if odd.Method != fmt.Sprintf("x/odd-%03d", i) || odd.RPCID != fmt.Sprintf(`"x-%03d"`, i) || odd.Tool != "" {
			t.Fatalf("request %d's entry changed after its POST: %+v", i, odd)
		}
	}
}

// TestShrinkBody: a body within the bound is kept whole; a longer object
// keeps its short members and says the size of the others; anything
// else longer is its size only. What it gives is JSON.
func TestShrinkBody(t *testing.T) {
	long := `"` + strings.Repeat("a", 5000) + `"`
	for _, c := range []struct{ in, want string }{
		{`{"a":1}`, `{"a":1}`},
		{`{"a":1,"big":` + long + `,"b":"x"}`, `{"a":1,"big":"[not kept: 5002 bytes]","b":"x"}`},
		{`[` + long + `]`, `"[not kept: 5004 bytes]"`},
		{long, `"[not kept: 5002 bytes]"`},
		{`{"` + strings.Repeat("k", 5000) + `":1}`, `"[not kept: 5006 bytes]"`},
	} {
		got := shrinkBody([]byte(c.in), 100)
		if string(got) != c.want {
			t.Errorf("shrinkBody(%.40s…) = %s; want %s", c.in, got, c.want)
		}
	}
	if shrinkBody(nil, 10) != nil {
		t.Error("nil is kept as something")
	}
	// The bound holds over many short members.
	var b strings.Builder
	b.WriteString("{")
	for i := range 1000 {
		fmt.Fprintf(&b, `"k%d":"%s",`, i, strings.Repeat("v", 100))
	}
	b.WriteString(`"end":1}`)
	if got := shrinkBody([]byte(b.String()), 4096); len(got) > 4096+1000*40 || !json.Valid(got) || !strings.Contains(string(got), `"end":"[not kept: 1 bytes]"`) {
		t.Errorf("many members: %d bytes, valid %v", len(got), json.Valid(got))
	}
}

// FuzzShrinkBody: whatever JSON comes in, JSON comes out, never longer
// than the input's members' keys and markers allow.
func FuzzShrinkBody(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"a":{"b":[1,2,"x"]},"c":"` + strings.Repeat("z", 300) + `"}`, `[1]`, `"s"`, `{}`, `{"a" : 1 , "b":null}`} {
		f.Add([]byte(s), 16)
	}
	f.Fuzz(func(t *testing.T, in []byte, max int) {
		if !json.Valid(in) || max < 0 {
			return
		}
		out := shrinkBody(in, max)
		if !json.Valid(out) {
			t.Fatalf("shrinkBody(%q, %d) = %q: not JSON", in, max, out)
		}
		if len(in) <= max && string(out) != string(in) {
			t.Fatalf("a body within the bound changed: %q → %q", in, out)
		}
	})
}

func TestTraceIDOf(t *testing.T) {
	for h, want := range map[string]string{
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01": "4bf92f3577b34da6a3ce929d0e0e4736",
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01": "",
		"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01": "",
		"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01": "",
		"00-4bf92f3577b34da6a3ce929d0e0e4736":                     "",
		"":                                                        "",
	} {
		if got := traceIDOf(h); got != want {
			t.Errorf("traceIDOf(%q) = %q; want %q", h, got, want)
		}
	}
}
