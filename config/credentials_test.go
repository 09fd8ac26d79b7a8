package config

import (
	"strings"
	"testing"
)

// TestParseCredentials: a user-isolated destination's 'credentials:' block
// (issue 35), and what it refuses, each problem with its line.
func TestParseCredentials(t *testing.T) {
	lookup := func(string) (string, bool) { return "", false }
	good := `destinations:
  github:
    command: cat
    isolation: user
    credentials:
      GITHUB_PERSONAL_ACCESS_TOKEN: {description: "a fine-grained token", pattern: "^github_pat_"}
      GITHUB_HOST: {description: "your GitHub Enterprise host", optional: true}
      NOTE: just a description
`
	cfg, err := Parse("d.yaml", []byte(good), lookup)
	if err != nil {
		t.Fatal(err)
	}
	cs := cfg.Destinations["github"].Credentials
	if len(cs) != 3 || cs[0].Name != "GITHUB_PERSONAL_ACCESS_TOKEN" || cs[0].Pattern == nil || !cs[0].Pattern.MatchString("github_pat_x") ||
		cs[1].Name != "GITHUB_HOST" || !cs[1].Optional || cs[2].Description != "just a description" {
		t.Fatalf("credentials %+v", cs)
	}
	for _, tc := range []struct{ name, block, want string }{
		{"shared destination", "    credentials: {TOKEN: x}\n", "need 'isolation: user'"},
		{"bad name", "    isolation: user\n    credentials: {token: x}\n", "capital letters"},
		{"loader", "    isolation: user\n    credentials: {LD_PRELOAD: x}\n", "change what their child runs"},
		{"interpreter", "    isolation: user\n    credentials: {NODE_OPTIONS: x}\n", "change what their child runs"},
		{"in env too", "    isolation: user\n    env: {TOKEN: a}\n    credentials: {TOKEN: x}\n", "also set in 'env:'"},
		{"bad pattern", "    isolation: user\n    credentials: {TOKEN: {pattern: \"(\"}}\n", "'pattern' must be a regular expression"},
		{"unknown key", "    isolation: user\n    credentials: {TOKEN: {descripton: x}}\n", `did you mean "description"?`},
		{"not a mapping", "    isolation: user\n    credentials: [TOKEN]\n", "'credentials' must map"},
		{"optional not a bool", "    isolation: user\n    credentials: {TOKEN: {optional: maybe}}\n", "'optional' must be true or false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("d.yaml", []byte("destinations:\n  a:\n    command: cat\n"+tc.block), lookup)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "line ") {
				t.Errorf("error %v; want one saying %q with a line", err, tc.want)
			}
		})
	}
}
