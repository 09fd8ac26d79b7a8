package main

import (
	"bytes"
	"errors"
	"flag"
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
		"MAX_STDIO_CONNECTIONS": "3",
		"AUDIT_LOG_BODIES":      "true",
		"REQUEST_TIMEOUT":       "5s",
		"STELAE_CONFIG":         "/etc/stelae/d.yaml",
		"STELAE_LISTEN":         "127.0.0.1:0",
		"MAX_MESSAGE_SIZE":      "512KiB",
		"MAX_BODY_SIZE":         "6MiB",
		"LOG_LEVEL":             "debug",
		"LOG_FORMAT":            "json",
		"SESSION_TTL":           "1m",
		"KEEPALIVE_INTERVAL":    "5s",
		"CHILD_LINGER":          "3s",
		"STOP_GRACE":            "1s",
		"SHUTDOWN_TIMEOUT":      "4s",
		"RESTART_MAX":           "0",
		"RESTART_DELAY":         "250ms",
		"RESTART_RESET_AFTER":   "1m",
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
		"MAX_STDIO_CONNECTIONS": "3",
		"AUDIT_LOG_BODIES":      "true",
		"REQUEST_TIMEOUT":       "5s",
		"STELAE_LISTEN":         "127.0.0.1:1111",
		"MAX_BODY_SIZE":         "not-a-size", // ignored: the flag is given
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
		{"bad env duration", nil, map[string]string{"REQUEST_TIMEOUT": "30"}, []string{"REQUEST_TIMEOUT"}},
		{"bad env size", nil, map[string]string{"MAX_MESSAGE_SIZE": "ten megs"}, []string{"MAX_MESSAGE_SIZE", "10MiB"}},
		{"zero env size", nil, map[string]string{"MAX_BODY_SIZE": "0"}, []string{"MAX_BODY_SIZE"}},
		{"env sessions zero", nil, map[string]string{"MAX_STDIO_CONNECTIONS": "0"}, []string{"max-sessions"}},
		{"flag sessions zero", []string{"-max-sessions=0"}, nil, []string{"max-sessions"}},
		{"flag sessions negative", []string{"-max-sessions", "-2"}, nil, []string{"max-sessions"}},
		{"bad flag int", []string{"-max-sessions=x"}, nil, []string{"max-sessions"}},
		{"bad flag duration", []string{"-request-timeout=soon"}, nil, []string{"request-timeout"}},
		{"bad flag size", []string{"-max-message-size=abc"}, nil, []string{"max-message-size"}},
		{"zero timeout", []string{"-request-timeout=0s"}, nil, []string{"durations must be positive"}},
		{"negative stop grace", []string{"-stop-grace=-1s"}, nil, []string{"durations must be positive"}},
		{"negative restarts", []string{"-restart-max=-1"}, nil, []string{"restart-max"}},
		{"bad log format", []string{"-log-format=xml"}, nil, []string{"log-format", "xml"}},
		{"bad log format env", nil, map[string]string{"LOG_FORMAT": "yaml"}, []string{"log-format", "yaml"}},
		{"body below 5MiB flag", []string{"-max-body-size=4MiB"}, nil, []string{"max-body-size", "5MiB"}},
		{"body just below 5MiB", []string{"-max-body-size", "5242879"}, nil, []string{"max-body-size"}},
		{"body below 5MiB env", nil, map[string]string{"MAX_BODY_SIZE": "1MiB"}, []string{"max-body-size"}},
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
