package supervisor

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The reaper makes a child's process group die with the bridge. The
// parent-death signal a process can ask for reaches only that process: when
// the bridge is killed with SIGKILL, a child's own children (an npx or sh -c
// wrapper's server, a server's helpers, a child ignoring SIGTERM) would live
// on. So each child is started through a reaper: the bridge's own binary,
// re-executed in a hidden mode, which leads the child's process group, asks
// for a parent-death signal it can catch (SIGUSR2), starts the real command
// as its child with the bridge's pipes as its stdio (the reaper is not in the
// data path), tells the bridge the command's pid, and (where the platform
// has no parent-death signal, macOS, it watches its parent's exit instead:
// spawn_darwin.go):
//   - when the command exits, exits the same way (exit code N, or the same
//     signal), so the bridge sees the command's status; the bridge then kills
//     what is left of the group, as without a reaper;
//   - when the bridge dies, kills the whole group, itself included.
// It ignores SIGTERM and SIGINT (the bridge's stop sends SIGTERM to the whole
// group: the command gets it; the reaper waits to report its exit) and dies
// with SIGKILL like the rest of the group.

// reaperMode is the first argument that makes the binary a reaper: the
// program's main (and the test binaries' TestMain) call RunReaperIfAsked
// before anything else. It is not a flag and appears in no help.
const reaperMode = "__stelae_reaper"

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

// RunReaperIfAsked runs the reaper and exits when the process was started
// as one (os.Args[1] is the reaper mode); otherwise it returns at once.
func RunReaperIfAsked() {
	if len(os.Args) < 4 || os.Args[1] != reaperMode {
		return
	}
	os.Exit(reap(os.Args[2], os.Args[3:]))
}

// reap starts path with argv (argv[0] is its name), reports its pid on fd
// 3, waits for it and returns the exit code to exit with (after re-raising
// a signal that killed it).
func reap(path string, argv []string) int {
	report := os.NewFile(3, "pid")
	// Caught, not ignored: an ignored signal would stay ignored in the
	// command across exec.
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, reaperDeathSignal, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	// Had the bridge died before this point, the death signal's default
	// action would have ended the reaper before it started anything (and
	// os/exec checks for a parent that died before the signal was set).
	cmd := &exec.Cmd{Path: path, Args: argv, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(report, "error: %v\n", err)
		report.Close()
		return 127
	}
	fmt.Fprintf(report, "%d\n", cmd.Process.Pid)
	report.Close()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	died := make(chan struct{}) // the bridge is gone (spawn_*.go)
	watchParent(died)
	for {
		select {
		case sig := <-signals:
			if sig == reaperDeathSignal {
				// The bridge is gone: so is everything it started.
				_ = syscall.Kill(-syscall.Getpgrp(), syscall.SIGKILL)
			}
		case <-died:
			_ = syscall.Kill(-syscall.Getpgrp(), syscall.SIGKILL)
		case <-exited:
			// What the command left in the group goes with it. The
			// bridge does this too once the reaper has exited, but the
			// command may have ended because the bridge died (its stdin
			// closed before the death signal came), and then nobody else
			// would.
			killGroupButSelf()
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

// readReport reads the pid a reaper reported, or the error it met.
func readReport(r *os.File, within time.Duration) (int, error) {
	_ = r.SetReadDeadline(time.Now().Add(within))
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil {
		return 0, fmt.Errorf("the child's reaper reported nothing: %w", err)
	}
	line = strings.TrimSpace(line)
	if msg, ok := strings.CutPrefix(line, "error: "); ok {
		return 0, errors.New(msg)
	}
	pid, err := strconv.Atoi(line)
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("the child's reaper reported %q, not a pid", line)
	}
	return pid, nil
}
