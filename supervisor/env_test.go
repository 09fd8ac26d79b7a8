//go:build unix

package supervisor

import (
	"bytes"
	"context"
	"github.com/stelae-bridge/stelae-bridge/config"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// childEnvOf starts d (its command is replaced by `env`, which prints its
// environment) and returns what the child saw.
func childEnvOf(t *testing.T, d *config.Destination, opts ProcessOptions) map[string]string {
	t.Helper()
	d.Command, d.Args = "env", nil
	p := startProcess(t, d, opts)
	env := map[string]string{}
	for {
		line, err := readMessageWithin(t, p, 10*time.Second)
		if err == io.EOF {
			return env
		}
		if err != nil {
			t.Fatalf("reading the child's environment: %v", err)
		}
		k, v, _ := strings.Cut(string(line), "=")
		env[k] = v
	}
}

func readMessageWithin(t *testing.T, p *Process, d time.Duration) ([]byte, error) {
	t.Helper()
	type res struct {
		b   []byte
		err error
	}
	ch := make(chan res, 1)
	go func() {
		b, err := p.ReadMessage()
		ch <- res{b, err}
	}()
	select {
	case r := <-ch:
		return r.b, r.err
	case <-time.After(d):
		t.Fatalf("ReadMessage did not return within %s", d)
	}
	return nil, nil
}

// TestChildEnvironDropsBridgeVariables: with ProcessOptions.Environ nil, a child
// starts from the bridge's environment without any STELAE_* variable,
// MAX_STDIO_CONNECTIONS or AUDIT_LOG_BODIES: the bridge's settings and
// secrets (STELAE_AUTH_TOKENS) never reach it. Ordinary variables do.
func TestChildEnvironDropsBridgeVariables(t *testing.T) {
	t.Setenv("STELAE_AUTH_TOKENS", "secret-token-1,secret-token-2")
	t.Setenv("STELAE_ANYTHING", "x")
	t.Setenv("MAX_STDIO_CONNECTIONS", "4")
	t.Setenv("AUDIT_LOG_BODIES", "true")
	t.Setenv("ORDINARY_VARIABLE", "ordinary value")
	t.Setenv("LOG_LEVEL", "debug") // a child's setting, no longer the bridge's
	env := childEnvOf(t, &config.Destination{}, ProcessOptions{})
	for _, name := range []string{"STELAE_AUTH_TOKENS", "STELAE_ANYTHING", "MAX_STDIO_CONNECTIONS", "AUDIT_LOG_BODIES"} {
		if v, ok := env[name]; ok {
			t.Errorf("the child sees %s=%q; the bridge's own variables must not reach it", name, v)
		}
	}
	if env["ORDINARY_VARIABLE"] != "ordinary value" || env["LOG_LEVEL"] != "debug" {
		t.Errorf("ORDINARY_VARIABLE=%q LOG_LEVEL=%q; the bridge's other variables should reach the child", env["ORDINARY_VARIABLE"], env["LOG_LEVEL"])
	}
	if env["PATH"] != os.Getenv("PATH") {
		t.Errorf("PATH = %q; want the bridge's", env["PATH"])
	}
}

// TestChildEnvironFromOptions: ProcessOptions.Environ replaces the bridge's
// environment as the base, and is stripped of the bridge's variables too.
func TestChildEnvironFromOptions(t *testing.T) {
	t.Setenv("ONLY_IN_PROCESS", "x")
	base := []string{"PATH=" + os.Getenv("PATH"), "FROM_OPTIONS=yes", "STELAE_AUTH_TOKENS=secret", "AUDIT_LOG_BODIES=1", "BRIDGE_FLAG_VAR=v"}
	env := childEnvOf(t, &config.Destination{}, ProcessOptions{Environ: base})
	if env["FROM_OPTIONS"] != "yes" || env["BRIDGE_FLAG_VAR"] != "v" {
		t.Errorf("FROM_OPTIONS=%q BRIDGE_FLAG_VAR=%q; want the entries of ProcessOptions.Environ", env["FROM_OPTIONS"], env["BRIDGE_FLAG_VAR"])
	}
	for _, name := range []string{"ONLY_IN_PROCESS", "STELAE_AUTH_TOKENS", "AUDIT_LOG_BODIES"} {
		if _, ok := env[name]; ok {
			t.Errorf("the child sees %s", name)
		}
	}
	if want := []string{"PATH=" + os.Getenv("PATH"), "FROM_OPTIONS=yes", "STELAE_AUTH_TOKENS=secret", "AUDIT_LOG_BODIES=1", "BRIDGE_FLAG_VAR=v"}; !reflect.DeepEqual(base, want) {
		t.Errorf("Start modified ProcessOptions.Environ: %q", base)
	}
}

// TestChildEnvironMinimal: base_env: minimal keeps PATH, HOME, the locale
// and the like, and drops everything else; the destination's env: is added
// and wins, even for a STELAE_ name (the operator's explicit choice).
func TestChildEnvironMinimal(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("LC_ALL", "C.UTF-8")
	t.Setenv("LC_MESSAGES", "C")
	t.Setenv("TZ", "UTC")
	t.Setenv("ORDINARY_VARIABLE", "from the bridge")
	t.Setenv("OVERRIDDEN", "from the bridge")
	t.Setenv("STELAE_AUTH_TOKENS", "secret")
	env := childEnvOf(t, &config.Destination{
		BaseEnv: config.BaseEnvMinimal,
		Env:     map[string]string{"OVERRIDDEN": "from env:", "EXPLICIT": "yes", "STELAE_FOR_CHILD": "explicit"},
	}, ProcessOptions{})
	want := map[string]string{
		"PATH": os.Getenv("PATH"), "HOME": home, "LC_ALL": "C.UTF-8", "LC_MESSAGES": "C", "TZ": "UTC",
		"OVERRIDDEN": "from env:", "EXPLICIT": "yes", "STELAE_FOR_CHILD": "explicit",
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s = %q; want %q", k, env[k], v)
		}
	}
	for _, name := range []string{"ORDINARY_VARIABLE", "STELAE_AUTH_TOKENS"} {
		if _, ok := env[name]; ok {
			t.Errorf("minimal environment has %s", name)
		}
	}
	for k := range env {
		if _, ok := want[k]; !ok && !strings.HasPrefix(k, "LC_") && !slices.Contains(minimalVars, k) {
			t.Errorf("minimal environment has %s, which is not in the minimal set", k)
		}
	}
}

// TestChildEnvironExplicitEnvWins: with the inherited base too, env: wins
// over the bridge's variable of the same name and may set a STELAE_ one.
func TestChildEnvironExplicitEnvWins(t *testing.T) {
	t.Setenv("OVERRIDDEN", "from the bridge")
	t.Setenv("STELAE_AUTH_TOKENS", "bridge-secret")
	env := childEnvOf(t, &config.Destination{Env: map[string]string{"OVERRIDDEN": "mine", "STELAE_AUTH_TOKENS": "child-token"}}, ProcessOptions{})
	if env["OVERRIDDEN"] != "mine" || env["STELAE_AUTH_TOKENS"] != "child-token" {
		t.Errorf("OVERRIDDEN=%q STELAE_AUTH_TOKENS=%q; want the destination's env: values", env["OVERRIDDEN"], env["STELAE_AUTH_TOKENS"])
	}
}

func TestChildEnviron(t *testing.T) {
	in := []string{"A=1", "STELAE_LISTEN=:1", "STELAE_=x", "MAX_STDIO_CONNECTIONS=3", "AUDIT_LOG_BODIES=1", "stelae_lower=kept", "XSTELAE_Y=kept", "=weird", "NOEQUALS", "B=2=3", "FUTURE_SETTING=1"}
	got := ChildEnviron(in, []string{"MAX_STDIO_CONNECTIONS", "AUDIT_LOG_BODIES", "FUTURE_SETTING"})
	want := []string{"A=1", "stelae_lower=kept", "XSTELAE_Y=kept", "=weird", "NOEQUALS", "B=2=3"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ChildEnviron = %q; want %q", got, want)
	}
	if len(in) != 11 || in[1] != "STELAE_LISTEN=:1" {
		t.Errorf("ChildEnviron modified its input: %q", in)
	}
	// With no list, only STELAE_* goes.
	if got := ChildEnviron([]string{"STELAE_X=1", "AUDIT_LOG_BODIES=1"}, nil); !reflect.DeepEqual(got, []string{"AUDIT_LOG_BODIES=1"}) {
		t.Errorf("ChildEnviron(nil list) = %q", got)
	}
}

func writeScript(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestStartUsesDestinationPATH: a bare command is looked up in the PATH the
// destination's env: gives the child, as -check does.
func TestStartUsesDestinationPATH(t *testing.T) {
	dir := t.TempDir()
	writeScript(t, dir, "stelae-test-tool", `echo "found via env PATH"`)
	p := startProcess(t, &config.Destination{
		Command: "stelae-test-tool",
		Env:     map[string]string{"PATH": dir + string(os.PathListSeparator) + os.Getenv("PATH")},
	}, ProcessOptions{})
	if got := readLine(t, p); got != "found via env PATH" {
		t.Errorf("child printed %q", got)
	}
	if _, err := Start(context.Background(), &config.Destination{Name: "x", Command: "stelae-test-tool", Env: map[string]string{"PATH": "/nonexistent"}}, ProcessOptions{}); err == nil ||
		!strings.Contains(err.Error(), "env: PATH") || !strings.Contains(err.Error(), `"x"`) {
		t.Errorf("Start with a PATH that lacks the command: %v", err)
	}
}

// lockedBuffer is a log sink safe for concurrent use.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestStderrLogLevel: the child's stderr is logged at the destination's
// stderr_log_level (by default: info, see TestStderrLineLevel) with the
// destination named; off logs nothing but still drains the pipe.
func TestStderrLogLevel(t *testing.T) {
	for _, tc := range []struct {
		level, tag string
	}{
		{"", "[INFO] "},
		{"trace", "[TRACE]"},
		{"debug", "[DEBUG]"},
		{"info", "[INFO] "},
		{"warn", "[WARN] "},
		{"error", "[ERROR]"},
		{"off", ""},
	} {
		t.Run("level "+tc.level, func(t *testing.T) {
			logs := &lockedBuffer{}
			log := hclog.New(&hclog.LoggerOptions{Level: hclog.Trace, Output: logs})
			// More than a pipe buffer of stderr before the stdout line: a
			// child whose stderr is not drained would block.
			p := startProcess(t, &config.Destination{
				Name:        "noisy",
				Command:     "sh",
				Args:        []string{"-c", `i=0; while [ $i -lt 2000 ]; do echo "filler line $i of stderr output" >&2; i=$((i+1)); done; echo "the marker line" >&2; echo out`},
				StderrLevel: tc.level,
			}, ProcessOptions{Logger: log})
			if got := readLine(t, p); got != "out" {
				t.Fatalf("stdout = %q", got)
			}
			waitExited(t, p, 10*time.Second)
			select {
			case <-p.stderrDone:
			case <-time.After(10 * time.Second):
				t.Fatal("stderr not read to its end within 10s")
			}
			var marker string
			for _, l := range strings.Split(logs.String(), "\n") {
				if strings.Contains(l, "the marker line") {
					marker = l
				}
			}
			if tc.level == "off" {
				if strings.Contains(logs.String(), "child stderr") {
					t.Errorf("stderr_log_level off still logged stderr:\n%.300s", logs.String())
				}
				return
			}
			if marker == "" {
				t.Fatalf("the marker line was not logged:\n%.500s", logs.String())
			}
			for _, want := range []string{tc.tag, "child stderr", "destination=noisy"} {
				if !strings.Contains(marker, want) {
					t.Errorf("log line %q lacks %q", marker, want)
				}
			}
		})
	}
}

func TestStderrLogLevelValues(t *testing.T) {
	want := map[string]hclog.Level{"": hclog.NoLevel, "trace": hclog.Trace, "debug": hclog.Debug, "info": hclog.Info, "warn": hclog.Warn, "error": hclog.Error, "off": hclog.Off}
	for s, l := range want {
		if got := StderrLogLevel(s); got != l {
			t.Errorf("StderrLogLevel(%q) = %v; want %v", s, got, l)
		}
	}
	for _, s := range config.StderrLevels() {
		if _, ok := want[s]; !ok {
			t.Errorf("stderr_log_level %q has no test", s)
		}
	}
}

// TestStderrLineLevel: without a stderr_log_level a line is logged at warn
// when it reads like a problem, else at info (a clean start of
// server-everything logged 4 of its 19 lines as warnings); a setting
// applies to every line.
func TestStderrLineLevel(t *testing.T) {
	for _, tc := range []struct {
		setting hclog.Level
		line    string
		want    hclog.Level
	}{
		{hclog.NoLevel, "Starting default (STDIO) server...", hclog.Info},
		{hclog.NoLevel, "Secure MCP Filesystem Server running on stdio", hclog.Info},
		{hclog.NoLevel, "Error: ENOENT: no such file or directory", hclog.Warn},
		{hclog.NoLevel, "WARNING: deprecated option", hclog.Warn},
		{hclog.NoLevel, "Traceback (most recent call last):", hclog.Warn},
		{hclog.NoLevel, "npm ERR! code E404", hclog.Warn},
		{hclog.NoLevel, "connection refused", hclog.Warn},
		{hclog.Error, "Starting server", hclog.Error},
		{hclog.Debug, "Error: boom", hclog.Debug},
	} {
		if got := stderrLineLevel(tc.setting, tc.line); got != tc.want {
			t.Errorf("stderrLineLevel(%v, %q) = %v; want %v", tc.setting, tc.line, got, tc.want)
		}
	}
}
