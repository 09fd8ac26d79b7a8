package supervisor

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/windows"
)

// Caps on Windows: the limits of the child's job object (tree_windows.go),
// which every process it starts is born in — the job's committed memory
// (JOB_OBJECT_LIMIT_JOB_MEMORY: past it, allocations fail) and its
// number of active processes (JOB_OBJECT_LIMIT_ACTIVE_PROCESS: past it,
// process creation fails; Windows counts processes, not threads as
// Linux's pids cap does).

// cgroup carries a child's caps to its job; set by newCgroup and never
// changed.
type cgroup struct{ caps cgroupCaps }

// capsBy says what holds the caps here (-check).
const capsBy = "the child's job object"

// cgroupCaps are the caps of a child's processes.
type cgroupCaps struct {
	Memory    int64
	Processes int
}

func newCgroup(dest string, caps cgroupCaps) (*cgroup, error) { return &cgroup{caps: caps}, nil }

func (g *cgroup) procsFiles() []string { return nil }
func (g *cgroup) oomKills() uint64     { return 0 }
func (g *cgroup) killAll()             {}
func (g *cgroup) remove() error        { return nil }

// limitTree sets the caps on the child's job, before it runs.
func (g *cgroup) limitTree(t *tree) error {
	if g == nil || (g.caps.Memory == 0 && g.caps.Processes == 0) {
		return nil
	}
	info := g.caps.limits()
	if _, err := windows.SetInformationJobObject(t.job, windows.JobObjectExtendedLimitInformation, uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		return fmt.Errorf("cannot set the sandbox's caps on the child's job: %w", err)
	}
	return nil
}

// limits are the job's limits with caps: kill-on-close (tree_windows.go)
// and the caps.
func (caps cgroupCaps) limits() windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION {
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{
		BasicLimitInformation: windows.JOBOBJECT_BASIC_LIMIT_INFORMATION{LimitFlags: windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE},
	}
	if caps.Memory > 0 {
		info.BasicLimitInformation.LimitFlags |= windows.JOB_OBJECT_LIMIT_JOB_MEMORY
		info.JobMemoryLimit = uintptr(caps.Memory)
	}
	if caps.Processes > 0 {
		info.BasicLimitInformation.LimitFlags |= windows.JOB_OBJECT_LIMIT_ACTIVE_PROCESS
		info.BasicLimitInformation.ActiveProcessLimit = uint32(caps.Processes)
	}
	return info
}

// jobLimits reads a job's limits.
func jobLimits(job windows.Handle) (windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION, error) {
	var info windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
	if err := windows.QueryInformationJobObject(job, windows.JobObjectExtendedLimitInformation, uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info)), nil); err != nil {
		return info, fmt.Errorf("cannot read the child's job's limits: %w", err)
	}
	return info, nil
}
