package supervisor

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Caps held by cgroups (issue 37: 'sandbox: memory, processes'). A
// child's memory and its number of
// processes are capped by a cgroup of its own, made under the bridge's
// own cgroup in each controller's hierarchy before the child starts; the
// child's reaper joins it before it starts the command, so the command and
// everything it starts are inside from their first instruction (a pid
// written after the start could fork first). What the kernel counts is
// read back: the OOM kills that ended a child over its memory cap.
//
// This build speaks cgroup v1 (memory and pids controllers, as on these
// machines). Under cgroup v2 the controllers must be delegated to the
// bridge (systemd's Delegate=yes, with the bridge in a leaf of its own):
// not done yet, and newCgroup says so rather than start a child uncapped.

// capsBy says what holds the caps here (-check).
const capsBy = "a cgroup"

// cgroupCaps are the caps of one child's cgroup; a zero field is no cap.
type cgroupCaps struct {
	// Memory is the most memory (and memory plus swap, where the kernel
	// accounts swap) the child's processes may use together, in bytes.
	Memory int64
	// Processes is the most processes (and threads) they may be.
	Processes int
}

// cgroup is one child's cgroup: a directory per controller (v1). Its
// fields are set by newCgroup and never change.
type cgroup struct {
	// name is the directories' name ("stelae-<destination>-<random>").
	name string
	// dirs are the cgroup's directories, memory's first when capped, the
	// cgroup v2 one (the network filter's) last.
	dirs []string
	// memory is the memory controller's directory ("" when not capped).
	memory string
}

// cgroupRoot is where the controllers' hierarchies are mounted; a
// variable for the tests of the mount table's reading.
var cgroupRoot = "/proc/self"

// newCgroup makes a cgroup for a child of destination dest with caps, in
// each controller's hierarchy under the bridge's own cgroup. The error
// says what could not be done and what to do.
func newCgroup(dest string, caps cgroupCaps) (*cgroup, error) {
	mounts, err := cgroupMounts()
	if err != nil {
		return nil, err
	}
	own, err := ownCgroups()
	if err != nil {
		return nil, err
	}
	var suffix [4]byte
	_, _ = rand.Read(suffix[:])
	name := "stelae-" + cgroupName(dest) + "-" + hex.EncodeToString(suffix[:])
	g := &cgroup{name: name}
	make1 := func(controller string, files [][2]string) error {
		mount, ok := mounts[controller]
		if !ok {
			if _, v2 := mounts[""]; v2 {
				return fmt.Errorf("the %s cap needs cgroup v1's %s controller, and this system has cgroup v2 only: capping under v2 is not built yet (run without the cap, or on a system with cgroup v1)", controller, controller)
			}
			return fmt.Errorf("the %s cap needs the cgroup %s controller, which is not mounted here", controller, controller)
		}
		dir := filepath.Join(mount.point, strings.TrimPrefix(own[controller], mount.root), name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			return fmt.Errorf("cannot make the child's %s cgroup %s: %w (the bridge needs to be allowed to make cgroups under its own: run it as root, or with a delegated cgroup)", controller, dir, err)
		}
		g.dirs = append(g.dirs, dir)
		for _, f := range files {
			if err := os.WriteFile(filepath.Join(dir, f[0]), []byte(f[1]), 0o644); err != nil {
				return fmt.Errorf("cannot set %s of the child's cgroup %s: %w", f[0], dir, err)
			}
		}
		return nil
	}
	if caps.Memory > 0 {
		limit := strconv.FormatInt(caps.Memory, 10)
		if err := make1("memory", [][2]string{{"memory.limit_in_bytes", limit}}); err != nil {
			g.remove()
			return nil, err
		}
		g.memory = g.dirs[len(g.dirs)-1]
		// Swap counts too where the kernel accounts it; where it does
		// not, there is no file to write.
		if err := os.WriteFile(filepath.Join(g.memory, "memory.memsw.limit_in_bytes"), []byte(limit), 0o644); err != nil && !errors.Is(err, os.ErrNotExist) {
			g.remove()
			return nil, fmt.Errorf("cannot set the swap cap of the child's cgroup %s: %w", g.memory, err)
		}
	}
	if caps.Processes > 0 {
		if err := make1("pids", [][2]string{{"pids.max", strconv.Itoa(caps.Processes)}}); err != nil {
			g.remove()
			return nil, err
		}
	}
	return g, nil
}

// filterNetwork puts the cgroup's processes in a cgroup v2 directory of its
// own too, to which it attaches the filter that lets them reach only rules
// (netfilter_linux.go).
func (g *cgroup) filterNetwork(rules []netRule) error {
	mounts, err := cgroupMounts()
	if err != nil {
		return err
	}
	own, err := ownCgroups()
	if err != nil {
		return err
	}
	m, ok := mounts[""]
	if !ok {
		return errors.New("'network' with loopback or addresses needs the cgroup v2 hierarchy, which this system does not mount (at /sys/fs/cgroup, or /sys/fs/cgroup/unified beside v1's controllers)")
	}
	dir := filepath.Join(m.point, strings.TrimPrefix(own[""], m.root), g.name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("cannot make the child's cgroup %s for its network filter: %w (the bridge needs to be allowed to make cgroups under its own: run it as root, or with a delegated cgroup)", dir, err)
	}
	g.dirs = append(g.dirs, dir)
	return attachNetFilter(dir, rules)
}

// limitTree is Windows's (its job's limits): a cgroup holds the tree here.
func (g *cgroup) limitTree(*tree) error { return nil }

// procsFiles are the files a process writes its pid into to join the
// cgroup (the reaper, itself, before it starts the command).
func (g *cgroup) procsFiles() []string {
	out := make([]string, len(g.dirs))
	for i, d := range g.dirs {
		out[i] = filepath.Join(d, "cgroup.procs")
	}
	return out
}

// cgroupOf is the cgroup whose cgroup.procs files are procs (the reaper's
// arguments), for ending it when the bridge is gone. Its memory directory
// is unknown: it reads no OOM kills.
func cgroupOf(procs []string) *cgroup {
	g := &cgroup{}
	for _, f := range procs {
		g.dirs = append(g.dirs, filepath.Dir(f))
	}
	return g
}

// joinCgroups puts the calling process in the cgroups whose cgroup.procs
// files are given: what it starts from then on is inside.
func joinCgroups(procs []string) error {
	self := []byte(strconv.Itoa(os.Getpid()))
	for _, f := range procs {
		if err := os.WriteFile(f, self, 0o644); err != nil {
			return fmt.Errorf("cannot join the child's cgroup (%s): %w", f, err)
		}
	}
	return nil
}

// oomKills is how many of the cgroup's processes the kernel killed for
// being over its memory cap.
func (g *cgroup) oomKills() uint64 {
	if g.memory == "" {
		return 0
	}
	data, err := os.ReadFile(filepath.Join(g.memory, "memory.oom_control"))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
			n, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// remove removes the cgroup's directories once their processes are gone
// (the caller killed them): a cgroup with a process in it cannot be
// removed, and one whose last process just exited may take the kernel a
// moment to empty. It returns the error of the first that stayed.
func (g *cgroup) remove() error {
	var first error
	for _, d := range g.dirs {
		var err error
		for try := 0; try < 50; try++ {
			if err = os.Remove(d); err == nil || errors.Is(err, os.ErrNotExist) {
				err = nil
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err != nil && first == nil {
			first = fmt.Errorf("cannot remove the child's cgroup %s: %w", d, err)
		}
	}
	return first
}

// cgroupMount is where a controller's hierarchy is mounted, and which
// cgroup of it the mount shows at its point.
type cgroupMount struct{ point, root string }

// cgroupMounts reads the mount table: each v1 controller's mount, and ""
// for a cgroup v2 mount.
func cgroupMounts() (map[string]cgroupMount, error) {
	f, err := os.Open(filepath.Join(cgroupRoot, "mountinfo"))
	if err != nil {
		return nil, fmt.Errorf("cannot read the mount table to find the cgroup controllers: %w", err)
	}
	defer f.Close()
	out := map[string]cgroupMount{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root point options [optional…] - fstype source superoptions
		fields := strings.Fields(sc.Text())
		sep := -1
		for i, fld := range fields {
			if fld == "-" {
				sep = i
				break
			}
		}
		if sep < 5 || sep+3 > len(fields) {
			continue
		}
		m := cgroupMount{point: fields[4], root: fields[3]}
		switch fields[sep+1] {
		case "cgroup2":
			out[""] = m
		case "cgroup":
			for _, opt := range strings.Split(fields[sep+3], ",") {
				if opt == "memory" || opt == "pids" {
					out[opt] = m
				}
			}
		}
	}
	return out, sc.Err()
}

// ownCgroups is the bridge's own cgroup in each v1 controller's hierarchy
// (from /proc/self/cgroup).
func ownCgroups() (map[string]string, error) {
	data, err := os.ReadFile(filepath.Join(cgroupRoot, "cgroup"))
	if err != nil {
		return nil, fmt.Errorf("cannot read the bridge's own cgroups: %w", err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			out[c] = parts[2]
		}
	}
	return out, nil
}

// killAll kills every process in the cgroup, whatever group or session it
// moved to, until none is left (within a bound): a child's tree cannot
// leave its cgroup.
func (g *cgroup) killAll() {
	for try := 0; try < 100; try++ {
		left := false
		for _, f := range g.procsFiles() {
			data, _ := os.ReadFile(f)
			for _, line := range strings.Fields(string(data)) {
				if pid, err := strconv.Atoi(line); err == nil && pid > 0 {
					_ = syscall.Kill(pid, syscall.SIGKILL)
					left = true
				}
			}
		}
		if !left {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}
