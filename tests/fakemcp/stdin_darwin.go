package fakemcp

import "golang.org/x/sys/unix"

// fionread is macOS's FIONREAD, _IOR('f', 127, int) in sys/filio.h
// (neither syscall nor x/sys/unix names it for darwin).
const fionread = 0x4004667f

// stdinWaiting is how many bytes wait in stdin's pipe (FIONREAD).
func stdinWaiting() int {
	n, err := unix.IoctlGetInt(0, fionread)
	if err != nil {
		return 0
	}
	return n
}

// shrinkStdin: macOS's pipes cannot be made smaller.
func shrinkStdin() {}
