package supervisor

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/stelae-bridge/stelae-bridge/config"
)

// sandboxOrSkip skips a test where this machine does not let the bridge
// make cgroups (not root, no cgroup v1 controllers), saying why.
func sandboxOrSkip(t *testing.T) {
	t.Helper()
	g, err := newCgroup("probe", cgroupCaps{Processes: 4})
	if err != nil {
		t.Skipf("cgroups cannot be made here: %v", err)
	}
	_ = g.remove()
}

// TestSandboxMemoryCap: a child over its 'sandbox: memory' is stopped by
// the kernel, and its exit says so; its cgroup is gone with it.
func TestSandboxMemoryCap(t *testing.T) {
	sandboxOrSkip(t)
	d := &config.Destination{Name: "hog", Command: "sh", Args: []string{"-c", `x=$(head -c 300000000 /dev/zero | tr '\0' a); echo survived ${#x}`},
		Sandbox: &config.Sandbox{Memory: 32 << 20}}
	p, err := Start(context.Background(), d, reaperOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	dirs := append([]string(nil), p.jail.cgroup().dirs...)
	select {
	case <-p.Exited():
	case <-time.After(60 * time.Second):
		_ = p.Stop(context.Background())
		t.Fatal("the hog ran 60 s past its 32 MiB cap")
	}
	if got := p.ExitStatus(); !strings.Contains(got, "exceeded its memory cap of 32MiB") {
		t.Errorf("ExitStatus() = %q; want it to say the memory cap", got)
	}
	for _, dir := range dirs {
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the child's cgroup %s stays: %v", dir, err)
		}
	}
}

// TestSandboxProcessCap: a child that starts processes without end is held
// at 'sandbox: processes' — its reaper joined the cgroup before starting
// it, so its first fork counts —, a grandchild that leaves the process
// group is still inside and dies with the child, and nothing is left.
func TestSandboxProcessCap(t *testing.T) {
	sandboxOrSkip(t)
	d := &config.Destination{Name: "bomb", Command: "sh", Args: []string{"-c",
		// The bomb is a subshell: a shell ends at its first refused fork,
		// and the child itself must live on (held, not killed).
		`setsid sleep 300 & (while :; do sleep 300 & done) 2>/dev/null; echo held; read x`},
		Sandbox: &config.Sandbox{Processes: 8}}
	p, err := Start(context.Background(), d, reaperOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	dirs := append([]string(nil), p.jail.cgroup().dirs...)
	events := filepath.Join(dirs[0], "pids.events")
	if line, err := p.ReadMessage(); err != nil || string(line) != "held" {
		t.Fatalf("the child said %q, %v; want held (alive after its bomb met the cap)", line, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	refused := func() int {
		data, _ := os.ReadFile(events)
		n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(data)), "max")))
		return n
	}
	for refused() == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if refused() == 0 {
		t.Fatal("no fork of the child was refused within 30 s")
	}
	procs, _ := os.ReadFile(filepath.Join(dirs[0], "cgroup.procs"))
	pids := strings.Fields(string(procs))
	if len(pids) > 8 || len(pids) < 3 {
		t.Errorf("the child's cgroup holds %d processes; want the reaper, the shell and sleeps, at most 8", len(pids))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	<-p.Exited()
	for _, s := range pids {
		pid, _ := strconv.Atoi(s)
		// Dead: gone, or a zombie its new parent has yet to reap.
		if st, ok := procStat(pid); ok && st.state != 'Z' {
			t.Errorf("process %d of the child's cgroup outlived it (state %c)", pid, st.state)
		}
	}
	for _, dir := range dirs {
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the child's cgroup %s stays: %v", dir, err)
		}
	}
}

// TestSandboxRefusedWhereItCannotHold: a sandbox this system cannot hold
// refuses the start, for good (ErrPermanent: no retry can help), saying
// what to do; with best_effort the child starts, uncapped, and the log
// says so. (A process cap: a memory cap alone falls back to RLIMIT_DATA,
// TestSandboxMemoryWithoutCgroups.)
func TestSandboxRefusedWhereItCannotHold(t *testing.T) {
	saved := cgroupRoot
	t.Cleanup(func() { cgroupRoot = saved })
	dir := t.TempDir()
	cgroupRoot = dir
	_ = os.WriteFile(filepath.Join(dir, "mountinfo"), []byte("30 23 0:27 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"), 0o644)
	_ = os.WriteFile(filepath.Join(dir, "cgroup"), []byte("0::/user.slice\n"), 0o644)
	d := &config.Destination{Name: "capped", Command: "sh", Args: []string{"-c", "read x"}, Sandbox: &config.Sandbox{Processes: 8}}
	_, err := Start(context.Background(), d, reaperOptions(t))
	if err == nil || !errors.Is(err, ErrPermanent) || !strings.Contains(err.Error(), "cannot hold it to its sandbox (processes 8)") || !strings.Contains(err.Error(), "best_effort") {
		t.Fatalf("Start: %v; want a permanent refusal naming the sandbox and best_effort", err)
	}
	var logs lockedBuffer
	opts := reaperOptions(t)
	opts.Logger = hclog.New(&hclog.LoggerOptions{Level: hclog.Trace, Output: &logs})
	d.Sandbox.BestEffort = true
	p, err := Start(context.Background(), d, opts)
	if err != nil {
		t.Fatalf("best effort: %v", err)
	}
	defer func() { _ = p.Stop(context.Background()) }()
	if p.jail.cgroup() != nil || !strings.Contains(logs.String(), "the sandbox is not wholly enforced on this system") {
		t.Errorf("best effort: cgroup %v, log %q", p.jail.cgroup(), logs.String())
	}
}
