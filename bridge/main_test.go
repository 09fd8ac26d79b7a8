package bridge

import (
	"os"
	"testing"

	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

// TestMain lets the test binary run as the fake MCP child of the tests
// that need one (fakemcp.Command re-executes it).
func TestMain(m *testing.M) {
	fakemcp.NoExitSleep()
	fakemcp.Serve()
	os.Exit(m.Run())
}

// bboltDir is a temporary directory for a test whose files bbolt maps (the
// credentials store, the built-in server's database). Not t.TempDir: under
// Wine a file bbolt has mapped cannot be removed by the test's cleanup
// ("Invalid function"), so the removal is best effort there and the
// directory is left to the system's temporary files.
func bboltDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "stelae-bridge-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}
