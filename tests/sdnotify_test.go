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
// carries MONOTONIC_USEC; the tokens come from a systemd credential
// (auth-tokens); children inherit none of NOTIFY_SOCKET, WATCHDOG_USEC,
// CREDENTIALS_DIRECTORY.
func TestSystemdNotify(t *testing.T) {
	ns := listenNotify(t)
	cfg := fakeDestinations(t, map[string]string{"fake": fakemcp.ModeServer})
	// The tokens as a systemd credential (LoadCredential=auth-tokens:…).
	creds := t.TempDir()
	if err := os.WriteFile(filepath.Join(creds, "auth-tokens"), []byte("sd-credential-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bridgeBinary(t), "-config", cfg, "-listen", "127.0.0.1:0", "-state-dir", t.TempDir())
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+ns.path, "WATCHDOG_USEC=200000", "CREDENTIALS_DIRECTORY="+creds)
	p := runBinary(t, cmd)
	waitFor(t, 10*time.Second, "READY=1 and two WATCHDOG=1", func() bool { return ns.count("READY=1") == 1 && ns.count("WATCHDOG=1") >= 2 })
	if s := ns.states(); s[0] != "READY=1" {
		t.Errorf("the first notification: %q; want READY=1", s)
	}
	if r := newClient(t, p.base+"/fake/mcp").post(initBody); r.status != 401 {
		t.Errorf("without the token of the systemd credential: %d; want 401", r.status)
	}
	c := authedClient(t, p.base+"/fake/mcp", "sd-credential-token")
	c.initialize()
	for _, v := range []string{"NOTIFY_SOCKET", "WATCHDOG_USEC", "CREDENTIALS_DIRECTORY"} {
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
