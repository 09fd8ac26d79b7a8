//go:build unix

package tests

// kill -9 of the bridge leaves nothing behind: each child's process group
// dies with its reaper's parent, and what a bridge and its reapers killed
// together left is killed at the next start, after checking it is theirs.

import (
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

	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

// hardKillConfig writes a destinations file with the three kinds of child
// whose descendants outlived a kill -9 before: a sh -c wrapper that starts a
// helper and execs the server, a server that spawns its own helper, and a
// server that ignores SIGTERM.
// A sandbox, when given, is every destination's (top level).
func hardKillConfig(t *testing.T, sandbox string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf(`%s=%s "$0" -test.run='^$' & exec env %s=%s "$0" -test.run='^$'`, fakemcp.EnvMode, fakemcp.ModeSleeper, fakemcp.EnvMode, fakemcp.ModeServer)
	_, _, env := fakemcp.Command(fakemcp.ModeServer)
	yaml := sandbox + fmt.Sprintf(`destinations:
  wrapped:
    command: sh
    args: ["-c", %q, %q]
  helper:
    command: %q
    args: ["-test.run=^$"]
    env: {%s: %s}
  stubborn:
    command: %q
    args: ["-test.run=^$"]
    env: {%s: %s}
`, script, exe, exe, fakemcp.EnvMode, env[fakemcp.EnvMode], exe, fakemcp.EnvMode, fakemcp.ModeStubborn)
	path := filepath.Join(t.TempDir(), "destinations.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestHardKillLeavesNoProcess(t *testing.T) {
	t.Run("plain", func(t *testing.T) { hardKillLeavesNoProcess(t, "") })
	t.Run("sandboxed", func(t *testing.T) {
		sandboxHere(t)
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		hardKillLeavesNoProcess(t, fmt.Sprintf("sandbox: {processes: 256, network: none, files: {read: [%q]}}\n", filepath.Dir(exe)))
	})
}

func hardKillLeavesNoProcess(t *testing.T, sandbox string) {
	p := startBinary(t, hardKillConfig(t, sandbox))
	for _, dest := range []string{"wrapped", "helper", "stubborn"} {
		c := newClient(t, p.base+"/"+dest+"/mcp")
		c.initialize()
		if dest == "helper" {
			resultOK(t, "spawn_grandchild", c.callTool(`"g"`, "spawn_grandchild", nil))
		}
	}
	tree := descendants(p.cmd.Process.Pid)
	// reaper + sh-exec'd server + sleeper, reaper + server + grandchild,
	// reaper + stubborn server.
	if len(tree) < 8 {
		t.Fatalf("want at least 8 processes below the bridge, got %v", tree)
	}
	// What the sandbox made for the children: their pids cgroups (the
	// network: none sandbox has no filter's) and their TMPDIRs.
	left := map[string]bool{}
	if sandbox != "" {
		for _, pid := range tree {
			cg, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
			for _, line := range strings.Split(string(cg), "\n") {
				if parts := strings.SplitN(line, ":", 3); len(parts) == 3 && parts[1] == "pids" && strings.Contains(parts[2], "/stelae-") {
					left[filepath.Join("/sys/fs/cgroup/pids", parts[2])] = true
				}
			}
			environ, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
			for _, kv := range strings.Split(string(environ), "\x00") {
				if v, ok := strings.CutPrefix(kv, "TMPDIR="); ok && strings.Contains(v, "stelae-") {
					left[v] = true
				}
			}
		}
		if len(left) != 6 {
			t.Fatalf("the three sandboxed children's cgroups and TMPDIRs: %v", left)
		}
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for _, pid := range tree {
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		environ, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		mode := ""
		for _, kv := range strings.Split(string(environ), "\x00") {
			if strings.HasPrefix(kv, fakemcp.EnvMode) {
				mode = kv
			}
		}
		waitFor(t, 10*time.Second, fmt.Sprintf("process %d (%q %s) to die with the bridge", pid, strings.ReplaceAll(string(cmdline), "\x00", " "), mode), func() bool { return !processAlive(pid) })
	}
	// The reapers remove them, whether the death signal or the child's
	// exit (its stdin closed with the bridge) reached them first.
	for path := range left {
		waitFor(t, 10*time.Second, path+" (a child's cgroup or TMPDIR) to be removed", func() bool {
			_, err := os.Stat(path)
			return os.IsNotExist(err)
		})
	}
}

// TestRestartKillsWhatAKilledBridgeLeft: the bridge and a reaper die
// together (OOM kill of the tree), leaving the reaper's server and its
// helper running; the next bridge with the same -state-dir kills them. A
// record whose pid now belongs to another process kills nothing. A
// sandboxed child's cgroups (which its reaper would have removed) and own
// temporary directory go too.
func TestRestartKillsWhatAKilledBridgeLeft(t *testing.T) {
	t.Run("plain", func(t *testing.T) { restartKillsWhatAKilledBridgeLeft(t, "") })
	t.Run("sandboxed", func(t *testing.T) {
		sandboxHere(t)
		restartKillsWhatAKilledBridgeLeft(t, "    sandbox: {processes: 64, network: loopback, preset: binary}\n")
	})
}

func restartKillsWhatAKilledBridgeLeft(t *testing.T, sandbox string) {
	state := t.TempDir()
	// A stubborn server outlives its stdin's end, as many servers do.
	config := destinationsFile(t, map[string]string{"fake": fakemcp.ModeStubborn}, map[string]string{"fake": sandbox})
	first := startBinary(t, config, "-state-dir", state)
	c := newClient(t, first.base+"/fake/mcp")
	c.initialize()
	server := whoamiCall(t, c).PID
	var g struct{ PID int }
	_ = json.Unmarshal(resultOK(t, "spawn_grandchild", c.callTool(`"g"`, "spawn_grandchild", nil)), &g)
	reaper := mustStat(t, server).pgrp
	// What the sandbox made: the server's cgroups (pids; the filter's
	// v2) and its TMPDIR.
	var left []string
	if sandbox != "" {
		cg, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", server))
		for _, line := range strings.Split(string(cg), "\n") {
			if parts := strings.SplitN(line, ":", 3); len(parts) == 3 && parts[1] == "pids" {
				left = append(left, filepath.Join("/sys/fs/cgroup/pids", parts[2]))
			} else if len(parts) == 3 && parts[0] == "0" {
				left = append(left, filepath.Join("/sys/fs/cgroup/unified", parts[2]))
			}
		}
		environ, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", server))
		for _, kv := range strings.Split(string(environ), "\x00") {
			if v, ok := strings.CutPrefix(kv, "TMPDIR="); ok {
				left = append(left, v)
			}
		}
		if len(left) != 3 {
			t.Fatalf("the sandboxed server's cgroups and TMPDIR: %q", left)
		}
	}
	if reaper == 0 || reaper == server {
		t.Fatalf("server %d is not led by a reaper (group %d)", server, reaper)
	}
	// Neither may act on the other's death: stop the bridge (a stopped
	// member in the child's group would make the kernel hang it up when the
	// group is orphaned, so not the reaper), kill the reaper, then the
	// bridge.
	_ = first.cmd.Process.Signal(syscall.SIGSTOP)
	waitFor(t, 10*time.Second, "the bridge to stop", func() bool {
		st, ok := readStat(first.cmd.Process.Pid)
		return ok && st.state == 'T'
	})
	_ = syscall.Kill(reaper, syscall.SIGKILL)
	waitFor(t, 10*time.Second, "the reaper to die", func() bool { return !processAlive(reaper) })
	_ = first.cmd.Process.Signal(syscall.SIGKILL)
	<-first.done
	waitFor(t, 10*time.Second, "the reaper to be gone", func() bool { return !processAlive(reaper) })
	for _, pid := range []int{server, g.PID} {
		if !processAlive(pid) {
			t.Fatalf("process %d died with its reaper: the scenario needs it orphaned", pid)
		}
	}

	// A record that does not verify: its pid is now an unrelated process.
	other := exec.Command("sleep", "60")
	other.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Process.Kill(); other.Wait() })
	bogus := filepath.Join(state, "children", fmt.Sprintf("%d-1.json", other.Process.Pid))
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	rec := fmt.Sprintf(`{"pgid":%d,"pid":%d,"leader_start":1,"sid":%d,"bridge_pid":999999999,"bridge_start":1,"boot_id":%q,"destination":"x"}`,
		other.Process.Pid, other.Process.Pid, mustStat(t, other.Process.Pid).session, strings.TrimSpace(string(boot)))
	if err := os.WriteFile(bogus, []byte(rec), 0o600); err != nil {
		t.Fatal(err)
	}

	second := startBinary(t, config, "-state-dir", state)
	for _, pid := range []int{server, g.PID} {
		waitFor(t, 10*time.Second, fmt.Sprintf("the orphan %d to be killed by the next bridge", pid), func() bool { return !processAlive(pid) })
	}
	if !processAlive(other.Process.Pid) {
		t.Errorf("a process that only shares a recorded pid was killed")
	}
	for _, path := range left {
		waitFor(t, 10*time.Second, path+" (the dead child's cgroup or TMPDIR) to be removed", func() bool {
			_, err := os.Stat(path)
			return os.IsNotExist(err)
		})
	}
	waitFor(t, 10*time.Second, "the records of the dead bridge to be forgotten", func() bool {
		ents, _ := os.ReadDir(filepath.Join(state, "children"))
		return len(ents) == 0
	})
	// The new bridge works.
	c2 := newClient(t, second.base+"/fake/mcp")
	c2.initialize()
	echoCall(t, c2, "1", "after the sweep")
}

// TestShutdownDoesNotWaitForAStartingChild: an initialize waiting for a
// child that never answers (here cat) does not hold the bridge's shutdown
// for the request timeout: the session ends, the call with it (503).
func TestShutdownDoesNotWaitForAStartingChild(t *testing.T) {
	config := filepath.Join(t.TempDir(), "destinations.yaml")
	if err := os.WriteFile(config, []byte("destinations:\n  mute:\n    command: cat\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startBinary(t, config, "-shutdown-timeout", "20s")
	answered := make(chan response, 1)
	go func() {
		r, _ := request(http.MethodPost, p.base+"/mute/mcp", "", initBody)
		answered <- r
	}()
	waitFor(t, 10*time.Second, "the child to be starting", func() bool {
		return metricsOf(t, p)[`stelae_child_state{destination="mute",state="starting"}`] == 1
	})
	start := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		t.Fatalf("the bridge still runs 15 s after SIGINT")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("shutdown took %s with an initialize waiting for the child", took)
	}
	if r := <-answered; r.status != http.StatusServiceUnavailable {
		t.Errorf("the waiting initialize got %d %s; want 503", r.status, r.body)
	}
}
