package supervisor

import (
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/windows"
)

// Starting a child on Windows (the contract is in process.go's Start;
// tree_windows.go holds it in its job).

// groupAttr creates the child suspended, so that it is in its job before it
// runs a single instruction (tree_windows.go), and without a console window
// of its own showing: it does not share the bridge's console, so a Ctrl+C
// there reaches the bridge only, which then stops its children in order (as
// a process group of their own does on Unix). Windows children never run
// under a reaper (ReaperCommand).
func groupAttr(reaper bool) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: windows.CREATE_SUSPENDED | windows.CREATE_NO_WINDOW}
}

// checkCommand refuses a batch file (npx.cmd) given an argument cmd.exe
// would read as more than text (batchargs.go).
func checkCommand(cmd *exec.Cmd) error {
	switch strings.ToLower(filepath.Ext(cmd.Path)) {
	case ".cmd", ".bat":
		return batchArgProblem(filepath.Base(cmd.Path), cmd.Args[1:])
	}
	return nil
}
