//go:build !linux

package supervisor

import (
	"errors"
	"runtime"
	"syscall"
)

// The sandbox's means but its caps are Linux's (netfilter_linux.go,
// landlock_linux.go). Elsewhere each of those restrictions is refused, or
// skipped with a warning under best_effort, and -check says so per
// destination. The caps are the platform's own (cgroup_windows.go,
// cgroup_darwin.go).

// notHere is why a restriction is not held on this platform.
func notHere(what, means string) error {
	return errors.New(what + " is held by Linux's " + means + ", which " + runtime.GOOS + " does not have: this version does not enforce it here")
}

func (g *cgroup) filterNetwork([]netRule) error {
	return notHere("'sandbox.network' (loopback or addresses)", "cgroup eBPF filters")
}

func checkLandlockHere() ([]string, error) {
	return nil, notHere("'sandbox.files'", "Landlock")
}

func checkNetns() error { return notHere("'network: none'", "network namespaces") }

func netnsAttr(*syscall.SysProcAttr) {}

// cgroupOf is Linux's: none here.
func cgroupOf([]string) *cgroup { return &cgroup{} }

// The joiner's steps: never asked for here.
func joinCgroups([]string) error               { return errors.New("cgroups are Linux's") }
func restrictFiles(read, write []string) error { return errors.New("Landlock is Linux's") }
func loopbackUp() error                        { return errors.New("network namespaces are Linux's") }
func dropUndoing() error                       { return nil }
func limitData(int64) error                    { return errors.New("RLIMIT_DATA is used on Linux only") }

func restrictPorts([]string) error { return errors.New("Landlock is Linux's") }

// landlockPorts: no Landlock here.
const landlockPorts = false

// rlimitData: the memory cap has no fallback here.
const rlimitData = false
