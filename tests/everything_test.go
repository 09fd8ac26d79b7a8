//go:build unix

package tests

// The official server-everything behind the real binary: ten clients share one child, each gets its
// own progress, and SIGINT leaves no process. everythingBin (which installs the pinned npm
// packages) and startEverything serve the other Node.js tests too.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	npmOnce sync.Once
	npmErr  error
)

// everythingBin is the official reference server, pinned in
// tests/package-lock.json. When it is not installed yet the test installs it
// with `npm ci`, so `go test ./...` runs the whole suite on a fresh machine.
// With -short it skips the test (every Node.js test comes through here).
func everythingBin(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short skips what needs Node.js: the npm servers, the SDK clients, the Inspector and the conformance suites")
	}
	bin, err := filepath.Abs(filepath.Join("node_modules", ".bin", "mcp-server-everything"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		npmOnce.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			out, err := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund", "--loglevel=error").CombinedOutput()
			if err != nil {
				npmErr = fmt.Errorf("npm ci in tests/ failed (this test needs Node.js and npm): %v\n%s", err, out)
			}
		})
		if npmErr != nil {
			t.Fatal(npmErr)
		}
	}
	return bin
}

// startEverything runs the real binary with one destination, everything:
// the official reference server over stdio.
func startEverything(t *testing.T, flags ...string) *binaryProc {
	t.Helper()
	bin := everythingBin(t)
	config := filepath.Join(t.TempDir(), "destinations.yaml")
	if err := os.WriteFile(config, []byte(fmt.Sprintf("destinations:\n  everything:\n    command: %q\n", bin)), 0o600); err != nil {
		t.Fatal(err)
	}
	return startBinary(t, config, flags...)
}

// TestEverythingTenClientsShareOneChild runs the real binary in front of
// @modelcontextprotocol/server-everything over stdio. Ten clients at once
// initialize, list tools, call tools and receive their own progress
// notifications; one child process serves them all; SIGINT leaves no process.
func TestEverythingTenClientsShareOneChild(t *testing.T) {
	p := startEverything(t)
	url := p.base + "/everything/mcp"

	const n = 10
	clients := make([]*client, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range clients {
		clients[i] = newClient(t, url)
	}
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- everythingSession(t, c, i)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if t.Failed() {
		t.Logf("bridge logs:\n%s", p.logs.String())
		return
	}

	// One child tree (the node process) serves all ten sessions.
	var nodes []int
	for _, pid := range descendants(p.cmd.Process.Pid) {
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		// (The child's reaper names the server too; it is not one.)
		if strings.Contains(string(cmdline), "mcp-server-everything") && !strings.Contains(string(cmdline), "__stelae_reaper") {
			nodes = append(nodes, pid)
		}
	}
	if len(nodes) != 1 {
		t.Fatalf("want one server-everything process for %d sessions, found %v", n, nodes)
	}

	tree := descendants(p.cmd.Process.Pid)
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("bridge still running 10s after SIGINT\n%s", p.logs.String())
	}
	if p.err != nil {
		t.Fatalf("bridge exited with %v\n%s", p.err, p.logs.String())
	}
	for _, pid := range tree {
		waitFor(t, 10*time.Second, fmt.Sprintf("process %d gone", pid), func() bool { return !processAlive(pid) })
	}
}

// everythingSession is one client's conversation with server-everything.
func everythingSession(t *testing.T, c *client, i int) error {
	r := c.post(initBody)
	if r.status != 200 {
		return fmt.Errorf("client %d initialize: %d %s", i, r.status, r.body)
	}
	c.sid = r.header.Get("Mcp-Session-Id")
	if r := c.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); r.status != 202 {
		return fmt.Errorf("client %d initialized: %d", i, r.status)
	}
	r = c.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`, i))
	if r.status != 200 || !strings.Contains(string(r.body), `"name":"echo"`) || !strings.HasPrefix(string(r.body), fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,`, i)) {
		return fmt.Errorf("client %d tools/list: %d %.200s", i, r.status, r.body)
	}
	msg := fmt.Sprintf("hello from client %d", i)
	r = c.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":"echo-%d","method":"tools/call","params":{"name":"echo","arguments":{"message":%q}}}`, i, msg))
	if r.status != 200 || !strings.Contains(string(r.body), "Echo: "+msg) || !strings.Contains(string(r.body), fmt.Sprintf(`"id":"echo-%d"`, i)) {
		return fmt.Errorf("client %d echo: %d %s", i, r.status, r.body)
	}

	st := c.openStream()
	token := fmt.Sprintf("progress-%d", i)
	r = c.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"trigger-long-running-operation","arguments":{"duration":1,"steps":2},"_meta":{"progressToken":%q}}}`, token))
	// Progress switches the answer to an SSE stream carrying the call's
	// progress, then its response.
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") {
		return fmt.Errorf("client %d long-running: %d %q %.300s", i, r.status, r.header.Get("Content-Type"), r.body)
	}
	msgs := sseMessages(t, r.body)
	got := 0
	for _, m := range msgs {
		if m.Method != "notifications/progress" {
			continue
		}
		var params struct {
			ProgressToken json.RawMessage `json:"progressToken"`
		}
		json.Unmarshal(m.Params, &params)
		if string(params.ProgressToken) != fmt.Sprintf("%q", token) {
			return fmt.Errorf("client %d got another session's progress: %s", i, m.Params)
		}
		got++
	}
	last := msgs[len(msgs)-1]
	if got != 2 || string(last.ID) != "1" || !strings.Contains(string(last.Result), "Long running operation completed") {
		return fmt.Errorf("client %d: %d progress notifications, last message %+v; want 2 and the tool's result", i, got, last)
	}
	// The call's progress does not leak onto the GET stream.
	deadline := time.After(100 * time.Millisecond)
	for {
		select {
		case ev := <-st.events:
			if strings.Contains(string(ev.data), "notifications/progress") {
				return fmt.Errorf("client %d: progress on the GET stream: %s", i, ev.data)
			}
			continue
		case <-deadline:
		}
		break
	}
	return nil
}
