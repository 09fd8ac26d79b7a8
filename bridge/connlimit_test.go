package bridge

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stelae-bridge/stelae-bridge/config"
	"github.com/stelae-bridge/stelae-bridge/h1/h1test"
	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

// TestBridgeConnectionCap: Options.MaxConnections bounds a bridge's
// connections (Serve's server), counting MCP's own busy ones: GET streams
// of a session (hijacked from net/http) and a call the child never
// answers. An idle keep-alive connection gives its place to a new one;
// with every one busy, a new connection gets 503 while the streams and the
// call go on; a stream the client closes gives its place back. The
// metrics say so.
func TestBridgeConnectionCap(t *testing.T) {
	command, args, env := fakemcp.Command(fakemcp.ModeServer)
	cfg := &config.Config{Names: []string{"a"}, Default: "a", Destinations: map[string]*config.Destination{
		"a": {Name: "a", Command: command, Args: args, Env: env},
	}}
	// Keepalives often, to see the streams served; the call never
	// answered is not waited for at the end.
	b, err := New(cfg, Options{MaxConnections: 3, KeepAlive: 50 * time.Millisecond, DrainTimeout: time.Millisecond, ShutdownTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- b.Serve(ctx, ln) }()
	defer func() {
		cancel()
		select {
		case <-served:
		case <-time.After(30 * time.Second):
			t.Error("Serve did not return")
		}
	}()
	mcpPost := func(body, sid string) string {
		extra := "Accept: application/json, text/event-stream\r\nMcp-Protocol-Version: 2025-06-18\r\n"
		if sid != "" {
			extra += "Mcp-Session-Id: " + sid + "\r\n"
		}
		return h1test.Post("/a/mcp", body, extra)
	}
	// A session, and a GET stream of it on 127.0.0.1.
	c1 := h1test.Dial(t, addr, "127.0.0.1")
	c1.Send(t, mcpPost(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, ""))
	resp, body := c1.Answer(t)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || sid == "" {
		t.Fatalf("initialize: %d %q", resp.StatusCode, body)
	}
	c1.Send(t, mcpPost(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, sid))
	if resp, body := c1.Answer(t); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("initialized: %d %q", resp.StatusCode, body)
	}
	openStream := func(lc *h1test.Client) {
		t.Helper()
		lc.Send(t, "GET /a/mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\nMcp-Session-Id: "+sid+"\r\n\r\n")
		if resp, err := http.ReadResponse(lc.R, nil); err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: the GET stream: %v", lc.Name, err)
		}
	}
	// keepalive reads c1's stream up to its next keepalive comment: it is
	// open and served.
	keepalive := func(what string) {
		t.Helper()
		_ = c1.Conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		for {
			line, err := c1.R.ReadString('\n')
			if err != nil {
				t.Fatalf("%s: the stream: %v", what, err)
			}
			if strings.HasPrefix(line, ":") {
				return
			}
		}
	}
	openStream(c1)
	keepalive("opened")
	// A call the child never answers, on 127.0.0.2.
	c2 := h1test.Dial(t, addr, "127.0.0.2")
	c2.Send(t, mcpPost(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"never","arguments":{}}}`, sid))
	inFlight := func() int {
		n := 0
		for _, s := range b.t().endpoints["a"].Sessions() {
			n += s.Inflight
		}
		return n
	}
	for deadline := time.Now().Add(10 * time.Second); inFlight() != 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the call is not in flight after 10 s")
		}
	}
	// An idle keep-alive connection gives its place to a new one (a
	// second stream).
	c3 := h1test.Dial(t, addr, "127.0.0.3")
	c3.Send(t, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	if resp, body := c3.Answer(t); resp.StatusCode != 200 {
		t.Fatalf("/healthz: %d %q", resp.StatusCode, body)
	}
	for deadline := time.Now().Add(10 * time.Second); b.conns.Idle() != 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d idle connections after 10 s, want 1", b.conns.Idle())
		}
	}
	c4 := h1test.Dial(t, addr, "127.0.0.4")
	openStream(c4)
	c3.Closed(t)
	// All three busy: refused, at once (the call is still in flight).
	c5 := h1test.Dial(t, addr, "127.0.0.5")
	c5.Send(t, mcpPost(`{"jsonrpc":"2.0","id":4,"method":"tools/list"}`, sid))
	c5.Refused(t, "maximum of 3 open connections")
	keepalive("after the refusal")
	if n := inFlight(); n != 1 {
		t.Errorf("%d calls in flight after the refusal, want 1", n)
	}
	// A stream whose client goes gives its place back.
	c4.Conn.Close()
	for deadline := time.Now().Add(10 * time.Second); b.conns.Open() != 2; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections counted after 10 s, want 2", b.conns.Open())
		}
	}
	c6 := h1test.Dial(t, addr, "127.0.0.6")
	c6.Send(t, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	_, body = c6.Answer(t)
	for _, want := range []string{"stelae_connections 3\n", `stelae_connections_evicted_total{limit="max_connections"} 1` + "\n", `stelae_connections_refused_total{limit="max_connections"} 1` + "\n", `stelae_connections_refused_total{limit="per_address"} 0` + "\n"} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, grep(body, "stelae_connections"))
		}
	}
	keepalive("at the end")
}
