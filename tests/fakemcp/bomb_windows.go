package fakemcp

import (
	"os/exec"
	"syscall"
)

// The fork bomb is a Unix test's (sandbox_test.go): on Windows its shell
// does not start and the tool says so.

func bombAttr() *syscall.SysProcAttr   { return nil }
func killBomb(*exec.Cmd)               {}
func setsidAttr() *syscall.SysProcAttr { return nil }
func pidsCounters() string             { return "no cgroups on Windows" }
