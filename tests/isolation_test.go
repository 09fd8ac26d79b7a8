//go:build unix

package tests

// isolation: session gives every session a child of its own: started by its
// initialize, stopped when the session ends (DELETE, expiry, eviction,
// shutdown), supervised like a shared one.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stelae-bridge/stelae-bridge/bridge"
	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

func TestIsolationOneChildPerSession(t *testing.T) {
	b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{isolated: true, opts: bridge.Options{MaxSessions: 2}})
	health := func() map[string]any {
		t.Helper()
		r := raw(t, b, http.MethodGet, "/healthz", "")
		var h struct {
			Destinations map[string]map[string]any `json:"destinations"`
		}
		if err := json.Unmarshal(r.body, &h); err != nil {
			t.Fatalf("/healthz: %v %s", err, r.body)
		}
		return h.Destinations["fake"]
	}
	a, c := newClient(t, b.url("fake")), newClient(t, b.url("fake"))
	a.initialize()
	c.initialize()
	wa, wc := whoamiCall(t, a), whoamiCall(t, c)
	if wa.PID == wc.PID || wa.Inits != 1 || wc.Inits != 1 {
		t.Fatalf("sessions share child %d/%d (inits %d, %d); want one child each, initialized once", wa.PID, wc.PID, wa.Inits, wc.Inits)
	}
	if h := health(); h["children"] != 2.0 || h["sessions"] != 2.0 {
		t.Errorf("/healthz: %v; want 2 children for 2 sessions", h)
	}
	childA, childC := watchProc(t, wa.PID), watchProc(t, wc.PID)

	// DELETE stops that session's child only.
	if r := a.must(http.MethodDelete, ""); r.status != http.StatusNoContent {
		t.Fatalf("DELETE: %d %s", r.status, r.body)
	}
	childA.waitGone(t, 10*time.Second, "the deleted session's child")
	echoCall(t, c, "1", "still mine")
	if !childC.alive() {
		t.Fatalf("the other session's child died")
	}
	waitFor(t, 10*time.Second, "healthz to count one child", func() bool { return health()["children"] == 1.0 })

	// At the cap, eviction of the idle session stops its child too.
	n1 := newClient(t, b.url("fake"))
	n1.initialize()
	n2 := newClient(t, b.url("fake"))
	n2.initialize() // evicts c, the least recently used
	childC.waitGone(t, 10*time.Second, "the evicted session's child")
	checkTransportError(t, "the evicted session", c.callTool(`2`, "echo", map[string]string{"text": "x"}), http.StatusNotFound, -32001)

	// A crash restarts only that session's child, and the session goes on.
	w := whoamiCall(t, n1)
	crash := n1.callTool(`3`, "crash", nil)
	if crash.status != http.StatusServiceUnavailable {
		t.Fatalf("crash call: %d %s", crash.status, crash.body)
	}
	waitFor(t, 10*time.Second, "n1's child to restart", func() bool {
		r := n1.callTool(`"who"`, "whoami", nil)
		if r.status != http.StatusOK {
			return false
		}
		var got struct{ PID int }
		_ = json.Unmarshal(decode(t, r.body).Result, &got)
		return got.PID != 0 && got.PID != w.PID
	})
	echoCall(t, n2, "4", "unaffected")
}

func TestIsolationShutdownLeavesNoChild(t *testing.T) {
	b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{isolated: true})
	var procs []proc
	for range 3 {
		c := newClient(t, b.url("fake"))
		c.initialize()
		procs = append(procs, watchProc(t, whoamiCall(t, c).PID))
	}
	b.close()
	for i, p := range procs {
		p.waitGone(t, 10*time.Second, fmt.Sprintf("child %d after shutdown", i))
	}
}

// TestIsolationWithSequentialThinking runs the official
// server-sequential-thinking, whose thought history lives in the process:
// shared, two official TypeScript SDK clients add to one history; with
// isolation: session each has its own.
func TestIsolationWithSequentialThinking(t *testing.T) {
	everythingBin(t)
	bin, err := filepath.Abs(filepath.Join("node_modules", ".bin", "mcp-server-sequential-thinking"))
	if err != nil {
		t.Fatal(err)
	}
	thought := `sequentialthinking {"thought":"one step","thoughtNumber":1,"totalThoughts":1,"nextThoughtNeeded":false}`
	for _, tc := range []struct {
		isolation string
		want      [2]int
	}{{"shared", [2]int{1, 2}}, {"session", [2]int{1, 1}}} {
		t.Run(tc.isolation, func(t *testing.T) {
			config := filepath.Join(t.TempDir(), "destinations.yaml")
			yaml := fmt.Sprintf("destinations:\n  think:\n    command: %q\n    isolation: %s\n    env: {DISABLE_THOUGHT_LOGGING: \"true\"}\n", bin, tc.isolation)
			if err := os.WriteFile(config, []byte(yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			p := startBinary(t, config)
			for i, want := range tc.want {
				s := runTSSession(t, p.base+"/think/mcp", "--label", fmt.Sprint(i), "--no-delete", "--call", thought)
				var out struct {
					ThoughtHistoryLength int `json:"thoughtHistoryLength"`
				}
				if err := json.Unmarshal([]byte(s.text(0)), &out); err != nil {
					t.Fatalf("client %d: %v: %q", i, err, s.text(0))
				}
				if out.ThoughtHistoryLength != want {
					t.Errorf("client %d sees a history of %d thought(s), want %d", i, out.ThoughtHistoryLength, want)
				}
			}
			if t.Failed() && !strings.Contains(p.logs.String(), "isolation") {
				t.Logf("bridge logs:\n%s", p.logs.String())
			}
		})
	}
}

// TestIsolatedSessionTTL: an idle session of an 'isolation: session'
// destination expires after its 'session_ttl:', and its child stops with
// it (such children lived the bridge's 30 minutes for clients that never
// DELETE).
func TestIsolatedSessionTTL(t *testing.T) {
	config := destinationsFile(t, map[string]string{"iso": fakemcp.ModeServer}, map[string]string{"iso": "    isolation: session\n    session_ttl: 1s\n"})
	p := startBinary(t, config)
	c := newClient(t, p.base+"/iso/mcp")
	c.initialize()
	pid := whoamiCall(t, c).PID
	waitFor(t, 15*time.Second, "the idle session's child to stop", func() bool { return !processAlive(pid) })
	if r := c.callTool(`"x"`, "echo", map[string]string{"text": "x"}); r.status != http.StatusNotFound {
		t.Errorf("the expired session: %d %s; want 404", r.status, r.body)
	}
}
