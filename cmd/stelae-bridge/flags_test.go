package main

import (
	"bytes"
	"errors"
	"flag"
	"github.com/stelae-bridge/stelae-bridge/bridge"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// envMap returns a getenv backed by a map.
func envMap(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func parse(t *testing.T, args []string, env map[string]string) (*settings, error, string) {
	t.Helper()
	var out bytes.Buffer
	s, err := parseSettings(args, envMap(env), &out)
	return s, err, out.String()
}

func mustParse(t *testing.T, args []string, env map[string]string) *settings {
	t.Helper()
	s, err, out := parse(t, args, env)
	if err != nil {
		t.Fatalf("parseSettings(%q, %v): %v\n%s", args, env, err, out)
	}
	return s
}

func TestParseSettingsDefaults(t *testing.T) {
	s := mustParse(t, nil, nil)
	checks := []struct {
		name      string
		got, want any
	}{
		{"listen", s.listen, "127.0.0.1:9090"},
		{"config", s.config, "destinations.yaml"},
		{"maxSessions", s.maxSessions, 10},
		{"requestTimeout", s.requestTimeout, 30 * time.Second},
		{"maxMessage", s.maxMessage, byteSize(10 << 20)},
		{"maxBody", s.maxBody, byteSize(10 << 20)},
		{"auditBodies", s.auditBodies, false},
		{"check", s.check, false},
		{"version", s.version, false},
		{"logLevel", s.logLevel, "info"},
		{"logFormat", s.logFormat, "text"},
		{"sessionTTL", s.sessionTTL, 30 * time.Minute},
		{"keepAlive", s.keepAlive, 15 * time.Second},
		{"linger", s.linger, time.Duration(0)},
		{"stopGrace", s.stopGrace, 2 * time.Second},
		{"shutdownTimeout", s.shutdownTimeout, 10 * time.Second},
		{"restartMax", s.restartMax, 3},
		{"restartDelay", s.restartDelay, 500 * time.Millisecond},
		{"restartStable", s.restartStable, 30 * time.Second},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("default %s = %v; want %v", c.name, c.got, c.want)
		}
	}
	// An environment of empty strings is the same as no environment.
	empty := map[string]string{"MAX_STDIO_CONNECTIONS": "", "AUDIT_LOG_BODIES": "", "STELAE_LISTEN": ""}
	if s2 := mustParse(t, nil, empty); *s2 != *s {
		t.Errorf("empty env values changed the settings: %+v", s2)
	}
}

func TestParseSettingsEnvFallbacks(t *testing.T) {
	env := map[string]string{
		"MAX_STDIO_CONNECTIONS":      "3",
		"AUDIT_LOG_BODIES":           "true",
		"STELAE_REQUEST_TIMEOUT":     "5s",
		"STELAE_CONFIG":              "/etc/stelae/d.yaml",
		"STELAE_LISTEN":              "127.0.0.1:0",
		"STELAE_MAX_MESSAGE_SIZE":    "512KiB",
		"STELAE_MAX_BODY_SIZE":       "6MiB",
		"STELAE_LOG_LEVEL":           "debug",
		"STELAE_LOG_FORMAT":          "json",
		"STELAE_SESSION_TTL":         "1m",
		"STELAE_KEEPALIVE_INTERVAL":  "5s",
		"STELAE_CHILD_LINGER":        "3s",
		"STELAE_STOP_GRACE":          "1s",
		"STELAE_SHUTDOWN_TIMEOUT":    "4s",
		"STELAE_RESTART_MAX":         "0",
		"STELAE_RESTART_DELAY":       "250ms",
		"STELAE_RESTART_RESET_AFTER": "1m",
		"STELAE_RESPONSE_MODE":       "sse",
		"STELAE_EVENT_LOG_SIZE":      "64",
		"STELAE_ALLOWED_HOSTS":       "mcp.example.com",
		"STELAE_ALLOWED_ORIGINS":     "https://app.example.com",
		"STELAE_AUTH_TOKENS_FILE":    "/etc/stelae/tokens",
		"STELAE_AUTH_TOKENS":         "t1,t2",
		"STELAE_PUBLIC_URL":          "https://mcp.example.com",
		"STELAE_TRUST_PROXY_HEADERS": "true",
		"STELAE_AUDIT_LOG":           "/var/log/stelae/audit.jsonl",
		"STELAE_AUDIT_LOG_MAX_SIZE":  "10MiB",
		"STELAE_AUDIT_LOG_KEEP":      "3",
		"STELAE_AUDIT_LOG_HASH":      "true",
	}
	s := mustParse(t, nil, env)
	checks := []struct {
		name      string
		got, want any
	}{
		{"maxSessions", s.maxSessions, 3},
		{"auditBodies", s.auditBodies, true},
		{"requestTimeout", s.requestTimeout, 5 * time.Second},
		{"config", s.config, "/etc/stelae/d.yaml"},
		{"listen", s.listen, "127.0.0.1:0"},
		{"maxMessage", s.maxMessage, byteSize(512 << 10)},
		{"maxBody", s.maxBody, byteSize(6 << 20)},
		{"logLevel", s.logLevel, "debug"},
		{"logFormat", s.logFormat, "json"},
		{"sessionTTL", s.sessionTTL, time.Minute},
		{"keepAlive", s.keepAlive, 5 * time.Second},
		{"linger", s.linger, 3 * time.Second},
		{"stopGrace", s.stopGrace, time.Second},
		{"shutdownTimeout", s.shutdownTimeout, 4 * time.Second},
		{"restartMax", s.restartMax, 0},
		{"restartDelay", s.restartDelay, 250 * time.Millisecond},
		{"restartStable", s.restartStable, time.Minute},
		{"responseMode", s.responseMode, "sse"},
		{"eventLogSize", s.eventLogSize, 64},
		{"allowedHosts", s.allowedHosts, "mcp.example.com"},
		{"allowedOrigins", s.allowedOrigins, "https://app.example.com"},
		{"authTokensFile", s.authTokensFile, "/etc/stelae/tokens"},
		{"authTokens", s.authTokens, "t1,t2"},
		{"publicURL", s.publicURL, "https://mcp.example.com"},
		{"trustProxy", s.trustProxy, true},
		{"auditLog", s.auditLog, "/var/log/stelae/audit.jsonl"},
		{"auditMaxSize", s.auditMaxSize, byteSize(10 << 20)},
		{"auditKeep", s.auditKeep, 3},
		{"auditHash", s.auditHash, true},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s from env = %v; want %v", c.name, c.got, c.want)
		}
	}
	for _, v := range []string{"1", "TRUE", "True", "t"} {
		if s := mustParse(t, nil, map[string]string{"AUDIT_LOG_BODIES": v}); !s.auditBodies {
			t.Errorf("AUDIT_LOG_BODIES=%s did not turn auditing on", v)
		}
	}
	for _, v := range []string{"false", "0", "FALSE"} {
		if s := mustParse(t, nil, map[string]string{"AUDIT_LOG_BODIES": v}); s.auditBodies {
			t.Errorf("AUDIT_LOG_BODIES=%s turned auditing on", v)
		}
	}
}

func TestParseSettingsFlagBeatsEnv(t *testing.T) {
	env := map[string]string{
		"MAX_STDIO_CONNECTIONS":  "3",
		"AUDIT_LOG_BODIES":       "true",
		"STELAE_REQUEST_TIMEOUT": "5s",
		"STELAE_LISTEN":          "127.0.0.1:1111",
		"STELAE_MAX_BODY_SIZE":   "not-a-size", // ignored: the flag is given
	}
	s := mustParse(t, []string{
		"-max-sessions", "7",
		"-audit-log-bodies=false",
		"-request-timeout=9s",
		"-listen", "127.0.0.1:2222",
		"-max-body-size", "8MiB",
	}, env)
	if s.maxSessions != 7 {
		t.Errorf("maxSessions = %d; want the flag's 7", s.maxSessions)
	}
	if s.auditBodies {
		t.Error("auditBodies = true; want the flag's false")
	}
	if s.requestTimeout != 9*time.Second {
		t.Errorf("requestTimeout = %s; want the flag's 9s", s.requestTimeout)
	}
	if s.listen != "127.0.0.1:2222" {
		t.Errorf("listen = %q; want the flag's", s.listen)
	}
	if s.maxBody != 8<<20 {
		t.Errorf("maxBody = %d", s.maxBody)
	}
	// A flag given with its default value still beats the environment.
	s = mustParse(t, []string{"-max-sessions=10"}, map[string]string{"MAX_STDIO_CONNECTIONS": "3"})
	if s.maxSessions != 10 {
		t.Errorf("-max-sessions=10 with MAX_STDIO_CONNECTIONS=3 gave %d", s.maxSessions)
	}
}

func TestParseSettingsErrors(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		env   map[string]string
		wants []string // substrings of the error
	}{
		{"bad env int", nil, map[string]string{"MAX_STDIO_CONNECTIONS": "lots"}, []string{"MAX_STDIO_CONNECTIONS", "lots"}},
		{"bad env bool", nil, map[string]string{"AUDIT_LOG_BODIES": "yes please"}, []string{"AUDIT_LOG_BODIES"}},
		{"bad env duration", nil, map[string]string{"STELAE_REQUEST_TIMEOUT": "30"}, []string{"STELAE_REQUEST_TIMEOUT=30: invalid value for -request-timeout"}},
		{"bad env size", nil, map[string]string{"STELAE_MAX_MESSAGE_SIZE": "ten megs"}, []string{`STELAE_MAX_MESSAGE_SIZE="ten megs"`, "-max-message-size", "10MiB"}},
		{"zero env size", nil, map[string]string{"STELAE_MAX_BODY_SIZE": "0"}, []string{"STELAE_MAX_BODY_SIZE=0"}},
		{"env sessions zero", nil, map[string]string{"MAX_STDIO_CONNECTIONS": "0"}, []string{"MAX_STDIO_CONNECTIONS=0: -max-sessions must be at least 1"}},
		{"flag sessions zero", []string{"-max-sessions=0"}, nil, []string{"max-sessions"}},
		{"flag sessions negative", []string{"-max-sessions", "-2"}, nil, []string{"max-sessions"}},
		{"bad flag int", []string{"-max-sessions=x"}, nil, []string{"max-sessions"}},
		{"bad flag duration", []string{"-request-timeout=soon"}, nil, []string{"request-timeout"}},
		{"bad flag size", []string{"-max-message-size=abc"}, nil, []string{"max-message-size"}},
		{"zero timeout", []string{"-request-timeout=0s"}, nil, []string{"-request-timeout must be a positive duration such as 30s", "not 0s"}},
		{"negative stop grace", []string{"-stop-grace=-1s"}, nil, []string{"-stop-grace must be a positive duration"}},
		{"zero session ttl env", nil, map[string]string{"STELAE_SESSION_TTL": "0s"}, []string{"STELAE_SESSION_TTL=0s: -session-ttl must be a positive duration"}},
		{"zero keepalive env", nil, map[string]string{"STELAE_KEEPALIVE_INTERVAL": "0s"}, []string{"STELAE_KEEPALIVE_INTERVAL=0s: -keepalive must be a positive duration"}},
		{"zero shutdown timeout env", nil, map[string]string{"STELAE_SHUTDOWN_TIMEOUT": "0s"}, []string{"STELAE_SHUTDOWN_TIMEOUT=0s: -shutdown-timeout"}},
		{"negative linger env", nil, map[string]string{"STELAE_CHILD_LINGER": "-1s"}, []string{"STELAE_CHILD_LINGER=-1s: -child-linger must not be negative"}},
		{"negative restart delay", []string{"-restart-delay=-1s"}, nil, []string{"-restart-delay must not be negative"}},
		{"negative restart reset env", nil, map[string]string{"STELAE_RESTART_RESET_AFTER": "-5s"}, []string{"STELAE_RESTART_RESET_AFTER=-5s: -restart-reset-after must not be negative"}},
		{"negative restarts env", nil, map[string]string{"STELAE_RESTART_MAX": "-1"}, []string{"STELAE_RESTART_MAX=-1: -restart-max must not be negative"}},
		{"bad response mode env", nil, map[string]string{"STELAE_RESPONSE_MODE": "stream"}, []string{`STELAE_RESPONSE_MODE=stream: -response-mode must be auto, json or sse, not "stream"`}},
		{"bad public url env", nil, map[string]string{"STELAE_PUBLIC_URL": "mcp.example.com"}, []string{"STELAE_PUBLIC_URL=mcp.example.com: -public-url must start with http:// or https://"}},
		{"zero event log env", nil, map[string]string{"STELAE_EVENT_LOG_SIZE": "0"}, []string{"STELAE_EVENT_LOG_SIZE=0: -event-log-size must be at least 1"}},
		{"bad log level", []string{"-log-level=loud"}, nil, []string{`-log-level must be trace, debug, info, warn or error, not "loud"`}},
		{"bad log level env", nil, map[string]string{"STELAE_LOG_LEVEL": "verbose"}, []string{`STELAE_LOG_LEVEL=verbose: -log-level must be`}},
		{"bad env bool names the flag", nil, map[string]string{"STELAE_TRUST_PROXY_HEADERS": "sure"}, []string{"STELAE_TRUST_PROXY_HEADERS=sure: invalid value for -trust-proxy-headers"}},
		{"bad listen", []string{"-listen", "localhost"}, nil, []string{"-listen wants HOST:PORT (e.g. 127.0.0.1:9090)", `not "localhost"`}},
		{"bad listen env", nil, map[string]string{"STELAE_LISTEN": "9090x"}, []string{"STELAE_LISTEN=9090x: -listen wants HOST:PORT (e.g. 127.0.0.1:9090)"}},
		{"listen port too big", []string{"-listen", "127.0.0.1:99999"}, nil, []string{"-listen wants HOST:PORT", "0 to 65535"}},
		{"bare port too big", []string{"-listen", "70000"}, nil, []string{"-listen wants HOST:PORT", `"70000"`}},
		{"listen port named", []string{"-listen", "127.0.0.1:http"}, nil, []string{"-listen wants HOST:PORT"}},
		{"listen bare ipv6", []string{"-listen", "::1"}, nil, []string{"-listen wants HOST:PORT"}},
		{"listen empty", []string{"-listen", ""}, nil, []string{"-listen wants HOST:PORT"}},
		{"negative restarts", []string{"-restart-max=-1"}, nil, []string{"restart-max"}},
		{"bad log format", []string{"-log-format=xml"}, nil, []string{"log-format", "xml"}},
		{"bad log format env", nil, map[string]string{"STELAE_LOG_FORMAT": "yaml"}, []string{"STELAE_LOG_FORMAT=yaml: -log-format must be text or json"}},
		{"body below 5MiB flag", []string{"-max-body-size=4MiB"}, nil, []string{"max-body-size", "5MiB"}},
		{"body just below 5MiB", []string{"-max-body-size", "5242879"}, nil, []string{"max-body-size"}},
		{"body below 5MiB env", nil, map[string]string{"STELAE_MAX_BODY_SIZE": "1MiB"}, []string{"STELAE_MAX_BODY_SIZE=1MiB: -max-body-size must be at least 5MiB"}},
		{"audit keep zero", []string{"-audit-log-keep", "0"}, nil, []string{"-audit-log-keep must be at least 1"}},
		{"audit size small env", nil, map[string]string{"STELAE_AUDIT_LOG_MAX_SIZE": "1KiB"}, []string{"STELAE_AUDIT_LOG_MAX_SIZE=1KiB: -audit-log-max-size must be at least 64KiB"}},
		{"unknown flag", []string{"-nope"}, nil, []string{"nope"}},
		{"stray argument", []string{"extra"}, nil, []string{"extra", "-help"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err, _ := parse(t, tc.args, tc.env)
			if err == nil {
				t.Fatalf("parseSettings(%q, %v) = %+v; want an error", tc.args, tc.env, s)
			}
			for _, w := range tc.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// TestParseSettingsFlagErrorsNameNoVariable: a value given as a flag is
// reported as the flag's, without an environment variable.
func TestParseSettingsFlagErrorsNameNoVariable(t *testing.T) {
	for _, args := range [][]string{{"-max-sessions=0"}, {"-log-format=xml"}, {"-listen=nope"}, {"-request-timeout=0s"}} {
		_, err, _ := parse(t, args, map[string]string{"STELAE_LOG_LEVEL": "debug"})
		if err == nil || strings.Contains(err.Error(), "STELAE_") || strings.Contains(err.Error(), "MAX_STDIO") {
			t.Errorf("%q: error %v; want one naming only the flag", args, err)
		}
	}
}

// TestParseSettingsOldNamesIgnored: the generic names the bridge read before
// (LOG_LEVEL, REQUEST_TIMEOUT, ...) belong to children now.
func TestParseSettingsOldNamesIgnored(t *testing.T) {
	old := map[string]string{
		"REQUEST_TIMEOUT": "1s", "MAX_MESSAGE_SIZE": "x", "MAX_BODY_SIZE": "x", "LOG_LEVEL": "nonsense",
		"LOG_FORMAT": "xml", "SESSION_TTL": "x", "KEEPALIVE_INTERVAL": "x", "CHILD_LINGER": "x", "STOP_GRACE": "x",
		"SHUTDOWN_TIMEOUT": "x", "RESTART_MAX": "x", "RESTART_DELAY": "x", "RESTART_RESET_AFTER": "x",
		"RESPONSE_MODE": "x", "EVENT_LOG_SIZE": "x", "ALLOWED_HOSTS": "evil.example", "ALLOWED_ORIGINS": "x",
		"PUBLIC_URL": "x", "TRUST_PROXY_HEADERS": "x",
	}
	s := mustParse(t, nil, old)
	if d := mustParse(t, nil, nil); *s != *d {
		t.Errorf("the old variable names changed the settings: %+v", s)
	}
}

func TestListenAddress(t *testing.T) {
	for in, want := range map[string]string{
		"9090":           "127.0.0.1:9090",
		"0":              "127.0.0.1:0",
		":9090":          ":9090",
		"127.0.0.1:9090": "127.0.0.1:9090",
		"0.0.0.0:80":     "0.0.0.0:80",
		"localhost:8080": "localhost:8080",
		"[::1]:9090":     "[::1]:9090",
		"[::]:9090":      "[::]:9090",
	} {
		s := mustParse(t, []string{"-listen", in}, nil)
		if s.listen != want {
			t.Errorf("-listen %s = %q; want %q", in, s.listen, want)
		}
	}
	if s := mustParse(t, nil, map[string]string{"STELAE_LISTEN": "8181"}); s.listen != "127.0.0.1:8181" {
		t.Errorf("STELAE_LISTEN=8181 gave %q", s.listen)
	}
}

// TestBridgeEnvVars: the list of variables kept from children is the flag
// table's: every flag but -check, its -probe and -version has one, each is STELAE_* or
// one of the two names the specification fixes, and -help shows each.
func TestBridgeEnvVars(t *testing.T) {
	vars := bridgeEnvVars()
	fs, envOf := newFlagSet(&settings{}, io.Discard)
	n := 0
	fs.VisitAll(func(f *flag.Flag) {
		if f.Name == "check" || f.Name == "probe" || f.Name == "version" {
			return
		}
		n++
		if envOf[f.Name] == "" || !strings.HasSuffix(f.Usage, "(env "+envOf[f.Name]+")") {
			t.Errorf("flag -%s: variable %q, usage %q", f.Name, envOf[f.Name], f.Usage)
		}
	})
	if len(vars) != n || n < 25 {
		t.Errorf("bridgeEnvVars has %d names for %d flags: %q", len(vars), n, vars)
	}
	seen := map[string]bool{}
	for _, v := range vars {
		if seen[v] {
			t.Errorf("%s is read by two flags", v)
		}
		seen[v] = true
		if !strings.HasPrefix(v, "STELAE_") && v != "MAX_STDIO_CONNECTIONS" && v != "AUDIT_LOG_BODIES" {
			t.Errorf("%s does not start with STELAE_: children may read it too", v)
		}
	}
	for _, v := range []string{"MAX_STDIO_CONNECTIONS", "AUDIT_LOG_BODIES", "STELAE_AUTH_TOKENS", "STELAE_AUTH_TOKENS_FILE", "STELAE_LOG_LEVEL", "STELAE_PUBLIC_URL", "STELAE_KEEPALIVE_INTERVAL"} {
		if !seen[v] {
			t.Errorf("bridgeEnvVars lacks %s", v)
		}
	}
}

func TestParseSettingsBodySizeBoundary(t *testing.T) {
	s := mustParse(t, []string{"-max-body-size=5MiB"}, nil)
	if s.maxBody != 5<<20 {
		t.Errorf("maxBody = %d; want 5MiB accepted", s.maxBody)
	}
	// The message size has no such floor.
	s = mustParse(t, []string{"-max-message-size=1KiB"}, nil)
	if s.maxMessage != 1<<10 {
		t.Errorf("maxMessage = %d", s.maxMessage)
	}
}

func TestParseSettingsHelp(t *testing.T) {
	_, err, out := parse(t, []string{"-help"}, nil)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-help: err = %v; want flag.ErrHelp", err)
	}
	if !strings.Contains(out, "Usage") {
		t.Errorf("help output lacks a usage line:\n%s", out)
	}
}

func TestByteSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"10MiB", 10 << 20, true},
		{"512KiB", 512 << 10, true},
		{"1048576", 1048576, true},
		{"1GiB", 1 << 30, true},
		{"2MB", 2e6, true},
		{"3KB", 3e3, true},
		{"1GB", 1e9, true},
		{"100B", 100, true},
		{"1", 1, true},
		{" 10MiB ", 10 << 20, true},
		{"10 MiB", 10 << 20, true},
		{"0", 0, false},
		{"0MiB", 0, false},
		{"-1", 0, false},
		{"-5MiB", 0, false},
		{"abc", 0, false},
		{"", 0, false},
		{"MiB", 0, false},
		{"1.5MiB", 0, false},
		{"10XB", 0, false},
		{"10MiBs", 0, false},
		{"0x10", 0, false},
		{"99999999999999999999", 0, false}, // over int64
		{"8589934592GiB", 0, false},        // 2^63 bytes: overflows int64
		{"17179869184GiB", 0, false},       // 2^64 bytes: wraps to 0
		{"9223372036854775807KiB", 0, false},
	}
	for _, tc := range tests {
		var b byteSize = 77
		err := b.Set(tc.in)
		if tc.ok {
			if err != nil {
				t.Errorf("Set(%q): %v", tc.in, err)
			} else if int64(b) != tc.want {
				t.Errorf("Set(%q) = %d; want %d", tc.in, b, tc.want)
			}
			continue
		}
		if err == nil {
			t.Errorf("Set(%q) succeeded with %d; want an error", tc.in, b)
			continue
		}
		if !strings.Contains(err.Error(), "10MiB") {
			t.Errorf("Set(%q) error %q does not show an example", tc.in, err)
		}
	}
	b := byteSize(12345)
	if b.String() != "12345" {
		t.Errorf("String() = %q", b.String())
	}
}

// TestFlagDefaultsAreTheBridges: with no flag and no variable, the options
// the settings give are bridge.Defaults (every tunable one), so the flag
// table, -help and a library user of bridge.New agree; and -help shows each
// size's default once, in the unit it is written in.
func TestFlagDefaultsAreTheBridges(t *testing.T) {
	got, want := mustParse(t, nil, nil).options(), bridge.Defaults()
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"MaxSessions", got.MaxSessions, want.MaxSessions},
		{"RequestTimeout", got.RequestTimeout, want.RequestTimeout},
		{"SessionTTL", got.SessionTTL, want.SessionTTL},
		{"KeepAlive", got.KeepAlive, want.KeepAlive},
		{"ResponseMode", got.ResponseMode, want.ResponseMode},
		{"EventLogSize", got.EventLogSize, want.EventLogSize},
		{"MaxStreamsPerSession", got.MaxStreamsPerSession, want.MaxStreamsPerSession},
		{"MaxStreams", got.MaxStreams, want.MaxStreams},
		{"MaxBodyBytes", got.MaxBodyBytes, want.MaxBodyBytes},
		{"MaxBodyMemory", got.MaxBodyMemory, want.MaxBodyMemory},
		{"BodyTimeout", got.BodyTimeout, want.BodyTimeout},
		{"BodyIdleTimeout", got.BodyIdleTimeout, want.BodyIdleTimeout},
		{"MaxMessage", got.MaxMessage, want.MaxMessage},
		{"StopGrace", got.StopGrace, want.StopGrace},
		{"Restart", got.Restart, want.Restart},
		{"ShutdownTimeout", got.ShutdownTimeout, want.ShutdownTimeout},
		{"DrainTimeout", got.DrainTimeout, want.DrainTimeout},
		{"OAuthSkew", got.OAuthSkew, want.OAuthSkew},
		{"OAuthKeysTTL", got.OAuthKeysTTL, want.OAuthKeysTTL},
		{"OAuthMinRefresh", got.OAuthMinRefresh, want.OAuthMinRefresh},
	} {
		if c.got != c.want {
			t.Errorf("%s: the flags' default %v; bridge.Defaults %v", c.name, c.got, c.want)
		}
	}
	_, _, help := parse(t, []string{"-help"}, nil)
	for _, flagName := range []string{"max-message-size", "max-body-size", "max-body-memory"} {
		i := strings.Index(help, "-"+flagName+" ")
		if i < 0 {
			t.Fatalf("-help lacks -%s", flagName)
		}
		entry := help[i:]
		if j := strings.Index(entry[1:], "\n  -"); j >= 0 {
			entry = entry[:j+1]
		}
		if n := strings.Count(entry, "default"); n != 1 || !strings.Contains(entry, "iB)") {
			t.Errorf("-%s's help says its default %d times, or not in a unit: %q", flagName, n, entry)
		}
	}
}

// TestSystemdCredentials: with $CREDENTIALS_DIRECTORY, the tokens file
// and the passphrase come from the credentials named auth-tokens and
// oauth-passphrase, unless a flag or variable gives them; without the
// directory, or the file, nothing changes.
func TestSystemdCredentials(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"auth-tokens", "oauth-passphrase"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{"CREDENTIALS_DIRECTORY": dir}
	s := mustParse(t, nil, nil)
	systemdCredentials(s, func(k string) string { return env[k] }, os.Stat)
	if s.authTokensFile != filepath.Join(dir, "auth-tokens") || s.passphraseFile != filepath.Join(dir, "oauth-passphrase") {
		t.Errorf("from the credentials: tokens %q, passphrase file %q", s.authTokensFile, s.passphraseFile)
	}
	s = mustParse(t, []string{"-auth-tokens-file", "/etc/t", "-oauth-passphrase", "given"}, nil)
	systemdCredentials(s, func(k string) string { return env[k] }, os.Stat)
	if s.authTokensFile != "/etc/t" || s.passphraseFile != "" {
		t.Errorf("flags given: tokens %q, passphrase file %q", s.authTokensFile, s.passphraseFile)
	}
	s = mustParse(t, nil, nil)
	systemdCredentials(s, func(k string) string { return map[string]string{"CREDENTIALS_DIRECTORY": t.TempDir()}[k] }, os.Stat)
	if s.authTokensFile != "" || s.passphraseFile != "" {
		t.Errorf("an empty credentials directory: tokens %q, passphrase file %q", s.authTokensFile, s.passphraseFile)
	}
}
