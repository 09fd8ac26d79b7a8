//go:build unix

package tests

// The audit trail (-audit-log) on the real binary: every call of every era, a profile's, a failed
// one and a tool's error, each with who made it, its client, its outcome and its trace; secrets
// redacted; the file rotated; the console's log showing the same; and "-" writing to stdout.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

// auditLine is a line of the trail as an operator's script reads it.
type auditLine struct {
	Time        time.Time       `json:"time"`
	Event       string          `json:"event"`
	Dropped     int             `json:"dropped"`
	Destination string          `json:"destination"`
	Profile     string          `json:"profile"`
	User        string          `json:"user"`
	Principal   string          `json:"principal"`
	Client      string          `json:"client"`
	Era         string          `json:"era"`
	Session     string          `json:"session"`
	Method      string          `json:"method"`
	Tool        string          `json:"tool"`
	RPCID       string          `json:"rpc_id"`
	Outcome     string          `json:"outcome"`
	Status      int             `json:"status"`
	DurationMs  float64         `json:"duration_ms"`
	TraceID     string          `json:"trace_id"`
	Arguments   json.RawMessage `json:"arguments"`
	Result      json.RawMessage `json:"result"`
	Error       json.RawMessage `json:"error"`
}

// readAudit reads the trail's lines from its files, oldest first (FILE.N
// … FILE.1, FILE); files is how many there were.
func readAudit(t testing.TB, path string) (lines []auditLine, files int, raw string) {
	t.Helper()
	names, _ := filepath.Glob(path + ".*")
	n := 0
	for _, name := range names {
		if i, err := strconv.Atoi(strings.TrimPrefix(name, path+".")); err == nil && i > n {
			n = i
		}
	}
	var all strings.Builder
	for i := n; i >= 0; i-- {
		name := path
		if i > 0 {
			name = fmt.Sprintf("%s.%d", path, i)
		}
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatalf("the trail's file %s: %v", name, err)
		}
		if st, _ := os.Stat(name); st.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v; want 0600", name, st.Mode().Perm())
		}
		files++
		all.Write(data)
		lines = append(lines, parseAudit(t, data)...)
	}
	return lines, files, all.String()
}

func parseAudit(t testing.TB, data []byte) []auditLine {
	t.Helper()
	var out []auditLine
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l auditLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("a trail line that is not JSON: %v: %.300s", err, sc.Text())
		}
		out = append(out, l)
	}
	return out
}

// TestAuditTrail: with -audit-log every MCP message is a line — 2025
// session calls, a 2026-07-28 request, a profile's call, a call the child
// refused and a tool's isError result — naming the user as the operator
// named them, the client, the outcome and the trace; planted secrets are
// redacted and what else was sent is kept; the file rotates; the console
// shows the same fields.
func TestAuditTrail(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte("op-audit-token\nalice: at-alice-token\nbob: at-bob-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	command, args, env := fakemcp.Command(fakemcp.ModeServer)
	var b strings.Builder
	fmt.Fprintf(&b, "destinations:\n  fake:\n    command: %q\n    args: [%q]\n    env:\n", command, args[0])
	for k, v := range env {
		fmt.Fprintf(&b, "      %s: %q\n", k, v)
	}
	b.WriteString("profiles:\n  all: {destinations: [fake]}\n")
	cfg := filepath.Join(dir, "destinations.yaml")
	if err := os.WriteFile(cfg, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "audit.jsonl")
	p := startBinary(t, cfg, "-auth-tokens-file", tokens, "-audit-log", path, "-audit-log-max-size", "64KiB", "-audit-log-keep", "50")

	alice := authedClient(t, p.base+"/fake/mcp", "at-alice-token")
	alice.initialize()
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	planted := map[string]any{"GITHUB_TOKEN": "ghp_auditplantedauditplanted000001", "password": "audit-planted-pw-02",
		"url": "postgres://app:audit-planted-db-03@db/app", "innocent": "a visible value"}
	resultOK(t, "echo", alice.post(toolCallBody(`"secrets"`, "echo", map[string]any{"text": "Bearer audit-planted-bearer-0004x", "extra": planted}),
		"traceparent", "00-"+traceID+"-00f067aa0ba902b7-01"))
	alice.post(toolCallBody(`"refused"`, "no-such-tool", map[string]any{}))
	if r := alice.post(toolCallBody(`"failed"`, "fail", map[string]any{"text": "it broke"})); !strings.Contains(string(r.body), `"isError":true`) {
		t.Fatalf("the fail tool: %s", r.body)
	}
	// Enough calls to rotate the file (64 KiB) several times.
	const many = 150
	for i := range many {
		resultOK(t, "echo", alice.callTool(strconv.Itoa(1000+i), "echo", map[string]any{"text": fmt.Sprintf("call-%d-%s", i, strings.Repeat("x", 1000))}))
	}
	// bob: a 2026-07-28 request, and a call through the profile.
	r := modernCall(t, p.base+"/fake/mcp", `"modern"`, "tools/call", `{"name":"echo","arguments":{"text":"from bob"},`+modernMeta+`}`, "Authorization", "Bearer at-bob-token")
	resultOK(t, "modern echo", r)
	bob := authedClient(t, p.base+"/p/all/mcp", "at-bob-token")
	bob.initialize()
	resultOK(t, "profile echo", bob.callTool(`"profiled"`, "fake__echo", map[string]any{"text": "through the profile"}))

	// The console shows the trail's fields.
	var logged []struct{ User, Client, Outcome, TraceID string }
	waitFor(t, 10*time.Second, "the console's log of the traced call", func() bool {
		r := mustRequest(t, http.MethodGet, p.base+"/console/api/log", "", "", "Authorization", "Bearer op-audit-token")
		var entries []struct {
			User    string `json:"user"`
			Client  string `json:"client"`
			Outcome string `json:"outcome"`
			TraceID string `json:"trace_id"`
		}
		_ = json.Unmarshal(r.body, &entries)
		logged = nil
		for _, e := range entries {
			if e.TraceID == traceID {
				logged = append(logged, struct{ User, Client, Outcome, TraceID string }{e.User, e.Client, e.Outcome, e.TraceID})
			}
		}
		return len(logged) > 0
	})
	if l := logged[0]; l.User != "alice" || l.Client != "test 1" || l.Outcome != "ok" {
		t.Errorf("the console's entry of the traced call: %+v", l)
	}

	// A clean stop writes and fsyncs what is queued.
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the bridge did not stop within 30 s of SIGINT")
	}
	lines, files, raw := readAudit(t, path)
	if files < 3 {
		t.Errorf("%d files; want the trail rotated (64 KiB, %d calls of 1 KiB)", files, many)
	}
	for _, leak := range []string{"ghp_auditplanted", "audit-planted-pw-02", "audit-planted-db-03", "audit-planted-bearer-0004x", "at-alice-token", "at-bob-token", "op-audit-token"} {
		if strings.Contains(raw, leak) {
			t.Errorf("the trail holds %q", leak)
		}
	}
	byID := map[string][]auditLine{}
	for _, l := range lines {
		if l.Event != "call" {
			t.Errorf("a %q line: %+v", l.Event, l)
		}
		byID[l.RPCID] = append(byID[l.RPCID], l)
	}
	one := func(id string) auditLine {
		t.Helper()
		if len(byID[id]) != 1 {
			t.Fatalf("%d lines of the call %s; want 1", len(byID[id]), id)
		}
		return byID[id][0]
	}
	for i := range many {
		l := one(strconv.Itoa(1000 + i))
		if !strings.Contains(string(l.Arguments), fmt.Sprintf("call-%d-", i)) || !strings.Contains(string(l.Result), fmt.Sprintf("call-%d-", i)) {
			t.Fatalf("call %d's line keeps neither its arguments nor its result: %.300s", i, l.Arguments)
		}
	}
	s := one(`"secrets"`)
	if s.User != "alice" || s.Client != "test 1" || s.Destination != "fake" || s.Era != "2025" || len(s.Session) != 8 || s.Method != "tools/call" || s.Tool != "echo" ||
		s.Outcome != "ok" || s.Status != 200 || s.TraceID != traceID || s.DurationMs <= 0 || s.Principal == "" || time.Since(s.Time) > time.Hour {
		t.Errorf("the traced call's line: %+v", s)
	}
	if !strings.Contains(string(s.Arguments), "a visible value") || !strings.Contains(string(s.Arguments), "[REDACTED]") {
		t.Errorf("the traced call's arguments: %s", s.Arguments)
	}
	if l := one(`"refused"`); l.Outcome != "-32602" || l.Tool != "no-such-tool" || !strings.Contains(string(l.Error), "unknown tool") || l.Result != nil {
		t.Errorf("the refused call's line: %+v", l)
	}
	if l := one(`"failed"`); l.Outcome != "tool_error" || !strings.Contains(string(l.Result), "it broke") {
		t.Errorf("the failed call's line: %+v", l)
	}
	if l := one(`"modern"`); l.User != "bob" || l.Client != "t 1" || l.Era != "2026-07-28" || l.Session != "" || l.Outcome != "ok" || !strings.Contains(string(l.Result), "from bob") {
		t.Errorf("the 2026-07-28 request's line: %+v", l)
	}
	if l := one(`"profiled"`); l.User != "bob" || l.Profile != "all" || l.Destination != "" || l.Tool != "fake__echo" || !strings.Contains(string(l.Result), "through the profile") {
		t.Errorf("the profile call's line: %+v", l)
	}
	// The messages that are not calls are lines too: initialize and
	// notifications/initialized of each session.
	if n := len(byID["0"]); n != 2 {
		t.Errorf("%d initialize lines; want 2 (alice's, bob's)", n)
	}
}

// TestAuditTrailStdout: -audit-log - writes the trail to standard output,
// and what the bridge prints for the user goes to standard error.
func TestAuditTrailStdout(t *testing.T) {
	cfg := destinationsFile(t, map[string]string{"fake": fakemcp.ModeServer}, nil)
	cmd := exec.Command(bridgeBinary(t), "-config", cfg, "-listen", "127.0.0.1:0", "-state-dir", t.TempDir(), "-audit-log", "-")
	var stdout syncBuffer
	cmd.Stdout = &stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
	addr := make(chan string, 1)
	go func() {
		defer close(done)
		br := bufio.NewReader(stderr)
		for {
			line, err := br.ReadString('\n')
			if m := listenLine.FindStringSubmatch(line); m != nil {
				addr <- m[1]
			}
			if err != nil {
				_, _ = io.Copy(io.Discard, br)
				_ = cmd.Wait()
				return
			}
		}
	}()
	var base string
	select {
	case base = <-addr:
	case <-done:
		t.Fatal("the bridge exited at start")
	case <-time.After(20 * time.Second):
		t.Fatal("the bridge did not say where it listens on standard error")
	}
	c := newClient(t, base+"/fake/mcp")
	c.initialize()
	resultOK(t, "echo", c.callTool(`"out"`, "echo", map[string]string{"text": "to stdout"}))
	_ = cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the bridge did not stop within 30 s of SIGINT")
	}
	out := stdout.String()
	for _, l := range parseAudit(t, []byte(out)) {
		if l.RPCID == `"out"` && strings.Contains(string(l.Result), "to stdout") {
			return
		}
	}
	t.Fatalf("standard output has no line of the call (every line must be the trail's):\n%s", out)
}
