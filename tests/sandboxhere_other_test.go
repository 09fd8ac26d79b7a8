//go:build unix && !linux

package tests

import "testing"

// sandboxHere skips a test of the sandbox where it is not built: its
// files, network and caps are Linux's (docs/sandbox.md).
func sandboxHere(t *testing.T) {
	t.Helper()
	t.Skip("the sandbox's restrictions are Linux's")
}
