package supervisor

import (
	"bufio"
	"errors"
	"fmt"
	"os"
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
// with SIGKILL like the rest of the group. The reaper is Unix's
// (reaper_unix.go): on Windows a job object does its work (tree_windows.go),
// and ReaperCommand returns none.

// reaperMode is the first argument that makes the binary a reaper: the
// program's main (and the test binaries' TestMain) call RunReaperIfAsked
// before anything else. It is not a flag and appears in no help.
const reaperMode = "__stelae_reaper"

// RunReaperIfAsked runs the reaper (or its joiner) and exits when the
// process was started as one (os.Args[1] is the reaper's or the joiner's
// mode); otherwise it returns at once.
func RunReaperIfAsked() {
	if len(os.Args) < 4 || (os.Args[1] != reaperMode && os.Args[1] != joinMode) {
		return
	}
	args := os.Args[2:]
	var cgroups []string
	for len(args) > 2 && strings.HasPrefix(args[0], reaperCgroupArg) {
		cgroups = append(cgroups, strings.TrimPrefix(args[0], reaperCgroupArg))
		args = args[1:]
	}
	if os.Args[1] == joinMode {
		os.Exit(joinAndExec(args[0], args[1:], cgroups))
	}
	os.Exit(reap(args[0], args[1:], cgroups))
}

// reaperCgroupArg starts an argument of the reaper's, before the command,
// that names a cgroup.procs file the command runs in (the sandbox's caps:
// cgroup_linux.go).
const reaperCgroupArg = "__cgroup="

// joinMode makes the binary the joiner: the reaper's child that joins the
// sandbox's cgroups and then becomes the command (exec), so that the
// command is inside from its first instruction and the reaper is not (its
// threads would count against the child's process cap).
const joinMode = "__stelae_join"

// joinAndExec joins cgroups and execs path with argv; it returns only
// when it could not (an exit code, having said why on stderr).
func joinAndExec(path string, argv, cgroups []string) int {
	if err := joinCgroups(cgroups); err != nil {
		fmt.Fprintln(os.Stderr, "stelae-bridge:", err)
		return 126
	}
	err := syscall.Exec(path, argv, os.Environ())
	fmt.Fprintf(os.Stderr, "stelae-bridge: cannot start %s: %v\n", path, err)
	return 127
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
	if rest, ok := strings.CutPrefix(line, "error "); ok {
		// "error N: message": the system's error number N.
		num, msg, _ := strings.Cut(rest, ": ")
		if n, err := strconv.Atoi(num); err == nil {
			return 0, reportedError{msg: msg, errno: syscall.Errno(n)}
		}
		return 0, errors.New(rest)
	}
	pid, err := strconv.Atoi(line)
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("the child's reaper reported %q, not a pid", line)
	}
	return pid, nil
}

// reportedError is the reaper's failure to start the command: its text,
// and the system's error number (errors.Is(err, fs.ErrNotExist) and the
// like hold as for the error the reaper saw).
type reportedError struct {
	msg   string
	errno syscall.Errno
}

func (e reportedError) Error() string { return e.msg }
func (e reportedError) Unwrap() error { return e.errno }
