package supervisor

import (
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// Processes on macOS, from sysctl kern.proc (the contract is in
// records.go): no /proc, and no ps to parse.

// szomb is p_stat of a zombie (sys/proc.h).
const szomb = 5

func procStat(pid int) (stat, bool) {
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil || kp == nil || int(kp.Proc.P_pid) != pid {
		return stat{}, false
	}
	st := stat{state: 'R', pgrp: int(kp.Eproc.Pgid)}
	if kp.Proc.P_stat == szomb {
		st.state = 'Z'
	}
	st.sid, _ = unix.Getsid(pid)
	t := kp.Proc.P_starttime
	st.start = uint64(t.Sec)*1_000_000 + uint64(t.Usec)
	return st, true
}

func allPIDs() []int {
	kps, err := unix.SysctlKinfoProcSlice("kern.proc.all")
	if err != nil {
		return nil
	}
	out := make([]int, 0, len(kps))
	for i := range kps {
		if pid := int(kps[i].Proc.P_pid); pid > 0 {
			out = append(out, pid)
		}
	}
	return out
}

// bootID names the boot by its time (kern.boottime), which stays the same
// until the next boot.
func bootID() string {
	tv, err := unix.SysctlTimeval("kern.boottime")
	if err != nil {
		return ""
	}
	return strconv.FormatInt(int64(tv.Sec), 10) + "." + strconv.FormatInt(int64(tv.Usec), 10)
}

// stateHome is ~/Library/Application Support ("" without a home).
func stateHome(getenv func(string) string) string {
	home := getenv("HOME")
	if home == "" || !filepath.IsAbs(home) {
		return ""
	}
	return filepath.Join(home, "Library", "Application Support")
}
