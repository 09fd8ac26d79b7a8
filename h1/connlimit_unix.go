//go:build unix

package h1

import "syscall"

// fdLimit is the process's file-descriptor limit (RLIMIT_NOFILE's soft
// limit, which Go raises to the hard one at start); false when unknown.
func fdLimit() (uint64, bool) {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 0, false
	}
	return r.Cur, true
}
