package session

import (
	"context"
	"github.com/stelae-bridge/stelae-bridge/httpx"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/stelae-bridge/stelae-bridge/dispatch"
	"github.com/stelae-bridge/stelae-bridge/supervisor"
	"github.com/stelae-bridge/stelae-bridge/tests/linear"
)

// TestDroppedBodiesCollect: body buffers dropped past an eighth of the
// body budget start one collection, and the count starts again.
func TestDroppedBodiesCollect(t *testing.T) {
	l := NewLimits(8<<20, 1<<20, 1)
	numGC := func() uint32 {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.NumGC
	}
	before := numGC()
	l.dropped.drop(512 << 10)
	if l.dropped.collecting.Load() {
		t.Fatal("a collection started below the threshold")
	}
	l.dropped.drop(512 << 10) // 1 MiB: an eighth of 8 MiB
	deadline := time.Now().Add(10 * time.Second)
	for numGC() == before || l.dropped.collecting.Load() {
		if time.Now().After(deadline) {
			t.Fatal("no collection ran once the dropped buffers reached the threshold")
		}
		time.Sleep(time.Millisecond)
	}
	if n := l.dropped.bytes.Load(); n != 0 {
		t.Errorf("after the collection the count is %d, want 0", n)
	}
}

// A POST's whole path — the body read, the compaction of a pretty-printed
// body, the parse, the envelope, the dispatcher's rewriting, the answer —
// costs time linear in the body (issue 34: a body of escapes cost time
// quadratic in their number, so one client's 9 MB POST held a core for
// minutes, after the client had gone). TestPostLinear compares the time
// per byte of a call of n bytes with one of 16n through ServeHTTP (the
// least of several runs; over 4× three times fails: a quadratic step gives
// about 16×); BenchmarkPostMaxBody gives the figure for a body of the
// largest size.

// postBodies are call bodies of about n bytes, each heavy in something a
// scanner walks.
var postBodies = map[string]func(n int) string{
	"newlines": func(n int) string { return callWithText(strings.Repeat(`\n`, n/2)) },
	"unicode":  func(n int) string { return callWithText(strings.Repeat(`\u00e9`, n/6)) },
	"quotes":   func(n int) string { return callWithText(strings.Repeat(`\"`, n/2)) },
	// Raw newlines between values: the body is compacted first.
	"pretty": func(n int) string {
		return `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"list":[` + strings.Repeat("1,\n", n/3) + "1]}}}"
	},
	"nested": func(n int) string {
		d := min(n/2, 9000)
		return `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"deep":` + strings.Repeat("[", d) + strings.Repeat("]", d) + `}}}`
	},
}

func callWithText(text string) string {
	return `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + text + `"},"_meta":{"progressToken":"p"}}}`
}

// newCallEndpoint is an endpoint on an in-memory echo child with one
// session; post sends it a call body and fails tb unless it is answered
// 200.
func newCallEndpoint(tb testing.TB, maxBody int64) (post func(body string)) {
	d := dispatch.New(dispatch.Options{Name: "bench", Launch: func(context.Context) (supervisor.Child, error) { return newEchoChild(), nil }})
	tb.Cleanup(func() { d.Close(context.Background()) })
	opts := Options{Logger: hclog.New(&hclog.LoggerOptions{Output: io.Discard, Level: hclog.Info}), LogOutput: io.Discard, MaxBodyBytes: maxBody}
	ep := NewEndpoint("bench", d, nil, NewLimits(4*maxBody, maxBody, 100), nil, opts)
	tb.Cleanup(func() { ep.Shutdown(context.Background()) })
	sid := startBenchSession(tb, ep, Principal{})
	body := &benchBody{}
	r, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/bench/mcp", body)
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set(httpx.HeaderSessionID, sid)
	bw := &benchWriter{h: http.Header{}}
	return func(call string) {
		body.Reset(call)
		r.ContentLength = int64(len(call))
		clear(bw.h)
		bw.status, bw.n = 0, 0
		ep.ServeHTTP(bw, r)
		if bw.status != http.StatusOK || bw.n == 0 {
			tb.Fatalf("call of %d bytes: status %d", len(call), bw.status)
		}
	}
}

func TestPostLinear(t *testing.T) {
	post := newCallEndpoint(t, 10<<20)
	for name, body := range postBodies {
		t.Run(name, func(t *testing.T) {
			n := 4 << 10
			if name == "nested" {
				n = 1 << 10 // 9000 deep at most: 1 KiB to 16 KiB of brackets
			}
			linear.Check(t, "a POST", post, body, n)
		})
	}
}

// BenchmarkPostMaxBody: a call whose body is as large as the default
// -max-body-size allows (10 MiB), all escapes or all pretty-printing,
// through the endpoint (read, compaction, parse, dispatch, answer).
func BenchmarkPostMaxBody(b *testing.B) {
	const maxBody = 10 << 20
	post := newCallEndpoint(b, maxBody)
	for _, name := range []string{"newlines", "unicode", "pretty"} {
		call := postBodies[name](maxBody - 256)
		if len(call) > maxBody {
			b.Fatalf("%s: %d bytes", name, len(call))
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(call)))
			for b.Loop() {
				post(call)
			}
		})
	}
}
