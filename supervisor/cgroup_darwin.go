//go:build !linux && !windows

package supervisor

// Caps are held by cgroups on Linux (cgroup_linux.go) and a job object on
// Windows (cgroup_windows.go); macOS has neither that a process may set on
// a tree of others (its rlimits are per process, and an address-space
// limit breaks V8): refused, or skipped with a warning under best_effort.

// cgroup is Linux's and Windows's; here there is none.
type cgroup struct{}

func (g *cgroup) procsFiles() []string { return nil }
func (g *cgroup) oomKills() uint64     { return 0 }
func (g *cgroup) killAll()             {}
func (g *cgroup) remove() error        { return nil }

// capsBy says what holds the caps here (-check).
const capsBy = "nothing"

// cgroupCaps are the caps of a child's processes.
type cgroupCaps struct {
	Memory    int64
	Processes int
}

func newCgroup(dest string, caps cgroupCaps) (*cgroup, error) {
	if caps.Memory == 0 && caps.Processes == 0 {
		return &cgroup{}, nil
	}
	return nil, notHere("'sandbox' memory and processes", "cgroups")
}

// limitTree is Windows's.
func (g *cgroup) limitTree(*tree) error { return nil }
