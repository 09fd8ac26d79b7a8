package config

import (
	"slices"
	"strings"
	"testing"
)

func TestAuthBlocks(t *testing.T) {
	src := `auth:
  issuer: https://id.example.com/realms/mcp
  scopes: [mcp, tools.read]
  audiences: [api://bridge]
  allow_subjects: ["user-*", alice]
destinations:
  notes:
    command: cat
  files:
    command: cat
    auth:
      issuer: http://127.0.0.1:9999
  open:
    command: cat
`
	cfg, err := Parse("x.yaml", []byte(src), noEnv, testReserved...)
	if err != nil {
		t.Fatal(err)
	}
	top := cfg.Auth
	if top == nil || top.Issuer != "https://id.example.com/realms/mcp" || !slices.Equal(top.Scopes, []string{"mcp", "tools.read"}) ||
		!slices.Equal(top.Audiences, []string{"api://bridge"}) || top.Line != 2 {
		t.Fatalf("top-level auth: %+v", top)
	}
	if cfg.Destinations["notes"].Auth != top || cfg.Destinations["open"].Auth != top {
		t.Error("destinations without their own block must carry the top-level one")
	}
	if a := cfg.Destinations["files"].Auth; a == nil || a.Issuer != "http://127.0.0.1:9999" || a.Scopes != nil {
		t.Errorf("a destination's own block replaces the top-level one: %+v", a)
	}
	for sub, want := range map[string]bool{"user-1": true, "alice": true, "bob": false, "user": false} {
		if got := top.AllowsSubject(sub); got != want {
			t.Errorf("AllowsSubject(%q) = %v", sub, got)
		}
	}
	if !(&Auth{}).AllowsSubject("anyone") {
		t.Error("no allow_subjects must allow any subject")
	}
}

func TestAuthBlockErrors(t *testing.T) {
	for _, tc := range []struct {
		name, block string
		want        []string
	}{
		{"not a mapping", "auth: yes", []string{"line 1", "'auth' must be a mapping"}},
		{"no issuer", "auth:\n  scopes: [mcp]", []string{"line 2", "'issuer' is missing"}},
		{"http issuer", "auth:\n  issuer: http://id.example.com", []string{"line 2", "must use https", "loopback"}},
		{"relative issuer", "auth:\n  issuer: id.example.com", []string{"not an absolute URL"}},
		{"issuer with a query", "auth:\n  issuer: https://id.example.com/?a=b", []string{"query"}},
		{"unknown key", "auth:\n  issuer: https://id.example.com\n  audience: [x]", []string{"line 3", `unknown key "audience"`, "audiences"}},
		{"scopes not a list", "auth:\n  issuer: https://id.example.com\n  scopes: mcp", []string{"line 3", "list of strings"}},
		{"scope with a space", "auth:\n  issuer: https://id.example.com\n  scopes: [\"a b\"]", []string{"scope \"a b\""}},
		{"bad glob", "auth:\n  issuer: https://id.example.com\n  allow_subjects: [\"[\"]", []string{"glob", "invalid"}},
		{"unset variable", "auth:\n  issuer: ${NOPE}", []string{"${NOPE}", "not set"}},
		{"builtin in another case", "auth:\n  issuer: Builtin", []string{"not an absolute URL"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := tc.block + "\ndestinations:\n  a:\n    command: cat\n"
			_, err := Parse("x.yaml", []byte(src), noEnv, testReserved...)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
	// In a destination, problems name it.
	_, err := Parse("x.yaml", []byte("destinations:\n  a:\n    command: cat\n    auth:\n      issuer: ftp://x\n"), noEnv, testReserved...)
	if err == nil || !strings.Contains(err.Error(), `line 5: destination "a": 'auth': 'issuer'`) {
		t.Errorf("destination auth error: %v", err)
	}
}

func TestBuiltinClients(t *testing.T) {
	src := "auth:\n  issuer: builtin\n  clients:\n    - client_id: my-script\n      client_name: My Script\n      redirect_uris: [\"http://127.0.0.1:8976/cb\"]\ndestinations:\n  a:\n    command: cat\n"
	cfg, err := Parse("x.yaml", []byte(src), noEnv, testReserved...)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Auth.Builtin() || len(cfg.Auth.Clients) != 1 || cfg.Auth.Clients[0].ID != "my-script" || cfg.Auth.Clients[0].RedirectURIs[0] != "http://127.0.0.1:8976/cb" {
		t.Fatalf("%+v", cfg.Auth)
	}
	for name, block := range map[string]string{
		"clients with an external issuer": "auth:\n  issuer: https://id.example.com\n  clients:\n    - client_id: x\n      redirect_uris: [\"https://a/cb\"]",
		"no redirect_uris":                "auth:\n  issuer: builtin\n  clients:\n    - client_id: x",
		"unknown key":                     "auth:\n  issuer: builtin\n  clients:\n    - client_id: x\n      secret: y\n      redirect_uris: [\"https://a/cb\"]",
		"https id":                        "auth:\n  issuer: builtin\n  clients:\n    - client_id: https://a/c.json\n      redirect_uris: [\"https://a/cb\"]",
	} {
		if _, err := Parse("x.yaml", []byte(block+"\ndestinations:\n  a:\n    command: cat\n"), noEnv, testReserved...); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
