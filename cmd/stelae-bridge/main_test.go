package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// runCmd runs the program with args and an environment, with a deadline so a
// mistake cannot leave a server running.
func runCmd(t *testing.T, args []string, env map[string]string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := run(ctx, args, envMap(env), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
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
	if want := "stelae-bridge " + version + "\n"; out != want {
		t.Errorf("stdout = %q; want %q", out, want)
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
		help := out + errOut
		for _, w := range []string{
			"Usage",
			"/{destination}/mcp",
			"-config", "-listen", "-check", "-version",
			"-max-sessions", "MAX_STDIO_CONNECTIONS",
			"-audit-log-bodies", "AUDIT_LOG_BODIES",
			"-request-timeout", "REQUEST_TIMEOUT",
			"-max-message-size", "MAX_MESSAGE_SIZE",
			"-max-body-size", "MAX_BODY_SIZE",
			"-stop-grace", "STOP_GRACE",
			"-log-level", "LOG_LEVEL",
			"127.0.0.1:9090", "destinations.yaml",
		} {
			if !strings.Contains(help, w) {
				t.Errorf("%s: help does not mention %q", arg, w)
			}
		}
		// Every flag listed is documented, and every one but -check,
		// -version and the help itself names its environment variable.
		flagLine := regexp.MustCompile(`(?m)^  -([a-z-]+)`)
		flags := flagLine.FindAllStringSubmatchIndex(help, -1)
		if len(flags) < 19 {
			t.Errorf("%s: help lists %d flags; want all 19", arg, len(flags))
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
			if name != "check" && name != "version" && !strings.Contains(entry, "(env ") {
				t.Errorf("%s: flag -%s does not name its environment variable: %q", arg, name, entry)
			}
		}
	}
}

func TestRunServesAndShutsDown(t *testing.T) {
	// The server starts on a loopback port and stops when ctx ends.
	path := writeFile(t, "good.yaml", "destinations:\n  a:\n    command: cat\n")
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"-config", path, "-listen", "127.0.0.1:0", "-shutdown-timeout", "2s"}, envMap(nil), &stdout, &stderr)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(stdout.String()+stderr.String(), "/a/mcp") {
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
	path := writeFile(t, "good.yaml", "destinations:\n  a:\n    command: cat\n")
	code, _, errOut := runCmd(t, []string{"-config", path, "-listen", "127.0.0.1:99999"}, nil)
	if code != 1 {
		t.Errorf("exit code %d; want 1", code)
	}
	if !strings.Contains(errOut, "127.0.0.1:99999") || !strings.Contains(errOut, "-listen") {
		t.Errorf("stderr %q does not name the address and the flag", errOut)
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
