//go:build !linux

package supervisor

import (
	"errors"
	"runtime"

	"github.com/stelae-bridge/stelae-bridge/config"
)

// Caps by cgroups are Linux's (cgroup_linux.go). Elsewhere a sandbox's
// caps are refused, or skipped with a warning under best_effort, until the
// platform's own means are built (a job object's limits on Windows).

// cgroup is Linux's; elsewhere there is none.
type cgroup struct{}

func (g *cgroup) procsFiles() []string { return nil }
func (g *cgroup) oomKills() uint64     { return 0 }
func (g *cgroup) killAll()             {}
func (g *cgroup) remove() error        { return nil }

// sandboxCaps refuses a sandbox's caps: not enforced on this platform.
func sandboxCaps(d *config.Destination) (*cgroup, error) {
	if d.Sandbox.Empty() {
		return nil, nil
	}
	return nil, errors.New("'sandbox' caps memory and processes with Linux's cgroups, which " + runtime.GOOS + " does not have: this version does not enforce them here")
}

// cgroupOf is Linux's: none here.
func cgroupOf([]string) *cgroup { return &cgroup{} }

// joinCgroups is the reaper's join: never asked for here.
func joinCgroups([]string) error { return errors.New("cgroups are Linux's") }
