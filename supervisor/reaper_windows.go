package supervisor

import (
	"fmt"
	"os"
)

// ReaperCommand is nil on Windows: each child's job object kills its
// processes when the bridge ends (tree_windows.go), so children run without
// a reaper.
func ReaperCommand() ([]string, error) { return nil, nil }

// reap is never asked for on Windows.
func reap(string, []string, sandboxArgs) int {
	fmt.Fprintln(os.Stderr, "stelae-bridge: the reaper mode is not used on Windows")
	return 2
}
