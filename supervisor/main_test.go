package supervisor

import (
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	// This test binary is also the reaper of the children it starts (on
	// Unix), and the helper processes of the platform's tests.
	RunReaperIfAsked()
	runHelperIfAsked()
	os.Exit(m.Run())
}
