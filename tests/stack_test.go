//go:build unix

package tests

// The stack a waiting call holds: calls wait on the bridge binary as it ships (no -race), and each
// one's goroutine stack, measured through /metrics, must stay within the runtime's 4 KiB.

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

// TestStackPerWaitingCall pins what the hot path's shape is for (session's
// post, kept off the handler's frames): a call waiting for its answer keeps
// its connection's goroutine's whole stack, from the server's loop down to
// the wait, and that stack must stay within the runtime's 4 KiB (stacks
// double: one frame chain past 4 KiB holds 8 KiB per waiting call). n calls
// wait, each on a connection of the bridge's own server, and the stack
// memory they hold is measured in the bridge's binary as it ships (built
// without -race, whose instrumentation doubles the frames) through its
// /metrics.
func TestStackPerWaitingCall(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	p := startBinary(t, fakeDestinations(t, map[string]string{"fake": fakemcp.ModeServer}))
	c := newClient(t, p.base+"/fake/mcp")
	c.initialize()
	u, err := url.Parse(c.url)
	if err != nil {
		t.Fatal(err)
	}
	const n = 200
	stack := func() int64 { return int64(scrapeURL(t, p.base)["go_memstats_stack_inuse_bytes"]) }
	before := stack()
	conns := make([]net.Conn, 0, n)
	defer func() {
		for _, nc := range conns {
			nc.Close()
		}
	}()
	for i := range n {
		nc, err := net.Dial("tcp", u.Host)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, nc)
		body := toolCallBody(fmt.Sprint(100+i), "never", nil)
		if _, err := io.WriteString(nc, fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Session-Id: %s\r\nMCP-Protocol-Version: 2025-06-18\r\nContent-Length: %d\r\n\r\n%s",
			u.Path, u.Host, c.sid, len(body), body)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 30*time.Second, fmt.Sprintf("the child to have %d calls", n), func() bool {
		got := 0
		for _, name := range c.stats().Calls {
			if name == "never" {
				got++
			}
		}
		return got == n
	})
	after := stack()
	per := (after - before) / n
	t.Logf("%d calls waiting: %d bytes of goroutine stack each (stack in use %d → %d)", n, per, before, after)
	// 4 KiB each or 8 KiB: the line is between them (the goroutines that
	// served the test's own requests, stats and /metrics, and spans the
	// runtime keeps add up to a few hundred bytes per call).
	if per > 6<<10 {
		t.Errorf("each waiting call holds %d bytes of goroutine stack; want at most 4 KiB: a frame on the path from the server's loop to dispatch's Next has grown (see session's post)", per)
	}
	if r := c.must(http.MethodDelete, ""); r.status != http.StatusNoContent {
		t.Errorf("DELETE: %d %s", r.status, r.body)
	}
}
