//go:build unix

package tests

// The shared child belongs to no client: its handshake is the bridge's own,
// a malformed initialize cannot break it, each session keeps the version and
// capabilities it declared, a slow start survives the client that caused it,
// and the child's requests go only to a session that can answer them.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stelae-bridge/stelae-bridge/bridge"
	"github.com/stelae-bridge/stelae-bridge/config"
	"github.com/stelae-bridge/stelae-bridge/supervisor"
	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

func TestMalformedInitializeCannotFailDestination(t *testing.T) {
	b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{})
	bad := []struct{ name, body, want string }{
		{"empty params", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`, "protocolVersion"},
		{"no params", `{"jsonrpc":"2.0","id":1,"method":"initialize"}`, "params"},
		{"params not an object", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":[1]}`, "params"},
		{"numeric version", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":20250618,"capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`, "protocolVersion"},
		{"no capabilities", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","clientInfo":{"name":"x","version":"1"}}}`, "capabilities"},
		{"capabilities not an object", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":"all","clientInfo":{"name":"x","version":"1"}}}`, "capabilities"},
		{"no clientInfo", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{}}}`, "clientInfo"},
		{"clientInfo without name", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"version":"1"}}}`, "clientInfo"},
		{"numeric clientInfo.version", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":1}}}`, "clientInfo.version"},
	}
	check := func(t *testing.T, body, want string) {
		t.Helper()
		r := mustRequest(t, http.MethodPost, b.url("fake"), "", body)
		m := decode(t, r.body)
		if r.status != http.StatusBadRequest || m.Error == nil || m.Error.Code != -32602 || string(m.ID) != "1" || !strings.Contains(m.Error.Message, want) {
			t.Errorf("status %d %s; want 400 with a -32602 error for id 1 naming %q", r.status, r.body, want)
		}
		if sid := r.header.Get("Mcp-Session-Id"); sid != "" {
			t.Errorf("a refused initialize got session %s", sid)
		}
	}
	// On an idle destination: no child is started for them, none fails.
	for _, c := range bad {
		t.Run("idle/"+c.name, func(t *testing.T) { check(t, c.body, c.want) })
	}
	if st := b.dispatchers["fake"].Status(); st.State != "idle" || st.RestartsTotal != 0 {
		t.Fatalf("after malformed initializes: %+v; want idle, never started", st)
	}
	good := newClient(t, b.url("fake"))
	good.initialize()
	echoCall(t, good, "1", "works")
	// On a running destination: the child and its sessions are unharmed.
	for _, c := range bad {
		t.Run("running/"+c.name, func(t *testing.T) { check(t, c.body, c.want) })
	}
	echoCall(t, good, "2", "still works")
	if st := b.dispatchers["fake"].Status(); st.State != "running" || st.RestartsTotal != 0 {
		t.Errorf("after malformed initializes: %+v; want running, no restart", st)
	}
	// The child's handshake never carried a client's params.
	if p := good.stats().InitParams; !strings.Contains(string(p), `"clientInfo":{"name":"stelae-bridge"`) || !strings.Contains(string(p), `"protocolVersion":"2025-11-25"`) {
		t.Errorf("the child was initialized with %s; want the bridge's own params", p)
	}
	if got := scrape(t, b)[`stelae_initialize_refused_total{destination="fake",reason="invalid_initialize"}`]; got != float64(2*len(bad)) {
		t.Errorf("refused initializes counted %v, want %d", got, 2*len(bad))
	}
}

func TestHandshakeFallsBackToAnOlderVersion(t *testing.T) {
	b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{extraEnv: map[string]string{fakemcp.EnvInitVersions: "2025-03-26"}})
	c := newClient(t, b.url("fake"))
	r := c.post(initBody) // asks for 2025-06-18
	if r.status != http.StatusOK || !strings.Contains(string(r.body), `"protocolVersion":"2025-03-26"`) {
		t.Fatalf("initialize: %d %s; want the child's 2025-03-26", r.status, r.body)
	}
	c.sid = r.header.Get("Mcp-Session-Id")
	s := c.stats()
	if got := strings.Join(s.InitVersions, ","); got != "2025-11-25,2025-06-18,2025-03-26" {
		t.Errorf("the child was asked for %s; want the newest first, then each older one", got)
	}
	if st := b.dispatchers["fake"].Status(); st.RestartsTotal != 0 {
		t.Errorf("restarts %d; the fallback happens on the same child", st.RestartsTotal)
	}
}

func TestHandshakeRefusedIsNotACrashLoop(t *testing.T) {
	b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{extraEnv: map[string]string{fakemcp.EnvInitVersions: "none"}})
	r := newClient(t, b.url("fake")).post(initBody)
	checkTransportError(t, "initialize of a child that refuses every handshake", r, http.StatusServiceUnavailable, 0, "refused", "unsupported protocol version")
	st := b.dispatchers["fake"].Status()
	if st.State != "failed" || st.RestartsTotal != 0 {
		t.Errorf("status %+v; want failed at once, without restarting with the same handshake", st)
	}
}

// TestSessionsKeepTheirOwnVersionAndCapabilities: the first client does not
// decide for the later ones, and a child's request reaches only a session
// that declared the capability it needs.
func TestSessionsKeepTheirOwnVersionAndCapabilities(t *testing.T) {
	b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{})
	old := newClient(t, b.url("fake"))
	r := old.post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"old","version":"1"}}}`)
	if r.status != http.StatusOK || !strings.Contains(string(r.body), `"protocolVersion":"2024-11-05"`) {
		t.Fatalf("old client: %d %s", r.status, r.body)
	}
	old.sid = r.header.Get("Mcp-Session-Id")
	modern := newClient(t, b.url("fake"))
	r = modern.post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"sampling":{}},"clientInfo":{"name":"modern","version":"1"}}}`)
	if r.status != http.StatusOK || !strings.Contains(string(r.body), `"protocolVersion":"2025-11-25"`) {
		t.Fatalf("modern client: %d %s; want its own 2025-11-25", r.status, r.body)
	}
	modern.sid = r.header.Get("Mcp-Session-Id")
	var caps struct {
		Capabilities map[string]json.RawMessage `json:"capabilities"`
	}
	_ = json.Unmarshal(old.stats().InitParams, &caps)
	for _, c := range []string{"sampling", "roots", "elicitation"} {
		if caps.Capabilities[c] == nil {
			t.Errorf("the bridge did not declare %s to the child: %v", c, caps.Capabilities)
		}
	}

	// The old client never declared sampling: the child's request for its
	// call is answered by the bridge with an error at once.
	start := time.Now()
	r = old.callTool(`"s"`, "sample", map[string]string{"prompt": "from old"})
	res, ok := checkResult(t, "old client's sample", r, old.sid, `"s"`)
	if !ok {
		t.FailNow()
	}
	if el := time.Since(start); el > 10*time.Second || !strings.Contains(string(res), `"code":-32603`) || !strings.Contains(string(res), "sampling capability") {
		t.Errorf("the child got %s after %v; want an immediate error naming the missing capability", res, el)
	}

	// The modern client is asked, on its own POST stream.
	st := openSSE(t, http.MethodPost, modern.url, modern.sid, toolCallBody(`7`, "sample", map[string]string{"prompt": "from modern"}))
	var req rpc
	for req.Method == "" {
		ev := st.event(t, 10*time.Second)
		if len(ev.data) > 0 {
			req = decode(t, ev.data)
		}
	}
	if req.Method != "sampling/createMessage" {
		t.Fatalf("want the sampling request on the modern client's stream, got %s", req.Method)
	}
	if r := modern.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"role":"assistant","content":{"type":"text","text":"pong"},"model":"m"}}`, req.ID)); r.status != http.StatusAccepted {
		t.Fatalf("answer: %d %s", r.status, r.body)
	}
	rest := st.rest(t, 10*time.Second)
	if len(rest) == 0 || !strings.Contains(string(rest[len(rest)-1].data), "pong") {
		t.Fatalf("the modern client's sample did not end with its answer: %+v", rest)
	}
}

// TestChildRequestWithNoCallInFlight: a request the child sends on its own
// (server-filesystem asks for roots right after the handshake) goes to the
// only session that declared the capability, is answered from 'roots:' when
// configured, and is refused when it cannot be attributed.
func TestChildRequestWithNoCallInFlight(t *testing.T) {
	rootsInit := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"roots":{"listChanged":true}},"clientInfo":{"name":"roots","version":"1"}}}`
	t.Run("the only session with roots", func(t *testing.T) {
		b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{extraEnv: map[string]string{fakemcp.EnvRootsOnInit: "1"}})
		c := newClient(t, b.url("fake"))
		r := c.post(rootsInit)
		c.sid = r.header.Get("Mcp-Session-Id")
		st := c.openStream()
		req := st.next(t, "roots/list", 10*time.Second)
		if r := c.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"roots":[{"uri":"file:///from/client"}]}}`, req.ID)); r.status != http.StatusAccepted {
			t.Fatalf("answer: %d %s", r.status, r.body)
		}
		waitFor(t, 10*time.Second, "the child to get the client's roots", func() bool {
			return strings.Contains(string(c.stats().RootsAtInit), "file:///from/client")
		})
	})
	t.Run("configured roots", func(t *testing.T) {
		b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{
			extraEnv: map[string]string{fakemcp.EnvRootsOnInit: "1"},
			roots:    []config.Root{{URI: "file:///srv/configured", Name: "configured"}},
		})
		c := newClient(t, b.url("fake"))
		r := c.post(rootsInit)
		c.sid = r.header.Get("Mcp-Session-Id")
		st := c.openStream()
		waitFor(t, 10*time.Second, "the child to get the configured roots", func() bool {
			return strings.Contains(string(c.stats().RootsAtInit), "file:///srv/configured")
		})
		// And a later roots/list during a call is answered the same way.
		res, ok := checkResult(t, "ask roots/list", c.callTool(`2`, "ask", map[string]string{"method": "roots/list"}), c.sid, `2`)
		if ok && !strings.Contains(string(res), "file:///srv/configured") {
			t.Errorf("roots/list during a call: %s", res)
		}
		st.none(t, "roots/list", 300*time.Millisecond)
	})
	t.Run("the caller lacks the capability", func(t *testing.T) {
		b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{})
		withRoots := newClient(t, b.url("fake"))
		withRoots.sid = withRoots.post(rootsInit).header.Get("Mcp-Session-Id")
		stRoots := withRoots.openStream()
		plain := newClient(t, b.url("fake"))
		plain.initialize()
		// plain's call is the one in flight: the child's roots/list is its
		// call's doing, and plain never declared roots.
		res, ok := checkResult(t, "ask from a session without roots", plain.callTool(`3`, "ask", map[string]string{"method": "roots/list"}), plain.sid, `3`)
		if ok && (!strings.Contains(string(res), "-32603") || !strings.Contains(string(res), "roots capability")) {
			t.Errorf("roots/list caused by a session without roots: %s; want an error, not another session's roots", res)
		}
		stRoots.none(t, "roots/list", 300*time.Millisecond)
	})
	t.Run("two sessions could answer", func(t *testing.T) {
		b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{})
		a, c := newClient(t, b.url("fake")), newClient(t, b.url("fake"))
		for _, cl := range []*client{a, c} {
			cl.sid = cl.post(rootsInit).header.Get("Mcp-Session-Id")
		}
		if r := a.callTool(`4`, "ask_later", map[string]any{"method": "roots/list", "ms": 100}); r.status != http.StatusOK {
			t.Fatalf("ask_later: %d %s", r.status, r.body)
		}
		// Read from the child's journal: a stats call in flight when the
		// child asks would itself be the call the request is attributed to.
		var got string
		waitFor(t, 10*time.Second, "the child's roots/list to be answered", func() bool {
			for _, e := range b.journal() {
				if e.kind == "asked" {
					got = e.note
					return true
				}
			}
			return false
		})
		if !strings.Contains(got, "-32603") || !strings.Contains(got, "2 sessions") {
			t.Errorf("the unattributable roots/list was answered %s; want an error naming the 2 sessions", got)
		}
	})
}

// TestSlowStartSurvivesItsFirstClient: a child that needs longer than the
// request timeout to start (a first npx download) is not stopped when its
// first client gives up; the retry finds it up.
func TestSlowStartSurvivesItsFirstClient(t *testing.T) {
	b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{
		extraEnv: map[string]string{fakemcp.EnvStartDelay: "1500"},
		opts:     bridge.Options{RequestTimeout: 300 * time.Millisecond},
	})
	r := newClient(t, b.url("fake")).post(initBody)
	checkTransportError(t, "initialize while the child starts", r, http.StatusServiceUnavailable, 0, "still starting", "retry")
	if r.header.Get("Retry-After") == "" {
		t.Errorf("no Retry-After on a 503 for a start in progress")
	}
	waitFor(t, 20*time.Second, "the child to finish starting", func() bool { return b.dispatchers["fake"].Status().State == "running" })
	pid := b.dispatchers["fake"].Status().PID
	c := newClient(t, b.url("fake"))
	c.initialize()
	if w := whoamiCall(t, c); w.PID != pid || w.Inits != 1 {
		t.Errorf("the retry got child %d with %d initializes; want the one that was starting (%d), initialized once", w.PID, w.Inits, pid)
	}
}

// TestUnclaimedStartIsStoppedLater: when nobody comes back, the child that
// outlived its clients' start is stopped after UnclaimedLinger.
func TestUnclaimedStartIsStoppedLater(t *testing.T) {
	b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{
		extraEnv:        map[string]string{fakemcp.EnvStartDelay: "800"},
		opts:            bridge.Options{RequestTimeout: 200 * time.Millisecond},
		unclaimedLinger: 300 * time.Millisecond,
	})
	newClient(t, b.url("fake")).post(initBody)
	waitFor(t, 20*time.Second, "the child to finish starting", func() bool { return b.dispatchers["fake"].Status().State == "running" })
	waitFor(t, 20*time.Second, "the unclaimed child to stop", func() bool { return b.dispatchers["fake"].Status().State == "idle" })
}

// TestStartTimeout: a child that never finishes its handshake within
// start_timeout fails with an error naming the setting.
func TestStartTimeout(t *testing.T) {
	b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{
		extraEnv:     map[string]string{fakemcp.EnvStartDelay: "60000"},
		startTimeout: 300 * time.Millisecond,
	})
	r := newClient(t, b.url("fake")).post(initBody)
	checkTransportError(t, "initialize of a child that never starts", r, http.StatusServiceUnavailable, 0, "start_timeout")
}

// TestFailedStartMessageSaysEachThingOnce: the 503 of a destination that
// failed names the destination, the restarts and the exit status, once each.
func TestFailedStartMessageSaysEachThingOnce(t *testing.T) {
	b := newBridge(t, map[string]string{"dead": fakemcp.ModeExitAtStart}, bridgeConfig{restart: supervisor.RestartPolicy{MaxRestarts: 1, Initial: 20 * time.Millisecond}})
	r := newClient(t, b.url("dead")).post(initBody)
	msg := checkTransportError(t, "initialize of a child that exits at start", r, http.StatusServiceUnavailable, 0, `"dead"`, "after 1 restart(s)", "next initialize")
	if n := strings.Count(msg, "exit status 3"); n != 1 {
		t.Errorf("the message names the exit status %d times: %s", n, msg)
	}
	if strings.Count(msg, "unavailable") > 1 || strings.Count(msg, "dead") != 1 {
		t.Errorf("the message repeats itself: %s", msg)
	}
}

// TestRestartingTooLongAnswersAtOnce: while a crashed child takes longer
// than the restart patience to come back, calls get 503 with Retry-After at
// once instead of waiting for their timeout; once it is back they work.
func TestRestartingTooLongAnswersAtOnce(t *testing.T) {
	b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{
		extraEnv:        map[string]string{fakemcp.EnvStartDelay: "1500"},
		restartPatience: 200 * time.Millisecond,
		opts:            bridge.Options{RequestTimeout: 20 * time.Second},
	})
	c := newClient(t, b.url("fake"))
	c.initialize()
	mustTransportError(t, "crash", c.callTool("1", "crash", nil), http.StatusServiceUnavailable, "exit status 7")
	waitFor(t, 10*time.Second, "the restart to begin", func() bool { return b.dispatchers["fake"].Status().State == "restarting" })
	start := time.Now()
	r := c.callTool("2", "echo", map[string]string{"text": "during restart"})
	took := time.Since(start)
	mustTransportError(t, "a call during a slow restart", r, http.StatusServiceUnavailable, `"fake"`, "restarting", "retry")
	if r.header.Get("Retry-After") == "" {
		t.Errorf("no Retry-After while restarting")
	}
	// The child takes 1.5 s to start: an answer well before that came from
	// the patience, not from the restart finishing.
	if took > 1400*time.Millisecond {
		t.Errorf("the call waited %s; want about the 200 ms patience", took)
	}
	waitFor(t, 20*time.Second, "the restarted child", func() bool { return b.dispatchers["fake"].Status().State == "running" })
	echoCall(t, c, "3", "after restart")
}
