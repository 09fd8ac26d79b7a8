//go:build linux

package tests

// The sandbox's caps through the real binary (issue 37, docs/sandbox.md):
// a memory hog is stopped at its cap, said so in /healthz?verbose, and
// restarted; a fork bomb is held at its cap while the child lives on and
// another destination keeps answering.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/stelae-bridge/stelae-bridge/config"
	"github.com/stelae-bridge/stelae-bridge/supervisor"
	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

// sandboxHere skips a test where this machine cannot enforce a sandbox
// (the bridge may not make cgroups here), saying why.
func sandboxHere(t *testing.T) {
	t.Helper()
	if _, notHeld := supervisor.CheckSandbox(&config.Destination{Name: "probe", Command: "cat", Sandbox: &config.Sandbox{Processes: 4}}); len(notHeld) > 0 {
		err := strings.Join(notHeld, "; ")
		t.Skipf("no sandbox on this machine: %v", err)
	}
}

// cappedBeside runs the binary with two fake children, "capped" with
// sandbox and "beside" without, each with a session.
func cappedBeside(t *testing.T, sandbox string) (p *binaryProc, capped, beside *client) {
	t.Helper()
	sandboxHere(t)
	cfg := destinationsFile(t, map[string]string{"capped": fakemcp.ModeServer, "beside": fakemcp.ModeServer},
		map[string]string{"capped": "    sandbox: {" + sandbox + "}\n"})
	p = startBinary(t, cfg)
	capped, beside = newClient(t, p.base+"/capped/mcp"), newClient(t, p.base+"/beside/mcp")
	capped.initialize()
	beside.initialize()
	return p, capped, beside
}

// TestSandboxMemoryCapEndToEnd: a child that takes more than its
// 'sandbox: memory' is stopped by the kernel; its caller gets the reason,
// /healthz?verbose says it, the next call gets a fresh child, and a
// destination beside it never notices.
func TestSandboxMemoryCapEndToEnd(t *testing.T) {
	p, capped, beside := cappedBeside(t, "memory: 256MiB")
	if r := capped.callTool("1", "hog", map[string]any{"mib": 16}); !strings.Contains(string(r.body), "holding 16 MiB") {
		t.Fatalf("a hog within its cap: %d %s", r.status, r.body)
	}
	r := capped.callTool("2", "hog", map[string]any{"mib": 600})
	if !strings.Contains(string(r.body), "exceeded its memory cap of 256MiB") {
		t.Errorf("the call that took 600 MiB: %d %s; want the memory cap named", r.status, r.body)
	}
	if r := beside.callTool("3", "echo", map[string]any{"text": "still here"}); !strings.Contains(string(r.body), "still here") {
		t.Errorf("the destination beside: %d %s", r.status, r.body)
	}
	var health struct {
		Destinations map[string]struct {
			LastExit *string `json:"last_exit"`
			Restarts int     `json:"restarts"`
		} `json:"destinations"`
	}
	hr := mustRequest(t, http.MethodGet, p.base+"/healthz?verbose", "", "")
	if err := json.Unmarshal(hr.body, &health); err != nil {
		t.Fatalf("/healthz?verbose: %v: %s", err, hr.body)
	}
	if le := health.Destinations["capped"].LastExit; le == nil || !strings.Contains(*le, "exceeded its memory cap of 256MiB") {
		t.Errorf("/healthz?verbose: %s; want capped's last exit to name the cap", hr.body)
	}
	// The console shows the sandbox (what -check and the log say too).
	link := consoleLink(t, p)
	cs := mustRequest(t, http.MethodGet, p.base+"/console/api/state", "", "", "Authorization", "Bearer "+link.Query().Get("token"))
	if cs.status != http.StatusOK || !strings.Contains(string(cs.body), `"sandbox":"memory 256MiB"`) || strings.Count(string(cs.body), `"sandbox"`) != 1 {
		t.Errorf("the console's state: %d %s; want capped's sandbox, and none for the other", cs.status, cs.body)
	}
	// The next call gets a fresh child (in a new session: the old one
	// ended with its child).
	again := newClient(t, p.base+"/capped/mcp")
	waitFor(t, 30*time.Second, "a fresh child for capped", func() bool {
		r, err := again.do(http.MethodPost, initBody)
		if err != nil || r.status != http.StatusOK {
			return false
		}
		again.sid = r.header.Get("Mcp-Session-Id")
		return true
	})
	again.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if r := again.callTool("4", "echo", map[string]any{"text": "fresh"}); !strings.Contains(string(r.body), "fresh") {
		t.Errorf("after the restart: %d %s", r.status, r.body)
	}
}

// TestSandboxForkBombEndToEnd: a fork bomb in a child with 'sandbox:
// processes' is held at the cap (the kernel refuses its forks), the child
// answers on, and a destination beside it keeps answering meanwhile (its
// slowest call is logged: the figure the issue asks for).
func TestSandboxForkBombEndToEnd(t *testing.T) {
	_, capped, beside := cappedBeside(t, "processes: 96")
	done := make(chan response, 1)
	go func() { done <- capped.callTool("1", "fork_bomb", map[string]any{}) }()
	var slowest time.Duration
	calls := 0
	deadline := time.NewTimer(60 * time.Second)
	defer deadline.Stop()
	for waiting := true; waiting; {
		select {
		case r := <-done:
			waiting = false
			body := string(r.body)
			if !strings.Contains(body, "held") || !strings.Contains(body, "pids.max=96") || strings.Contains(body, "pids.events=max 0") {
				t.Errorf("the bomb: %d %s; want it held at 96 with refused forks counted", r.status, body)
			}
			t.Logf("the bomb's answer: %s", body)
		case <-time.After(20 * time.Millisecond):
			start := time.Now()
			r := beside.callTool(fmt.Sprint(100+calls), "echo", map[string]any{"text": "beside"})
			if !strings.Contains(string(r.body), "beside") {
				t.Fatalf("the destination beside, during the bomb: %d %s", r.status, r.body)
			}
			slowest = max(slowest, time.Since(start))
			calls++
		case <-deadline.C:
			t.Fatal("the bomb's call did not end within 60 s")
		}
	}
	t.Logf("the destination beside answered %d calls during the bomb; the slowest took %s", calls, slowest)
	if r := capped.callTool("2", "echo", map[string]any{"text": "alive"}); !strings.Contains(string(r.body), "alive") {
		t.Errorf("the capped child after its bomb: %d %s", r.status, r.body)
	}
}

// TestSandboxEndsWithAKilledBridge: when the bridge is killed (SIGKILL),
// the child's reaper ends what is in the child's cgroup — a grandchild
// that left the child's process group and session included, which
// survived a killed bridge before — and removes its cgroups (the caps',
// the network filter's) and its own temporary directory.
func TestSandboxEndsWithAKilledBridge(t *testing.T) {
	sandboxHere(t)
	cfg := destinationsFile(t, map[string]string{"capped": fakemcp.ModeServer}, map[string]string{"capped": "    sandbox: {processes: 64, network: loopback, preset: binary}\n"})
	p := startBinary(t, cfg)
	c := newClient(t, p.base+"/capped/mcp")
	c.initialize()
	var got struct {
		Result struct {
			StructuredContent struct{ PID int } `json:"structuredContent"`
			PID               int               `json:"pid"`
		} `json:"result"`
	}
	r := c.callTool("1", "spawn_grandchild", map[string]any{"setsid": true})
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Fatalf("spawn_grandchild: %v: %s", err, r.body)
	}
	pid := got.Result.PID
	if pid == 0 {
		pid = got.Result.StructuredContent.PID
	}
	if pid == 0 {
		t.Fatalf("spawn_grandchild: no pid in %s", r.body)
	}
	cg, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	var dir, filter string
	for _, line := range strings.Split(string(cg), "\n") {
		if parts := strings.SplitN(line, ":", 3); len(parts) == 3 && parts[1] == "pids" {
			dir = filepath.Join("/sys/fs/cgroup/pids", parts[2])
		} else if len(parts) == 3 && parts[0] == "0" {
			filter = filepath.Join("/sys/fs/cgroup/unified", parts[2])
		}
	}
	if !strings.Contains(dir, "stelae-capped-") || !strings.Contains(filter, "stelae-capped-") {
		t.Fatalf("the grandchild is in %q and %q, not the child's cgroups", dir, filter)
	}
	environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatal(err)
	}
	var tmp string
	for _, kv := range strings.Split(string(environ), "\x00") {
		if v, ok := strings.CutPrefix(kv, "TMPDIR="); ok {
			tmp = v
		}
	}
	if _, err := os.Stat(tmp); !strings.Contains(tmp, "stelae-capped-") || err != nil {
		t.Fatalf("the grandchild's TMPDIR %q (%v) is not the child's own", tmp, err)
	}
	_ = p.cmd.Process.Kill()
	<-p.done
	waitFor(t, 10*time.Second, "the grandchild to die with the bridge", func() bool {
		st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return true
		}
		i := strings.LastIndexByte(string(st), ')')
		return i > 0 && i+2 < len(st) && st[i+2] == 'Z'
	})
	for _, gone := range []string{dir, filter, tmp} {
		waitFor(t, 10*time.Second, gone+" (the child's cgroup or temporary directory) to be removed", func() bool {
			_, err := os.Stat(gone)
			return os.IsNotExist(err)
		})
	}
}

// TestSandboxInTheConsole: the console's page shows a destination's
// sandbox beside its isolation, in a real browser — once its child runs,
// what holds it, and what a best-effort sandbox could not hold —, and
// none for a destination without one.
func TestSandboxInTheConsole(t *testing.T) {
	sandboxHere(t)
	browser := browserFor(t)
	cfg := destinationsFile(t, map[string]string{"capped": fakemcp.ModeServer, "free": fakemcp.ModeServer, "partial": fakemcp.ModeServer},
		map[string]string{"capped": "    sandbox: {memory: 256MiB, processes: 64}\n",
			"partial": "    sandbox: {processes: 64, files: {read: [/nonexistent/stelae]}, best_effort: true}\n"})
	p := startBinary(t, cfg)
	for _, name := range []string{"capped", "partial"} {
		newClient(t, p.base+"/"+name+"/mcp").initialize()
	}
	link := consoleLink(t, p)
	ctx, cancel := context.WithTimeout(browser, 2*time.Minute)
	defer cancel()
	pg := &page{t: t, ctx: ctx}
	if err := chromedp.Do(ctx, chromedp.Navigate(link.String())); err != nil {
		t.Fatal(err)
	}
	pg.waitJS("both destinations", `document.querySelector('section.destination[data-destination="capped"] .where') && document.querySelector('section.destination[data-destination="free"] .where')`)
	if got := pg.text(`section.destination[data-destination="capped"] .where`); !strings.Contains(got, "sandbox: memory 256MiB, processes 64") {
		t.Errorf("capped's line: %q; want its sandbox", got)
	}
	if got := pg.text(`section.destination[data-destination="free"] .where`); strings.Contains(got, "sandbox") {
		t.Errorf("free's line: %q; want no sandbox", got)
	}
	pg.waitJS("capped's sandbox held", `(document.querySelector('section.destination[data-destination="capped"] .where').textContent || '').includes('held by memory and processes by a cgroup')`)
	pg.waitJS("partial's sandbox not held", `(document.querySelector('section.destination[data-destination="partial"] .where').textContent || '').includes('NOT HELD: files:')`)
	if got := pg.text(`section.destination[data-destination="partial"] .where`); !strings.Contains(got, "held by memory and processes by a cgroup") || !strings.Contains(got, "/nonexistent/stelae") {
		t.Errorf("partial's line: %q; want what holds it and what does not", got)
	}
}

// TestSandboxHoldsNpxAndItsNode: server-everything started the way users
// start it (npx → node) under the whole sandbox (the npx preset, files,
// network none, memory and processes) answers; every process of its tree
// is in the child's cgroups, in a network namespace that is not the
// bridge's, and under no_new_privs (which the joiner sets with Landlock,
// before the exec every one of them descends from); its start time with
// and without the sandbox is logged (the figure the issue asks for).
func TestSandboxHoldsNpxAndItsNode(t *testing.T) {
	sandboxHere(t)
	everythingBin(t) // installs the npm fixtures
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	dest := func(name, sandbox string) string {
		return fmt.Sprintf("  %s:\n    command: npx\n    args: [--no-install, mcp-server-everything]\n    cwd: %q\n%s", name, dir, sandbox)
	}
	cfg := filepath.Join(t.TempDir(), "destinations.yaml")
	if err := os.WriteFile(cfg, []byte("destinations:\n"+dest("boxed", fmt.Sprintf("    sandbox: {preset: npx, files: {read: [%q]}, network: none, memory: 1GiB, processes: 256}\n", dir))+dest("plain", "")), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startBinary(t, cfg)
	starts := map[string]time.Duration{}
	for _, name := range []string{"plain", "boxed"} {
		c := newClient(t, p.base+"/"+name+"/mcp")
		start := time.Now()
		c.initialize()
		if r := c.callTool("1", "echo", map[string]any{"message": "hi from " + name}); !strings.Contains(string(r.body), "hi from "+name) {
			t.Fatalf("%s: %d %s", name, r.status, r.body)
		}
		starts[name] = time.Since(start) // the child's start, its handshake and a call
	}
	t.Logf("server-everything (npx → node), start and first call: %s plain, %s in its sandbox", starts["plain"].Round(time.Millisecond), starts["boxed"].Round(time.Millisecond))
	// Every process of the boxed child's tree is in its cgroup.
	root := destPID(t, p, "boxed")
	if root == 0 {
		t.Fatal("/healthz?verbose names no pid for boxed")
	}
	tree := append([]int{root}, descendants(root)...)
	if len(tree) < 2 {
		t.Errorf("the boxed child %d has no descendants (npx starts node)", root)
	}
	for _, pid := range tree {
		cg, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
		if err != nil {
			continue // gone meanwhile
		}
		if !strings.Contains(string(cg), "pids:/stelae-boxed-") || strings.Count(string(cg), "/stelae-boxed-") < 2 {
			t.Errorf("process %d of the boxed child's tree is not in its cgroup:\n%s", pid, cg)
		}
		ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid))
		if own, _ := os.Readlink("/proc/self/ns/net"); err == nil && ns == own {
			t.Errorf("process %d of the boxed child's tree has the bridge's network namespace %s", pid, ns)
		}
		status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if len(status) > 0 && !strings.Contains(string(status), "NoNewPrivs:\t1") {
			t.Errorf("process %d of the boxed child's tree is not under no_new_privs", pid)
		}
	}
}

// TestSandboxFollowsAReload: a reload that gives a destination a sandbox
// (or another) restarts it under the new one, and one that takes it away
// restarts it free: a protection is never left to the next restart, and
// never outlives its removal.
func TestSandboxFollowsAReload(t *testing.T) {
	sandboxHere(t)
	modes := map[string]string{"d": fakemcp.ModeServer}
	config := destinationsFile(t, modes, nil)
	p := startBinary(t, config)
	cgroupOf := func(pid int) string {
		data, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
		for _, line := range strings.Split(string(data), "\n") {
			if parts := strings.SplitN(line, ":", 3); len(parts) == 3 && parts[1] == "pids" {
				return parts[2]
			}
		}
		return ""
	}
	reloads := 0
	for _, step := range []struct {
		keys  string
		boxed bool
	}{
		{"", false},
		{"    sandbox: {processes: 64}\n", true},
		{"    sandbox: {processes: 32, memory: 512MiB}\n", true},
		{"", false},
	} {
		if step.keys != "" || reloads > 0 {
			rewrite(t, config, destinationsFile(t, modes, map[string]string{"d": step.keys}))
			if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
				t.Fatal(err)
			}
			reloads++
			waitReloads(t, p, "applied", float64(reloads))
		}
		c := newClient(t, p.base+"/d/mcp")
		c.initialize()
		pid := whoamiCall(t, c).PID
		if got := cgroupOf(pid); strings.Contains(got, "/stelae-d-") != step.boxed {
			t.Errorf("with %q the child %d is in pids cgroup %q", strings.TrimSpace(step.keys), pid, got)
		}
	}
}

// TestSandboxFilesystemServer: the official server-filesystem, told it may
// use four directories, is held by 'sandbox: files' to the one the
// operator granted: it reads and writes there, and cannot read a planted
// ~/.ssh key or the bridge's state directory, not through a symlink or a
// ".." made while it runs, nor write outside — the kernel refuses what
// the server's own checks allow. The same server without the sandbox (the
// bystander that shows the test can fail) reads the key.
func TestSandboxFilesystemServer(t *testing.T) {
	sandboxHere(t)
	bin := filesystemBin(t)
	modules, err := filepath.Abs("node_modules")
	if err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	root, home, state, outside := filepath.Join(base, "root"), filepath.Join(base, "home"), filepath.Join(base, "state"), filepath.Join(base, "outside")
	key := filepath.Join(home, ".ssh", "id_ed25519")
	for _, dir := range []string{root, filepath.Dir(key), state, outside} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for path, text := range map[string]string{key: "PRIVATE KEY", filepath.Join(root, "note.txt"): "granted"} {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	dest := func(name, sandbox string) string {
		return fmt.Sprintf("  %s:\n    command: %q\n    args: [%q, %q, %q, %q]\n%s", name, bin, root, home, state, outside, sandbox)
	}
	cfg := filepath.Join(t.TempDir(), "destinations.yaml")
	boxed := fmt.Sprintf("    sandbox: {preset: npx, files: {read: [%q], write: [%q]}, network: none}\n", modules, root)
	if err := os.WriteFile(cfg, []byte("destinations:\n"+dest("boxed", boxed)+dest("plain", "")), 0o600); err != nil {
		t.Fatal(err)
	}
	// The bridge's home is base/home: the preset's ~/.npm is made there,
	// and the key is where a server would look for one.
	cmd := exec.Command(bridgeBinary(t), "-config", cfg, "-listen", "127.0.0.1:0", "-state-dir", state)
	cmd.Env = append(os.Environ(), "HOME="+home)
	p := runBinary(t, cmd)
	// Made while the servers run: a symlink in the granted root to the key.
	link := filepath.Join(root, "link")
	calls := []struct {
		name, tool string
		args       map[string]any
		boxed      bool // the sandboxed server succeeds
	}{
		{"read granted", "read_text_file", map[string]any{"path": filepath.Join(root, "note.txt")}, true},
		{"write granted", "write_file", map[string]any{"path": filepath.Join(root, "new.txt"), "content": "written"}, true},
		{"read key", "read_text_file", map[string]any{"path": key}, false},
		{"read by symlink", "read_text_file", map[string]any{"path": link}, false},
		{"read by ..", "read_text_file", map[string]any{"path": root + "/../home/.ssh/id_ed25519"}, false},
		{"list state", "list_directory", map[string]any{"path": state}, false},
		{"write outside", "write_file", map[string]any{"path": filepath.Join(outside, "planted.txt"), "content": "x"}, false},
	}
	for _, name := range []string{"boxed", "plain"} {
		c := newClient(t, p.base+"/"+name+"/mcp")
		c.initialize()
		_ = os.Remove(link)
		if err := os.Symlink(key, link); err != nil {
			t.Fatal(err)
		}
		for i, call := range calls {
			r := c.callTool(fmt.Sprint(i+1), call.tool, call.args)
			var out struct {
				Result struct {
					IsError bool `json:"isError"`
				} `json:"result"`
			}
			if err := json.Unmarshal(r.body, &out); err != nil || r.status != http.StatusOK {
				t.Fatalf("%s: %s: %d %s", name, call.name, r.status, r.body)
			}
			want := call.boxed || name == "plain"
			if out.Result.IsError == want {
				t.Errorf("%s: %s: succeeded %v, want %v: %s", name, call.name, !out.Result.IsError, want, r.body)
			}
			if name == "boxed" && strings.Contains(string(r.body), "PRIVATE KEY") {
				t.Errorf("boxed: %s: the key reached the client: %s", call.name, r.body)
			}
		}
		_ = os.Remove(filepath.Join(outside, "planted.txt"))
	}
	if data, err := os.ReadFile(filepath.Join(root, "new.txt")); err != nil || string(data) != "written" {
		t.Errorf("the granted write: %q, %v", data, err)
	}
}

// TestSandboxPythonPreset: a Python server (tests/testdata/readserver.py,
// plain Python) under 'preset: uvx' runs — its interpreter, wherever
// python3 says it is installed, is readable without being listed — and is
// held to its files: it reads the granted directory, not a planted key.
// The same server without the sandbox (the bystander) reads the key.
func TestSandboxPythonPreset(t *testing.T) {
	sandboxHere(t)
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3 on this machine")
	}
	script, err := filepath.Abs(filepath.Join("testdata", "readserver.py"))
	if err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	granted, key := filepath.Join(base, "granted", "note.txt"), filepath.Join(base, "home", ".ssh", "id_ed25519")
	for path, text := range map[string]string{granted: "granted", key: "PRIVATE KEY"} {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	dest := func(name, sandbox string) string {
		return fmt.Sprintf("  %s:\n    command: python3\n    args: [%q]\n%s", name, script, sandbox)
	}
	cfg := filepath.Join(t.TempDir(), "destinations.yaml")
	boxed := fmt.Sprintf("    sandbox: {preset: uvx, files: {read: [%q, %q]}, network: none}\n", filepath.Dir(script), filepath.Dir(granted))
	if err := os.WriteFile(cfg, []byte("destinations:\n"+dest("boxed", boxed)+dest("plain", "")), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bridgeBinary(t), "-config", cfg, "-listen", "127.0.0.1:0", "-state-dir", t.TempDir())
	cmd.Env = append(os.Environ(), "HOME="+filepath.Join(base, "home"))
	p := runBinary(t, cmd)
	for _, name := range []string{"boxed", "plain"} {
		c := newClient(t, p.base+"/"+name+"/mcp")
		c.initialize()
		if r := c.callTool("1", "read", map[string]any{"path": granted}); !strings.Contains(string(r.body), `"granted"`) || strings.Contains(string(r.body), `"isError"`) {
			t.Errorf("%s: read granted: %d %s", name, r.status, r.body)
		}
		r := c.callTool("2", "read", map[string]any{"path": key})
		if leaked := strings.Contains(string(r.body), "PRIVATE KEY"); leaked != (name == "plain") {
			t.Errorf("%s: read key: %d %s", name, r.status, r.body)
		}
	}
}
