package main

import (
	"os"
	"testing"

	"github.com/stelae-bridge/stelae-bridge/supervisor"
)

func TestMain(m *testing.M) {
	// run starts children under a reaper: this test binary, as the real
	// binary's main does.
	supervisor.RunReaperIfAsked()
	os.Exit(m.Run())
}
