package fakemcp

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// stdinWaiting is how many bytes wait in stdin's pipe (FIONREAD, which
// Linux calls TIOCINQ).
func stdinWaiting() int {
	n, err := unix.IoctlGetInt(0, unix.TIOCINQ)
	if err != nil {
		return 0
	}
	return n
}

// shrinkStdin makes stdin's pipe one page (F_SETPIPE_SZ).
func shrinkStdin() { _, _, _ = syscall.Syscall(syscall.SYS_FCNTL, 0, unix.F_SETPIPE_SZ, 4096) }
