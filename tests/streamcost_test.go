//go:build unix

package tests

// What many sessions with idle GET streams cost the bridge, how fast one
// notification reaches them all, and that the memory comes back.

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stelae-bridge/stelae-bridge/bridge"
	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

// rawStream is a GET stream on a bare connection: the least a client can
// hold, so that the figures are the bridge's.
type rawStream struct {
	conn net.Conn
	br   *bufio.Reader
}

func openRawStream(addr, path, sid string) (*rawStream, error) {
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\nMcp-Session-Id: %s\r\n\r\n", path, addr, sid)
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	br := bufio.NewReaderSize(conn, 512)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		conn.Close()
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		conn.Close()
		return nil, fmt.Errorf("GET: %d", resp.StatusCode)
	}
	return &rawStream{conn: conn, br: br}, nil
}

// waitData reads until a line holding want arrives.
func (r *rawStream) waitData(want string, deadline time.Time) error {
	_ = r.conn.SetReadDeadline(deadline)
	for {
		line, err := r.br.ReadString('\n')
		if err != nil {
			return err
		}
		if strings.Contains(line, want) {
			return nil
		}
	}
}

// TestIdleStreamCostAndFanOut opens N sessions (2000; STELAE_TEST_STREAMS
// sets another number) against the binary, each with one idle GET stream,
// and measures the bridge's RSS per session with a stream, the time one
// notification takes to reach every stream, and that the memory comes back
// once the sessions end.
func TestIdleStreamCostAndFanOut(t *testing.T) {
	n := 2000
	if v, err := strconv.Atoi(os.Getenv("STELAE_TEST_STREAMS")); err == nil && v > 0 {
		n = v
	}
	p := startBinary(t, fakeDestinations(t, map[string]string{"fake": fakemcp.ModeServer}), "-max-sessions", strconv.Itoa(n+10), "-max-streams", strconv.Itoa(n+10))
	addr := strings.TrimPrefix(p.base, "http://")
	pid := p.cmd.Process.Pid
	url := p.base + "/fake/mcp"
	first := newClient(t, url)
	first.initialize() // the child runs
	echoCall(t, first, "0", "warm")
	settle := func() int64 {
		// The Go runtime returns memory lazily: take the lowest of a few
		// readings a moment apart.
		low := procStatusBytes(pid, "VmRSS")
		for range 5 {
			time.Sleep(100 * time.Millisecond)
			low = min(low, procStatusBytes(pid, "VmRSS"))
		}
		return low
	}
	base := settle()
	m0 := metricsOf(t, p)

	tr := &http.Transport{MaxIdleConnsPerHost: 8}
	hc := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	sids := make([]string, n)
	streams := make([]*rawStream, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	next := make(chan int)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				c := &client{t: t, url: url, http: hc}
				r, err := c.do(http.MethodPost, initBody)
				if err != nil || r.status != http.StatusOK {
					errs <- fmt.Errorf("initialize %d: %v %d", i, err, r.status)
					continue
				}
				sids[i] = r.header.Get("Mcp-Session-Id")
				st, err := openRawStream(addr, "/fake/mcp", sids[i])
				if err != nil {
					errs <- fmt.Errorf("stream %d: %v", i, err)
					continue
				}
				streams[i] = st
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	tr.CloseIdleConnections()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	defer func() {
		for _, st := range streams {
			if st != nil {
				st.conn.Close()
			}
		}
	}()
	loaded := settle()
	m1 := metricsOf(t, p)
	for _, k := range []string{"go_memstats_heap_inuse_bytes", "go_memstats_stack_inuse_bytes", "go_memstats_heap_alloc_bytes", "go_memstats_sys_bytes", "go_goroutines"} {
		t.Logf("%s: %.0f → %.0f (%.0f per stream)", k, m0[k], m1[k], (m1[k]-m0[k])/float64(n))
	}
	perStream := (loaded - base) / int64(n)
	t.Logf("%d sessions with an idle GET stream: bridge RSS %d → %d MiB, %.1f KiB each", n, base>>20, loaded>>20, float64(perStream)/1024)
	if perStream > 20<<10 {
		t.Errorf("each session with an idle stream costs %.1f KiB of RSS; want at most 20 KiB", float64(perStream)/1024)
	}

	// One notification to every session: time until every stream has it.
	start := time.Now()
	resultOK(t, "notify", first.callTool(`"n"`, "notify", map[string]string{"method": "notifications/resources/list_changed"}))
	deadline := time.Now().Add(30 * time.Second)
	var rwg sync.WaitGroup
	failed := make(chan error, n)
	for i, st := range streams {
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			if err := st.waitData("notifications/resources/list_changed", deadline); err != nil {
				failed <- fmt.Errorf("stream %d: %v", i, err)
			}
		}()
	}
	rwg.Wait()
	fan := time.Since(start)
	close(failed)
	for err := range failed {
		t.Fatal(err)
	}
	t.Logf("one notification reached all %d streams in %s", n, fan.Round(time.Millisecond))
	// Loose bound for a loaded CI machine; the figures are in the log.
	if fan > 5*time.Second {
		t.Errorf("fan-out to %d streams took %s", n, fan)
	}

	// Memory comes back once the streams and sessions end.
	for i, st := range streams {
		st.conn.Close()
		streams[i] = nil
		req, _ := http.NewRequest(http.MethodDelete, url, nil)
		req.Header.Set("Mcp-Session-Id", sids[i])
		if resp, err := hc.Do(req); err == nil {
			resp.Body.Close()
		}
	}
	tr.CloseIdleConnections()
	waitFor(t, 30*time.Second, "the sessions to end", func() bool {
		return metricsOf(t, p)[`stelae_sessions{destination="fake"}`] == 1 && metricsOf(t, p)[`stelae_get_streams{destination="fake"}`] == 0
	})
	// The heap in use comes back near where it started. The runtime frees
	// only when it collects, so keep it allocating (large echo calls) until
	// a collection has run.
	baseHeap := m0["go_memstats_heap_inuse_bytes"]
	var heap float64
	pad := strings.Repeat("x", 64<<10)
	waitFor(t, 60*time.Second, "the bridge's heap in use to come back near its start", func() bool {
		for i := range 32 {
			resultOK(t, "big echo", first.callTool(strconv.Itoa(i), "echo", map[string]string{"text": pad}))
		}
		heap = metricsOf(t, p)["go_memstats_heap_inuse_bytes"]
		// Allowed: what the echo calls use, fragmentation, and the runtime's
		// records of the goroutines that ran (Go keeps them for reuse).
		return heap < baseHeap+4<<20+(m1["go_memstats_heap_inuse_bytes"]-baseHeap)*15/100
	})
	t.Logf("after the sessions ended: heap in use %.1f MiB (started at %.1f MiB, %.1f MiB with the streams)", heap/(1<<20), baseHeap/(1<<20), m1["go_memstats_heap_inuse_bytes"]/(1<<20))
}

// TestStreamsOfOneSession: a notification is logged once for all of a
// session's streams (every stream shows it under the same event id, so a
// session with many streams does not push its own history out of the log),
// and streams are capped per session and for the whole bridge.
func TestStreamsOfOneSession(t *testing.T) {
	b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{opts: bridge.Options{MaxStreamsPerSession: 5, MaxStreams: 6, EventLogSize: 16}})
	c := newClient(t, b.url("fake"))
	c.initialize()
	var sts []*stream
	for range 4 {
		sts = append(sts, c.openStream())
	}
	for i := range 20 {
		resultOK(t, "notify", c.callTool(strconv.Itoa(i), "notify", map[string]string{"method": "notifications/resources/list_changed", "uri": fmt.Sprint(i)}))
	}
	var ids [][]string
	for _, st := range sts {
		var got []string
		for len(got) < 20 {
			select {
			case ev, ok := <-st.events:
				if !ok {
					t.Fatal("a stream closed")
				}
				if len(ev.data) > 0 {
					got = append(got, ev.id)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("a stream got %d of 20 notifications", len(got))
			}
		}
		ids = append(ids, got)
	}
	for i := 1; i < len(ids); i++ {
		if strings.Join(ids[i], ",") != strings.Join(ids[0], ",") {
			t.Fatalf("streams show different event ids:\n%v\n%v", ids[0], ids[i])
		}
	}
	// Resuming from the 10th notification still works with a 16-event log
	// and 4 streams: the notifications were logged once, not 4 times.
	resumed := openSSE(t, http.MethodGet, c.url, c.sid, "", "Last-Event-ID", ids[0][9])
	var replay int
	for replay < 10 {
		ev := resumed.event(t, 5*time.Second)
		if len(ev.data) > 0 {
			replay++
		}
	}
	// A sixth stream of this session (4 open and the resumed one) is over
	// its cap...
	r := mustRequest(t, http.MethodGet, c.url, c.sid, "", "Accept", "text/event-stream")
	checkTransportError(t, "a stream over the per-session cap", r, http.StatusTooManyRequests, 0, "maximum", "streams")
	// ...and another session's second stream is over the bridge's: 6 open.
	other := newClient(t, b.url("fake"))
	other.initialize()
	other.openStream()
	r = mustRequest(t, http.MethodGet, other.url, other.sid, "", "Accept", "text/event-stream")
	checkTransportError(t, "a stream over the bridge's cap", r, http.StatusServiceUnavailable, 0, "maximum", "streams")
	if r.header.Get("Retry-After") == "" {
		t.Errorf("503 without Retry-After")
	}
}
