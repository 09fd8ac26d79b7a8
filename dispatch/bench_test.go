package dispatch

import (
	"bytes"
	"context"
	"github.com/stelae-bridge/stelae-bridge/jsonrpc"
	"github.com/stelae-bridge/stelae-bridge/supervisor"
	"testing"
	"time"
)

// memConn is an in-memory echo child for measuring the dispatcher alone: each
// request is answered with an empty result carrying its id.
type memConn struct {
	memPipe
	// modern: it answers server/discover as a child of the 2026-07-28
	// era does (BenchmarkCallModern).
	modern bool
}

func newMemConn() *memConn { return &memConn{memPipe: newMemPipe()} }

// Enqueue is WriteMessage: it does not block either.
func (c *memConn) Enqueue(msg []byte) error { return c.WriteMessage(msg) }

func (c *memConn) WriteMessage(msg []byte) error {
	i := bytes.Index(msg, []byte(`"id":`))
	if i < 0 {
		return nil
	}
	j := i + 5 + bytes.IndexByte(msg[i+5:], ',')
	result := `,"result":{}}`
	if bytes.Contains(msg, []byte(`"initialize"`)) {
		result = `,"result":{"protocolVersion":"2025-06-18"}}`
	}
	if bytes.Contains(msg, []byte(`"server/discover"`)) {
		result = `,"result":{}}`
		if c.modern {
			result = `,"result":{"supportedVersions":["2026-07-28"],"capabilities":{}}}`
		}
	}
	// One allocation, as a child's line read into a buffer would be.
	out := make([]byte, 0, 22+j-i-5+len(result))
	c.lines <- append(append(append(out, `{"jsonrpc":"2.0","id":`...), msg[i+5:j]...), result...)
	return nil
}

func (c *memConn) Stop(context.Context) error { c.crash(); return nil }
func (c *memConn) ExitStatus() string         { return "" }
func (c *memConn) PID() int                   { return 1 }

type nopSession struct{}

func (nopSession) SessionID() string   { return "bench" }
func (nopSession) Deliver([]byte) bool { return true }
func (nopSession) End(error)           {}
func (s nopSession) User() any         { return s }

// BenchmarkCall measures one forwarded call through the dispatcher: id
// rewriting, pending registration, routing of the answer and restoring the
// client's id. The memConn's own allocations (one line per answer) are
// included.
func BenchmarkCall(b *testing.B) { benchCall(b, false) }

// BenchmarkCallModern is BenchmarkCall with a child of the 2026-07-28 era:
// the session's envelope written into each request.
func BenchmarkCallModern(b *testing.B) { benchCall(b, true) }

func benchCall(b *testing.B, modern bool) {
	d := New(Options{Name: "bench", Launch: func(context.Context) (supervisor.Child, error) {
		c := newMemConn()
		c.modern = modern
		return c, nil
	}})
	defer d.Close(context.Background())
	ctx := context.Background()
	params := `{"protocolVersion":"2025-06-18","capabilities":{"sampling":{}},"clientInfo":{"name":"bench","version":"1"}}`
	d.Attach(nopSession{}, []byte(params))
	init, _ := jsonrpc.Parse([]byte(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":` + params + `}`))
	if _, err := d.Do(ctx, nopSession{}, init, time.Second); err != nil {
		b.Fatal(err)
	}
	if d.SpeaksModern() != modern {
		b.Fatalf("the child speaks 2026-07-28: %v", d.SpeaksModern())
	}
	body := []byte(`{"jsonrpc":"2.0","id":"client-7","method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`)
	b.ReportAllocs()
	b.ResetTimer()
	var m jsonrpc.Message
	for i := 0; i < b.N; i++ {
		if err := jsonrpc.ParseInto(body, &m); err != nil {
			b.Fatal(err)
		}
		resp, err := d.Do(ctx, nopSession{}, &m, time.Minute)
		if err != nil || !bytes.HasPrefix(resp, []byte(`{"jsonrpc":"2.0","id":"client-7","result":{}}`)) {
			b.Fatalf("%s %v", resp, err)
		}
	}
}
