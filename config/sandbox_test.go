package config

import (
	"strings"
	"testing"
)

// TestSandbox: 'sandbox:' at the top level is every destination's without
// its own; a destination's replaces it ({} restricts nothing); what this
// key it does not know is refused by name, never read and ignored.
func TestSandbox(t *testing.T) {
	cfg, err := Parse("test.yaml", []byte(`
sandbox: {memory: 512MiB, processes: 64}
destinations:
  a: {command: /bin/true}
  b: {command: /bin/true, sandbox: {processes: 8, best_effort: true}}
  c: {command: /bin/true, sandbox: {}}
`), noEnv, testReserved...)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"a": "memory 512MiB, processes 64", "b": "processes 8, best effort", "c": "none"} {
		if got := cfg.Destinations[name].Sandbox.String(); got != want {
			t.Errorf("%s's sandbox: %q; want %q", name, got, want)
		}
	}
	if s := cfg.Destinations["a"].Sandbox; s.Memory != 512<<20 || s.Processes != 64 || s.BestEffort {
		t.Errorf("a's sandbox %+v", s)
	}
	if !cfg.Destinations["c"].Sandbox.Empty() {
		t.Error("{} restricts something")
	}
	for _, tc := range []struct{ src, want string }{
		{"sandbox: {files: {read: [tmp]}}", `'sandbox.files.read' has "tmp": each entry is an absolute path`},
		{"sandbox: {files: {write: [\"${HOME}/x\"]}}", `'sandbox.files.write' has "${HOME}/x"`},
		{"sandbox: {files: {exec: [/bin]}}", `'sandbox.files' has no key "exec"`},
		{"sandbox: {files: [/tmp]}", "'sandbox.files' must be a mapping"},
		{"sandbox: {network: some}", "'sandbox.network' must be none"},
		{"sandbox: {network: [\"127.0.0.1\"]}", `'sandbox.network' has "127.0.0.1": not host:port`},
		{"sandbox: {network: [\"::1:80\"]}", `not host:port (write [::1]:8080`},
		{"sandbox: {network: [\"db:0\"]}", `the port "0" is not a number from 1 to 65535`},
		{"sandbox: {network: [\"a_b:80\"]}", `the host "a_b" is neither an IP address nor a DNS name`},
		{"sandbox: {preset: deno}", "'sandbox.preset' must be one of npx, uvx, binary"},
		{"sandbox: {memory: lots}", "'sandbox.memory' must be a size such as 512MiB"},
		{"sandbox: {memory: 1MiB}", "below 8MiB no server starts"},
		{"sandbox: {processes: 0}", "'sandbox.processes' must be a whole number from 1"},
		{"sandbox: {best_effort: maybe}", "'sandbox.best_effort' must be true"},
		{"sandbox: {memroy: 1GiB}", `'sandbox' has no key "memroy" (did you mean "memory"?)`},
		{"sandbox: strict", "'sandbox' must be a mapping"},
	} {
		for _, where := range []string{"top", "destination"} {
			src := tc.src + "\ndestinations:\n  a: {command: /bin/true}\n"
			if where == "destination" {
				src = "destinations:\n  a:\n    command: /bin/true\n    " + tc.src + "\n"
			}
			_, err := Parse("test.yaml", []byte(src), noEnv, testReserved...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s %q: %v; want a problem with %q", where, tc.src, err, tc.want)
			}
			if where == "destination" && err != nil && !strings.Contains(err.Error(), `destination "a"`) {
				t.Errorf("%q: %v does not name the destination", tc.src, err)
			}
		}
	}
}

// TestSandboxFilesAndNetwork: 'preset:', 'files:' and 'network:' are read
// as written (the supervisor expands ~ and ${roots}); a preset alone
// restricts files; 'network: all' restricts nothing.
func TestSandboxFilesAndNetwork(t *testing.T) {
	cfg, err := Parse("test.yaml", []byte(`
destinations:
  fs:
    command: /bin/true
    roots: [/srv/data]
    sandbox:
      files: {read: [/opt/models, "~/.config/x"], write: ["${roots}"]}
      network: none
  node: {command: /bin/true, sandbox: {preset: npx, network: loopback}}
  api: {command: /bin/true, sandbox: {network: ["127.0.0.1:5432", "[::1]:8080", "api.example.com:443"]}}
  open: {command: /bin/true, sandbox: {network: all}}
`), noEnv, testReserved...)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"fs":   "files read [/opt/models ~/.config/x] write [${roots}], network none",
		"node": "files (preset npx), network loopback",
		"api":  "network [127.0.0.1:5432 [::1]:8080 api.example.com:443]",
		"open": "none",
	} {
		if got := cfg.Destinations[name].Sandbox.String(); got != want {
			t.Errorf("%s's sandbox: %q; want %q", name, got, want)
		}
	}
	if s := cfg.Destinations["node"].Sandbox; s.Files == nil || s.Preset != "npx" || s.Network != NetworkLoopback {
		t.Errorf("node's sandbox %+v", s)
	}
	if s := cfg.Destinations["api"].Sandbox; s.Network != NetworkList || len(s.Allow) != 3 || s.Files != nil {
		t.Errorf("api's sandbox %+v", s)
	}
	if !cfg.Destinations["open"].Sandbox.Empty() {
		t.Errorf("network: all restricts something: %+v", cfg.Destinations["open"].Sandbox)
	}
}

// TestParseSize: the sizes of the flags and of 'sandbox: memory'.
func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"512MiB": 512 << 20, "1GiB": 1 << 30, "10MB": 10e6, "1048576": 1 << 20, " 2 KiB ": 2048, "7B": 7} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "-1MiB", "1.5GiB", "MiB", "9223372036854775807KiB"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) took it", in)
		}
	}
	if FormatSize(512<<20) != "512MiB" || FormatSize(1000) != "1000" {
		t.Errorf("FormatSize: %s, %s", FormatSize(512<<20), FormatSize(1000))
	}
}
