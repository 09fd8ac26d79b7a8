package supervisor

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
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
// says, and a system with cgroup v2 alone is refused with what to do,
// never given an uncapped child.
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
	write("mountinfo", "30 23 0:27 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n")
	write("cgroup", "0::/user.slice\n")
	if _, err := newCgroup("d", cgroupCaps{Processes: 4}); err == nil || !strings.Contains(err.Error(), "cgroup v2 only") {
		t.Errorf("under cgroup v2 alone: %v; want a refusal that says so", err)
	}
	if g, err := newCgroup("d", cgroupCaps{}); err != nil || len(g.dirs) != 0 {
		t.Errorf("no caps: %v %v; want no cgroup", g, err)
	}
}
