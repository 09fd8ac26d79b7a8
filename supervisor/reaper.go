package supervisor

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"runtime"
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
	var sa sandboxArgs
	for len(args) > 2 && sa.parse(args[0]) {
		args = args[1:]
	}
	if os.Args[1] == joinMode {
		os.Exit(joinAndExec(args[0], args[1:], sa))
	}
	os.Exit(reap(args[0], args[1:], sa))
}

// The reaper's arguments before the command that say how the command is
// held to its sandbox (sandbox.go); the reaper hands them to the joiner.
const (
	// reaperCgroupArg names a cgroup.procs file the command runs in (the
	// sandbox's caps and network filter: cgroup_linux.go).
	reaperCgroupArg = "__cgroup="
	// readArg and writeArg name a path the command may read (and execute)
	// or read and write ('files:', landlock_linux.go); a command given
	// either may use no other.
	readArg  = "__read="
	writeArg = "__write="
	// tmpArg names the command's own temporary directory, which the
	// reaper removes when the bridge is gone (the bridge does otherwise).
	tmpArg = "__tmp="
	// dataLimitArg is the RLIMIT_DATA of each process of the command
	// (the memory cap where no cgroup can be made).
	dataLimitArg = "__data="
	// portArg is a TCP port the command may connect to, on any host
	// (Landlock's network rules: the fallback of a best-effort list of
	// addresses where no eBPF filter can be attached).
	portArg = "__port="
	// loopbackArg: the command has a network namespace of its own, whose
	// loopback the joiner brings up ('network: none').
	loopbackArg = "__netns"
)

// sandboxArgs are the sandbox's arguments of a reaper or joiner.
type sandboxArgs struct {
	cgroups, read, write []string
	ports                []string
	tmp                  string
	dataLimit            int64
	netns                bool
}

// parse takes arg when it is one of the sandbox's, and reports whether it
// was.
func (sa *sandboxArgs) parse(arg string) bool {
	for _, a := range []struct {
		prefix string
		into   *[]string
	}{{reaperCgroupArg, &sa.cgroups}, {readArg, &sa.read}, {writeArg, &sa.write}, {portArg, &sa.ports}} {
		if v, ok := strings.CutPrefix(arg, a.prefix); ok {
			*a.into = append(*a.into, v)
			return true
		}
	}
	if v, ok := strings.CutPrefix(arg, dataLimitArg); ok {
		n, err := strconv.ParseInt(v, 10, 64)
		sa.dataLimit = n
		return err == nil
	}
	if v, ok := strings.CutPrefix(arg, tmpArg); ok {
		sa.tmp = v
		return true
	}
	if arg == loopbackArg {
		sa.netns = true
		return true
	}
	return false
}

// args are sa as arguments again.
func (sa sandboxArgs) args() []string {
	var out []string
	for _, c := range sa.cgroups {
		out = append(out, reaperCgroupArg+c)
	}
	for _, r := range sa.read {
		out = append(out, readArg+r)
	}
	for _, w := range sa.write {
		out = append(out, writeArg+w)
	}
	for _, p := range sa.ports {
		out = append(out, portArg+p)
	}
	if sa.tmp != "" {
		out = append(out, tmpArg+sa.tmp)
	}
	if sa.dataLimit > 0 {
		out = append(out, dataLimitArg+strconv.FormatInt(sa.dataLimit, 10))
	}
	if sa.netns {
		out = append(out, loopbackArg)
	}
	return out
}

// empty reports whether sa asks nothing of the joiner.
func (sa sandboxArgs) empty() bool {
	return len(sa.cgroups) == 0 && len(sa.read) == 0 && len(sa.write) == 0 && len(sa.ports) == 0 && sa.tmp == "" && sa.dataLimit == 0 && !sa.netns
}

// joinMode makes the binary the joiner: the reaper's child that joins the
// sandbox's cgroups, brings up its network namespace's loopback, restricts
// its files and then becomes the command (exec), so that the command is
// held from its first instruction and the reaper is not (its threads would
// count against the child's process cap).
const joinMode = "__stelae_join"

// joinAndExec holds itself to sa and execs path with argv; it returns only
// when it could not (an exit code, having said why on stderr).
func joinAndExec(path string, argv []string, sa sandboxArgs) int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "stelae-bridge:", err)
		return 126
	}
	// A Landlock domain and a bounding set are the thread's, until exec
	// makes them the new program's: this thread, to the end.
	runtime.LockOSThread()
	if err := joinCgroups(sa.cgroups); err != nil {
		return fail(err)
	}
	if sa.netns {
		if err := loopbackUp(); err != nil {
			return fail(err)
		}
	}
	if sa.dataLimit > 0 {
		if err := limitData(sa.dataLimit); err != nil {
			return fail(err)
		}
	}
	// What a command running as root could undo the rest with.
	if err := dropUndoing(); err != nil {
		return fail(err)
	}
	if len(sa.ports) > 0 {
		if err := restrictPorts(sa.ports); err != nil {
			return fail(err)
		}
	}
	// Last: the cgroups' files are outside what the command may touch.
	if len(sa.read)+len(sa.write) > 0 {
		if err := restrictFiles(sa.read, sa.write); err != nil {
			return fail(err)
		}
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
