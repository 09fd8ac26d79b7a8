//go:build unix

package tests

// Real clients and real servers from npm, the way users run them: sessions
// that are never deleted, clients of different protocol versions and
// capabilities sharing one child, a child that asks for roots with no call
// in flight.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

// tsSession is what tests/clients/ts-session.mjs prints.
type tsSession struct {
	OK                  bool     `json:"ok"`
	Failures            []string `json:"failures"`
	SessionID           string   `json:"sessionId"`
	ProtocolVersion     string   `json:"protocolVersion"`
	Tools               []string `json:"tools"`
	SamplingRequests    int      `json:"samplingRequests"`
	RootsRequests       int      `json:"rootsRequests"`
	ElicitationRequests int      `json:"elicitationRequests"`
	Errors              []string `json:"errors"`
	Calls               []struct {
		Name   string `json:"name"`
		Error  string `json:"error"`
		Result struct {
			IsError bool `json:"isError"`
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		} `json:"result"`
	} `json:"calls"`
	raw string
}

// text is the text of call i's result, or its error.
func (s tsSession) text(i int) string {
	if i >= len(s.Calls) {
		return ""
	}
	c := s.Calls[i]
	if c.Error != "" {
		return "error: " + c.Error
	}
	var b strings.Builder
	for _, part := range c.Result.Content {
		b.WriteString(part.Text)
	}
	return b.String()
}

// runTSSession runs tests/clients/ts-session.mjs with Node 24 and fails the
// test when the script fails.
func runTSSession(t *testing.T, url string, args ...string) tsSession {
	t.Helper()
	run := runClientScript(node24(t), "ts-session.mjs", append([]string{url, "--deadline", "60000"}, args...)...)
	s := tsSession{raw: run.last}
	if jerr := json.Unmarshal([]byte(run.last), &s); jerr != nil || run.err != nil || !s.OK {
		t.Fatalf("ts-session %s %v: %v (%v)\nfailures: %v\nstdout: %s\nstderr: %s", url, args, run.err, jerr, s.Failures, run.stdout, run.stderr)
	}
	return s
}

// TestTSClientsThatNeverDelete runs 15 official TypeScript SDK clients in a
// row that, like claude.ai conversations, close without DELETE, against the
// binary with its default session cap (10): every one connects and calls a
// tool; the 5 least recently used sessions are evicted to make room.
func TestTSClientsThatNeverDelete(t *testing.T) {
	p := startBinary(t, fakeDestinations(t, map[string]string{"fake": fakemcp.ModeServer}))
	url := p.base + "/fake/mcp"
	var first string
	for i := range 15 {
		s := runTSSession(t, url, "--label", fmt.Sprint(i), "--no-delete", "--call", `echo {"text":"hi"}`)
		if got := s.text(0); got != "hi" {
			t.Fatalf("client %d: echo answered %q", i, got)
		}
		if i == 0 {
			first = s.SessionID
		}
	}
	m := metricsOf(t, p)
	if got := m[`stelae_sessions{destination="fake"}`]; got != 10 {
		t.Errorf("stelae_sessions = %v, want the cap, 10", got)
	}
	if got := m[`stelae_sessions_evicted_total{destination="fake"}`]; got != 5 {
		t.Errorf("stelae_sessions_evicted_total = %v, want 5", got)
	}
	if got := m[`stelae_initialize_refused_total{destination="fake",reason="session_cap"}`]; got != 0 {
		t.Errorf("refusals = %v, want 0", got)
	}
	// The first client's session was evicted: it gets 404, so a spec client
	// initializes again.
	r, err := request(http.MethodPost, url, first, toolCallBody(`1`, "echo", map[string]string{"text": "x"}))
	if err != nil || r.status != http.StatusNotFound {
		t.Errorf("the evicted session: %v %d %s, want 404", err, r.status, r.body)
	}
}

// TestInspectorRunsThatNeverDelete runs the MCP Inspector CLI 12 times in a
// row against server-everything behind the binary with default flags; each
// run leaves its session open, and runs 11 and 12 must work as well.
func TestInspectorRunsThatNeverDelete(t *testing.T) {
	p := startEverything(t)
	url := p.base + "/everything/mcp"
	for i := range 12 {
		out := runInspector(t, url, "--method", "tools/call", "--tool-name", "echo", "--tool-arg", fmt.Sprintf("message=run%d", i))
		content, _ := out["content"].([]any)
		if len(content) != 1 || content[0].(map[string]any)["text"] != fmt.Sprintf("Echo: run%d", i) {
			t.Fatalf("run %d: %v", i, out)
		}
	}
	m := metricsOf(t, p)
	if got := m[`stelae_sessions_evicted_total{destination="everything"}`]; got != 2 {
		t.Errorf("stelae_sessions_evicted_total = %v, want 2", got)
	}
}

// TestTSClientVersionAndCapabilitiesPerSession: a first client on
// 2024-11-05 without capabilities must not decide what a later client gets.
// The later official TypeScript SDK client (2025-11-25, sampling,
// elicitation) gets its own version, sees server-everything's sampling
// tools and is asked to sample; the first client's own call of a sampling
// tool fails at once instead of reaching a session that never declared
// sampling.
func TestTSClientVersionAndCapabilitiesPerSession(t *testing.T) {
	p := startEverything(t)
	url := p.base + "/everything/mcp"
	old := newClient(t, url)
	r := old.post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"old","version":"1"}}}`)
	if r.status != http.StatusOK || !strings.Contains(string(r.body), `"protocolVersion":"2024-11-05"`) {
		t.Fatalf("old client's initialize: %d %s", r.status, r.body)
	}
	old.sid = r.header.Get("Mcp-Session-Id")
	old.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	s := runTSSession(t, url, "--label", "modern", "--caps", "sampling,elicitation",
		"--call", `trigger-sampling-request {"prompt":"hello","maxTokens":5}`)
	if s.ProtocolVersion != "2025-11-25" {
		t.Errorf("the modern client negotiated %q, want 2025-11-25 (not the first client's 2024-11-05)", s.ProtocolVersion)
	}
	for _, want := range []string{"trigger-sampling-request", "trigger-elicitation-request"} {
		if !strings.Contains(strings.Join(s.Tools, " "), want) {
			t.Errorf("the modern client's tools lack %s: %v", want, s.Tools)
		}
	}
	if s.SamplingRequests != 1 || !strings.Contains(s.text(0), "sampled by modern") {
		t.Errorf("sampling: %d request(s), tool answered %q; want one request answered by this client", s.SamplingRequests, s.text(0))
	}

	// The old client never declared sampling: its call fails fast, with an
	// error from the child, not a 20 s wait or a request it cannot answer.
	start := time.Now()
	r = old.callTool(`5`, "trigger-sampling-request", map[string]any{"prompt": "from old", "maxTokens": 5})
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("the old client's sampling call took %v", el)
	}
	m := decodeAnswer(t, r)
	if r.status != http.StatusOK || (m.Error == nil && !strings.Contains(string(m.Result), `"isError":true`)) {
		t.Errorf("the old client's sampling call: %d %s; want an error", r.status, r.body)
	}
	if !strings.Contains(string(r.body), "sampling") {
		t.Errorf("the error does not say why: %s", r.body)
	}
}

// filesystemBin is the official server-filesystem, pinned in tests/.
func filesystemBin(t *testing.T) string {
	t.Helper()
	everythingBin(t) // installs tests/node_modules on first use
	bin, err := filepath.Abs(filepath.Join("node_modules", ".bin", "mcp-server-filesystem"))
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// TestFilesystemRootsFromConfig: server-filesystem started without
// directories asks for roots/list right after the handshake, when no call
// is in flight. With 'roots:' configured the bridge answers it itself: the
// file-system boundary is the operator's, whatever the client declares.
func TestFilesystemRootsFromConfig(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "note.txt"), []byte("configured root"), 0o600); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(t.TempDir(), "destinations.yaml")
	yaml := fmt.Sprintf("destinations:\n  files:\n    command: %q\n    roots: [%q]\n", filesystemBin(t), dir)
	if err := os.WriteFile(config, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startBinary(t, config)
	// The client declares roots of its own: they must not be used.
	other := t.TempDir()
	s := runTSSession(t, p.base+"/files/mcp", "--caps", "roots", "--root", other,
		"--call", `list_allowed_directories {}`,
		"--call", fmt.Sprintf(`read_text_file {"path":%q}`, filepath.Join(dir, "note.txt")))
	if s.RootsRequests != 0 {
		t.Errorf("the client was asked for roots %d time(s); the bridge should answer from the config", s.RootsRequests)
	}
	if got := s.text(0); !strings.Contains(got, dir) || strings.Contains(got, other) {
		t.Errorf("allowed directories %q; want the configured %s only", got, dir)
	}
	if got := s.text(1); got != "configured root" {
		t.Errorf("read_text_file: %q", got)
	}
}

// TestFilesystemRootsFromTheOnlySession: without 'roots:', the child's
// roots/list goes to the one session that declared roots, although no call
// is in flight.
func TestFilesystemRootsFromTheOnlySession(t *testing.T) {
	config := filepath.Join(t.TempDir(), "destinations.yaml")
	if err := os.WriteFile(config, []byte(fmt.Sprintf("destinations:\n  files:\n    command: %q\n", filesystemBin(t))), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startBinary(t, config)
	dir := t.TempDir()
	s := runTSSession(t, p.base+"/files/mcp", "--caps", "roots", "--root", dir, "--wait-roots", "1",
		"--call", `list_allowed_directories {}`)
	if s.RootsRequests < 1 {
		t.Fatalf("the client was never asked for roots")
	}
	if got := s.text(0); !strings.Contains(got, dir) {
		t.Errorf("allowed directories %q; want the client's root %s", got, dir)
	}
}
