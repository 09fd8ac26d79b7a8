package supervisor

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// Process groups and the bridge's death on macOS (the contract is in
// process.go's Start and reaper.go). macOS has no parent-death signal: the
// reaper watches its parent's exit with kqueue instead.

// groupAttr makes a child (or its reaper) lead a process group of its own.
// A child started without a reaper does not die with the bridge here: the
// bridge always starts children through reapers.
func groupAttr(reaper bool) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// watchParent closes died when the reaper's parent, the bridge, exits: a
// kqueue filter on the parent's NOTE_EXIT, on a goroutine that lives as
// long as the reaper. A parent already gone (the reaper reparented to
// launchd) counts at once.
func watchParent(died chan<- struct{}) {
	ppid := os.Getppid()
	if ppid <= 1 {
		close(died)
		return
	}
	kq, err := unix.Kqueue()
	if err != nil {
		watchParentByPolling(ppid, died)
		return
	}
	var change [1]unix.Kevent_t
	unix.SetKevent(&change[0], ppid, unix.EVFILT_PROC, unix.EV_ADD|unix.EV_ONESHOT)
	change[0].Fflags = unix.NOTE_EXIT
	if _, err := unix.Kevent(kq, change[:], nil, nil); err != nil {
		unix.Close(kq)
		if errors.Is(err, unix.ESRCH) {
			close(died) // gone before the watch began
			return
		}
		watchParentByPolling(ppid, died)
		return
	}
	if os.Getppid() != ppid {
		unix.Close(kq)
		close(died) // gone between the two looks
		return
	}
	go func() {
		defer unix.Close(kq)
		var ev [1]unix.Kevent_t
		for {
			n, err := unix.Kevent(kq, nil, ev[:], nil)
			if n > 0 {
				close(died)
				return
			}
			if err != nil && !errors.Is(err, unix.EINTR) {
				watchParentByPolling(ppid, died)
				return
			}
		}
	}()
}
