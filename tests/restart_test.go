//go:build unix

package tests

// Restarting the bridge on the same state directory: sessions come back (for raw clients, the
// TypeScript and Go SDK clients, and a GET stream's Last-Event-ID); /healthz?verbose lists them.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

// TestSessionsSurviveARestart: a new bridge on the same state directory
// takes back the sessions of the one that stopped: a client goes on with
// its Mcp-Session-Id (no 404, no initialize), on a new child the bridge
// starts for it; a session its client deleted, or that ended for good,
// does not come back.
func TestSessionsSurviveARestart(t *testing.T) {
	config := fakeDestinations(t, map[string]string{"fake": fakemcp.ModeServer})
	state, addr := t.TempDir(), freeAddr(t)
	a := startBinary(t, config, "-state-dir", state, "-listen", addr)
	kept, deleted := newClient(t, a.base+"/fake/mcp"), newClient(t, a.base+"/fake/mcp")
	kept.initialize()
	deleted.initialize()
	echoCall(t, kept, `"before"`, "before the restart")
	oldPID := whoamiCall(t, kept).PID
	deleteSession(t, deleted)
	stopBinary(t, a)

	b := startBinary(t, config, "-state-dir", state, "-listen", addr)
	if b.base != a.base {
		t.Fatalf("the new bridge listens at %s, not %s", b.base, a.base)
	}
	// The same session, with the version it negotiated, on a new child.
	echoCall(t, kept, `"after"`, "after the restart")
	if w := whoamiCall(t, kept); w.PID == oldPID {
		t.Errorf("the session is served by the old child (pid %d)", w.PID)
	}
	if r := deleted.callTool(`"x"`, "echo", map[string]string{"text": "x"}); r.status != http.StatusNotFound {
		t.Errorf("the deleted session after the restart: %d %s; want 404", r.status, r.body)
	}
	if got := metricsOf(t, b)[`stelae_sessions{destination="fake"}`]; got != 1 {
		t.Errorf("stelae_sessions = %v after the restart; want the one kept", got)
	}
}

// TestTSClientAcrossARestart: the official TypeScript SDK client calls a
// tool every 30 ms in one 2025 session while the bridge is restarted on the
// same address and state directory: it goes on in the same session without
// initializing again. The calls made while no bridge listens fail as a
// connection error or 503 (Retry-After), which a client may retry; none is
// refused for its session (404), and every call after the restart answers.
func TestTSClientAcrossARestart(t *testing.T) {
	node := node24(t)
	config := fakeDestinations(t, map[string]string{"fake": fakemcp.ModeServer})
	state, addr := t.TempDir(), freeAddr(t)
	a := startBinary(t, config, "-state-dir", state, "-listen", addr)
	done := make(chan scriptRun, 1)
	go func() {
		done <- runClientScript(node, "ts-session.mjs", a.base+"/fake/mcp", "--deadline", "60000", "--repeat", "120", "--pause-ms", "30", "--call", `echo {"text":"ts"}`)
	}()
	calls := func(p *binaryProc) float64 {
		return scrapeURL(t, p.base)[`stelae_calls_total{destination="fake",outcome="ok"}`]
	}
	waitFor(t, 30*time.Second, "the client's first calls", func() bool { return calls(a) >= 20 })
	stopBinary(t, a)
	b := startBinary(t, config, "-state-dir", state, "-listen", addr)
	run := <-done
	var s tsSession
	if err := json.Unmarshal([]byte(run.last), &s); err != nil {
		t.Fatalf("ts-session: %v %v\nstdout: %s\nstderr: %s", run.err, err, run.stdout, run.stderr)
	}
	failed, lastFailed := 0, -1
	for i, c := range s.Calls {
		ok := c.Error == "" && !c.Result.IsError && len(c.Result.Content) == 1 && c.Result.Content[0].Text == "ts"
		if !ok {
			failed, lastFailed = failed+1, i
			if strings.Contains(c.Error, "404") || strings.Contains(strings.ToLower(c.Error), "session not found") {
				t.Errorf("call %d was refused for its session: %s", i, c.Error)
			}
		}
	}
	t.Logf("%d calls, %d failed while the bridge restarted (the last failure: call %d); session %s", len(s.Calls), failed, lastFailed, s.SessionID)
	if len(s.Calls) != 120 || lastFailed >= len(s.Calls)-10 {
		t.Errorf("%d calls, the last failure at call %d: want 120, the last 10 answered", len(s.Calls), lastFailed)
	}
	if got := calls(b); got < 10 {
		t.Errorf("the new bridge answered %v of the session's calls", got)
	}
}

// TestHealthzListsSessions: /healthz?verbose shows each destination's
// sessions — an id prefix (never the whole id), the client, its version,
// age, idle time, calls in flight and streams — with a call in flight
// counted.
func TestHealthzListsSessions(t *testing.T) {
	p := startBinary(t, fakeDestinations(t, map[string]string{"fake": fakemcp.ModeServer}))
	c := newClient(t, p.base+"/fake/mcp")
	c.initialize()
	slow := postAsync(c.url, c.sid, toolCallBody(`"slow"`, "slow", map[string]any{"ms": 1000, "text": "x"}))
	waitCalled(t, c, "slow")
	r := mustRequest(t, http.MethodGet, p.base+"/healthz?verbose", "", "")
	var h struct {
		Destinations map[string]struct {
			SessionList []struct {
				ID       string `json:"id"`
				Client   string `json:"client"`
				Inflight int    `json:"inflight"`
			} `json:"session_list"`
		} `json:"destinations"`
	}
	if err := json.Unmarshal(r.body, &h); err != nil {
		t.Fatalf("/healthz?verbose: %v: %s", err, r.body)
	}
	list := h.Destinations["fake"].SessionList
	if len(list) != 1 || list[0].ID != c.sid[:8] || list[0].Client != "test 1" || list[0].Inflight != 1 {
		t.Errorf("session_list %+v; want the one session, its id's first 8 characters, client \"test 1\", one call in flight:\n%s", list, r.body)
	}
	if strings.Contains(string(r.body), c.sid) {
		t.Errorf("/healthz?verbose shows the whole session id")
	}
	awaitAsync(t, "the slow call", slow, 10*time.Second)
}

// TestGoSDKClientAcrossARestart: the official Go SDK client in a 2025
// session (the bridge serves the 2025 era only, so it initializes) goes on
// in that session after the bridge is restarted on the same address and
// state directory: its next call answers, with no new initialize.
func TestGoSDKClientAcrossARestart(t *testing.T) {
	config := fakeDestinations(t, map[string]string{"fake": fakemcp.ModeServer})
	state, addr := t.TempDir(), freeAddr(t)
	a := startBinary(t, config, "-state-dir", state, "-listen", addr, "-protocol-eras", "2025")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs := goSDKSession(t, ctx, a.base+"/fake/mcp", "stelae-restart-test", 5)
	sid := cs.ID()
	if sid == "" {
		t.Fatal("no 2025 session")
	}
	call := func(text string) error {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": text}})
		if err != nil {
			return err
		}
		if res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != text {
			return fmt.Errorf("answered %+v", res.Content)
		}
		return nil
	}
	if err := call("before"); err != nil {
		t.Fatal(err)
	}
	stopBinary(t, a)
	b := startBinary(t, config, "-state-dir", state, "-listen", addr, "-protocol-eras", "2025")
	if err := call("after"); err != nil {
		t.Fatalf("the call after the restart: %v", err)
	}
	if cs.ID() != sid {
		t.Errorf("the client's session is %s; it was %s", cs.ID(), sid)
	}
	if got := metricsOf(t, b)[`stelae_calls_total{destination="fake",outcome="ok"}`]; got != 1 {
		t.Errorf("the new bridge answered %v calls; want the one call, no initialize", got)
	}
}

// TestGetStreamAcrossARestart: a 2025 session's GET stream reconnects to
// the new bridge with the Last-Event-ID the old one gave it. The event log
// did not survive the restart, so the bridge opens a fresh stream (the
// spec lets a server replay or not, and never on another stream): 200, no
// replay of another stream's events, and the session's next notification
// arrives on it.
func TestGetStreamAcrossARestart(t *testing.T) {
	config := fakeDestinations(t, map[string]string{"fake": fakemcp.ModeServer})
	state, addr := t.TempDir(), freeAddr(t)
	a := startBinary(t, config, "-state-dir", state, "-listen", addr)
	c := newClient(t, a.base+"/fake/mcp")
	c.initialize()
	st := c.openStream()
	if r := c.callTool(`1`, "list_changed", nil); r.status != http.StatusOK {
		t.Fatalf("list_changed: %d %s", r.status, r.body)
	}
	var last string
	for last == "" {
		ev := st.event(t, 10*time.Second)
		if len(ev.data) > 0 && decode(t, ev.data).Method == "notifications/tools/list_changed" {
			last = ev.id
			if last == "" {
				t.Fatal("the old bridge's stream event has no id")
			}
		}
	}
	st.close()
	stopBinary(t, a)

	startBinary(t, config, "-state-dir", state, "-listen", addr)
	resumed := openSSE(t, http.MethodGet, c.url, c.sid, "", "Last-Event-ID", last)
	defer resumed.close()
	if r := c.callTool(`2`, "list_changed", nil); r.status != http.StatusOK {
		t.Fatalf("list_changed after the restart: %d %s", r.status, r.body)
	}
	resumed.next(t, "notifications/tools/list_changed", 10*time.Second)
}
