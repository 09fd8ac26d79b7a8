package supervisor

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Processes on Linux, from /proc (the contract is in records.go).

func procStat(pid int) (stat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return stat{}, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return stat{}, false
	}
	// After "pid (comm) ": state(3) ppid(4) pgrp(5) session(6) … starttime(22).
	f := strings.Fields(s[i+2:])
	if len(f) < 20 {
		return stat{}, false
	}
	var st stat
	st.state = f[0][0]
	st.pgrp, _ = strconv.Atoi(f[2])
	st.sid, _ = strconv.Atoi(f[3])
	st.start, _ = strconv.ParseUint(f[19], 10, 64)
	return st, true
}

func allPIDs() []int {
	ents, _ := os.ReadDir("/proc")
	out := make([]int, 0, len(ents))
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// stateHome is $XDG_STATE_HOME, else ~/.local/state ("" without a home).
func stateHome(getenv func(string) string) string {
	home := getenv("HOME")
	if x := getenv("XDG_STATE_HOME"); x != "" && filepath.IsAbs(x) {
		return x
	}
	if home == "" || !filepath.IsAbs(home) {
		return ""
	}
	return filepath.Join(home, ".local", "state")
}
