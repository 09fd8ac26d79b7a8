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
