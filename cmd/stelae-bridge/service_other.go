//go:build !windows

package main

import (
	"context"
	"fmt"
	"io"
)

// runService: the Windows service's command; elsewhere, where systemd (or
// launchd) runs the bridge, it says so.
func runService(_ context.Context, _ []string, _, stderr io.Writer) int {
	fmt.Fprint(stderr, "stelae-bridge service: the Windows service manager's command; on Linux use the systemd units in deploy/ (Type=notify, socket hand-over)\n")
	return 2
}
