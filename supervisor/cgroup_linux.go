package supervisor

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Caps held by cgroups (issue 37: 'sandbox: memory, processes'). A
// child's memory and its number of processes are capped by a cgroup of its
// own, made under the bridge's own cgroup before the child starts; the
// child's joiner enters it before it becomes the command, so the command
// and everything it starts are inside from their first instruction (a pid
// written after the start could fork first). What the kernel counts is
// read back: the OOM kills that ended a child over its memory cap.
//
// Each controller is taken where the system mounts it: cgroup v1's memory
// or pids hierarchy (as on these machines), else the cgroup v2 hierarchy
// (where it must be available to the bridge's cgroup: under systemd,
// Delegate=yes). One v2 directory per child holds its v2 caps and its
// network filter.

// cgroupCaps are the caps of one child's cgroup; a zero field is no cap.
type cgroupCaps struct {
	// Memory is the most memory (and memory plus swap, where the kernel
	// accounts swap) the child's processes may use together, in bytes.
	Memory int64
	// Processes is the most processes (and threads) they may be.
	Processes int
}

// capsBy says what holds the caps here (-check).
const capsBy = "a cgroup"

// cgroup is one child's cgroup: a directory per v1 controller, and one in
// the v2 hierarchy. Its fields are set by newCgroup and filterNetwork
// before the child starts, and then only read.
type cgroup struct {
	// name is the directories' name ("stelae-<destination>-<random>").
	name string
	// dirs are the cgroup's directories, the v2 one among them.
	dirs []string
	// memory is the directory whose memory controller caps the child
	// ("" when not capped), v2 whether it is the v2 one.
	memory string
	v2     string
}

// cgroupRoot is where the process's mount table and cgroups are read
// (/proc/self); a variable for the tests of their reading.
var cgroupRoot = "/proc/self"

// newCgroup makes a cgroup for a child of destination dest with caps, in
// each controller's hierarchy under the bridge's own cgroup. The error
// says what could not be done and what to do.
func newCgroup(dest string, caps cgroupCaps) (*cgroup, error) {
	var suffix [4]byte
	_, _ = rand.Read(suffix[:])
	g := &cgroup{name: "stelae-" + cgroupName(dest) + "-" + hex.EncodeToString(suffix[:])}
	if caps.Memory == 0 && caps.Processes == 0 {
		return g, nil
	}
	mounts, err := cgroupMounts()
	if err != nil {
		return nil, err
	}
	own, err := ownCgroups()
	if err != nil {
		return nil, err
	}
	limit := strconv.FormatInt(caps.Memory, 10)
	for _, c := range []struct {
		controller string
		on         bool
		v1, v2     [][2]string
	}{
		// Swap counts too where the kernel accounts it (v1: memory
		// plus swap; v2: no swap beside the memory); where it does not,
		// there is no file to write.
		{"memory", caps.Memory > 0, [][2]string{{"memory.limit_in_bytes", limit}, {"?memory.memsw.limit_in_bytes", limit}},
			[][2]string{{"memory.max", limit}, {"?memory.swap.max", "0"}}},
		{"pids", caps.Processes > 0, [][2]string{{"pids.max", strconv.Itoa(caps.Processes)}}, [][2]string{{"pids.max", strconv.Itoa(caps.Processes)}}},
	} {
		if !c.on {
			continue
		}
		var dir string
		var files [][2]string
		if mount, ok := mounts[c.controller]; ok {
			dir, files = filepath.Join(mount.point, strings.TrimPrefix(own[c.controller], mount.root), g.name), c.v1
			if err := os.Mkdir(dir, 0o755); err != nil {
				g.remove()
				return nil, fmt.Errorf("cannot make the child's %s cgroup %s: %w (the bridge needs to be allowed to make cgroups under its own: run it as root, or with a delegated cgroup)", c.controller, dir, err)
			}
			g.dirs = append(g.dirs, dir)
		} else if _, ok := mounts[""]; ok {
			if dir, err = g.v2dir(mounts, own, c.controller); err != nil {
				g.remove()
				return nil, err
			}
			files = c.v2
		} else {
			return nil, fmt.Errorf("the %s cap needs the cgroup %s controller, which is not mounted here", c.controller, c.controller)
		}
		if c.controller == "memory" {
			g.memory = dir
		}
		for _, f := range files {
			file, optional := strings.CutPrefix(f[0], "?")
			if err := os.WriteFile(filepath.Join(dir, file), []byte(f[1]), 0o644); err != nil && !(optional && errors.Is(err, os.ErrNotExist)) {
				g.remove()
				return nil, fmt.Errorf("cannot set %s of the child's cgroup %s: %w", file, dir, err)
			}
		}
	}
	return g, nil
}

// v2dir is the child's directory in the cgroup v2 hierarchy, made on first
// use, with controller (none: "") available in it.
func (g *cgroup) v2dir(mounts map[string]cgroupMount, own map[string]string, controller string) (string, error) {
	m := mounts[""]
	parent := filepath.Join(m.point, strings.TrimPrefix(v2Parent(own[""]), m.root))
	if controller != "" {
		if err := delegateV2(parent, controller); err != nil {
			return "", err
		}
	}
	if g.v2 != "" {
		return g.v2, nil
	}
	dir := filepath.Join(parent, g.name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", fmt.Errorf("cannot make the child's cgroup %s: %w (the bridge needs to be allowed to make cgroups under its own: run it as root, or under systemd with Delegate=yes)", dir, err)
	}
	g.dirs = append(g.dirs, dir)
	g.v2 = dir
	return dir, nil
}

// v2Parent is the parent of the children's cgroups v2: the bridge's own
// (own, relative to the hierarchy's root), or the one delegateV2 moved the
// bridge out of into its leaf.
func v2Parent(own string) string {
	if path.Base(own) == bridgeLeaf {
		return path.Dir(own)
	}
	return own
}

// delegateMu guards the bridge's v2 cgroup's subtree_control and the move
// of its processes into its leaf (delegateV2).
var delegateMu sync.Mutex

// bridgeLeaf is the leaf of its own cgroup v2 the bridge moves its
// processes to, so that the cgroup may hand controllers to its children
// (v2 lets only a cgroup without processes of its own do that, the
// root's excepted).
const bridgeLeaf = "stelae-bridge"

// delegateV2 makes controller available to the children of parent, the
// bridge's cgroup v2 (cgroup.subtree_control): when it is not yet, the
// processes in parent (the bridge, and children started without a
// sandbox) move to its leaf first.
func delegateV2(parent, controller string) error {
	delegateMu.Lock()
	defer delegateMu.Unlock()
	enabled, _ := os.ReadFile(filepath.Join(parent, "cgroup.subtree_control"))
	if slices.Contains(strings.Fields(string(enabled)), controller) {
		return nil
	}
	available, _ := os.ReadFile(filepath.Join(parent, "cgroup.controllers"))
	if !slices.Contains(strings.Fields(string(available)), controller) {
		return fmt.Errorf("the %s cap needs cgroup v2's %s controller, which the bridge's cgroup %s is not given (under systemd, give the bridge's unit Delegate=yes)", controller, controller, parent)
	}
	if procs, _ := os.ReadFile(filepath.Join(parent, "cgroup.procs")); len(strings.TrimSpace(string(procs))) > 0 && !isV2Root(parent) {
		leaf := filepath.Join(parent, bridgeLeaf)
		if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("cannot make the bridge's own leaf cgroup %s (to hand the %s controller to its children): %w", leaf, controller, err)
		}
		for _, pid := range strings.Fields(string(procs)) {
			if err := os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte(pid), 0o644); err != nil && !errors.Is(err, syscall.ESRCH) {
				return fmt.Errorf("cannot move process %s to the bridge's leaf cgroup %s: %w", pid, leaf, err)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(parent, "cgroup.subtree_control"), []byte("+"+controller), 0o644); err != nil {
		return fmt.Errorf("cannot hand cgroup v2's %s controller to the children of %s: %w", controller, parent, err)
	}
	return nil
}

// isV2Root reports whether dir is a cgroup v2 hierarchy's root (which may
// have processes and hand out controllers at once).
func isV2Root(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "cgroup.type"))
	return errors.Is(err, os.ErrNotExist)
}

// filterNetwork puts the cgroup's processes in its cgroup v2 directory
// (made now, unless the caps made it), to which it attaches the filter
// that lets them reach only rules (netfilter_linux.go).
func (g *cgroup) filterNetwork(rules []netRule) error {
	mounts, err := cgroupMounts()
	if err != nil {
		return err
	}
	if _, ok := mounts[""]; !ok {
		return errors.New("'network' with loopback or addresses needs the cgroup v2 hierarchy, which this system does not mount (at /sys/fs/cgroup, or /sys/fs/cgroup/unified beside v1's controllers)")
	}
	own, err := ownCgroups()
	if err != nil {
		return err
	}
	dir, err := g.v2dir(mounts, own, "")
	if err != nil {
		return err
	}
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
	file := "memory.oom_control"
	if g.memory == g.v2 {
		file = "memory.events"
	}
	data, err := os.ReadFile(filepath.Join(g.memory, file))
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
		// A cgroup is removed once its last process has left it (EBUSY
		// until then): killed processes leave within milliseconds, but on
		// a loaded machine a run once left an empty cgroup after the
		// half second this waited before; it waits up to removeWait.
		for deadline := time.Now().Add(removeWait); ; time.Sleep(10 * time.Millisecond) {
			if err = os.Remove(d); err == nil || errors.Is(err, os.ErrNotExist) {
				err = nil
				break
			}
			if time.Now().After(deadline) {
				break
			}
		}
		if err != nil && first == nil {
			first = fmt.Errorf("cannot remove the child's cgroup %s: %w", d, err)
		}
	}
	return first
}

// removeWait bounds the wait for a cgroup's processes to leave it before
// it is removed.
const removeWait = 5 * time.Second

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
