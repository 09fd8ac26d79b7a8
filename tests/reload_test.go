//go:build unix

package tests

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

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
