//go:build unix

package tests

// A destination with a child per user on two instances behind HAProxy with the README's backend
// (hashing the Authorization header): each user stays on one instance with one child of their own.

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

// fleetUsersHAProxy is the README's backend for a destination with a
// child per user on several instances: each user kept on one instance by
// the hash of their Authorization header.
const fleetUsersHAProxy = `global
    maxconn 256
defaults
    mode http
    timeout connect 5s
    timeout client 1m
    timeout server 1m
    option httpchk
    http-check send meth GET uri /readyz ver HTTP/1.1 hdr Host localhost
    default-server check inter 1s fall 3 rise 1
frontend mcp
    bind %s
    default_backend mine
backend mine
    balance hdr(Authorization)
    hash-type consistent
    server b %s
    server c %s
`

// TestFleetUsersBehindHAProxy: a destination with a child per user served
// by two instances behind HAProxy with the README's backend (balance
// hdr(Authorization), hash-type consistent). Every user's 2025 sessions
// and 2026-07-28 requests reach one child of their own, on one instance;
// the users are spread over both instances; no child is shared.
func TestFleetUsersBehindHAProxy(t *testing.T) {
	bin := haproxyBinary(t)
	users := []string{"ann", "ben", "cat", "dan", "eve", "fay", "gus", "hal"}
	var lines []string
	for _, u := range users {
		lines = append(lines, u+": tok-"+u+"-0123456789abcdef")
	}
	tokens := writeTokens(t, lines...)
	f := &testFleet{t: t, instances: map[string]*fleetInstance{}}
	for _, n := range []string{"b", "c"} {
		sock := heldSocket(t)
		ln, err := net.FileListener(sock)
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close() // sock still holds the socket
		f.instances[n] = &fleetInstance{name: n, addr: addr, state: t.TempDir(), sock: sock}
	}
	f.config = destinationsFile(t, map[string]string{"mine": fakemcp.ModeServer}, map[string]string{"mine": "    isolation: user\n"})
	appendFile(t, f.config, fmt.Sprintf("instances:\n  b: {url: \"http://%s\", serves: [mine]}\n  c: {url: \"http://%s\", serves: [mine]}\n",
		f.instances["b"].addr, f.instances["c"].addr))
	bridgePID := map[int]string{}
	for _, n := range []string{"b", "c"} {
		in := f.instances[n]
		in.proc = socketBridge(t, in.sock, f.config, "-instance", n, "-state-dir", in.state, "-auth-tokens-file", tokens)
		bridgePID[in.proc.cmd.Process.Pid] = n
	}
	lbAddr := freeAddr(t)
	f.lb = "http://" + lbAddr
	cfg := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(fleetUsersHAProxy, lbAddr, f.instances["b"].addr, f.instances["c"].addr)), 0o600); err != nil {
		t.Fatal(err)
	}
	f.run(exec.Command(bin, "-db", "-f", cfg), "haproxy")

	url := f.url("mine")
	// instanceOf names the instance whose bridge pid is under.
	instanceOf := func(pid int) string {
		for b, n := range bridgePID {
			if slices.Contains(descendants(b), pid) {
				return n
			}
		}
		return ""
	}
	childOf := map[string]int{}
	served := map[string][]string{}
	for _, u := range users {
		token := "tok-" + u + "-0123456789abcdef"
		var pids []int
		for range 2 {
			c := authedClient(t, url, token)
			c.initialize()
			for range 3 {
				pids = append(pids, whoamiCall(t, c).PID)
			}
		}
		for i := range 3 {
			p, r := modernWhoami(t, url, token)
			if p == 0 {
				t.Fatalf("%s's 2026-07-28 request %d through the balancer: %d %s", u, i, r.status, r.body)
			}
			pids = append(pids, p)
		}
		slices.Sort(pids)
		if pids = slices.Compact(pids); len(pids) != 1 {
			t.Fatalf("%s's calls through the balancer reached children %v; want one", u, pids)
		}
		n := instanceOf(pids[0])
		if n == "" {
			t.Fatalf("%s's child %d is not a child of either instance", u, pids[0])
		}
		for other, p := range childOf {
			if p == pids[0] {
				t.Fatalf("%s and %s share child %d", u, other, p)
			}
		}
		childOf[u] = pids[0]
		served[n] = append(served[n], u)
	}
	// The tokens are fixed, so is their hash: both instances serve users.
	if len(served["b"]) == 0 || len(served["c"]) == 0 {
		t.Errorf("users by instance: %v; want both instances serving", served)
	}
	t.Logf("users by instance: %v", served)
	// A user's calls reach the same child still.
	for _, u := range users {
		if p, r := modernWhoami(t, url, "tok-"+u+"-0123456789abcdef"); p != childOf[u] {
			t.Errorf("%s's later request: pid %d (%d %s); want %d", u, p, r.status, r.body, childOf[u])
		}
	}
	if r := mustRequest(t, http.MethodPost, url, "", initBody); r.status != http.StatusUnauthorized {
		t.Errorf("no credential through the balancer: %d %s; want 401", r.status, r.body)
	}
}
