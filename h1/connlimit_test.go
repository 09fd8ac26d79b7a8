package h1

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"github.com/stelae-bridge/stelae-bridge/h1/h1test"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"
)

// waitIdleSlots waits until n of the connections s counts are idle.
func waitIdleSlots(t testing.TB, s *Server, n int) {
	t.Helper()
	waitIdleIn(t, s.limit, n)
}

// waitIdleIn waits until n of the connections l counts are idle.
func waitIdleIn(t testing.TB, l *ConnLimit, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for got := l.Idle(); got != n; got = l.Idle() {
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
func withLimit(n int) func(*Server) { return func(s *Server) { s.limit = NewConnLimit(n) } }

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
			var conns []*h1test.Client
			for i := range n {
				lc := h1test.Dial(t, addr, fmt.Sprintf("127.0.0.%d", i+1))
				if i == 0 && onStd {
					// A query goes to net/http, which keeps the
					// connection (backAfter) and waits there.
					lc.Send(t, h1test.Post("/mcp?q", "first"))
					if resp, got := lc.Answer(t); resp.StatusCode != 200 || got != "first" {
						t.Fatalf("first: %d %q", resp.StatusCode, got)
					}
				} else {
					roundTrip(t, lc, fmt.Sprint(i))
				}
				// In this order: each has been idle longer than the next.
				waitIdleSlots(t, srv, i+1)
				conns = append(conns, lc)
			}
			newest := h1test.Dial(t, addr, "127.0.0.9")
			roundTrip(t, newest, "newest")
			conns[0].Closed(t)
			for i, lc := range conns[1:] {
				roundTrip(t, lc, fmt.Sprint("again ", i))
			}
			if got := srv.limit.evicted[limitTotal].Load(); got != 1 {
				t.Errorf("%d connections closed for room, want 1", got)
			}
			if got := srv.limit.refused[limitTotal].Load() + srv.limit.refused[limitAddress].Load(); got != 0 {
				t.Errorf("%d connections refused, want none", got)
			}
			waitOpen(t, srv, n)
			for _, lc := range append(conns[1:], newest) {
				lc.Conn.Close()
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

// TestConnLimitRefusesWhenNoneIdle: with every connection busy — a POST
// held on the fast path, a GET held by net/http, a hijacked stream — a new
// connection gets 503 at once (while they are still held: nothing waited
// for room) and is closed; the busy ones are untouched and answered.
func TestConnLimitRefusesWhenNoneIdle(t *testing.T) {
	const n = 3
	h, srv, addr := startHoldServer(t, n)
	postHeld := h1test.Dial(t, addr, "127.0.0.1")
	postHeld.Send(t, h1test.Post("/hold", "p"))
	getHeld := h1test.Dial(t, addr, "127.0.0.2")
	getHeld.Send(t, "GET /hold HTTP/1.1\r\nHost: a\r\n\r\n")
	stream := h1test.Dial(t, addr, "127.0.0.3")
	stream.Send(t, "GET /stream HTTP/1.1\r\nHost: a\r\n\r\n")
	h.wait(t, 3)
	waitOpen(t, srv, n)

	for i := range 3 {
		late := h1test.Dial(t, addr, fmt.Sprintf("127.0.0.%d", 4+i))
		late.Send(t, h1test.Post("/mcp", "late"))
		late.Refused(t, "maximum of 3 open connections")
	}
	if got := srv.limit.refused[limitTotal].Load(); got != 3 {
		t.Errorf("%d refusals counted, want 3", got)
	}
	if got := srv.limit.evicted[limitTotal].Load() + srv.limit.evicted[limitAddress].Load(); got != 0 {
		t.Errorf("%d connections closed for room, want none", got)
	}
	// The bystanders: the stream goes on, the held requests are answered.
	resp, err := http.ReadResponse(stream.R, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("the stream's head: %v", err)
	}
	h.streamed <- "after"
	for _, want := range []string{": open", "", "data: after", ""} {
		line, err := stream.R.ReadString('\n')
		if err != nil || strings.TrimRight(line, "\n") != want {
			t.Fatalf("the stream: %q, %v; want %q", line, err, want)
		}
	}
	close(h.release)
	for _, lc := range []*h1test.Client{postHeld, getHeld} {
		if resp, got := lc.Answer(t); resp.StatusCode != 200 || !strings.HasPrefix(got, "held") {
			t.Errorf("%s: the held request got %d %q", lc.Name, resp.StatusCode, got)
		}
	}
	stream.Closed(t) // its handler's goroutine closed it at the release
	postHeld.Conn.Close()
	getHeld.Conn.Close()
	waitOpen(t, srv, 0)
	// Room again: a new connection is served.
	roundTrip(t, h1test.Dial(t, addr, "127.0.0.9"), "room")
}

// TestConnLimitPerAddress: one address holds at most half of the cap.
// At its share, its new connection takes the place of its own connection
// idle longest, not of another address's (idle longer still); with its
// own all busy it is refused, though the cap is not reached and another
// address's connections are idle, which stay untouched.
func TestConnLimitPerAddress(t *testing.T) {
	const n = 6 // a share of 3
	h, srv, addr := startHoldServer(t, n)
	var b []*h1test.Client
	for i := range 2 {
		lc := h1test.Dial(t, addr, "127.0.0.2")
		roundTrip(t, lc, fmt.Sprint("b", i))
		waitIdleSlots(t, srv, i+1)
		b = append(b, lc)
	}
	var a []*h1test.Client
	for i := range 3 {
		lc := h1test.Dial(t, addr, "127.0.0.1")
		roundTrip(t, lc, fmt.Sprint("a", i))
		waitIdleSlots(t, srv, 3+i)
		a = append(a, lc)
	}
	// 127.0.0.1 at its share: its fourth closes its own oldest, a[0]; the
	// oldest of all, b[0], is another address's.
	a3 := h1test.Dial(t, addr, "127.0.0.1")
	roundTrip(t, a3, "a3")
	a[0].Closed(t)
	for i, lc := range append(b, a[1], a[2]) {
		roundTrip(t, lc, fmt.Sprint("again ", i))
	}
	if got := srv.limit.evicted[limitAddress].Load(); got != 1 {
		t.Errorf("%d connections closed for an address's room, want 1", got)
	}
	// Its three busy, 127.0.0.1 is refused: 5 connections of 6 open, and
	// 127.0.0.2's are idle.
	for i, lc := range []*h1test.Client{a[1], a[2], a3} {
		lc.Send(t, h1test.Post("/hold", fmt.Sprint(i)))
	}
	h.wait(t, 3)
	a4 := h1test.Dial(t, addr, "127.0.0.1")
	a4.Send(t, h1test.Post("/mcp", "a4"))
	a4.Refused(t, "its share of the bridge's connections, 3")
	if got := srv.limit.refused[limitAddress].Load(); got != 1 {
		t.Errorf("%d refusals for an address's share counted, want 1", got)
	}
	for i, lc := range b {
		roundTrip(t, lc, fmt.Sprint("still ", i))
	}
	// Another address is served meanwhile (the cap not reached).
	roundTrip(t, h1test.Dial(t, addr, "127.0.0.3"), "c")
	close(h.release)
	for _, lc := range []*h1test.Client{a[1], a[2], a3} {
		if resp, got := lc.Answer(t); resp.StatusCode != 200 || !strings.HasPrefix(got, "held") {
			t.Errorf("%s: the held request got %d %q", lc.Name, resp.StatusCode, got)
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
	io.WriteString(c, h1test.Post("/mcp", "tls"))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || bodyOf(t, resp) != "tls" {
		t.Fatalf("over TLS: %v", err)
	}
	waitOpen(t, s, 1)
	c.Close()
	waitOpen(t, s, 0)
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
	l := NewConnLimit(maxConnectionsCeiling)
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
	l := NewConnLimit(n)
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

// roundTrip sends a POST of body and wants it echoed: the connection is
// open and served.
func roundTrip(t testing.TB, lc *h1test.Client, body string) {
	t.Helper()
	lc.Send(t, h1test.Post("/mcp", body))
	if resp, got := lc.Answer(t); resp.StatusCode != 200 || got != body {
		t.Fatalf("%s: answered %d %q, want 200 %q", lc.Name, resp.StatusCode, got, body)
	}
}
