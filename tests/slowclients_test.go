//go:build unix

package tests

// Slow and large request bodies: bounded in time, memory and connections.

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stelae-bridge/stelae-bridge/bridge"
	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

// attack is one hostile connection: it sends head, then body in pieces with
// pause between them, then stalls; it reports the status the bridge
// answered with (0: none before the deadline).
func attack(addr, head string, body []byte, piece int, pause time.Duration, deadline time.Time) int {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return -1
	}
	defer conn.Close()
	_ = conn.SetDeadline(deadline)
	if _, err := conn.Write([]byte(head)); err != nil {
		return -2
	}
	answered := make(chan int, 1)
	go func() {
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			answered <- 0
			return
		}
		resp.Body.Close()
		answered <- resp.StatusCode
	}()
	for len(body) > 0 {
		n := min(piece, len(body))
		if _, err := conn.Write(body[:n]); err != nil {
			break // the bridge answered and closed
		}
		body = body[n:]
		select {
		case st := <-answered:
			return st
		case <-time.After(pause):
		}
	}
	return <-answered
}

// TestSlowClientAttack runs the campaign's slow-body classes against the
// binary: bodies announced and then trickled, stalled, or large and
// stalled, and chunked bodies oversized or stalled. Every connection is
// answered (408, 413, or 503 when the body budget is spent) and closed
// within the body timeouts, the bridge's memory stays bounded by its body
// budget, and its file descriptors come back.
func TestSlowClientAttack(t *testing.T) {
	p := startBinary(t, fakeDestinations(t, map[string]string{"fake": fakemcp.ModeServer}),
		"-body-idle-timeout", "1s", "-body-timeout", "4s", "-max-body-memory", "24MiB")
	addr := strings.TrimPrefix(p.base, "http://")
	pid := p.cmd.Process.Pid
	c := newClient(t, p.base+"/fake/mcp")
	c.initialize()
	baseFDs, baseRSS := procFDs(pid), procStatusBytes(pid, "VmRSS")

	var peak atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if rss := procStatusBytes(pid, "VmRSS"); rss > peak.Load() {
				peak.Store(rss)
			}
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()

	head := func(length int) string {
		return fmt.Sprintf("POST /fake/mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json\r\nMcp-Session-Id: %s\r\nContent-Length: %d\r\n\r\n", addr, c.sid, length)
	}
	chunked := fmt.Sprintf("POST /fake/mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nMcp-Session-Id: %s\r\nTransfer-Encoding: chunked\r\n\r\n", addr, c.sid)
	big := make([]byte, 10<<20)
	for i := range big {
		big[i] = ' '
	}
	type class struct {
		name   string
		n      int
		head   string
		body   []byte
		piece  int
		pause  time.Duration
		want   []int
		counts map[int]int
	}
	chunk := func(size int) []byte {
		return append([]byte(fmt.Sprintf("%x\r\n", size)), append(big[:size:size], "\r\n"...)...)
	}
	var overChunks []byte
	for range 11 {
		overChunks = append(overChunks, chunk(1<<20)...)
	}
	classes := []*class{
		// 50 bodies announced at 1 MiB and trickled at 10 bytes per 200 ms.
		{name: "slow body", n: 50, head: head(1 << 20), body: big[:1<<20], piece: 10, pause: 200 * time.Millisecond, want: []int{408, 503}},
		// 300 bodies that send 100 bytes of 64 KiB, then stop.
		{name: "stalled body", n: 300, head: head(64 << 10), body: big[:100], piece: 100, pause: time.Millisecond, want: []int{408, 503}},
		// 40 bodies announced at 10 MiB that send 2 MiB fast, then stop:
		// 80 MiB would be held; the 24 MiB budget turns the rest away.
		{name: "large stalled body", n: 40, head: head(10 << 20), body: big[:2<<20], piece: 256 << 10, pause: time.Millisecond, want: []int{408, 503}},
		// Chunked: over the 10 MiB limit, and stalled after one chunk.
		{name: "oversized chunked body", n: 3, head: chunked, body: overChunks, piece: 1 << 20, pause: time.Millisecond, want: []int{413, 503}},
		{name: "stalled chunked body", n: 20, head: chunked, body: chunk(100), piece: 200, pause: time.Millisecond, want: []int{408, 503}},
	}
	start := time.Now()
	deadline := start.Add(60 * time.Second)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, cl := range classes {
		cl.counts = map[int]int{}
		for range cl.n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				st := attack(addr, cl.head, cl.body, cl.piece, cl.pause, deadline)
				mu.Lock()
				cl.counts[st]++
				mu.Unlock()
			}()
		}
	}
	// Meanwhile, a well-behaved client is served.
	echoCall(t, c, "1", "during the attack")
	wg.Wait()
	took := time.Since(start)
	close(stop)
	<-sampled
	for _, cl := range classes {
		for st, n := range cl.counts {
			ok := false
			for _, w := range cl.want {
				ok = ok || st == w
			}
			if !ok {
				t.Errorf("%s: %d connection(s) got status %d (0: no answer before the deadline); want %v", cl.name, n, st, cl.want)
			}
		}
		t.Logf("%s ×%d: %v", cl.name, cl.n, cl.counts)
	}
	// The old bridge held 614 fds and 1.28 GiB after 30 s of this.
	t.Logf("attack answered in %s; bridge RSS %d MiB before, peak %d MiB", took.Round(time.Millisecond), baseRSS>>20, peak.Load()>>20)
	// Live memory is the 24 MiB body budget plus ~430 connections (net/http
	// buffers and goroutine stacks, ~40 KiB each: 16 MiB); with Go's default
	// pacing (GOGC=100) the heap may reach twice what is live before a
	// collection. Measured peaks: 64–93 MiB over base 12. A bridge without
	// the budget held 1.28 GiB.
	if limit := baseRSS + 2*(24<<20+16<<20) + 16<<20; peak.Load() > limit {
		t.Errorf("bridge RSS peaked at %d MiB during the attack; want under %d MiB (twice the 24 MiB body budget and the connections' memory, GC headroom)", peak.Load()>>20, limit>>20)
	}
	waitFor(t, 20*time.Second, "the bridge's file descriptors to come back", func() bool { return procFDs(pid) <= baseFDs+2 })
	echoCall(t, c, "2", "after the attack")
}

// TestBodyLimits: a body over -max-body-size is refused (413) whether its
// length is announced or it comes chunked, and a body that would take the
// body budget past -max-body-memory gets 503 with Retry-After.
func TestBodyLimits(t *testing.T) {
	b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{opts: bridge.Options{
		MaxBodyBytes: 64 << 10, MaxBodyMemory: 100 << 10, BodyIdleTimeout: 5 * time.Second, BodyTimeout: 8 * time.Second,
	}})
	c := newClient(t, b.url("fake"))
	c.initialize()
	addr := b.srv.Listener.Addr().String()
	deadline := time.Now().Add(20 * time.Second)
	pad := strings.Repeat(" ", 70<<10)
	chunkedHead := fmt.Sprintf("POST /fake/mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nMcp-Session-Id: %s\r\nTransfer-Encoding: chunked\r\n\r\n", addr, c.sid)
	over := []byte(fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(pad), pad))
	if st := attack(addr, chunkedHead, over, len(over), time.Millisecond, deadline); st != http.StatusRequestEntityTooLarge {
		t.Errorf("chunked body over the limit: %d, want 413", st)
	}
	announced := fmt.Sprintf("POST /fake/mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nMcp-Session-Id: %s\r\nContent-Length: %d\r\n\r\n", addr, c.sid, 1<<30)
	if st := attack(addr, announced, nil, 1, time.Millisecond, deadline); st != http.StatusRequestEntityTooLarge {
		t.Errorf("a 1 GiB Content-Length: %d, want 413 before any body", st)
	}
	// Two 60 KiB bodies held at once take the 100 KiB budget past its end.
	head := fmt.Sprintf("POST /fake/mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nMcp-Session-Id: %s\r\nContent-Length: %d\r\n\r\n", addr, c.sid, 63<<10)
	first := make(chan int, 1)
	go func() { first <- attack(addr, head, []byte(pad[:60<<10]), 60<<10, time.Millisecond, deadline) }()
	waitFor(t, 10*time.Second, "the first body to be held", func() bool {
		return scrape(t, b)["stelae_request_body_bytes"] >= 60<<10
	})
	if second := attack(addr, head, []byte(pad[:60<<10]), 60<<10, time.Millisecond, deadline); second != http.StatusServiceUnavailable {
		t.Errorf("a second body past the budget: %d, want 503", second)
	}
	if st := <-first; st != http.StatusRequestTimeout {
		t.Errorf("the stalled first body: %d, want 408", st)
	}
	echoCall(t, c, "1", "after the limits")
}

// hostileConn is one connection of TestCombinedSlowAttack, as its client
// sees it.
type hostileConn struct {
	class    string
	start    time.Time
	status   int           // the answer's status (0: none)
	answered time.Duration // since start, when the answer came
	ended    time.Duration // since start, when the bridge closed it (0: not)
	wrote    time.Duration // since start, when the writer was done
}

// runHostile dials addr and runs write on the connection while a reader
// reads the answer and then until the bridge closes the connection; it
// returns when both are done, at deadline at the latest (the connection's
// deadline), and records what the client saw in h.
func runHostile(addr string, h *hostileConn, deadline time.Time, write func(net.Conn, <-chan struct{})) {
	h.start = time.Now()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return
	}
	defer conn.Close()
	_ = conn.SetDeadline(deadline)
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		br := bufio.NewReader(conn)
		if resp, err := http.ReadResponse(br, nil); err == nil {
			h.status, h.answered = resp.StatusCode, time.Since(h.start)
		}
		// Until the bridge closes the connection (EOF or a reset); at the
		// test's deadline, the read's timeout.
		_, err := io.Copy(io.Discard, br)
		if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
			h.ended = time.Since(h.start)
		}
	}()
	write(conn, closed)
	h.wrote = time.Since(h.start)
	<-closed
}

// TestCombinedSlowAttack is issue 21's third attack, bounded: while 50
// slow-header, 50 slow-body and 500 stalled-body connections run, 40 more
// each write 9 MiB of a 10 MiB body in one write and stall. Every hostile
// connection is closed by the bridge for its reason (the header timeout
// for heads, no answer; the body timeouts for bodies, 408; the body budget,
// 503) — held to what the bridge answers, not to a wall clock a busy
// machine lags (the bridge's timeouts are its own tests'), the
// bridge's Go heap stays within the body budget and the connections' own
// memory, its RSS and file descriptors stay bounded and come back, and a
// well-behaved client is served meanwhile.
func TestCombinedSlowAttack(t *testing.T) {
	const (
		budget        = 24 << 20
		bodyTimeout   = 4 * time.Second
		headerTimeout = 10 * time.Second // the bridge's, fixed
		// clientWait is how long each hostile client waits for the
		// bridge to close its connection: three times the longest
		// timeout.
		clientWait = 3 * headerTimeout
	)
	p := startBinary(t, fakeDestinations(t, map[string]string{"fake": fakemcp.ModeServer}),
		"-body-idle-timeout", "1s", "-body-timeout", bodyTimeout.String(), "-max-body-memory", "24MiB")
	addr := strings.TrimPrefix(p.base, "http://")
	pid := p.cmd.Process.Pid
	c := newClient(t, p.base+"/fake/mcp")
	c.initialize()
	metric := func(names ...string) []float64 {
		out := make([]float64, len(names))
		r, err := request(http.MethodGet, p.base+"/metrics", "", "")
		if err != nil {
			return out
		}
		for _, l := range strings.Split(string(r.body), "\n") {
			for i, n := range names {
				if v, ok := strings.CutPrefix(l, n+" "); ok {
					fmt.Sscan(v, &out[i])
				}
			}
		}
		return out
	}
	baseFDs, baseRSS := procFDs(pid), procStatusBytes(pid, "VmRSS")
	baseHeap := metric("go_memstats_heap_inuse_bytes")[0]

	head := func(length int) string {
		return fmt.Sprintf("POST /fake/mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json\r\nMcp-Session-Id: %s\r\nContent-Length: %d\r\n\r\n", addr, c.sid, length)
	}
	// trickle writes first, then b in pieces of n with pause between
	// them, until the connection closes or it is done.
	trickle := func(first string, b []byte, n int, pause time.Duration) func(net.Conn, <-chan struct{}) {
		return func(conn net.Conn, closed <-chan struct{}) {
			b := b // each connection's own
			if _, err := io.WriteString(conn, first); err != nil {
				return
			}
			for len(b) > 0 {
				k := min(n, len(b))
				if _, err := conn.Write(b[:k]); err != nil {
					return
				}
				b = b[k:]
				select {
				case <-closed:
					return
				case <-time.After(pause):
				}
			}
		}
	}
	type class struct {
		name  string
		n     int
		write func(net.Conn, <-chan struct{})
		// answers are the statuses the bridge may answer with (0: none,
		// the connection closed at the header timeout).
		answers []int
	}
	// A body's bytes are counted against the budget as the bridge reads
	// them: once the large bodies fill it, a slow or stalled body whose
	// next bytes come then is refused (503) before its timeout — which
	// of them is a race of the machine's load (a busy CI run saw 9 of 50
	// and 16 of 500), so either answer is the bridge's own, on time.
	classes := []class{
		// A head a byte every 500 ms, never ended.
		{"slow header", 50, trickle("", []byte(strings.TrimSuffix(head(100), "\r\n")), 1, 500*time.Millisecond), []int{0}},
		// A 1 MiB body 10 bytes every 200 ms: the body timeout.
		{"slow body", 50, trickle(head(1<<20), []byte(strings.Repeat(" ", 1<<20)), 10, 200*time.Millisecond), []int{http.StatusRequestTimeout, http.StatusServiceUnavailable}},
		// 100 bytes of 64 KiB, then a stall: the body's idle timeout.
		{"stalled body", 500, trickle(head(64<<10)+strings.Repeat(" ", 100), nil, 1, 0), []int{http.StatusRequestTimeout, http.StatusServiceUnavailable}},
		// 9 MiB of 10 MiB in one write, then a stall (the writer blocks
		// while the bridge does not read): the idle timeout, or the body
		// budget's refusal.
		{"large stalled body", 40, trickle(head(10<<20)+strings.Repeat(" ", 9<<20), nil, 1, 0), []int{http.StatusRequestTimeout, http.StatusServiceUnavailable}},
	}

	var peakHeap, peakBodies, peakRSS, peakFDs atomic.Int64
	stop, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			m := metric("go_memstats_heap_inuse_bytes", "stelae_request_body_bytes")
			for _, s := range []struct {
				peak *atomic.Int64
				v    int64
			}{{&peakHeap, int64(m[0])}, {&peakBodies, int64(m[1])}, {&peakRSS, procStatusBytes(pid, "VmRSS")}, {&peakFDs, int64(procFDs(pid))}} {
				if s.v > s.peak.Load() {
					s.peak.Store(s.v)
				}
			}
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()

	deadline := time.Now().Add(clientWait)
	var conns []*hostileConn
	var wg sync.WaitGroup
	for i, cl := range classes {
		if i == len(classes)-1 {
			// The large bodies come once the others hold their places.
			waitFor(t, 10*time.Second, "the other hostile connections to be accepted", func() bool { return procFDs(pid) >= baseFDs+550 })
		}
		for range cl.n {
			h := &hostileConn{class: cl.name}
			conns = append(conns, h)
			wg.Add(1)
			go func() { defer wg.Done(); runHostile(addr, h, deadline, cl.write) }()
		}
	}
	// Meanwhile, a well-behaved client is served (within the bridge's
	// request timeout: its time is logged, not held to a bound a busy
	// machine misses).
	served := time.Now()
	echoCall(t, c, "1", "during the attack")
	t.Logf("a call during the attack answered in %s", time.Since(served).Round(time.Millisecond))
	wg.Wait()
	close(stop)
	<-sampled

	late := map[string]int{}
	statuses := map[string]map[int]int{}
	slowest, lastAnswer := map[string]time.Duration{}, map[string]time.Duration{}
	for _, h := range conns {
		if statuses[h.class] == nil {
			statuses[h.class] = map[int]int{}
		}
		statuses[h.class][h.status]++
		slowest[h.class] = max(slowest[h.class], h.ended)
		lastAnswer[h.class] = max(lastAnswer[h.class], h.answered)
		for _, cl := range classes {
			// Closed by the bridge, for the reason the class has (the
			// answer its timeout or the budget gives), before the client's
			// own deadline: three times the longest timeout, what a busy
			// machine's lag cannot reach (a bound of the timeout and 3 s
			// of slack failed on a busy 2-core machine).
			if cl.name == h.class && (h.ended == 0 || !slices.Contains(cl.answers, h.status)) {
				late[h.class]++
			}
		}
	}
	for _, cl := range classes {
		t.Logf("%s ×%d: statuses %v, the last answered after %s, closed by the bridge after %s", cl.name, cl.n, statuses[cl.name], lastAnswer[cl.name].Round(time.Millisecond), slowest[cl.name].Round(time.Millisecond))
		if late[cl.name] > 0 {
			t.Errorf("%s: %d of %d connections were not closed by the bridge with one of %v (0: no answer) within %s", cl.name, late[cl.name], cl.n, cl.answers, clientWait)
		}
	}
	// The Go heap: what it held at rest, twice the body budget (the bodies
	// held, and the dropped ones not yet collected: on a busy machine the
	// collection they start lags), and each hostile connection's own
	// (net/http's connection and buffers, its request and the POST's
	// state: 20 KiB measured, 24 allowed), with 8 MiB of slack. Measured:
	// 39–42 MiB on a quiet machine, 55 with two CPU hogs; before the
	// bridge collected dropped body buffers, 60–69 MiB on a quiet one.
	// That the collection runs is TestDroppedBodiesCollect's to hold; this
	// bound holds the heap to the budget's order whatever the load.
	heapLimit := int64(baseHeap) + 2*budget + 640*24<<10 + 8<<20
	t.Logf("bridge heap in use %d MiB at rest, peak %d MiB (bodies held at most %d MiB of the %d MiB budget); RSS %d MiB at rest, peak %d MiB; fds %d at rest, peak %d",
		int64(baseHeap)>>20, peakHeap.Load()>>20, peakBodies.Load()>>20, budget>>20, baseRSS>>20, peakRSS.Load()>>20, baseFDs, peakFDs.Load())
	if peakHeap.Load() > heapLimit {
		t.Errorf("the bridge's Go heap in use peaked at %d MiB; want at most %d MiB (at rest, twice the %d MiB body budget, 24 KiB per connection, 8 MiB)", peakHeap.Load()>>20, heapLimit>>20, budget>>20)
	}
	if limit := baseRSS + 2*heapLimit; peakRSS.Load() > limit {
		t.Errorf("bridge RSS peaked at %d MiB; want under %d MiB", peakRSS.Load()>>20, limit>>20)
	}
	if limit := int64(baseFDs + 640 + 10); peakFDs.Load() > limit {
		t.Errorf("bridge fds peaked at %d; want at most %d (one per connection)", peakFDs.Load(), limit)
	}
	waitFor(t, 10*time.Second, "the bridge's file descriptors to come back", func() bool { return procFDs(pid) <= baseFDs+2 })
	echoCall(t, c, "2", "after the attack")
}
