package bridge

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stelae-bridge/stelae-bridge/config"
	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

// limitClient is one test connection from a chosen loopback address.
type limitClient struct {
	name string
	c    net.Conn
	br   *bufio.Reader
}

// dialFrom connects to addr from the loopback address local (Linux routes
// all of 127.0.0.0/8 to lo: distinct source addresses for the per-address
// share), for the rest of the test, with a 10 s deadline on every read and
// write.
func dialFrom(t testing.TB, addr, local string) *limitClient {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dialing from %s: %v", local, err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	return &limitClient{name: local, c: c, br: bufio.NewReader(c)}
}

// send writes req.
func (lc *limitClient) send(t testing.TB, req string) {
	t.Helper()
	_ = lc.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(lc.c, req); err != nil {
		t.Fatalf("%s: writing: %v", lc.name, err)
	}
}

// answer reads an answer and its body.
func (lc *limitClient) answer(t testing.TB) (*http.Response, string) {
	t.Helper()
	_ = lc.c.SetDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(lc.br, nil)
	if err != nil {
		t.Fatalf("%s: no answer: %v", lc.name, err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s: the answer's body: %v", lc.name, err)
	}
	return resp, string(b)
}

// roundTrip sends a POST of body and wants it echoed: the connection is
// open and served.
func (lc *limitClient) roundTrip(t testing.TB, body string) {
	t.Helper()
	lc.send(t, post("/mcp", body))
	if resp, got := lc.answer(t); resp.StatusCode != 200 || got != body {
		t.Fatalf("%s: answered %d %q, want 200 %q", lc.name, resp.StatusCode, got, body)
	}
}

// closed wants the server to have closed the connection: a read ends
// (EOF or a reset) before its deadline, which only bounds the wait.
func (lc *limitClient) closed(t testing.TB) {
	t.Helper()
	_ = lc.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, err := lc.br.ReadByte()
	switch {
	case err == nil:
		t.Errorf("%s: the connection is open (read %q), want it closed", lc.name, b)
	case errors.Is(err, os.ErrDeadlineExceeded):
		t.Errorf("%s: the connection is still open after 10 s, want it closed", lc.name)
	}
}

// waitIdleSlots waits until n of the connections s counts are idle.
func waitIdleSlots(t testing.TB, s *Server, n int) {
	t.Helper()
	waitIdleIn(t, s.limit, n)
}

// waitIdleIn waits until n of the connections l counts are idle.
func waitIdleIn(t testing.TB, l *connLimit, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := 0
		l.mu.Lock()
		for sl := range l.all.slots {
			if sl.state.Load() == connIdle {
				got++
			}
		}
		l.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d idle connections after 10 s, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitOpen waits until s counts n open connections.
func waitOpen(t testing.TB, s *Server, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for s.limit.Open() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections counted after 10 s, want %d", s.limit.Open(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// withLimit sets a test server's connection limit.
func withLimit(n int) func(*Server) { return func(s *Server) { s.limit = newConnLimit(n) } }

// TestConnLimitClosesTheOldestIdle: with the cap reached by idle
// keep-alive connections (each from an address of its own: the cap, not
// a share), a new connection is served and the one idle longest is
// closed — on the fast path, and on net/http's side (a connection net/http
// answered, waiting for its next request there); the others are
// untouched.
func TestConnLimitClosesTheOldestIdle(t *testing.T) {
	const n = 4
	for _, onStd := range []bool{false, true} {
		t.Run(fmt.Sprintf("oldest on net/http %v", onStd), func(t *testing.T) {
			srv, addr := startTestServer(t, echoHandler(&served{}), withLimit(n), func(s *Server) { s.backAfter = time.Hour })
			var conns []*limitClient
			for i := range n {
				lc := dialFrom(t, addr, fmt.Sprintf("127.0.0.%d", i+1))
				if i == 0 && onStd {
					// A query goes to net/http, which keeps the
					// connection (backAfter) and waits there.
					lc.send(t, post("/mcp?q", "first"))
					if resp, got := lc.answer(t); resp.StatusCode != 200 || got != "first" {
						t.Fatalf("first: %d %q", resp.StatusCode, got)
					}
				} else {
					lc.roundTrip(t, fmt.Sprint(i))
				}
				// In this order: each has been idle longer than the next.
				waitIdleSlots(t, srv, i+1)
				conns = append(conns, lc)
			}
			newest := dialFrom(t, addr, "127.0.0.9")
			newest.roundTrip(t, "newest")
			conns[0].closed(t)
			for i, lc := range conns[1:] {
				lc.roundTrip(t, fmt.Sprint("again ", i))
			}
			if got := srv.limit.evicted[limitTotal].Load(); got != 1 {
				t.Errorf("%d connections closed for room, want 1", got)
			}
			if got := srv.limit.refused[limitTotal].Load() + srv.limit.refused[limitAddress].Load(); got != 0 {
				t.Errorf("%d connections refused, want none", got)
			}
			waitOpen(t, srv, n)
			for _, lc := range append(conns[1:], newest) {
				lc.c.Close()
			}
			waitOpen(t, srv, 0)
		})
	}
}

// holdHandler serves /hold (POST or GET) until release closes, /stream by
// hijacking the connection (as the GET streams do) and writing what
// streamed gets until release, and echoes the rest.
type holdHandler struct {
	release  chan struct{}
	entered  chan string
	streamed chan string
	// wg owns the streams' goroutines.
	wg sync.WaitGroup
}

// startHoldServer serves a holdHandler with the connection limit n; its
// holds are released at the test's end before the server closes (whose
// Close waits for the fast path's handlers).
func startHoldServer(t *testing.T, n int) (*holdHandler, *Server, string) {
	h := &holdHandler{release: make(chan struct{}), entered: make(chan string, 16), streamed: make(chan string)}
	srv, addr := startTestServer(t, h, withLimit(n))
	t.Cleanup(func() {
		select {
		case <-h.release:
		default:
			close(h.release)
		}
		h.wg.Wait()
	})
	return h, srv, addr
}

func (h *holdHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	switch r.URL.Path {
	case "/hold":
		h.entered <- r.Method + " " + string(body)
		<-h.release
		w.Write([]byte("held " + string(body)))
	case "/stream":
		c, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		_ = brw
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n: open\n\n")
		h.wg.Add(1) // before the test hears of it: its Wait comes after
		h.entered <- "stream"
		go func() {
			defer h.wg.Done()
			defer c.Close()
			for {
				select {
				case ev := <-h.streamed:
					io.WriteString(c, "data: "+ev+"\n\n")
				case <-h.release:
					return
				}
			}
		}()
	default:
		w.Write(body)
	}
}

// wait waits for n handlers to have entered.
func (h *holdHandler) wait(t *testing.T, n int) {
	t.Helper()
	for range n {
		select {
		case <-h.entered:
		case <-time.After(10 * time.Second):
			t.Fatal("a held request did not reach its handler")
		}
	}
}

// refused reads a refusal: 503, Retry-After, a JSON-RPC error naming the
// flag to raise, and the connection closed after it.
func (lc *limitClient) refused(t *testing.T, says string) {
	t.Helper()
	resp, body := lc.answer(t)
	var rpc struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &rpc); err != nil || resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !resp.Close ||
		rpc.Error.Code != -32000 || !strings.Contains(rpc.Error.Message, "-max-connections") || !strings.Contains(rpc.Error.Message, says) {
		t.Fatalf("%s: refused with %d %q %q, want 503 with Retry-After, Connection: close and a JSON-RPC error saying %q and naming -max-connections", lc.name, resp.StatusCode, resp.Header, body, says)
	}
	lc.closed(t)
}

// TestConnLimitRefusesWhenNoneIdle: with every connection busy — a POST
// held on the fast path, a GET held by net/http, a hijacked stream — a new
// connection gets 503 at once (while they are still held: nothing waited
// for room) and is closed; the busy ones are untouched and answered.
func TestConnLimitRefusesWhenNoneIdle(t *testing.T) {
	const n = 3
	h, srv, addr := startHoldServer(t, n)
	postHeld := dialFrom(t, addr, "127.0.0.1")
	postHeld.send(t, post("/hold", "p"))
	getHeld := dialFrom(t, addr, "127.0.0.2")
	getHeld.send(t, "GET /hold HTTP/1.1\r\nHost: a\r\n\r\n")
	stream := dialFrom(t, addr, "127.0.0.3")
	stream.send(t, "GET /stream HTTP/1.1\r\nHost: a\r\n\r\n")
	h.wait(t, 3)
	waitOpen(t, srv, n)

	for i := range 3 {
		late := dialFrom(t, addr, fmt.Sprintf("127.0.0.%d", 4+i))
		late.send(t, post("/mcp", "late"))
		late.refused(t, "maximum of 3 open connections")
	}
	if got := srv.limit.refused[limitTotal].Load(); got != 3 {
		t.Errorf("%d refusals counted, want 3", got)
	}
	if got := srv.limit.evicted[limitTotal].Load() + srv.limit.evicted[limitAddress].Load(); got != 0 {
		t.Errorf("%d connections closed for room, want none", got)
	}
	// The bystanders: the stream goes on, the held requests are answered.
	resp, err := http.ReadResponse(stream.br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("the stream's head: %v", err)
	}
	h.streamed <- "after"
	for _, want := range []string{": open", "", "data: after", ""} {
		line, err := stream.br.ReadString('\n')
		if err != nil || strings.TrimRight(line, "\n") != want {
			t.Fatalf("the stream: %q, %v; want %q", line, err, want)
		}
	}
	close(h.release)
	for _, lc := range []*limitClient{postHeld, getHeld} {
		if resp, got := lc.answer(t); resp.StatusCode != 200 || !strings.HasPrefix(got, "held") {
			t.Errorf("%s: the held request got %d %q", lc.name, resp.StatusCode, got)
		}
	}
	stream.closed(t) // its handler's goroutine closed it at the release
	postHeld.c.Close()
	getHeld.c.Close()
	waitOpen(t, srv, 0)
	// Room again: a new connection is served.
	dialFrom(t, addr, "127.0.0.9").roundTrip(t, "room")
}

// TestConnLimitPerAddress: one address holds at most half of the cap.
// At its share, its new connection takes the place of its own connection
// idle longest, not of another address's (idle longer still); with its
// own all busy it is refused, though the cap is not reached and another
// address's connections are idle, which stay untouched.
func TestConnLimitPerAddress(t *testing.T) {
	const n = 6 // a share of 3
	h, srv, addr := startHoldServer(t, n)
	var b []*limitClient
	for i := range 2 {
		lc := dialFrom(t, addr, "127.0.0.2")
		lc.roundTrip(t, fmt.Sprint("b", i))
		waitIdleSlots(t, srv, i+1)
		b = append(b, lc)
	}
	var a []*limitClient
	for i := range 3 {
		lc := dialFrom(t, addr, "127.0.0.1")
		lc.roundTrip(t, fmt.Sprint("a", i))
		waitIdleSlots(t, srv, 3+i)
		a = append(a, lc)
	}
	// 127.0.0.1 at its share: its fourth closes its own oldest, a[0]; the
	// oldest of all, b[0], is another address's.
	a3 := dialFrom(t, addr, "127.0.0.1")
	a3.roundTrip(t, "a3")
	a[0].closed(t)
	for i, lc := range append(b, a[1], a[2]) {
		lc.roundTrip(t, fmt.Sprint("again ", i))
	}
	if got := srv.limit.evicted[limitAddress].Load(); got != 1 {
		t.Errorf("%d connections closed for an address's room, want 1", got)
	}
	// Its three busy, 127.0.0.1 is refused: 5 connections of 6 open, and
	// 127.0.0.2's are idle.
	for i, lc := range []*limitClient{a[1], a[2], a3} {
		lc.send(t, post("/hold", fmt.Sprint(i)))
	}
	h.wait(t, 3)
	a4 := dialFrom(t, addr, "127.0.0.1")
	a4.send(t, post("/mcp", "a4"))
	a4.refused(t, "its share of the bridge's connections, 3")
	if got := srv.limit.refused[limitAddress].Load(); got != 1 {
		t.Errorf("%d refusals for an address's share counted, want 1", got)
	}
	for i, lc := range b {
		lc.roundTrip(t, fmt.Sprint("still ", i))
	}
	// Another address is served meanwhile (the cap not reached).
	dialFrom(t, addr, "127.0.0.3").roundTrip(t, "c")
	close(h.release)
	for _, lc := range []*limitClient{a[1], a[2], a3} {
		if resp, got := lc.answer(t); resp.StatusCode != 200 || !strings.HasPrefix(got, "held") {
			t.Errorf("%s: the held request got %d %q", lc.name, resp.StatusCode, got)
		}
	}
}

// TestConnLimitTLS: a TLS connection, which net/http serves from its
// accept, counts until it closes.
func TestConnLimitTLS(t *testing.T) {
	ts := httptest.NewTLSServer(http.NotFoundHandler()) // for its certificate
	ts.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, addr := startTestServerOn(t, tls.NewListener(ln, &tls.Config{Certificates: ts.TLS.Certificates}), echoHandler(&served{}))
	c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(c, post("/mcp", "tls"))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || bodyOf(t, resp) != "tls" {
		t.Fatalf("over TLS: %v", err)
	}
	waitOpen(t, s, 1)
	c.Close()
	waitOpen(t, s, 0)
}

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
		return post("/a/mcp", body, extra)
	}
	// A session, and a GET stream of it on 127.0.0.1.
	c1 := dialFrom(t, addr, "127.0.0.1")
	c1.send(t, mcpPost(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, ""))
	resp, body := c1.answer(t)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || sid == "" {
		t.Fatalf("initialize: %d %q", resp.StatusCode, body)
	}
	c1.send(t, mcpPost(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, sid))
	if resp, body := c1.answer(t); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("initialized: %d %q", resp.StatusCode, body)
	}
	openStream := func(lc *limitClient) {
		t.Helper()
		lc.send(t, "GET /a/mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\nMcp-Session-Id: "+sid+"\r\n\r\n")
		if resp, err := http.ReadResponse(lc.br, nil); err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s: the GET stream: %v", lc.name, err)
		}
	}
	// keepalive reads c1's stream up to its next keepalive comment: it is
	// open and served.
	keepalive := func(what string) {
		t.Helper()
		_ = c1.c.SetReadDeadline(time.Now().Add(10 * time.Second))
		for {
			line, err := c1.br.ReadString('\n')
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
	c2 := dialFrom(t, addr, "127.0.0.2")
	c2.send(t, mcpPost(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"never","arguments":{}}}`, sid))
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
	c3 := dialFrom(t, addr, "127.0.0.3")
	c3.send(t, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	if resp, body := c3.answer(t); resp.StatusCode != 200 {
		t.Fatalf("/healthz: %d %q", resp.StatusCode, body)
	}
	waitIdleIn(t, b.conns, 1)
	c4 := dialFrom(t, addr, "127.0.0.4")
	openStream(c4)
	c3.closed(t)
	// All three busy: refused, at once (the call is still in flight).
	c5 := dialFrom(t, addr, "127.0.0.5")
	c5.send(t, mcpPost(`{"jsonrpc":"2.0","id":4,"method":"tools/list"}`, sid))
	c5.refused(t, "maximum of 3 open connections")
	keepalive("after the refusal")
	if n := inFlight(); n != 1 {
		t.Errorf("%d calls in flight after the refusal, want 1", n)
	}
	// A stream whose client goes gives its place back.
	c4.c.Close()
	for deadline := time.Now().Add(10 * time.Second); b.conns.Open() != 2; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections counted after 10 s, want 2", b.conns.Open())
		}
	}
	c6 := dialFrom(t, addr, "127.0.0.6")
	c6.send(t, "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
	_, body = c6.answer(t)
	for _, want := range []string{"stelae_connections 3\n", `stelae_connections_evicted_total{limit="max_connections"} 1` + "\n", `stelae_connections_refused_total{limit="max_connections"} 1` + "\n", `stelae_connections_refused_total{limit="per_address"} 0` + "\n"} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, grep(body, "stelae_connections"))
		}
	}
	keepalive("at the end")
}

// fakeConn is a connection admit can count and close: its address only.
type fakeConn struct {
	net.Conn
	remote net.Addr
}

func (c fakeConn) RemoteAddr() net.Addr { return c.remote }
func (c fakeConn) Close() error         { return nil }

// BenchmarkConnLimitAtCap: what a new connection costs the accept loop
// when the cap (the highest default) is reached by idle connections of
// many addresses: the idle longest closed, and the new one counted.
func BenchmarkConnLimitAtCap(b *testing.B) {
	l := newConnLimit(maxConnectionsCeiling)
	conn := func(i int) net.Conn {
		return fakeConn{remote: &net.TCPAddr{IP: net.IPv4(10, byte(i>>16), byte(i>>8), byte(i)), Port: 1}}
	}
	for i := range maxConnectionsCeiling {
		if a := l.admit(conn(i)); a.slot == nil || a.reached {
			b.Fatal("refused below the cap")
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		a := l.admit(conn(maxConnectionsCeiling + i))
		if a.slot == nil || !a.reached {
			b.Fatal("no idle connection was closed")
		}
	}
	b.StopTimer()
	if l.Open() != maxConnectionsCeiling {
		b.Fatalf("%d counted", l.Open())
	}
}

// TestConnLimitOldestIdle: at the cap, the connection closed for room is
// always the one idle longest, though the scan's kept candidates go busy,
// come back idle later, or close between admissions (checked against a
// look at every slot).
func TestConnLimitOldestIdle(t *testing.T) {
	const n = 200
	l := newConnLimit(n)
	conn := func(i int) net.Conn {
		return fakeConn{remote: &net.TCPAddr{IP: net.IPv4(10, 1, byte(i>>8), byte(i)), Port: 1}}
	}
	var slots []*connSlot
	for i := range n {
		slots = append(slots, l.admit(conn(i)).slot)
	}
	clock := time.Now()
	tick := func() time.Time { clock = clock.Add(time.Millisecond); return clock }
	// Idle since a scrambled order; one in three busy.
	for i, s := range slots {
		s.setIdle(l, clock.Add(time.Duration((i*7919)%n)*time.Millisecond))
		if i%3 == 0 {
			s.state.Store(connActive)
		}
	}
	clock = clock.Add(n * time.Millisecond)
	for round := range 400 {
		// Some change between admissions: busy, idle again, closed.
		for k := range 5 {
			s := slots[(round*31+k*17)%len(slots)]
			switch {
			case s.released:
			case k == 4 && round%7 == 0:
				l.release(s)
			case s.state.Load() == connIdle:
				s.state.Store(connActive)
			default:
				s.setIdle(l, tick())
			}
		}
		var want *connSlot
		l.mu.Lock()
		for s := range l.all.slots {
			if s.state.Load() == connIdle && (want == nil || s.idleSince.Load() < want.idleSince.Load()) {
				want = s
			}
		}
		full := len(l.all.slots) == n
		l.mu.Unlock()
		a := l.admit(conn(n + round))
		switch {
		case !full:
			if a.reached {
				t.Fatalf("round %d: below the cap, a limit was reached", round)
			}
		case want == nil:
			if a.slot != nil {
				t.Fatalf("round %d: none idle, and a connection was admitted", round)
			}
		default:
			if want.state.Load() != connClosed || !want.released {
				t.Fatalf("round %d: the one idle longest was not closed for room", round)
			}
		}
		if a.slot != nil {
			a.slot.idleSince.Store(l.since(tick()))
			slots = append(slots, a.slot)
		}
		for _, s := range slots {
			if s.state.Load() == connClosed && !s.released {
				t.Fatalf("round %d: a slot closed for room is still counted", round)
			}
		}
	}
}

// TestAddrKey: what a connection counts against: an IPv4 address (also
// when mapped into IPv6), an IPv6 address's /64.
func TestAddrKey(t *testing.T) {
	key := func(s string) string {
		ap := netip.MustParseAddrPort(s)
		return addrKey(net.TCPAddrFromAddrPort(ap)).String()
	}
	for _, tc := range []struct{ a, b string }{
		{"127.0.0.1:1", "127.0.0.1:2"},
		{"[::ffff:10.0.0.1]:1", "10.0.0.1:2"},
		{"[2001:db8:1:2:aaaa::1]:1", "[2001:db8:1:2:bbbb::9]:2"},
		{"[fe80::1%eth0]:1", "[fe80::2%eth1]:1"},
	} {
		if ka, kb := key(tc.a), key(tc.b); ka != kb {
			t.Errorf("%s counts against %s, %s against %s: want the same", tc.a, ka, tc.b, kb)
		}
	}
	for _, tc := range []struct{ a, b string }{
		{"127.0.0.1:1", "127.0.0.2:1"},
		{"[2001:db8:1:2::1]:1", "[2001:db8:1:3::1]:1"},
	} {
		if key(tc.a) == key(tc.b) {
			t.Errorf("%s and %s count against one address (%s): want two", tc.a, tc.b, key(tc.a))
		}
	}
}
