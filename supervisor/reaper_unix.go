//go:build unix

package supervisor

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

// reaperDeathSignal is what the kernel sends the reaper when the bridge
// dies: not SIGTERM, which the bridge's stop sends to the whole group.
const reaperDeathSignal = syscall.SIGUSR2

// ReaperCommand is what starts a reaper: this executable and reaperMode.
// The error says why the executable cannot be found.
func ReaperCommand() ([]string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("cannot find the bridge's own executable to start child reapers: %w", err)
	}
	return []string{exe, reaperMode}, nil
}

// reap starts path with argv (argv[0] is its name) — held to its sandbox
// by the joiner when sa asks anything —, reports its pid on fd 3,
// waits for it and returns the exit code to exit with (after re-raising a
// signal that killed it).
func reap(path string, argv []string, sa sandboxArgs) int {
	report := os.NewFile(3, "pid")
	if !sa.empty() {
		// The joiner (reaper.go) joins the cgroups and becomes the
		// command: its pid is the command's.
		exe, err := os.Executable()
		if err != nil {
			fmt.Fprintf(report, "error: cannot find the bridge's own executable to start the command in its cgroup: %v\n", err)
			report.Close()
			return 127
		}
		args := append([]string{exe, joinMode}, sa.args()...)
		path, argv = exe, append(append(args, path), argv...)
	}
	// Caught, not ignored: an ignored signal would stay ignored in the
	// command across exec.
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, reaperDeathSignal, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	// Had the bridge died before this point, the death signal's default
	// action would have ended the reaper before it started anything (and
	// os/exec checks for a parent that died before the signal was set).
	cmd := &exec.Cmd{Path: path, Args: argv, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}
	if err := cmd.Start(); err != nil {
		// The system's error number, when there is one, tells the bridge
		// whether a retry could help (startError.Is).
		var errno syscall.Errno
		if errors.As(err, &errno) {
			fmt.Fprintf(report, "error %d: %v\n", int(errno), err)
		} else {
			fmt.Fprintf(report, "error: %v\n", err)
		}
		report.Close()
		return 127
	}
	fmt.Fprintf(report, "%d\n", cmd.Process.Pid)
	report.Close()
	parent := os.Getppid()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	died := make(chan struct{}) // the bridge is gone (spawn_*.go)
	watchParent(died)
	for {
		select {
		case sig := <-signals:
			if sig == reaperDeathSignal {
				// The bridge is gone: so is everything it started.
				bridgeGone(sa)
			}
		case <-died:
			bridgeGone(sa)
		case <-exited:
			// What the command left in the group goes with it. The
			// bridge does this too once the reaper has exited, but the
			// command may have ended because the bridge died (its stdin
			// closed before the death signal came), and then nobody else
			// would. The same holds for what its sandbox left (the
			// cgroups, the TMPDIR): a bridge killed while the command
			// read its stdin often loses this race to the command's exit.
			killGroupButSelf()
			if bridgeDied(parent, signals, died) {
				_ = endLeftovers(cgroupFor(sa), sa.tmp)
			}
			ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
			if ws.Signaled() {
				sig := ws.Signal()
				signal.Reset(sig)
				_ = syscall.Kill(os.Getpid(), sig)
				time.Sleep(time.Second) // the signal ends the process
				return 128 + int(sig)
			}
			return ws.ExitStatus()
		}
	}
}

// bridgeGone ends everything the bridge started through this reaper, itself
// included: what is in the sandbox's cgroups (what left the group with
// them), whose cgroups it then removes with the child's own temporary
// directory — the bridge, which does this when it stops a child, is
// gone —, and the process group.
func bridgeGone(sa sandboxArgs) {
	_ = endLeftovers(cgroupFor(sa), sa.tmp)
	_ = syscall.Kill(-syscall.Getpgrp(), syscall.SIGKILL)
}

// cgroupFor is the cgroup sa names (nil: none).
func cgroupFor(sa sandboxArgs) *cgroup {
	if len(sa.cgroups) == 0 {
		return nil
	}
	return cgroupOf(sa.cgroups)
}

// bridgeDied reports whether the bridge (the reaper's parent when it
// started) is gone: the reaper was handed to another parent, or the death
// signal or the parent watch (macOS) said so.
func bridgeDied(parent int, signals <-chan os.Signal, died <-chan struct{}) bool {
	if os.Getppid() != parent {
		return true
	}
	for {
		select {
		case sig := <-signals:
			if sig == reaperDeathSignal {
				return true
			}
		case <-died:
			return true
		default:
			return false
		}
	}
}

// killGroupButSelf kills every other process of the reaper's group.
func killGroupButSelf() {
	self, group := os.Getpid(), syscall.Getpgrp()
	for _, pid := range allPIDs() {
		if pid == self {
			continue
		}
		if st, ok := procStat(pid); ok && st.pgrp == group {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
