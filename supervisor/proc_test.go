//go:build unix

package supervisor

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestProcContract holds each platform's process look-ups (proc_*.go) to
// their contract in records.go: what they say of this process and of a
// child, a zombie seen as one, an exited pid as none, a boot named the same
// twice. The records' sweep and the reaper rely on every part of it.
func TestProcContract(t *testing.T) {
	self, ok := procStat(os.Getpid())
	if !ok {
		t.Fatal("procStat of this process: none")
	}
	sid, _ := unix.Getsid(0)
	if self.pgrp != syscall.Getpgrp() || self.sid != sid || self.start == 0 || self.state == 'Z' {
		t.Errorf("procStat of this process: %+v; want pgrp %d, sid %d, a start", self, syscall.Getpgrp(), sid)
	}
	cmd := exec.Command("sleep", "30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	child, ok := procStat(pid)
	if !ok || child.pgrp != pid || child.start < self.start || child.state == 'Z' {
		t.Errorf("procStat of a child leading its group: %+v, %v; want pgrp %d, a start not before ours (%d)", child, ok, pid, self.start)
	}
	if all := allPIDs(); !slices.Contains(all, os.Getpid()) || !slices.Contains(all, pid) {
		t.Errorf("allPIDs (%d of them) lacks this process or its child", len(all))
	}
	// Killed and not waited for: a zombie.
	_ = cmd.Process.Kill()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if st, ok := procStat(pid); ok && st.state == 'Z' {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a killed child not waited for is not seen as a zombie")
		}
		time.Sleep(10 * time.Millisecond)
	}
	_ = cmd.Wait()
	if _, ok := procStat(pid); ok {
		t.Errorf("procStat of a reaped child: still there")
	}
	if a, b := bootID(), bootID(); a == "" || a != b {
		t.Errorf("bootID: %q then %q; want one name", a, b)
	}
}

// TestDefaultStateDir: the platform's place for a user's state, else the
// temporary directory.
func TestDefaultStateDir(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	dir, err := DefaultStateDir(env(map[string]string{"HOME": "/home/u"}))
	if err != nil || !filepath.IsAbs(dir) || filepath.Base(dir) != "stelae-bridge" || !strings.HasPrefix(dir, "/home/u/") {
		t.Errorf("with a home: %q, %v", dir, err)
	}
	if dir, _ := DefaultStateDir(env(map[string]string{})); !strings.HasPrefix(dir, os.TempDir()) {
		t.Errorf("without a home: %q; want a directory in %s", dir, os.TempDir())
	}
}
