//go:build unix

package fakemcp

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// bombAttr starts the fork bomb in a process group of its own (killBomb
// ends it whole).
func bombAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// setsidAttr starts a process in a session of its own.
func setsidAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }

// killBomb ends the fork bomb's process group.
func killBomb(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}

// pidsCounters reads the pids counters of this process's cgroup (cgroup
// v1): "pids.current=N pids.max=M pids.events=max K", or why not.
func pidsCounters() string {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "no cgroup: " + err.Error()
	}
	for _, line := range strings.Split(string(data), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 && parts[1] == "pids" {
			dir := filepath.Join("/sys/fs/cgroup/pids", parts[2])
			var out []string
			for _, f := range []string{"pids.current", "pids.max", "pids.events"} {
				b, _ := os.ReadFile(filepath.Join(dir, f))
				out = append(out, f+"="+strings.TrimSpace(string(b)))
			}
			return strings.Join(out, " ")
		}
	}
	return "no pids cgroup"
}
