//go:build unix

package tests

// A destination whose command cannot start (issue 21): the client gets its name and a reason, never
// the path or the system's error; a missing program is not retried; no session id is logged.

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFailedStartKeepsThePathFromClients: a destination whose command
// cannot start tells the client its name and a reason, and only the log
// the command's path and the system's error (issue 21: a client read
// "fork/exec /opt/..." with the operator's file layout).
func TestFailedStartKeepsThePathFromClients(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "opt-private-layout", "bin", "server-that-is-missing")
	config := filepath.Join(dir, "destinations.yaml")
	if err := os.WriteFile(config, []byte("destinations:\n  broken:\n    command: "+secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startBinary(t, config)
	c := newClient(t, p.base+"/broken/mcp")
	var body string
	waitFor(t, 30*time.Second, "the failed start's answer", func() bool {
		r := c.post(initBody)
		body = string(r.body)
		// Every answer, while it restarts too.
		if strings.Contains(body, "opt-private-layout") || strings.Contains(body, "fork/exec") || strings.Contains(body, dir) {
			t.Fatalf("the client read the command's path: %s", body)
		}
		return r.status == 503 && strings.Contains(body, "failed")
	})
	if !strings.Contains(body, "could not be started") {
		t.Errorf("the client was not told why: %s", body)
	}
	waitFor(t, 10*time.Second, "the path in the log", func() bool { return strings.Contains(p.logs.String(), "opt-private-layout") })
}

// TestFailedSessionChildStartKeepsThePath: the same for a destination that
// gives each session a child of its own.
func TestFailedSessionChildStartKeepsThePath(t *testing.T) {
	dir := t.TempDir()
	secret := filepath.Join(dir, "opt-private-layout", "bin", "server-that-is-missing")
	config := filepath.Join(dir, "destinations.yaml")
	if err := os.WriteFile(config, []byte("destinations:\n  broken:\n    command: "+secret+"\n    isolation: session\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startBinary(t, config)
	r := newClient(t, p.base+"/broken/mcp").post(initBody)
	if r.status < 500 || strings.Contains(string(r.body), "opt-private-layout") || strings.Contains(string(r.body), "fork/exec") {
		t.Errorf("initialize of a session whose child cannot start: %d %s", r.status, r.body)
	}
}

// TestCommandNotFoundFailsAtOnce: a command that cannot start (no such
// program, not executable) is not retried — a restart would only repeat
// the error: the first client is told the destination failed, and no
// restart is counted.
func TestCommandNotFoundFailsAtOnce(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "not-executable")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "destinations.yaml")
	yaml := "destinations:\n  missing:\n    command: stelae-no-such-program-xyz\n  path:\n    command: " + filepath.Join(dir, "no", "such") + "\n  noexec:\n    command: " + notExec + "\n"
	if err := os.WriteFile(config, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startBinary(t, config, "-restart-delay", "2s")
	for _, dest := range []string{"missing", "path", "noexec"} {
		start := time.Now()
		r := newClient(t, p.base+"/"+dest+"/mcp").post(initBody)
		if r.status != http.StatusServiceUnavailable || !strings.Contains(string(r.body), "failed") {
			t.Errorf("%s: first initialize: %d %s; want 503, the destination failed", dest, r.status, r.body)
		}
		// With a restart, the answer would wait for the 2 s delay at least.
		if took := time.Since(start); took > 1500*time.Millisecond {
			t.Errorf("%s: the answer took %s", dest, took)
		}
		if n := scrapeURL(t, p.base)[`stelae_child_restarts_total{destination="`+dest+`"}`]; n != 0 {
			t.Errorf("%s: %v restarts; want none", dest, n)
		}
	}
}

// TestRefusedInitializeLogsNoSession: an initialize the bridge could not
// serve (the child cannot start) gave the client no session, and its
// access log line names none (it named the id the bridge had made for it
// and thrown away).
func TestRefusedInitializeLogsNoSession(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "destinations.yaml")
	if err := os.WriteFile(config, []byte("destinations:\n  broken:\n    command: stelae-no-such-program-xyz\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startBinary(t, config, "-log-format", "json")
	r := newClient(t, p.base+"/broken/mcp").post(initBody)
	if r.status != http.StatusServiceUnavailable || r.header.Get("Mcp-Session-Id") != "" {
		t.Fatalf("initialize: %d, Mcp-Session-Id %q; want 503 and no session", r.status, r.header.Get("Mcp-Session-Id"))
	}
	var line map[string]any
	waitFor(t, 10*time.Second, "the POST's access log line", func() bool {
		for _, l := range strings.Split(p.logs.String(), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(l), &m) == nil && m["@message"] == "POST" && m["mcp_method"] == "initialize" {
				line = m
				return true
			}
		}
		return false
	})
	if s, ok := line["session"]; ok {
		t.Errorf("the refused initialize was logged with session %v, which its client never got: %v", s, line)
	}
	if line["status_code"] != float64(http.StatusServiceUnavailable) {
		t.Errorf("access log line %v; want status_code 503", line)
	}
}
