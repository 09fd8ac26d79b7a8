package fakemcp

import "golang.org/x/sys/unix"

// stdinWaiting is how many bytes wait in stdin's pipe (FIONREAD, which
// Linux calls TIOCINQ).
func stdinWaiting() int {
	n, err := unix.IoctlGetInt(0, unix.TIOCINQ)
	if err != nil {
		return 0
	}
	return n
}
