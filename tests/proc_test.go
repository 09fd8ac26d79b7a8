//go:build unix

package tests

// Helpers that read /proc (proc(5)), the tests' one window on it: process state and liveness, CPU
// time, memory and open descriptors, children and descendants, and proc, a process watched by pid
// and start time.

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// procStat is what /proc/PID/stat says of a process.
type procStat struct {
	state   byte // R, S, D, Z, T…
	ppid    int
	pgrp    int
	session int
	start   string // start time since boot, in clock ticks
	cpu     time.Duration
}

// readStat reads /proc/PID/stat; false when the process is gone.
func readStat(pid int) (procStat, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return procStat{}, false
	}
	// Fields from 3 on: state(3) ppid(4) pgrp(5) session(6) … utime(14)
	// stime(15) … starttime(22).
	f := strings.Fields(s[i+2:])
	if len(f) < 20 {
		return procStat{}, false
	}
	num := func(n int) int64 { v, _ := strconv.ParseInt(f[n-3], 10, 64); return v }
	return procStat{
		state:   f[0][0],
		ppid:    int(num(4)),
		pgrp:    int(num(5)),
		session: int(num(6)),
		start:   f[22-3],
		cpu:     time.Duration(num(14)+num(15)) * time.Second / 100, // USER_HZ
	}, true
}

// processAlive reports whether pid exists and is not a zombie.
func processAlive(pid int) bool {
	st, ok := readStat(pid)
	return ok && st.state != 'Z'
}

// cpuTime is the user+system CPU time a process has used.
func cpuTime(pid int) time.Duration {
	st, _ := readStat(pid)
	return st.cpu
}

// procStatusBytes reads a kB field of /proc/PID/status (VmRSS, VmHWM…) in
// bytes; 0 when unreadable.
func procStatusBytes(pid int, field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n << 10
		}
	}
	return 0
}

// procFDs counts a process's open file descriptors.
func procFDs(pid int) int {
	ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	return len(ents)
}

// allStats reads every process's stat.
func allStats() map[int]procStat {
	out := map[int]procStat{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := readStat(pid); ok {
			out[pid] = st
		}
	}
	return out
}

// childrenOf lists the processes whose parent is pid, with their state
// (zombies included: an unreaped child is a leak too).
func childrenOf(pid int) map[int]byte {
	out := map[int]byte{}
	for p, st := range allStats() {
		if st.ppid == pid {
			out[p] = st.state
		}
	}
	return out
}

// descendants lists the live (non-zombie) processes below pid.
func descendants(pid int) []int {
	kids := map[int][]int{}
	for p, st := range allStats() {
		if st.state != 'Z' {
			kids[st.ppid] = append(kids[st.ppid], p)
		}
	}
	var out []int
	var walk func(int)
	walk = func(p int) {
		for _, k := range kids[p] {
			out = append(out, k)
			walk(k)
		}
	}
	walk(pid)
	return out
}

// proc identifies one process by pid and start time, so a recycled pid is
// not mistaken for the process watched.
type proc struct {
	pid   int
	start string
}

// watchProc records pid's identity; the process must be alive now.
func watchProc(t testing.TB, pid int) proc {
	t.Helper()
	if pid <= 0 {
		t.Fatalf("bad pid %d", pid)
	}
	st, ok := readStat(pid)
	if !ok || st.state == 'Z' {
		t.Fatalf("process %d is not running (state %q)", pid, st.state)
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("process %d: kill -0: %v", pid, err)
	}
	return proc{pid: pid, start: st.start}
}

// alive: the same process still exists and is not a zombie.
func (p proc) alive() bool {
	if err := syscall.Kill(p.pid, 0); err != nil {
		return false
	}
	st, ok := readStat(p.pid)
	return ok && st.start == p.start && st.state != 'Z'
}

// waitGone waits until p is gone and returns how long that took.
func (p proc) waitGone(t testing.TB, within time.Duration, what string) time.Duration {
	t.Helper()
	start := time.Now()
	waitFor(t, within, fmt.Sprintf("%s (pid %d) to be gone", what, p.pid), func() bool { return !p.alive() })
	return time.Since(start)
}

// mustStat is readStat that fails the test when the process is gone.
func mustStat(t testing.TB, pid int) procStat {
	t.Helper()
	st, ok := readStat(pid)
	if !ok {
		t.Fatalf("process %d is gone", pid)
	}
	return st
}

// treePIDs are pid and its descendants.
func treePIDs(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	parent := map[int]int{}
	for _, e := range entries {
		if p, err := strconv.Atoi(e.Name()); err == nil {
			if st, ok := readStat(p); ok {
				parent[p] = st.ppid
			}
		}
	}
	tree := []int{pid}
	for i := 0; i < len(tree); i++ {
		for p, pp := range parent {
			if pp == tree[i] {
				tree = append(tree, p)
			}
		}
	}
	return tree
}

// treeCPU is the CPU time pid and its descendants have used.
func treeCPU(pid int) time.Duration {
	var d time.Duration
	for _, p := range treePIDs(pid) {
		d += cpuTime(p)
	}
	return d
}

// treeRSS is the resident memory of pid and its descendants.
func treeRSS(pid int) int64 {
	var n int64
	for _, p := range treePIDs(pid) {
		n += procStatusBytes(p, "VmRSS")
	}
	return n
}

// alive reports whether a process with pid exists.
func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }
