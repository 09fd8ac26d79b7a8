package supervisor

import "syscall"

// Process groups and the bridge's death on Linux (the contract is in
// process.go's Start and reaper.go).

// groupAttr makes a child (or its reaper) lead a process group of its own,
// and has the kernel signal it when the bridge dies: SIGKILL for a child
// started without a reaper, the reaper's catchable death signal otherwise.
func groupAttr(reaper bool) *syscall.SysProcAttr {
	sig := syscall.SIGKILL
	if reaper {
		sig = reaperDeathSignal
	}
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: sig}
}

// watchParent tells the reaper, by closing died, that the bridge is gone.
// On Linux the kernel's parent-death signal (groupAttr) does: nothing to
// watch.
func watchParent(died chan<- struct{}) {}
