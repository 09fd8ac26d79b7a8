package supervisor

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stelae-bridge/stelae-bridge/config"
)

// capsOrSkip makes a cgroup with caps, or skips the test where this
// machine does not let the test make one (not root, no v1 controller),
// saying why. The cgroup is removed when the test ends.
func capsOrSkip(t *testing.T, caps cgroupCaps) *cgroup {
	t.Helper()
	g, err := newCgroup("test/"+t.Name(), caps)
	if err != nil {
		t.Skipf("cgroups cannot be made here: %v", err)
	}
	t.Cleanup(func() {
		if err := g.remove(); err != nil {
			t.Errorf("the cgroup was not removed: %v", err)
		}
	})
	return g
}

// startInCgroup starts script under sh in a process group of its own; the
// shell joins g first, as a reaper does before it starts its command. The
// group is killed when the test ends (before the cgroup is removed).
func startInCgroup(t *testing.T, g *cgroup, script string, out *lockedBuffer) *exec.Cmd {
	t.Helper()
	join := ""
	for _, f := range g.procsFiles() {
		join += "echo $$ > " + strconv.Quote(f) + " && "
	}
	cmd := exec.Command("/bin/sh", "-c", join+script)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		if cmd.ProcessState == nil {
			_ = cmd.Wait()
		}
		// The group's processes are gone once the cgroup is empty.
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			empty := true
			for _, f := range g.procsFiles() {
				if data, _ := os.ReadFile(f); len(bytes.TrimSpace(data)) > 0 {
					empty = false
				}
			}
			if empty {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
	return cmd
}

// TestCgroupHoldsAForkBomb: a child that starts processes without end is
// held at its cap (the kernel refuses its forks: EAGAIN), and a process
// outside its cgroup still starts them.
func TestCgroupHoldsAForkBomb(t *testing.T) {
	g := capsOrSkip(t, cgroupCaps{Processes: 8})
	var out lockedBuffer
	startInCgroup(t, g, `i=0; while [ $i -lt 40 ]; do sleep 60 & i=$((i+1)); done; echo done; wait`, &out)
	current := func() int {
		data, _ := os.ReadFile(filepath.Join(g.dirs[0], "pids.current"))
		n, _ := strconv.Atoi(strings.TrimSpace(string(data)))
		return n
	}
	// The kernel counts the forks it refused at the cap (pids.events).
	refused := func() int {
		data, _ := os.ReadFile(filepath.Join(g.dirs[0], "pids.events"))
		n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(data)), "max")))
		return n
	}
	deadline := time.Now().Add(30 * time.Second)
	for refused() == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if refused() == 0 {
		t.Fatalf("no fork was refused within 30 s; the shell printed %q", out.String())
	}
	if n := current(); n > 8 || n < 1 {
		t.Errorf("the cgroup holds %d processes; want at most its cap of 8", n)
	}
	t.Logf("pids.current %d, forks refused %d", current(), refused())
	// A bystander outside the cgroup forks as many as it likes.
	if got, err := exec.Command("/bin/sh", "-c", `i=0; while [ $i -lt 20 ]; do true & i=$((i+1)); done; wait; echo ok`).CombinedOutput(); err != nil || strings.TrimSpace(string(got)) != "ok" {
		t.Errorf("a shell outside the cgroup: %v %q", err, got)
	}
}

// TestCgroupStopsAMemoryHog: a child over its memory cap is killed by the
// kernel, and the kill is counted (what the bridge will say: "exceeded
// its memory cap").
func TestCgroupStopsAMemoryHog(t *testing.T) {
	g := capsOrSkip(t, cgroupCaps{Memory: 32 << 20})
	var out lockedBuffer
	cmd := startInCgroup(t, g, `x=$(head -c 300000000 /dev/zero | tr '\0' a); echo survived ${#x}`, &out)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err == nil || strings.Contains(out.String(), "survived") {
			t.Errorf("the hog was not stopped: %v, %q", err, out.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the hog ran 60 s past a 32 MiB cap")
	}
	if n := g.oomKills(); n < 1 {
		t.Errorf("oom kills %d; want the hog's", n)
	}
}

// TestCgroupMountTable: the controllers are found where the mount table
// says; under cgroup v2 alone a bridge whose cgroup is not given the
// controllers is refused with what to do (Delegate=yes), never given an
// uncapped child, and one that is given them (a directory that stands for
// a delegated cgroup v2: the files the kernel's interface has) moves its
// processes into its leaf, hands the controllers to its children and caps
// the child's. TestCgroupV2 runs that against the kernel where it can.
func TestCgroupMountTable(t *testing.T) {
	saved := cgroupRoot
	t.Cleanup(func() { cgroupRoot = saved })
	dir := t.TempDir()
	cgroupRoot = dir
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("mountinfo", `35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
39 31 0:36 /kube /sys/fs/cgroup/pids rw,relatime shared:9 - cgroup cgroup rw,pids
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`)
	m, err := cgroupMounts()
	if err != nil {
		t.Fatal(err)
	}
	if m["memory"] != (cgroupMount{"/sys/fs/cgroup/memory", "/"}) || m["pids"] != (cgroupMount{"/sys/fs/cgroup/pids", "/kube"}) || m[""].point != "/sys/fs/cgroup/unified" {
		t.Errorf("mounts %+v", m)
	}
	write("cgroup", "4:memory:/process_api/x\n8:pids:/kube/pod1\n0::/\n")
	own, err := ownCgroups()
	if err != nil || own["memory"] != "/process_api/x" || own["pids"] != "/kube/pod1" {
		t.Errorf("own %v, %v", own, err)
	}
	v2 := t.TempDir()
	service := filepath.Join(v2, "system.slice", "stelae.service")
	if err := os.MkdirAll(service, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"cgroup.type": "domain\n", "cgroup.controllers": "cpu io\n", "cgroup.subtree_control": "", "cgroup.procs": "4242\n4343\n"} {
		if err := os.WriteFile(filepath.Join(service, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("mountinfo", "30 23 0:27 / "+v2+" rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n")
	write("cgroup", "0::/system.slice/stelae.service\n")
	if _, err := newCgroup("d", cgroupCaps{Processes: 4}); err == nil || !strings.Contains(err.Error(), "Delegate=yes") {
		t.Errorf("under cgroup v2 without the controllers: %v; want a refusal that says what to do", err)
	}
	_ = os.WriteFile(filepath.Join(service, "cgroup.controllers"), []byte("cpu io memory pids\n"), 0o644)
	g, err := newCgroup("d", cgroupCaps{Processes: 4, Memory: 64 << 20})
	if err != nil {
		t.Fatalf("under a delegated cgroup v2: %v", err)
	}
	for file, want := range map[string]string{
		filepath.Join(service, bridgeLeaf, "cgroup.procs"): "4343",  // the last pid written
		filepath.Join(service, "cgroup.subtree_control"):   "+pids", // the last controller handed
		filepath.Join(g.v2, "pids.max"):                    "4",
		filepath.Join(g.v2, "memory.max"):                  strconv.Itoa(64 << 20),
		filepath.Join(g.v2, "memory.swap.max"):             "0",
	} {
		if data, err := os.ReadFile(file); err != nil || string(data) != want {
			t.Errorf("%s: %q, %v; want %q", file, data, err, want)
		}
	}
	if filepath.Dir(g.v2) != service || g.memory != g.v2 || len(g.dirs) != 1 {
		t.Errorf("the child's cgroup: %+v; want one v2 directory under %s", g, service)
	}
	// Moved into its leaf, the bridge's next child still goes beside it.
	write("cgroup", "0::/system.slice/stelae.service/"+bridgeLeaf+"\n")
	if g2, err := newCgroup("d", cgroupCaps{Processes: 4}); err != nil || filepath.Dir(g2.v2) != service {
		t.Errorf("after the move: %+v, %v; want a directory under %s", g2, err, service)
	}
	if g, err := newCgroup("d", cgroupCaps{}); err != nil || len(g.dirs) != 0 {
		t.Errorf("no caps: %v %v; want no cgroup", g, err)
	}
}

// TestCgroupV2: where the kernel gives the bridge's cgroup v2 the pids
// controller, a child's process cap is held by a cgroup v2 (the mount
// table is read without v1's pids hierarchy, so that v2 is used even on a
// machine that mounts both): its forks past the cap fail, and its cgroup
// is gone with it. Skipped, saying so, where v2 has no pids controller
// for the bridge (these machines bind it to v1).
func TestCgroupV2(t *testing.T) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Skip(err)
	}
	var kept []string
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.Contains(line, " - cgroup cgroup ") {
			kept = append(kept, line)
		}
	}
	dir := t.TempDir()
	own, _ := os.ReadFile("/proc/self/cgroup")
	_ = os.WriteFile(filepath.Join(dir, "mountinfo"), []byte(strings.Join(kept, "\n")), 0o644)
	_ = os.WriteFile(filepath.Join(dir, "cgroup"), own, 0o644)
	saved := cgroupRoot
	t.Cleanup(func() { cgroupRoot = saved })
	cgroupRoot = dir
	mounts, _ := cgroupMounts()
	ownV2, _ := ownCgroups()
	m, ok := mounts[""]
	if !ok {
		t.Skip("no cgroup v2 hierarchy here")
	}
	parent := filepath.Join(m.point, strings.TrimPrefix(v2Parent(ownV2[""]), m.root))
	if controllers, _ := os.ReadFile(filepath.Join(parent, "cgroup.controllers")); !strings.Contains(string(controllers), "pids") {
		t.Skipf("cgroup v2 gives the bridge's cgroup %s no pids controller here (%q): the machine binds it to v1", parent, strings.TrimSpace(string(controllers)))
	}
	d := &config.Destination{Name: "v2", Command: "sh", Args: []string{"-c",
		`n=0; for i in 1 2 3 4 5 6 7 8 9 10 11 12; do if sleep 30 2>/dev/null & then n=$((n+1)); fi; done 2>/dev/null; echo $n; echo done`},
		Sandbox: &config.Sandbox{Processes: 4}}
	p, err := Start(context.Background(), d, reaperOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	if p.jail.cgroup() == nil || p.jail.cgroup().v2 == "" {
		t.Fatalf("the child's cgroup %+v is not a v2 one", p.jail.cgroup())
	}
	v2dir := p.jail.cgroup().v2
	if max, _ := os.ReadFile(filepath.Join(v2dir, "pids.max")); strings.TrimSpace(string(max)) != "4" {
		t.Errorf("pids.max %q; want 4", max)
	}
	line, err := p.ReadMessage()
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := strconv.Atoi(string(line)); n >= 12 || n < 1 {
		t.Errorf("the child started %s of 12 sleeps under a cap of 4 processes", line)
	}
	if events, _ := os.ReadFile(filepath.Join(v2dir, "pids.events")); !strings.Contains(string(events), "max") || strings.Contains(string(events), "max 0") {
		t.Errorf("pids.events %q; want refused forks counted", events)
	}
	_ = p.Stop(context.Background())
	<-p.Exited()
	if _, err := os.Stat(v2dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the child's cgroup %s stays: %v", v2dir, err)
	}
}
