//go:build linux

package tests

// systemd's notification protocol (issue 41) with the real binary, against a socket the test holds
// as systemd would: READY=1 once it listens, WATCHDOG=1 every half WATCHDOG_USEC, RELOADING=1 and
// READY=1 around a SIGHUP reload, STOPPING=1 when SIGTERM starts the drain; the children never see
// the socket.

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

// notifySocket is a unixgram socket that keeps every datagram sent to it.
type notifySocket struct {
	path string
	// mu guards got.
	mu  sync.Mutex
	got []string
}

func listenNotify(t *testing.T) *notifySocket {
	t.Helper()
	ns := &notifySocket{path: filepath.Join(t.TempDir(), "notify.sock")}
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: ns.path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			ns.mu.Lock()
			ns.got = append(ns.got, string(buf[:n]))
			ns.mu.Unlock()
		}
	}()
	t.Cleanup(func() { conn.Close(); <-done })
	return ns
}

// states are the first lines of the datagrams so far.
func (ns *notifySocket) states() []string {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	out := make([]string, len(ns.got))
	for i, m := range ns.got {
		out[i], _, _ = strings.Cut(m, "\n")
	}
	return out
}

// count is how many datagrams start with state.
func (ns *notifySocket) count(state string) int {
	n := 0
	for _, s := range ns.states() {
		if s == state {
			n++
		}
	}
	return n
}

// TestSystemdNotify: READY, WATCHDOG, RELOADING and READY on a SIGHUP,
// STOPPING on SIGTERM, in that order, from the real binary; RELOADING
// carries MONOTONIC_USEC; children do not inherit NOTIFY_SOCKET or
// WATCHDOG_USEC.
func TestSystemdNotify(t *testing.T) {
	ns := listenNotify(t)
	cfg := fakeDestinations(t, map[string]string{"fake": fakemcp.ModeServer})
	cmd := exec.Command(bridgeBinary(t), "-config", cfg, "-listen", "127.0.0.1:0", "-state-dir", t.TempDir())
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+ns.path, "WATCHDOG_USEC=200000")
	p := runBinary(t, cmd)
	waitFor(t, 10*time.Second, "READY=1 and two WATCHDOG=1", func() bool { return ns.count("READY=1") == 1 && ns.count("WATCHDOG=1") >= 2 })
	if s := ns.states(); s[0] != "READY=1" {
		t.Errorf("the first notification: %q; want READY=1", s)
	}
	c := newClient(t, p.base+"/fake/mcp")
	c.initialize()
	for _, v := range []string{"NOTIFY_SOCKET", "WATCHDOG_USEC"} {
		if got, _, _ := getenvCall(t, c, v); got != "" {
			t.Errorf("the child sees %s=%q", v, got)
		}
	}
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "RELOADING=1 then READY=1", func() bool { return ns.count("RELOADING=1") == 1 && ns.count("READY=1") == 2 })
	ns.mu.Lock()
	var reloading string
	for _, m := range ns.got {
		if strings.HasPrefix(m, "RELOADING=1\n") {
			reloading = m
		}
	}
	ns.mu.Unlock()
	if !regexp.MustCompile(`(?m)^MONOTONIC_USEC=[1-9][0-9]*$`).MatchString(reloading) {
		t.Errorf("RELOADING=1 without MONOTONIC_USEC: %q", reloading)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the bridge did not stop within 30 s of SIGTERM")
	}
	// The order, watchdogs aside.
	var order []string
	for _, s := range ns.states() {
		if s != "WATCHDOG=1" {
			order = append(order, s)
		}
	}
	if strings.Join(order, " ") != "READY=1 RELOADING=1 READY=1 STOPPING=1" {
		t.Errorf("the notifications: %q; want READY, RELOADING, READY, STOPPING", order)
	}
}
