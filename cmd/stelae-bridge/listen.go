package main

import (
	"fmt"
	"net"
	"os"
	"strconv"
)

// systemdVars are the variables of systemd's socket activation
// (sd_listen_fds(3)), read here, and its credentials directory
// (credentials_systemd.go): kept from children.
var systemdVars = []string{"LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES", credentialsDirVar}

// listenFDsStart is the first descriptor systemd passes.
const listenFDsStart = 3

// listen returns the bridge's listener: the socket systemd passed when it
// started the bridge for a socket unit (LISTEN_PID names this process),
// which outlives the bridge (shared: a restart loses no connection, see
// bridge.Options.SharedListener), or else a new one on addr.
func listen(addr string, getenv func(string) string) (ln net.Listener, shared bool, err error) {
	if pid := getenv("LISTEN_PID"); pid == "" || pid != strconv.Itoa(os.Getpid()) {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, false, fmt.Errorf("cannot listen on %s: %w (is another bridge running? pass -listen ADDR)", addr, err)
		}
		return ln, false, nil
	}
	switch n, err := strconv.Atoi(getenv("LISTEN_FDS")); {
	case err != nil || n < 1:
		return nil, false, fmt.Errorf("systemd started the bridge for a socket (LISTEN_PID) but passed none (LISTEN_FDS=%q): check the socket unit's ListenStream=", getenv("LISTEN_FDS"))
	case n > 1:
		return nil, false, fmt.Errorf("systemd passed %d sockets (LISTEN_FDS); the bridge listens on one: give its socket unit a single ListenStream=", n)
	}
	f := os.NewFile(listenFDsStart, "socket from systemd")
	defer f.Close() // the listener has its own descriptor (close-on-exec: no child gets it)
	ln, err = net.FileListener(f)
	if err != nil {
		return nil, false, fmt.Errorf("descriptor %d from systemd (LISTEN_FDS) is not a listening socket: %w", listenFDsStart, err)
	}
	if _, ok := ln.Addr().(*net.TCPAddr); !ok {
		ln.Close()
		return nil, false, fmt.Errorf("the socket systemd passed is %s %s: the bridge listens on TCP (ListenStream=PORT or ADDRESS:PORT)", ln.Addr().Network(), ln.Addr())
	}
	return ln, true, nil
}
