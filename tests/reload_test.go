//go:build unix

package tests

// Reloading the destinations file (SIGHUP, -watch) on the real binary: unchanged destinations keep
// their children and sessions, changed ones drain; the SDK clients under reloads; SIGTERM's drain;
// a tools: change announced to clients. waitReloads serves the profile tests too.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

// rewrite replaces the destinations file at path with the one made by
// write (a path of its own).
func rewrite(t *testing.T, path, from string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// waitReloads waits until stelae_config_reloads_total{result} reaches n.
func waitReloads(t *testing.T, p *binaryProc, result string, n float64) {
	t.Helper()
	key := fmt.Sprintf(`stelae_config_reloads_total{result=%q}`, result)
	waitFor(t, 15*time.Second, fmt.Sprintf("%s = %v", key, n), func() bool { return scrapeURL(t, p.base)[key] >= n })
}

// TestReloadOnSIGHUP: SIGHUP applies the edited file as a diff, on the
// real binary. An unchanged destination keeps its child and sessions; a
// changed one lets its call in flight finish, and its sessions' next
// requests get 404 (the client initializes anew, on a new child); a
// removed one is gone; an added one is served at once. An invalid file
// changes nothing. SIGHUP used to end the bridge (exit 129).
func TestReloadOnSIGHUP(t *testing.T) {
	server := fakemcp.ModeServer
	config := destinationsFile(t, map[string]string{"same": server, "edited": server, "gone": server}, nil)
	p := startBinary(t, config, "-drain-timeout", "10s")
	same, edited, gone := newClient(t, p.base+"/same/mcp"), newClient(t, p.base+"/edited/mcp"), newClient(t, p.base+"/gone/mcp")
	for _, c := range []*client{same, edited, gone} {
		c.initialize()
	}
	samePID, editedPID := whoamiCall(t, same).PID, whoamiCall(t, edited).PID

	// A call in flight on the destination about to change.
	slow := postAsync(edited.url, edited.sid, toolCallBody(`"slow"`, "slow", map[string]any{"ms": 1500, "text": "finished"}))
	waitCalled(t, edited, "slow")

	rewrite(t, config, destinationsFile(t, map[string]string{"same": server, "edited": server, "added": server},
		map[string]string{"edited": "    stderr_log_level: debug\n"}))
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitReloads(t, p, "applied", 1)

	// Unchanged: the same session on the same child.
	if w := whoamiCall(t, same); w.PID != samePID {
		t.Errorf("the unchanged destination's child is pid %d; it was %d", w.PID, samePID)
	}
	// Changed: its session's next request gets 404 at once…
	if r := edited.callTool(`"after"`, "echo", map[string]string{"text": "x"}); r.status != http.StatusNotFound {
		t.Errorf("a request of the changed destination's old session: %d %s; want 404", r.status, r.body)
	}
	// …while the call in flight finishes with its answer.
	r := awaitAsync(t, "the call in flight on the changed destination", slow, 15*time.Second)
	if res, ok := checkResult(t, "the call in flight", r, "", `"slow"`); ok && textOf(res) != "finished" {
		t.Errorf("the call in flight answered %s", res)
	}
	// A new session runs on a new child.
	fresh := newClient(t, edited.url)
	fresh.initialize()
	if w := whoamiCall(t, fresh); w.PID == editedPID {
		t.Errorf("the changed destination still runs its old child (pid %d)", w.PID)
	}
	// Removed: gone from the routes; added: served.
	if r := gone.callTool(`"x"`, "echo", map[string]string{"text": "x"}); r.status != http.StatusNotFound || !strings.Contains(string(r.body), "no destination") {
		t.Errorf("the removed destination: %d %s; want 404, no destination", r.status, r.body)
	}
	added := newClient(t, p.base+"/added/mcp")
	added.initialize()
	echoCall(t, added, `"a"`, "hello")
	// The old child of the changed destination stops (its drain is over).
	waitFor(t, 15*time.Second, "the changed destination's old child to stop", func() bool { return !processAlive(editedPID) })

	// An invalid file changes nothing.
	if err := os.WriteFile(config, []byte("destinations:\n  same:\n    comand: oops\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitReloads(t, p, "invalid", 1)
	if w := whoamiCall(t, same); w.PID != samePID {
		t.Errorf("after an invalid file the unchanged destination's child is pid %d; it was %d", w.PID, samePID)
	}
	echoCall(t, added, `"b"`, "still here")
	waitFor(t, 10*time.Second, "the invalid file's report in the log", func() bool {
		return strings.Contains(p.logs.String(), "configuration not reloaded") && strings.Contains(p.logs.String(), "comand")
	})
	select {
	case <-p.done:
		t.Fatalf("the bridge exited: %v", p.err)
	default:
	}
}

// TestReloadWatch: with -watch a change of the file is applied without a
// signal.
func TestReloadWatch(t *testing.T) {
	server := fakemcp.ModeServer
	config := destinationsFile(t, map[string]string{"one": server}, nil)
	p := startBinary(t, config, "-watch")
	rewrite(t, config, destinationsFile(t, map[string]string{"one": server, "two": server}, nil))
	waitReloads(t, p, "applied", 1)
	c := newClient(t, p.base+"/two/mcp")
	c.initialize()
	echoCall(t, c, `"w"`, "watched")
}

// TestReloadUnderLoadGoSDK: the official Go SDK client (its default
// handshake: the 2026-07-28 era where the bridge serves it) calls a tool
// that takes 30 ms, 4 at a time, on
// an unchanged and on a changed destination without pause while the file
// is reloaded several times: no call fails. A request of that era has no
// session, so after a reload it simply reaches the new child; calls in
// flight on the old one finish in its drain.
func TestReloadUnderLoadGoSDK(t *testing.T) {
	server := fakemcp.ModeServer
	variants := []string{
		destinationsFile(t, map[string]string{"same": server, "edited": server}, nil),
		destinationsFile(t, map[string]string{"same": server, "edited": server, "extra": server}, map[string]string{"edited": "    stderr_log_level: debug\n"}),
	}
	config := destinationsFile(t, map[string]string{"same": server, "edited": server}, nil)
	p := startBinary(t, config)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	connect := func(dest string) *mcp.ClientSession {
		return goSDKSession(t, ctx, p.base+"/"+dest+"/mcp", "stelae-reload-test", 2)
	}
	var (
		wg   sync.WaitGroup
		stop = make(chan struct{})
		// mu guards calls and failures.
		mu       sync.Mutex
		calls    = map[string]int{}
		failures []string
	)
	for _, dest := range []string{"same", "edited"} {
		cs := connect(dest)
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					text := fmt.Sprintf("%s-%d-%d", dest, w, i)
					// Each call takes 30 ms on the child: at every reload some
					// are in flight on the old one.
					res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow", Arguments: map[string]any{"text": text, "ms": 30}})
					mu.Lock()
					calls[dest]++
					switch {
					case err != nil:
						failures = append(failures, fmt.Sprintf("%s: %v", text, err))
					case res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != text:
						failures = append(failures, fmt.Sprintf("%s: answered %+v", text, res.Content))
					}
					mu.Unlock()
				}
			}()
		}
	}
	counted := func(dest string) int {
		mu.Lock()
		defer mu.Unlock()
		return calls[dest]
	}
	for i := range 4 {
		// Calls go on before each reload.
		before := counted("edited")
		waitFor(t, 20*time.Second, "calls between reloads", func() bool { return counted("edited") >= before+20 && counted("same") > 0 })
		rewrite(t, config, variants[(i+1)%2])
		if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		waitReloads(t, p, "applied", float64(i+1))
	}
	before := counted("edited")
	waitFor(t, 20*time.Second, "calls after the last reload", func() bool { return counted("edited") >= before+20 })
	close(stop)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	t.Logf("calls: %v across 4 reloads", calls)
	if len(failures) > 0 {
		t.Errorf("%d calls failed across the reloads, first: %v", len(failures), failures[:min(5, len(failures))])
	}
}

// TestReloadUnderLoadTSClient: the official TypeScript SDK client, in a
// 2025 session on a destination the reloads leave unchanged, calls a tool
// 80 times while the file is reloaded three times (other destinations
// added, changed and removed): every call answers, in the one session it
// started with (it never had to initialize again).
func TestReloadUnderLoadTSClient(t *testing.T) {
	node := node24(t)
	server := fakemcp.ModeServer
	variants := []string{
		destinationsFile(t, map[string]string{"same": server, "other": server}, nil),
		destinationsFile(t, map[string]string{"same": server, "other": server, "extra": server}, map[string]string{"other": "    stderr_log_level: debug\n"}),
	}
	config := destinationsFile(t, map[string]string{"same": server, "other": server}, nil)
	p := startBinary(t, config)
	done := make(chan scriptRun, 1)
	go func() {
		done <- runClientScript(node, "ts-session.mjs", p.base+"/same/mcp", "--deadline", "60000", "--repeat", "80", "--pause-ms", "20", "--call", `slow {"text":"ts","ms":10}`)
	}()
	calls := func() float64 { return scrapeURL(t, p.base)[`stelae_calls_total{destination="same",outcome="ok"}`] }
	for i := range 3 {
		before := calls()
		waitFor(t, 30*time.Second, "the client's calls between reloads", func() bool { return calls() >= before+10 })
		rewrite(t, config, variants[(i+1)%2])
		if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		waitReloads(t, p, "applied", float64(i+1))
	}
	run := <-done
	var s tsSession
	if err := json.Unmarshal([]byte(run.last), &s); err != nil || run.err != nil || !s.OK {
		t.Fatalf("ts-session: %v %v\nfailures: %v\nstdout: %s\nstderr: %s", run.err, err, s.Failures, run.stdout, run.stderr)
	}
	failed := 0
	for _, c := range s.Calls {
		if c.Error != "" || c.Result.IsError || len(c.Result.Content) != 1 || c.Result.Content[0].Text != "ts" {
			failed++
		}
	}
	if len(s.Calls) != 80 || failed != 0 || len(s.Errors) != 0 {
		t.Errorf("%d calls, %d failed, client errors %v; want 80 answered", len(s.Calls), failed, s.Errors)
	}
	if got := scrapeURL(t, p.base)[`stelae_calls_total{destination="same",outcome="ok"}`]; got < 81 {
		t.Errorf("the bridge answered %v calls of the session's; want the initialize and 80", got)
	}
}

// TestShutdownDrainsCallsInFlight: on SIGTERM the bridge answers new
// requests 503 with Retry-After and /readyz says draining, while a call in
// flight finishes with its answer (it was cut before); then the bridge
// exits 0.
func TestShutdownDrainsCallsInFlight(t *testing.T) {
	p := startBinary(t, fakeDestinations(t, map[string]string{"fake": fakemcp.ModeServer}), "-drain-timeout", "20s")
	c := newClient(t, p.base+"/fake/mcp")
	c.initialize()
	if r := mustRequest(t, http.MethodGet, p.base+"/readyz", "", ""); r.status != http.StatusOK {
		t.Fatalf("/readyz while serving: %d %s", r.status, r.body)
	}
	slow := postAsync(c.url, c.sid, toolCallBody(`"slow"`, "slow", map[string]any{"ms": 1500, "text": "finished"}))
	waitCalled(t, c, "slow")
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "/readyz to say draining", func() bool {
		r, err := request(http.MethodGet, p.base+"/readyz", "", "")
		return err == nil && r.status == http.StatusServiceUnavailable && strings.Contains(string(r.body), "draining")
	})
	if r := c.callTool(`"late"`, "echo", map[string]string{"text": "x"}); r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" {
		t.Errorf("a new call during the drain: %d (Retry-After %q) %s; want 503 with Retry-After", r.status, r.header.Get("Retry-After"), r.body)
	}
	r := awaitAsync(t, "the call in flight at SIGTERM", slow, 15*time.Second)
	if res, ok := checkResult(t, "the call in flight at SIGTERM", r, "", `"slow"`); ok && textOf(res) != "finished" {
		t.Errorf("the call in flight answered %s", res)
	}
	select {
	case <-p.done:
		if p.err != nil {
			t.Errorf("the bridge exited with %v", p.err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the bridge did not exit after the drain")
	}
}

// TestShutdownDoesNotWaitForListenStreams: a subscriptions/listen stream
// is a POST that lasts as long as its client wants; it is not a call in
// flight, so SIGTERM's drain does not wait -drain-timeout for it.
func TestShutdownDoesNotWaitForListenStreams(t *testing.T) {
	p := startBinary(t, fakeDestinations(t, map[string]string{"fake": fakemcp.ModeServer}), "-drain-timeout", "20s")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	status, resp, err := openListen(ctx, p.base+"/fake/mcp", 1)
	if err != nil || status != http.StatusOK {
		t.Fatalf("subscriptions/listen: %d %v", status, err)
	}
	defer resp.Body.Close()
	start := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		t.Fatal("the bridge still runs 15 s after SIGTERM with a listen stream open")
	}
	if took := time.Since(start); took > 8*time.Second {
		t.Errorf("shutdown took %s with a listen stream open", took)
	}
}

// TestReloadToolsFilterTellsClients: a reload that changes only a
// destination's 'tools:' keeps its child and sessions and applies the new
// filter to them, and its clients are told: a 2025 session at /mcp (the
// default destination) gets notifications/tools/list_changed on its GET
// stream, a 2026-07-28 subscriptions/listen stream that asked for tool
// list changes gets it too, and the lists and calls from then on follow
// the new filter, both ways.
func TestReloadToolsFilterTellsClients(t *testing.T) {
	server := fakemcp.ModeServer
	file := func(keys map[string]string) string {
		path := destinationsFile(t, map[string]string{"fake": server}, keys)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, append(data, "default: fake\n"...), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	config := file(nil)
	p := startBinary(t, config)
	c := newClient(t, p.base+"/mcp")
	c.initialize()
	pid := whoamiCall(t, c).PID
	st := c.openStream()
	defer st.close()
	listen := openSSE(t, http.MethodPost, p.base+"/mcp", "", listenBody(7), "MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "subscriptions/listen")
	defer listen.close()
	listen.next(t, "notifications/subscriptions/acknowledged", 10*time.Second)
	lists := func(tool string) (session, modern, operator bool) {
		r := c.post(`{"jsonrpc":"2.0","id":"l","method":"tools/list"}`)
		m := modernCall(t, p.base+"/mcp", `"m"`, "tools/list", `{`+modernMeta+`}`)
		o := mustRequest(t, http.MethodGet, p.base+"/tools/list", "", "")
		named := regexp.MustCompile(`"name":\s*"` + tool + `"`)
		return named.Match(r.body), named.Match(m.body), named.Match(o.body)
	}
	// The catalogue behind /tools/list is fetched after the child's start.
	waitFor(t, 10*time.Second, "the tool catalogue", func() bool { _, _, o := lists("echo"); return o })
	if s, m, o := lists("slow"); !s || !m || !o {
		t.Fatalf("before the reload, slow is listed: to the session %v, to a 2026 request %v, at /tools/list %v; want everywhere", s, m, o)
	}

	for i, keys := range []map[string]string{{"fake": "    tools:\n      deny: [slow]\n"}, nil} {
		hidden := keys != nil
		rewrite(t, config, file(keys))
		if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		waitReloads(t, p, "applied", float64(i+1))
		st.next(t, "notifications/tools/list_changed", 10*time.Second)
		m := listen.next(t, "notifications/tools/list_changed", 10*time.Second)
		if !strings.Contains(string(m.Params), `"io.modelcontextprotocol/subscriptionId":7`) {
			t.Errorf("list_changed on the listen stream without its subscription id: %s", m.Params)
		}
		// The session goes on, on the same child, with the new filter.
		if w := whoamiCall(t, c); w.PID != pid {
			t.Errorf("after the reload the child is pid %d; it was %d (restarted)", w.PID, pid)
		}
		if s, m, o := lists("slow"); s == hidden || m == hidden || o == hidden {
			t.Errorf("with slow hidden=%v, it is listed: to the session %v, to a 2026 request %v, at /tools/list %v", hidden, s, m, o)
		}
		r := c.callTool(`"s"`, "slow", map[string]any{"ms": 1, "text": "x"})
		if denied := strings.Contains(string(r.body), "not available"); denied != hidden {
			t.Errorf("a call of slow with it hidden=%v: %d %s", hidden, r.status, r.body)
		}
	}
}
