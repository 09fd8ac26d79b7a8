package session

import (
	"bytes"
	"context"
	"github.com/stelae-bridge/stelae-bridge/httpx"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/stelae-bridge/stelae-bridge/dispatch"
	"github.com/stelae-bridge/stelae-bridge/supervisor"
)

// echoChild is an in-memory child answering each request with an empty
// result under its id, for measuring the endpoint alone.
type echoChild struct {
	lines  chan []byte
	exited chan struct{}
	once   sync.Once
}

func newEchoChild() *echoChild {
	return &echoChild{lines: make(chan []byte, 1024), exited: make(chan struct{})}
}

func (c *echoChild) ReadMessage() ([]byte, error) {
	select {
	case l := <-c.lines:
		return l, nil
	case <-c.exited:
		return nil, io.EOF
	}
}

// Enqueue is WriteMessage: it does not block either.
func (c *echoChild) Enqueue(msg []byte) error { return c.WriteMessage(msg) }

func (c *echoChild) WriteMessage(msg []byte) error {
	i := bytes.Index(msg, []byte(`"id":`))
	if i < 0 {
		return nil
	}
	j := i + 5 + bytes.IndexByte(msg[i+5:], ',')
	result := `,"result":{"content":[{"type":"text","text":"hi"}]}}`
	if bytes.Contains(msg, []byte(`"initialize"`)) {
		result = `,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"mem","version":"1"}}}`
	}
	line := make([]byte, 0, 22+j-i-5+len(result))
	c.lines <- append(append(append(line, `{"jsonrpc":"2.0","id":`...), msg[i+5:j]...), result...)
	return nil
}

func (c *echoChild) Stop(context.Context) error { c.once.Do(func() { close(c.exited) }); return nil }
func (c *echoChild) Exited() <-chan struct{}    { return c.exited }
func (c *echoChild) ExitStatus() string         { return "" }
func (c *echoChild) PID() int                   { return 1 }

// benchWriter is a reusable http.ResponseWriter that keeps nothing.
type benchWriter struct {
	h      http.Header
	status int
	n      int
}

func (w *benchWriter) Header() http.Header { return w.h }
func (w *benchWriter) WriteHeader(s int)   { w.status = s }

// SetReadDeadline and SetWriteDeadline are what net/http's writer offers
// http.ResponseController.
func (w *benchWriter) SetReadDeadline(time.Time) error  { return nil }
func (w *benchWriter) SetWriteDeadline(time.Time) error { return nil }

func (w *benchWriter) Write(b []byte) (int, error) {
	w.n += len(b)
	return len(b), nil
}

// benchBody is a request body read again for every request.
type benchBody struct{ strings.Reader }

func (*benchBody) Close() error { return nil }

// BenchmarkPost measures one 2025 session's tools/call through the
// endpoint (body read, parse, session lookup, dispatch to an in-memory
// child and back, the JSON answer, the access log to io.Discard): its
// allocations are the endpoint's and the dispatcher's, without net/http's.
func BenchmarkPost(b *testing.B) { benchPost(b, nil) }

// BenchmarkPostTail is BenchmarkPost with a tail (the operator
// console's, as cheap a one as it: a locked store in a ring): what the
// console's log costs each POST.
func BenchmarkPostTail(b *testing.B) { benchPost(b, &ringTail{}) }

// ringTail keeps the last 1024 entries, as the console's tail does.
type ringTail struct {
	mu   sync.Mutex
	n    int
	ring [1024]AccessEntry
}

func (r *ringTail) Access(e AccessEntry) {
	r.mu.Lock()
	r.n++
	r.ring[r.n%len(r.ring)] = e
	r.mu.Unlock()
}

// postTo POSTs body to ep on session sid ("" for none) as principal.
func postTo(ep *Endpoint, body, sid string, principal Principal) *benchWriter {
	r, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/"+ep.name+"/mcp", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		r.Header.Set(httpx.HeaderSessionID, sid)
	}
	r = r.WithContext(WithPrincipal(r.Context(), principal))
	w := &benchWriter{h: http.Header{}}
	ep.ServeHTTP(w, r)
	return w
}

// startBenchSession initializes a session of ep for principal and
// returns its id.
func startBenchSession(tb testing.TB, ep *Endpoint, principal Principal) string {
	tb.Helper()
	w := postTo(ep, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"b","version":"1"}}}`, "", principal)
	sid := w.h.Get(httpx.HeaderSessionID)
	if w.status != http.StatusOK || sid == "" {
		tb.Fatalf("initialize: %d", w.status)
	}
	return sid
}

func benchPost(b *testing.B, tail Tail) {
	d := dispatch.New(dispatch.Options{Name: "bench", Launch: func(context.Context) (supervisor.Child, error) { return newEchoChild(), nil }})
	defer d.Close(context.Background())
	opts := Options{Logger: hclog.New(&hclog.LoggerOptions{Output: io.Discard, Level: hclog.Info}), LogOutput: io.Discard}
	if tail != nil {
		opts.Tail = tail
	}
	ep := NewEndpoint("bench", d, nil, NewLimits(64<<20, 10<<20, 100), nil, opts)
	defer ep.Shutdown(context.Background())
	sid := startBenchSession(b, ep, Principal{})
	const call = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`
	body := &benchBody{}
	r, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/bench/mcp", body)
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set(httpx.HeaderSessionID, sid)
	r.ContentLength = int64(len(call))
	bw := &benchWriter{h: http.Header{}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		body.Reset(call)
		clear(bw.h)
		bw.status, bw.n = 0, 0
		ep.ServeHTTP(bw, r)
		if bw.status != http.StatusOK || bw.n == 0 {
			b.Fatalf("call: %d", bw.status)
		}
	}
}
