//go:build unix

package tests

// A restart with the socket held across, as systemd does for a socket unit: no call fails and no
// client initializes again, an idle connection is answered, the socket stays the bridge's, and
// systemd-socket-activate starts it. socketBridge and heldSocket serve the fleet tests too.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

// socketBridge starts the bridge as systemd starts it for a socket unit:
// the listening socket f as descriptor 3, LISTEN_FDS=1 and LISTEN_PID its
// own pid (a shell sets it, then becomes the bridge).
func socketBridge(t *testing.T, f *os.File, config string, flags ...string) *binaryProc {
	t.Helper()
	args := append([]string{"-c", `LISTEN_PID=$$; export LISTEN_PID; exec "$0" "$@"`, bridgeBinary(t), "-config", config}, flags...)
	cmd := exec.Command("/bin/sh", args...)
	cmd.Env = append(os.Environ(), "LISTEN_FDS=1")
	cmd.ExtraFiles = []*os.File{f}
	return runBinary(t, cmd)
}

// heldSocket is a listening socket on loopback that the test holds, as
// systemd holds a socket unit's: each bridge started on it gets a copy.
func heldSocket(t *testing.T) *os.File {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f, err := ln.(*net.TCPListener).File()
	ln.Close() // f holds the socket
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestNoCallFailsAcrossAHandOver: the bridge restarted as systemd restarts
// a socket-activated service (the socket held across, the old bridge
// stopped with SIGTERM, then the new one started on the same socket and
// state directory) while clients call without pause: the official
// TypeScript SDK client in a 2025 session and the official Go SDK client
// in the 2026-07-28 era, both every 20 ms, and a slow call in flight at
// the SIGTERM. Not one call fails, and no client initializes again: the
// old bridge accepts nothing more and answers what comes on its open
// connections, each answer closing its connection; new connections wait
// in the socket's backlog for the new bridge. (Without the hand-over the
// calls made during the drain are answered 503.)
func TestNoCallFailsAcrossAHandOver(t *testing.T) {
	node := node24(t)
	config := fakeDestinations(t, map[string]string{"fake": fakemcp.ModeServer})
	sock, state := heldSocket(t), t.TempDir()
	flags := []string{"-state-dir", state, "-drain-timeout", "20s"}
	a := socketBridge(t, sock, config, flags...)
	waitFor(t, 10*time.Second, "the bridge to say it listens on systemd's socket", func() bool {
		return strings.Contains(a.logs.String(), "on the socket systemd passed")
	})
	url := a.base + "/fake/mcp"

	ts := make(chan scriptRun, 1)
	go func() {
		ts <- runClientScript(node, "ts-session.mjs", url, "--deadline", "80000", "--repeat", "150", "--pause-ms", "20", "--call", `echo {"text":"ts"}`)
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 80*time.Second)
	defer cancel()
	cs := goSDKSession(t, ctx, url, "stelae-handover-test", 5)
	var (
		mu       sync.Mutex // guards goCalls, goFailed, slowest
		goCalls  int
		goFailed []string
		slowest  time.Duration
	)
	stopGo, goDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(goDone)
		for i := 0; ; i++ {
			select {
			case <-stopGo:
				return
			case <-time.After(20 * time.Millisecond):
			}
			text := fmt.Sprintf("go %d", i)
			start := time.Now()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": text}})
			if err == nil && (res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != text) {
				err = fmt.Errorf("answered %+v", res.Content)
			}
			mu.Lock()
			goCalls++
			slowest = max(slowest, time.Since(start))
			if err != nil {
				goFailed = append(goFailed, fmt.Sprintf("call %d: %v", i, err))
			}
			mu.Unlock()
		}
	}()

	calls := func(p *binaryProc) float64 {
		return scrapeURL(t, p.base)[`stelae_calls_total{destination="fake",outcome="ok"}`]
	}
	waitFor(t, 30*time.Second, "the clients' first calls", func() bool { return calls(a) >= 40 })
	// A call in flight at the SIGTERM: the old bridge drains for as long.
	c := newClient(t, url)
	c.initialize()
	slow := postAsync(c.url, c.sid, toolCallBody(`"slow"`, "slow", map[string]any{"ms": 1500, "text": "finished"}))
	waitCalled(t, c, "slow")
	before := calls(a)
	stopAt := time.Now()
	stopBinary(t, a)
	stopped := time.Since(stopAt)
	b := socketBridge(t, sock, config, flags...)
	serving := time.Since(stopAt)
	if b.base != a.base {
		t.Fatalf("the new bridge listens at %s, not %s", b.base, a.base)
	}
	if res, ok := checkResult(t, "the call in flight at the SIGTERM", awaitAsync(t, "the slow call", slow, 20*time.Second), "", `"slow"`); ok && textOf(res) != "finished" {
		t.Errorf("the call in flight at the SIGTERM answered %s", res)
	}

	run := <-ts
	var s tsSession
	if err := json.Unmarshal([]byte(run.last), &s); err != nil {
		t.Fatalf("ts-session: %v %v\nstdout: %s\nstderr: %s", run.err, err, run.stdout, run.stderr)
	}
	after := calls(b)
	waitFor(t, 30*time.Second, "the Go client's calls to the new bridge", func() bool { return calls(b) >= after+20 })
	close(stopGo)
	<-goDone

	tsFailed := 0
	for i, c := range s.Calls {
		if c.Error != "" || c.Result.IsError || len(c.Result.Content) != 1 || c.Result.Content[0].Text != "ts" {
			tsFailed++
			t.Errorf("TypeScript client, call %d: %s %+v", i, c.Error, c.Result)
		}
	}
	if len(s.Calls) != 150 || !s.OK {
		t.Errorf("TypeScript client: %d calls (want 150), ok %v, failures %v", len(s.Calls), s.OK, s.Failures)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, f := range goFailed {
		t.Errorf("Go client, %s", f)
	}
	if cs.ID() != "" {
		t.Errorf("the Go client has a session (%s): it initialized", cs.ID())
	}
	// Each client's calls: the new bridge answered those after the restart
	// with no initialize (a TypeScript client that initialized again would
	// have failed a call first: it does not on its own).
	t.Logf("TypeScript client: %d calls, %d failed (session %s); Go client: %d calls, %d failed, the slowest %s; the old bridge had answered %v before the SIGTERM and exited %s after it (the slow call's drain), the new one listened %s after it and answered %v",
		len(s.Calls), tsFailed, s.SessionID, goCalls, len(goFailed), slowest.Round(time.Millisecond), before, stopped.Round(time.Millisecond), serving.Round(time.Millisecond), calls(b))
}

// keptConn is one keep-alive HTTP/1.1 connection the test drives itself
// (an http.Client would pick, or retry on, another).
type keptConn struct {
	nc net.Conn
	br *bufio.Reader
}

func dialKept(t *testing.T, base string) *keptConn {
	t.Helper()
	nc, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &keptConn{nc: nc, br: bufio.NewReader(nc)}
}

// do sends a request on the connection and reads its answer; close: the
// answer closes the connection.
func (c *keptConn) do(method, url, sid, body string) (r response, close bool, err error) {
	req, err := newRequest(context.Background(), method, url, sid, body)
	if err != nil {
		return r, false, err
	}
	_ = c.nc.SetDeadline(time.Now().Add(20 * time.Second))
	if err := req.Write(c.nc); err != nil {
		return r, false, err
	}
	resp, err := http.ReadResponse(c.br, req)
	if err != nil {
		return r, false, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: b}, resp.Close, err
}

// TestHandOverAnswersAnIdleConnection: a keep-alive connection that waits,
// idle, when the hand-over begins (no call in flight, so the drain has
// nothing to wait for) is not closed under its client: its next request
// is answered, and the answer closes it. (Closed at once, a request the
// client sent meanwhile is lost, and a client may not retry a POST.)
func TestHandOverAnswersAnIdleConnection(t *testing.T) {
	sock := heldSocket(t)
	a := socketBridge(t, sock, fakeDestinations(t, map[string]string{"fake": fakemcp.ModeServer}), "-state-dir", t.TempDir())
	c := newClient(t, a.base+"/fake/mcp")
	c.initialize()
	calls, probe := dialKept(t, a.base), dialKept(t, a.base)
	echo := func(text string) (response, bool, error) {
		return calls.do(http.MethodPost, c.url, c.sid, toolCallBody(`"`+text+`"`, "echo", map[string]string{"text": text}))
	}
	if r, closed, err := echo("before"); err != nil || r.status != http.StatusOK || closed {
		t.Fatalf("a call before the SIGTERM: %v %d (closes: %v) %s", err, r.status, closed, r.body)
	}
	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// The hand-over has begun once /readyz says draining (on a connection
	// of its own: the bridge accepts no new one).
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, closed, err := probe.do(http.MethodGet, a.base+"/readyz", "", "")
		if err != nil {
			t.Fatalf("/readyz on a kept connection after the SIGTERM: %v", err)
		}
		if r.status == http.StatusServiceUnavailable {
			if !closed {
				t.Errorf("/readyz during the hand-over does not close its connection")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz still says %d %s 10 s after the SIGTERM", r.status, r.body)
		}
	}
	r, closed, err := echo("during")
	if err != nil {
		t.Fatalf("the idle connection's next call during the hand-over: %v", err)
	}
	if res, ok := checkResult(t, "the idle connection's next call", r, "", `"during"`); ok && textOf(res) != "during" {
		t.Errorf("the call during the hand-over answered %s", res)
	}
	if !closed {
		t.Errorf("the answer during the hand-over does not close its connection")
	}
	select {
	case <-a.done:
	case <-time.After(20 * time.Second):
		t.Fatal("the bridge did not exit after the hand-over")
	}
}

// TestSocketFromSystemdStaysWithTheBridge: the socket systemd passes and
// its variables are the bridge's alone: a child has no socket among its
// descriptors (the fake child's, read in /proc) and no LISTEN_* variable
// (server-everything's get-env); and a socket that is not TCP is refused
// at start with what to change.
func TestSocketFromSystemdStaysWithTheBridge(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("no /proc here")
	}
	config := fakeDestinations(t, map[string]string{"fake": fakemcp.ModeServer})
	text, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	text = fmt.Appendf(text, "  everything:\n    command: %q\n", everythingBin(t))
	if err := os.WriteFile(config, text, 0o600); err != nil {
		t.Fatal(err)
	}
	p := socketBridge(t, heldSocket(t), config, "-state-dir", t.TempDir())
	c := newClient(t, p.base+"/fake/mcp")
	c.initialize()
	pid := whoamiCall(t, c).PID
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		if target, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name())); strings.HasPrefix(target, "socket:") {
			t.Errorf("the child (pid %d) has descriptor %s: %s", pid, fd.Name(), target)
		}
	}
	_, env := childEnvironment(t, p.base+"/everything/mcp", "unused")
	for _, name := range []string{"LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"} {
		if v, ok := env[name]; ok {
			t.Errorf("the child sees %s=%s", name, v)
		}
	}

	// A Unix socket: refused at start, naming what to change.
	ln, err := net.Listen("unix", t.TempDir()+"/s")
	if err != nil {
		t.Fatal(err)
	}
	f, err := ln.(*net.UnixListener).File()
	ln.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command("/bin/sh", "-c", `LISTEN_PID=$$; export LISTEN_PID; exec "$0" "$@"`, bridgeBinary(t), "-config", config, "-state-dir", t.TempDir())
	cmd.Env = append(os.Environ(), "LISTEN_FDS=1")
	cmd.ExtraFiles = []*os.File{f}
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "the bridge listens on TCP (ListenStream=PORT or ADDRESS:PORT)") {
		t.Errorf("a Unix socket from systemd: %v\n%s", err, out)
	}
}

// TestSocketActivatedBySystemd: systemd's own implementation of socket
// activation (systemd-socket-activate, from the package CI installs for
// systemd-analyze) starts the bridge on the first connection with the
// socket, and the bridge answers that connection's requests on it.
func TestSocketActivatedBySystemd(t *testing.T) {
	activate := systemdProgram(t, "systemd-socket-activate")
	addr := freeAddr(t)
	config := fakeDestinations(t, map[string]string{"fake": fakemcp.ModeServer})
	cmd := exec.Command(activate, "-l", addr, bridgeBinary(t), "-config", config, "-state-dir", t.TempDir())
	logs := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-done
	})
	// Nothing listens but systemd's tool until the first connection.
	var c *client
	waitFor(t, 10*time.Second, "the activation socket", func() bool {
		nc, err := net.Dial("tcp", addr)
		if err == nil {
			nc.Close()
		}
		return err == nil
	})
	c = newClient(t, "http://"+addr+"/fake/mcp")
	c.initialize()
	echoCall(t, c, `"1"`, "activated")
	waitFor(t, 10*time.Second, "the bridge to say it runs on systemd's socket", func() bool {
		return strings.Contains(logs.String(), "on the socket systemd passed")
	})
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("the bridge did not stop on SIGTERM:\n%s", logs)
	}
}
