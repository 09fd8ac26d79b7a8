//go:build unix

package supervisor

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/hashicorp/go-hclog"
)

// Records is the second line of defence against orphans (on Unix; on
// Windows a child's job object is the whole defence: records_windows.go). The reaper takes a
// child's group down when the bridge dies, but a reaper can die too (the
// OOM killer, kill -9 of the whole tree). So each running child's process
// group is recorded in a file of the bridge's state directory, and the next
// start of the bridge kills the groups its dead predecessors left, after
// checking that those processes are the very ones recorded.
type Records struct {
	dir  string
	self record // the bridge's own identity, copied into every record
}

// record is one child process group, as written to its file.
type record struct {
	PGID        int    `json:"pgid"`
	PID         int    `json:"pid"`
	LeaderStart uint64 `json:"leader_start"`
	SID         int    `json:"sid"`
	BridgePID   int    `json:"bridge_pid"`
	BridgeStart uint64 `json:"bridge_start"`
	BootID      string `json:"boot_id"`
	Destination string `json:"destination"`
	// Cgroups are the cgroup.procs files of the child's sandbox, and Tmp
	// its own temporary directory (sandbox.go): what the sweep removes
	// after killing the group, when the bridge and the reaper that would
	// have removed them died together.
	Cgroups []string `json:"cgroups,omitempty"`
	Tmp     string   `json:"tmp,omitempty"`
}

// OpenRecords keeps records in dir, which it creates (0700) when missing.
func OpenRecords(dir string) (*Records, error) {
	if err := prepareDir(dir); err != nil {
		return nil, err
	}
	self := os.Getpid()
	st, _ := procStat(self)
	return &Records{dir: dir, self: record{BridgePID: self, BridgeStart: st.start, SID: st.sid, BootID: bootID()}}, nil
}

// add records the group led by pgid, whose command is pid, held to its
// sandbox by j (nil: none), and returns the record's name.
func (r *Records) add(dest string, pgid, pid int, j *jail) string {
	rec := r.self
	rec.PGID, rec.PID, rec.Destination = pgid, pid, dest
	if j != nil {
		rec.Cgroups, rec.Tmp = j.args.cgroups, j.tmp
	}
	st, _ := procStat(pgid)
	rec.LeaderStart = st.start
	name := strconv.Itoa(pgid) + "-" + strconv.FormatUint(rec.LeaderStart, 10) + ".json"
	b, _ := json.Marshal(rec)
	tmp := filepath.Join(r.dir, "."+name)
	if os.WriteFile(tmp, b, 0o600) == nil {
		_ = os.Rename(tmp, filepath.Join(r.dir, name))
	}
	return name
}

// remove forgets a group that is gone.
func (r *Records) remove(name string) {
	if name != "" {
		_ = os.Remove(filepath.Join(r.dir, name))
	}
}

// Sweep kills the process groups that bridges no longer running left
// behind, and forgets them. A group is killed only when its processes are
// verifiably the recorded ones: the same boot, and the leader alive with
// the recorded start time, or (the leader gone) members with the recorded
// group and session ids that started no earlier than the leader did.
// Records of a bridge that still runs are left alone. It returns how many
// processes it killed.
func (r *Records) Sweep(log hclog.Logger) int {
	ents, _ := os.ReadDir(r.dir)
	killed := 0
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".json") || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		path := filepath.Join(r.dir, e.Name())
		b, err := os.ReadFile(path)
		var rec record
		if err != nil || json.Unmarshal(b, &rec) != nil || rec.PGID <= 1 {
			os.Remove(path)
			continue
		}
		if rec.BootID != r.self.BootID {
			os.Remove(path) // from before a reboot: nothing of it runs
			continue
		}
		if st, ok := procStat(rec.BridgePID); ok && st.start == rec.BridgeStart {
			continue // its bridge still runs
		}
		pids := groupMembers(rec)
		for _, pid := range pids {
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				killed++
			}
		}
		if len(pids) > 0 {
			log.Warn("killed what a bridge that did not stop left running", "destination", rec.Destination, "pgid", rec.PGID, "processes", len(pids), "dead_bridge_pid", rec.BridgePID)
		}
		removeSandbox(rec, log)
		os.Remove(path)
	}
	return killed
}

// removeSandbox ends what a dead child's sandbox left: the members of its
// cgroups (what left the group: every process in them is the child's) and
// the cgroups, and its temporary directory — each only where its name is
// one the bridge makes ("stelae-<destination>-<random>").
func removeSandbox(rec record, log hclog.Logger) {
	var procs []string
	for _, f := range rec.Cgroups {
		if filepath.Base(f) == "cgroup.procs" && strings.HasPrefix(filepath.Base(filepath.Dir(f)), "stelae-") {
			procs = append(procs, f)
		}
	}
	var g *cgroup
	if len(procs) > 0 {
		g = cgroupOf(procs)
	}
	tmp := rec.Tmp
	if filepath.Dir(tmp) != filepath.Clean(os.TempDir()) || !strings.HasPrefix(filepath.Base(tmp), "stelae-") {
		tmp = ""
	}
	if err := endLeftovers(g, tmp); err != nil {
		log.Error("what a dead child's sandbox left stays", "destination", rec.Destination, "error", err)
	}
}

// groupMembers lists the live processes of rec's group that verifiably are
// the recorded ones.
func groupMembers(rec record) []int {
	if st, ok := procStat(rec.PGID); ok && (st.start != rec.LeaderStart || st.pgrp != rec.PGID) {
		// The pid now belongs to another process (the group is gone and
		// its id reused): a process that leads a group keeps its pid as
		// the group id, so no process of the recorded group remains.
		return nil
	}
	var out []int
	for _, pid := range allPIDs() {
		st, ok := procStat(pid)
		if ok && st.pgrp == rec.PGID && st.sid == rec.SID && st.start >= rec.LeaderStart && st.state != 'Z' {
			out = append(out, pid)
		}
	}
	return out
}

// stat is what the system says of a process (proc_linux.go: /proc/PID/stat;
// proc_darwin.go: sysctl kern.proc.pid).
type stat struct {
	state byte // 'Z': a zombie
	pgrp  int
	sid   int
	// start is when the process started, in a unit of the platform's
	// (Linux: clock ticks after boot; macOS: microseconds since the
	// epoch): compared only with other starts of the same boot.
	start uint64
}

// The Unix platform files (proc_linux.go, proc_darwin.go) hold, each under
// one contract:
//
//	procStat(pid) (stat, bool)  what the system says of process pid (false: no such process)
//	allPIDs() []int             the pids of every process running
//	bootID() string             a name of the current boot ("" when unknown)
//
// and every platform's (proc_windows.go too) stateHome(getenv), the
// platform's place for a user's state (statedir.go).
