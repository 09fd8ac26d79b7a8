package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stelae-bridge/stelae-bridge/config"
	"github.com/stelae-bridge/stelae-bridge/supervisor"
)

// runCmd runs the program with args and an environment, with a deadline so a
// mistake cannot leave a server running.
func runCmd(t *testing.T, args []string, env map[string]string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := run(ctx, args, envList(env), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// envList turns a map into KEY=VALUE entries, as os.Environ gives them.
func envList(vars map[string]string) []string {
	var out []string
	for k, v := range vars {
		out = append(out, k+"="+v)
	}
	return out
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRunVersion(t *testing.T) {
	code, out, errOut := runCmd(t, []string{"-version"}, nil)
	if code != 0 {
		t.Fatalf("exit code %d; stderr %s", code, errOut)
	}
	// A test binary has no commit stamped (tests/TestBuildInfo checks a
	// built one's).
	if want := "stelae-bridge " + version + " ("; !strings.HasPrefix(out, want) || !strings.Contains(out, runtime.Version()) || !strings.HasSuffix(out, ")\n") {
		t.Errorf("stdout = %q; want %q…, the Go version", out, want)
	}
	if version == "" {
		t.Error("version is empty")
	}
}

func TestRunCheckGood(t *testing.T) {
	path := writeFile(t, "good.yaml", `destinations:
  everything:
    command: npx
    args: ["-y", "@modelcontextprotocol/server-everything"]
  files:
    command: ${FILES_CMD}
`)
	code, out, errOut := runCmd(t, []string{"-check", "-config", path}, map[string]string{"FILES_CMD": "mcp-files"})
	if code != 0 {
		t.Fatalf("exit code %d; stderr:\n%s", code, errOut)
	}
	if !strings.Contains(out, "ok") || !strings.Contains(out, path) {
		t.Errorf("stdout = %q; want it to say ok and name the file", out)
	}
	for _, name := range []string{"everything", "files"} {
		if !strings.Contains(out, name) {
			t.Errorf("stdout = %q; want it to list %q", out, name)
		}
	}
	if !strings.Contains(out, "2 destination") {
		t.Errorf("stdout = %q; want the destination count", out)
	}
}

// TestRunCheckListsProfiles: -check lists each profile, its URL and its
// members; a member that does not start (cat answers no handshake) within
// its start timeout is a warning that says its tools are not counted, and
// -check still passes. (tests/TestProfileCollisionsReported counts real
// ones.)
func TestRunCheckListsProfiles(t *testing.T) {
	path := writeFile(t, "profiles.yaml", "destinations:\n  a: {command: cat, start_timeout: 300ms}\n  b: {command: cat, prefix: bb, start_timeout: 300ms}\nprofiles:\n  both: {destinations: [a, b]}\n")
	code, out, errOut := runCmd(t, []string{"-check", "-config", path}, map[string]string{"PATH": os.Getenv("PATH")})
	if code != 0 || !strings.Contains(out, "profile both (/p/both/mcp): [a b], 0 tools") || !strings.Contains(out, `profile "both": its member "a" did not start, so its tools are not counted`) {
		t.Fatalf("-check: code %d, stdout %q, stderr %q", code, out, errOut)
	}
}

func TestRunCheckConfigFromEnv(t *testing.T) {
	path := writeFile(t, "env.yaml", "destinations:\n  a:\n    command: cat\n")
	code, out, errOut := runCmd(t, []string{"-check"}, map[string]string{"STELAE_CONFIG": path})
	if code != 0 || !strings.Contains(out, "ok") {
		t.Fatalf("code %d, stdout %q, stderr %q", code, out, errOut)
	}
}

func TestRunCheckBad(t *testing.T) {
	path := writeFile(t, "bad.yaml", `destinations:
  mcp:
    command: cat
  typo:
    comand: cat
  "a/b":
    command: cat
  nocmd:
    args: [x]
  secret:
    command: cat
    env:
      TOKEN: ${NOT_SET_ANYWHERE}
extra: true
`)
	code, out, errOut := runCmd(t, []string{"-check", "-config", path}, nil)
	if code != 1 {
		t.Fatalf("exit code %d; want 1\nstdout %s\nstderr %s", code, out, errOut)
	}
	if strings.Contains(out, "ok") {
		t.Errorf("stdout claims ok: %q", out)
	}
	// Every problem, each with its line.
	wants := []struct{ line, what string }{
		{"line 2", `"mcp"`},
		{"line 5", `"comand"`},
		{"line 6", `"a/b"`},
		{"line 9", `"nocmd"`},
		{"line 11", "NOT_SET_ANYWHERE"},
		{"line 14", `"extra"`},
	}
	lines := strings.Split(errOut, "\n")
	for _, w := range wants {
		found := false
		for _, l := range lines {
			if strings.Contains(l, w.line+":") && strings.Contains(l, w.what) {
				found = true
			}
		}
		if !found {
			t.Errorf("stderr has no line with %q and %q:\n%s", w.line, w.what, errOut)
		}
	}
	if !strings.Contains(errOut, path) {
		t.Errorf("stderr does not name the file:\n%s", errOut)
	}
	if !strings.Contains(errOut, "6 problem") {
		t.Errorf("stderr does not count 6 problems:\n%s", errOut)
	}
}

func TestRunCheckEmptyVariableCountsAsUnset(t *testing.T) {
	// run treats an empty environment variable as unset.
	path := writeFile(t, "v.yaml", "destinations:\n  a:\n    command: cat\n    args: [\"${EMPTY_VAR}\"]\n")
	code, _, errOut := runCmd(t, []string{"-check", "-config", path}, map[string]string{"EMPTY_VAR": ""})
	if code != 1 || !strings.Contains(errOut, "EMPTY_VAR") {
		t.Errorf("code %d, stderr %q", code, errOut)
	}
}

func TestRunMissingConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope.yaml")
	code, _, errOut := runCmd(t, []string{"-check", "-config", path}, nil)
	if code != 1 {
		t.Errorf("exit code %d; want 1", code)
	}
	for _, w := range []string{path, "-config"} {
		if !strings.Contains(errOut, w) {
			t.Errorf("stderr %q does not mention %q", errOut, w)
		}
	}
}

func TestRunBadFlags(t *testing.T) {
	code, _, errOut := runCmd(t, []string{"-max-sessions=0"}, nil)
	if code != 2 {
		t.Errorf("exit code %d; want 2", code)
	}
	if !strings.Contains(errOut, "max-sessions") {
		t.Errorf("stderr %q does not name the flag", errOut)
	}
	code, _, errOut = runCmd(t, []string{"-version"}, map[string]string{"MAX_STDIO_CONNECTIONS": "many"})
	if code != 2 || !strings.Contains(errOut, "MAX_STDIO_CONNECTIONS") {
		t.Errorf("bad env: code %d, stderr %q", code, errOut)
	}
}

func TestRunBadLogLevel(t *testing.T) {
	path := writeFile(t, "good.yaml", "destinations:\n  a:\n    command: cat\n")
	code, _, errOut := runCmd(t, []string{"-config", path, "-log-level", "loud", "-listen", "127.0.0.1:0"}, nil)
	if code != 2 || !strings.Contains(errOut, "loud") {
		t.Errorf("code %d, stderr %q", code, errOut)
	}
}

func TestRunHelp(t *testing.T) {
	for _, arg := range []string{"-help", "-h", "--help"} {
		code, out, errOut := runCmd(t, []string{arg}, nil)
		if code != 0 {
			t.Errorf("%s: exit code %d; want 0", arg, code)
		}
		// Asked for, help is the output (stdout: it pipes to less);
		// nothing goes to stderr.
		if errOut != "" {
			t.Errorf("%s: stderr %q; want help on stdout only", arg, errOut)
		}
		help := out
		for _, w := range []string{
			"Usage",
			"/{destination}/mcp",
			"-config", "-listen", "-check", "-version",
			"-max-sessions", "MAX_STDIO_CONNECTIONS",
			"-audit-log-bodies", "AUDIT_LOG_BODIES",
			"-audit-log", "(env STELAE_AUDIT_LOG)", "-audit-log-max-size", "-audit-log-keep", "-audit-log-hash",
			"-request-timeout", "(env STELAE_REQUEST_TIMEOUT)",
			"-max-message-size", "(env STELAE_MAX_MESSAGE_SIZE)",
			"-max-body-size", "(env STELAE_MAX_BODY_SIZE)",
			"-stop-grace", "(env STELAE_STOP_GRACE)",
			"-log-level", "(env STELAE_LOG_LEVEL)",
			"-keepalive", "(env STELAE_KEEPALIVE_INTERVAL)",
			"-public-url", "(env STELAE_PUBLIC_URL)",
			"-auth-tokens", "(env STELAE_AUTH_TOKENS)",
			"children never see these variables",
			"bare PORT",
			"127.0.0.1:9090", "destinations.yaml",
		} {
			if !strings.Contains(help, w) {
				t.Errorf("%s: help does not mention %q", arg, w)
			}
		}
		// Every flag listed is documented, and every one but -check, its
		// -probe, -version and the help itself names its environment
		// variable.
		flagLine := regexp.MustCompile(`(?m)^  -([a-z-]+)`)
		flags := flagLine.FindAllStringSubmatchIndex(help, -1)
		fs, _ := newFlagSet(&settings{}, io.Discard)
		all := 0
		fs.VisitAll(func(*flag.Flag) { all++ })
		if len(flags) != all || all < 28 {
			t.Errorf("%s: help lists %d flags; want all %d", arg, len(flags), all)
		}
		for _, env := range bridgeEnvVars() {
			if !strings.Contains(help, "(env "+env+")") {
				t.Errorf("%s: help does not show %s", arg, env)
			}
		}
		for i, m := range flags {
			name := help[m[2]:m[3]]
			end := len(help)
			if i+1 < len(flags) {
				end = flags[i+1][0]
			}
			entry := help[m[0]:end]
			if len(strings.TrimSpace(entry)) <= len(name)+8 {
				t.Errorf("%s: flag -%s has no description: %q", arg, name, entry)
			}
			if name != "check" && name != "probe" && name != "version" && !strings.Contains(entry, "(env ") {
				t.Errorf("%s: flag -%s does not name its environment variable: %q", arg, name, entry)
			}
		}
	}
}

func TestRunServesAndShutsDown(t *testing.T) {
	// The server starts on a loopback port and stops when ctx ends; the
	// banner names each destination's and each profile's URL.
	path := writeFile(t, "good.yaml", "destinations:\n  a:\n    command: cat\n  b:\n    command: cat\nprofiles:\n  all: {destinations: [a, b]}\n")
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"-config", path, "-listen", "127.0.0.1:0", "-shutdown-timeout", "2s"}, nil, &stdout, &stderr)
	}()
	deadline := time.Now().Add(10 * time.Second)
	profileLine := regexp.MustCompile(`(?m)^  profile all \(a, b\): http://127\.0\.0\.1:\d+/p/all/mcp$`)
	for !strings.Contains(stdout.String()+stderr.String(), "/a/mcp") || !profileLine.MatchString(stdout.String()) {
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("no listening message within 10s\nstdout %s\nstderr %s", stdout.String(), stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit code after ctx cancel = %d; want 0\nstderr %s", code, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return within 10s of ctx cancel")
	}
}

func TestRunListenError(t *testing.T) {
	// An address in use: the bridge cannot listen.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	path := writeFile(t, "good.yaml", "destinations:\n  a:\n    command: cat\n")
	code, _, errOut := runCmd(t, []string{"-config", path, "-listen", addr}, nil)
	if code != 1 {
		t.Errorf("exit code %d; want 1", code)
	}
	if !strings.Contains(errOut, addr) || !strings.Contains(errOut, "-listen") {
		t.Errorf("stderr %q does not name the address and the flag", errOut)
	}
	// An address that is no address: a usage error with the form to write.
	code, _, errOut = runCmd(t, []string{"-config", path}, map[string]string{"STELAE_LISTEN": "127.0.0.1:99999"})
	if code != 2 || !strings.Contains(errOut, "STELAE_LISTEN=127.0.0.1:99999") || !strings.Contains(errOut, "HOST:PORT (e.g. 127.0.0.1:9090)") {
		t.Errorf("bad STELAE_LISTEN: code %d, stderr %q", code, errOut)
	}
}

// TestRunBarePortListensOnLoopback: -listen 0 (a bare port) listens on
// 127.0.0.1, not on every interface.
func TestRunBarePortListensOnLoopback(t *testing.T) {
	path := writeFile(t, "good.yaml", "destinations:\n  a:\n    command: cat\n")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"-config", path, "-listen", "0"}, nil, &stdout, &stderr) }()
	listening := regexp.MustCompile(`listening on http://(\S+)`)
	deadline := time.Now().Add(10 * time.Second)
	var m []string
	for m = listening.FindStringSubmatch(stdout.String()); m == nil; m = listening.FindStringSubmatch(stdout.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("no listening line within 10s\nstdout %s\nstderr %s", stdout.String(), stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if host, _, _ := net.SplitHostPort(m[1]); host != "127.0.0.1" {
		t.Errorf("-listen 0 listens on %s; want 127.0.0.1", m[1])
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return within 10s of ctx cancel")
	}
}

// TestRunCheckWarnsMissingCommand: -check warns on stdout, and still exits
// 0, when a command is not found the way the bridge will look for it.
func TestRunCheckWarnsMissingCommand(t *testing.T) {
	bin := t.TempDir()
	tool := filepath.Join(bin, "stelae-test-tool")
	if err := os.WriteFile(tool, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := writeFile(t, "w.yaml", `destinations:
  missing:
    command: stelae-no-such-tool
  on-bridge-path:
    command: stelae-test-tool
  on-own-path:
    command: stelae-test-tool
    env:
      PATH: `+bin+`
  own-path-lacks-it:
    command: sh
    env:
      PATH: /nonexistent
  relative:
    command: ./stelae-test-tool
    cwd: `+bin+`
  relative-missing:
    command: ./nope
    cwd: `+bin+`
  absolute:
    command: `+tool+`
`)
	code, out, errOut := runCmd(t, []string{"-check", "-config", path}, map[string]string{"PATH": "/nonexistent:" + bin})
	if code != 0 {
		t.Fatalf("exit code %d; want 0 (warnings only)\nstdout %s\nstderr %s", code, out, errOut)
	}
	warnings := map[string][]string{
		"missing":           {path + ": line 2: warning:", `"stelae-no-such-tool"`, "the bridge's PATH", "/nonexistent:" + bin, "install it", "absolute path", "add its directory to PATH"},
		"own-path-lacks-it": {"line 10: warning:", `"sh"`, "the destination's 'env: PATH'", "/nonexistent"},
		"relative-missing":  {"line 17: warning:", `"./nope"`, "relative to cwd " + bin, "does not exist"},
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(warnings)+1 {
		t.Errorf("stdout has %d lines; want %d warnings and the ok line:\n%s", len(lines), len(warnings), out)
	}
	for name, wants := range warnings {
		found := false
		for _, l := range lines {
			if strings.Contains(l, `destination "`+name+`"`) {
				found = true
				for _, w := range wants {
					if !strings.Contains(l, w) {
						t.Errorf("warning %q lacks %q", l, w)
					}
				}
			}
		}
		if !found {
			t.Errorf("no warning for %s:\n%s", name, out)
		}
	}
	if last := lines[len(lines)-1]; !strings.Contains(last, "ok, 7 destination(s)") || !strings.Contains(last, "3 warning(s)") {
		t.Errorf("last line %q; want the ok line counting the warnings", last)
	}
	if errOut != "" {
		t.Errorf("stderr %q; want warnings on stdout only", errOut)
	}
}

// TestRunChildEnvironment: run starts children from its environment without
// the bridge's own variables (the flag table's, and any STELAE_*).
func TestRunChildEnvironment(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "child.env")
	path := writeFile(t, "env.yaml", `destinations:
  a:
    command: sh
    args: ["-c", "env > \"$OUT_FILE.tmp\" && mv \"$OUT_FILE.tmp\" \"$OUT_FILE\"; exec cat"]
    prestart: true
    env:
      OUT_FILE: `+out+`
`)
	environ := []string{
		"PATH=" + os.Getenv("PATH"),
		"STELAE_AUTH_TOKENS=secret-token",
		"STELAE_FUTURE_SETTING=x",
		"STELAE_LOG_LEVEL=debug",
		"MAX_STDIO_CONNECTIONS=4",
		"AUDIT_LOG_BODIES=false",
		"LOG_LEVEL=for-the-child",
		"ORDINARY=visible",
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"-config", path, "-listen", "127.0.0.1:0", "-stop-grace", "200ms"}, environ, &stdout, &stderr)
	}()
	var env []byte
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(out)
		if err == nil {
			env = b
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the prestarted child did not write its environment within 10s\nstderr %s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return within 10s of ctx cancel")
	}
	got := map[string]string{}
	for _, l := range strings.Split(string(env), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			got[k] = v
		}
	}
	for _, name := range []string{"STELAE_AUTH_TOKENS", "STELAE_FUTURE_SETTING", "STELAE_LOG_LEVEL", "MAX_STDIO_CONNECTIONS", "AUDIT_LOG_BODIES"} {
		if _, ok := got[name]; ok {
			t.Errorf("the child sees %s", name)
		}
	}
	if got["ORDINARY"] != "visible" || got["LOG_LEVEL"] != "for-the-child" {
		t.Errorf("ORDINARY=%q LOG_LEVEL=%q; want the bridge's ordinary variables passed on", got["ORDINARY"], got["LOG_LEVEL"])
	}
	if strings.Contains(string(env), "secret-token") {
		t.Error("the token's value reached the child")
	}
}

// syncBuffer is a bytes.Buffer safe for one writer and concurrent readers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestShippedConfig: the destinations.yaml the README starts with is valid,
// makes everything the default (served at /mcp), and keeps its env: example
// and its sandbox (best effort: the README's first command works where the
// sandbox cannot be held, saying so).
func TestShippedConfig(t *testing.T) {
	const path = "../../destinations.yaml"
	cfg, err := config.Load(path, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Default != "everything" || len(cfg.Names) != 1 || cfg.Names[0] != "everything" {
		t.Errorf("Default %q, Names %q; want everything as the one destination and the default", cfg.Default, cfg.Names)
	}
	d := cfg.Destinations["everything"]
	if d.Command != "npx" || d.Env["LOG_LEVEL"] != "info" || d.Sandbox == nil || d.Sandbox.Preset != "npx" || !d.Sandbox.BestEffort {
		t.Errorf("everything = %+v", d)
	}
	if code, out, errOut := runCmd(t, []string{"-check", "-config", path}, map[string]string{"PATH": os.Getenv("PATH")}); code != 0 || !strings.Contains(out, "ok") {
		t.Errorf("-check: code %d\n%s%s", code, out, errOut)
	}
}

// TestRunCheckAuth: -check validates 'auth:' blocks (errors exit 1) and
// warns, exiting 0, about an issuer it cannot reach now.
func TestRunCheckAuth(t *testing.T) {
	// A loopback port nothing listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String() + "/realms/mcp"
	ln.Close()
	path := writeFile(t, "a.yaml", "auth:\n  issuer: "+dead+"\n  scopes: [mcp]\ndestinations:\n  a:\n    command: sh\n")
	code, out, errOut := runCmd(t, []string{"-check", "-config", path}, map[string]string{"PATH": os.Getenv("PATH")})
	if code != 0 || !strings.Contains(out, "line 2: warning:") || !strings.Contains(out, dead) || !strings.Contains(out, "503") {
		t.Errorf("unreachable issuer: code %d\n%s%s", code, out, errOut)
	}
	bad := writeFile(t, "b.yaml", "auth:\n  issuer: http://id.example.com\ndestinations:\n  a:\n    command: sh\n")
	code, out, errOut = runCmd(t, []string{"-check", "-config", bad}, map[string]string{"PATH": os.Getenv("PATH")})
	if code != 1 || !strings.Contains(errOut, "must use https") {
		t.Errorf("http issuer: code %d\n%s%s", code, out, errOut)
	}
}

// TestRunCheckLivedInClaudeDesktopFile: a Claude Desktop / Cline file with
// other clients' keys passes -check with a warning for each (it failed on
// the first), and names the URL a name with a space is served at.
func TestRunCheckLivedInClaudeDesktopFile(t *testing.T) {
	path := filepath.Join("..", "..", "config", "testdata", "claude_desktop_lived_in.json")
	code, out, errOut := runCmd(t, []string{"-check", "-config", path}, map[string]string{"PATH": "/nonexistent"})
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{`"globalShortcut"`, `"autoApprove"`, `served as "my-notes"`, `"old-server" is disabled`, "ok, 2 destination(s): [my-notes github]"} {
		if !strings.Contains(out, want) {
			t.Errorf("-check output lacks %q:\n%s", want, out)
		}
	}
}

// TestRunFleet: -check on a fleet file says who serves what; with
// -instance it checks that instance's part; a fleet file without
// -instance is refused (the bridge would run every destination beside
// their owners), and so is an instance the file does not declare.
func TestRunFleet(t *testing.T) {
	path := writeFile(t, "fleet.yaml", "default: a\ndestinations:\n  a: {command: cat}\n  b: {command: cat}\n  s: {command: cat, isolation: session}\ninstances:\n  one: {url: \"http://10.0.0.1:9090\", serves: [a, s]}\n  two: {serves: [b, s]}\n")
	env := map[string]string{"PATH": os.Getenv("PATH")}
	code, out, errOut := runCmd(t, []string{"-check", "-config", path}, env)
	for _, want := range []string{"fleet of 2 instance(s)", "instance one (http://10.0.0.1:9090): destinations [a s]", "instance two: destinations [b s]", "s (isolation: session) runs on one and two", "default a (/mcp) is served by one", "ok, 3 destination(s)"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("-check: code %d, stdout %q (want %q), stderr %q", code, out, want, errOut)
		}
	}
	if code, out, errOut := runCmd(t, []string{"-check", "-config", path, "-instance", "two"}, env); code != 0 || !strings.Contains(out, "ok, 2 destination(s): [b s]") {
		t.Errorf("-check -instance two: code %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, _, errOut := runCmd(t, []string{"-config", path, "-listen", "127.0.0.1:0"}, env); code != 1 || !strings.Contains(errOut, "start each bridge with -instance NAME") {
		t.Errorf("a fleet file without -instance: code %d, stderr %q", code, errOut)
	}
	if code, _, errOut := runCmd(t, []string{"-config", path, "-listen", "127.0.0.1:0", "-instance", "three"}, env); code != 1 || !strings.Contains(errOut, `no instance "three"`) {
		t.Errorf("an undeclared instance: code %d, stderr %q", code, errOut)
	}
	// Without -listen an instance listens at its url's address (it once
	// took the lone bridge's 127.0.0.1:9090): here one's, 10.0.0.1, is
	// not this machine's, and the error says what to do.
	if code, _, errOut := runCmd(t, []string{"-config", path, "-instance", "one"}, env); code != 1 || !strings.Contains(errOut, "10.0.0.1:9090") || !strings.Contains(errOut, "give -listen") {
		t.Errorf("instance one without -listen: code %d, stderr %q; want it to listen at 10.0.0.1:9090, and to say so", code, errOut)
	}
}

// TestRunCheckSandbox: -check says of each destination's sandbox whether
// this system enforces it; one it cannot hold fails the check (the
// destination would never start), unless it is best effort (a warning).
func TestRunCheckSandbox(t *testing.T) {
	_, notHeld := supervisor.CheckSandbox(&config.Destination{Name: "probe", Command: "cat", Sandbox: &config.Sandbox{Processes: 4}})
	enforced := len(notHeld) == 0
	if enforced {
		// What holds each restriction, said per destination.
		data := t.TempDir()
		path := writeFile(t, "whole.yaml", fmt.Sprintf("destinations:\n  boxed:\n    command: cat\n    sandbox: {files: {read: [%q]}, network: none, processes: 32}\n  filtered: {command: cat, sandbox: {network: loopback}}\n", data))
		code, out, errOut := runCmd(t, []string{"-check", "-config", path}, map[string]string{"PATH": os.Getenv("PATH")})
		for _, want := range []string{"destination boxed: sandbox files read [" + data + "], network none, processes 32: enforced here (files by Landlock ABI", "network none by a network namespace", "memory and processes by a cgroup",
			"destination filtered: sandbox network loopback: enforced here (network by an eBPF filter on the child's cgroup (2 addresses))"} {
			if code != 0 || !strings.Contains(out, want) {
				t.Errorf("-check: code %d, stdout %q (want %q), stderr %q", code, out, want, errOut)
			}
		}
		// A path that is not there cannot be granted: the check fails.
		path = writeFile(t, "missing.yaml", "destinations:\n  boxed: {command: cat, sandbox: {files: {write: [/nonexistent/dir]}}}\n")
		if code, out, errOut := runCmd(t, []string{"-check", "-config", path}, map[string]string{"PATH": os.Getenv("PATH")}); code != 1 || !strings.Contains(errOut, "'files' lists /nonexistent/dir, which the bridge cannot open") {
			t.Errorf("-check with a missing path: code %d, stdout %q, stderr %q", code, out, errOut)
		}
	}
	for _, bestEffort := range []bool{false, true} {
		path := writeFile(t, "sandbox.yaml", fmt.Sprintf("destinations:\n  capped:\n    command: cat\n    sandbox: {memory: 256MiB, processes: 32, best_effort: %v}\n  free: {command: cat}\n", bestEffort))
		code, out, errOut := runCmd(t, []string{"-check", "-config", path}, map[string]string{"PATH": os.Getenv("PATH")})
		switch {
		case enforced:
			if code != 0 || !strings.Contains(out, "destination capped: sandbox memory 256MiB, processes 32") || !strings.Contains(out, "enforced here") || strings.Contains(out, "destination free: sandbox") {
				t.Errorf("best_effort %v, cgroups here: code %d, stdout %q, stderr %q", bestEffort, code, out, errOut)
			}
		case bestEffort:
			if code != 0 || !strings.Contains(out, "NOT wholly enforced here") || !strings.Contains(out, "part of its sandbox is not enforced on this system") {
				t.Errorf("best effort, no cgroups here: code %d, stdout %q, stderr %q", code, out, errOut)
			}
		default:
			if code != 1 || !strings.Contains(errOut, `destination "capped": its sandbox (memory 256MiB, processes 32) cannot be enforced on this system`) {
				t.Errorf("no cgroups here: code %d, stdout %q, stderr %q", code, out, errOut)
			}
		}
	}
}

// TestRunDoctorUsage: 'doctor' wants one URL; -help is its usage on
// stdout; a bad URL is a failed check (exit 1), not a crash.
func TestRunDoctorUsage(t *testing.T) {
	if code, out, _ := runCmd(t, []string{"doctor", "-help"}, nil); code != 0 || !strings.Contains(out, "Usage: stelae-bridge doctor") || !strings.Contains(out, "-keepalive-wait") {
		t.Errorf("doctor -help: %d %q", code, out)
	}
	if code, _, errOut := runCmd(t, []string{"doctor"}, nil); code != 2 || !strings.Contains(errOut, "give one URL") {
		t.Errorf("doctor without a URL: %d %q", code, errOut)
	}
	if code, out, _ := runCmd(t, []string{"doctor", "-json", "not a url"}, nil); code != 1 || !strings.Contains(out, `"check": "url"`) || !strings.Contains(out, `"status": "fail"`) {
		t.Errorf("doctor on a bad URL: %d %q", code, out)
	}
}

// TestRunServiceElsewhere: 'service' is the Windows service manager's
// command; elsewhere it says to use the systemd units, exit 2.
func TestRunServiceElsewhere(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the Windows service command itself")
	}
	if code, _, errOut := runCmd(t, []string{"service", "install"}, nil); code != 2 || !strings.Contains(errOut, "systemd") {
		t.Errorf("service elsewhere: %d %q", code, errOut)
	}
}
