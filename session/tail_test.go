package session

import (
	"context"
	"fmt"
	"io"
	"net/http"
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
// copy. It fails if the method, tool name or id alias the body.
func TestTailOwnsItsStrings(t *testing.T) {
	d := dispatch.New(dispatch.Options{Name: "tail", Launch: func(context.Context) (supervisor.Child, error) { return newEchoChild(), nil }})
	defer d.Close(context.Background())
	tail := &keptTail{}
	ep := NewEndpoint("tail", d, nil, NewLimits(64<<20, 10<<20, 100), nil, Options{
		Logger: hclog.New(&hclog.LoggerOptions{Output: io.Discard, Level: hclog.Info}), LogOutput: io.Discard, Tail: tail})
	defer ep.Shutdown(context.Background())
	sid := startBenchSession(t, ep, Principal{1, 2, 3, 4})
	post := func(body, sid string) { postTo(ep, body, sid, Principal{1, 2, 3, 4}) }
	// Calls whose names and ids differ but whose bodies are alike, so
	// that each reuses the last one's buffer.
	const n = 40
	for i := range n {
		post(fmt.Sprintf(`{"jsonrpc":"2.0","id":"id-%03d","method":"tools/call","params":{"name":"tool-%03d","arguments":{}}}`, i, i), sid)
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
			call.Session != sid[:8] || call.Principal.Short() != "u:01020304" {
			t.Fatalf("call %d's entry changed after its POST: %+v", i, call)
		}
		if odd.Method != fmt.Sprintf("x/odd-%03d", i) || odd.RPCID != fmt.Sprintf(`"x-%03d"`, i) || odd.Tool != "" {
			t.Fatalf("request %d's entry changed after its POST: %+v", i, odd)
		}
	}
}
