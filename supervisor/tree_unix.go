//go:build unix

package supervisor

import (
	"os/exec"
	"syscall"
)

// A child's processes on Unix: its process group, led by the child (or its
// reaper), which groupAttr (spawn_*.go) made it lead. The contract, which
// tree_windows.go holds too:
//
//	newTree(cmd, cg) (*tree, error)  the processes of cmd, just started, held together (under cg's caps where the tree holds them: Windows)
//	stopStages                   what Stop does after closing stdin, one stage per StopGrace; the last kills
//	(*tree).stage(i)             does stage i to every process of the tree
//	(*tree).kill()               kills every process of the tree at once
//	(*tree).closeHandles()       lets go of the tree once its leader is reaped and the rest killed
//	checkCommand(cmd) error      refuses a command the platform could not start as written
type tree struct{ pgid int }

func newTree(cmd *exec.Cmd, _ *cgroup) (*tree, error) { return &tree{pgid: cmd.Process.Pid}, nil }

// stopStages: SIGTERM to the group, then SIGKILL.
var stopStages = []string{"SIGTERM", "SIGKILL"}

func (t *tree) stage(i int) {
	sig := syscall.SIGTERM
	if i == len(stopStages)-1 {
		sig = syscall.SIGKILL
	}
	_ = syscall.Kill(-t.pgid, sig)
}

func (t *tree) kill() { _ = syscall.Kill(-t.pgid, syscall.SIGKILL) }

func (t *tree) closeHandles() {}

// checkCommand: every command Unix can start can be given any argument.
func checkCommand(*exec.Cmd) error { return nil }
