package main

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestListenSystemdVariables: the bridge takes systemd's socket only when
// LISTEN_PID names it, and says what is wrong with the variables when
// they do not pass exactly one socket (descriptor 3 itself is exercised by
// the tests package, with a socket passed to the binary).
func TestListenSystemdVariables(t *testing.T) {
	self := strconv.Itoa(os.Getpid())
	for _, tc := range []struct {
		name, pid, fds string
		shared         bool
		err            string
	}{
		{name: "none", shared: false},
		{name: "another process's", pid: "1", fds: "1", shared: false},
		{name: "no socket", pid: self, fds: "0", err: "passed none (LISTEN_FDS=\"0\")"},
		{name: "garbage", pid: self, fds: "x", err: "passed none"},
		{name: "two sockets", pid: self, fds: "2", err: "systemd passed 2 sockets"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"LISTEN_PID": tc.pid, "LISTEN_FDS": tc.fds}
			ln, shared, err := listen("127.0.0.1:0", func(k string) string { return env[k] })
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v; want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			if shared != tc.shared {
				t.Errorf("shared %v; want %v", shared, tc.shared)
			}
		})
	}
}
