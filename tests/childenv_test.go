//go:build unix

package tests

// What a child's environment holds, read through server-everything's get-env tool: none of the
// bridge's own variables or tokens, and with base_env: minimal only PATH, HOME and the
// destination's env:. childEnvironment and randomToken are used by other files too.

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// childEnvironment calls server-everything's get-env tool at url as an
// authenticated client and returns the raw answer and the child's
// environment it reports.
func childEnvironment(t *testing.T, url, token string) (string, map[string]string) {
	t.Helper()
	auth := []string{"Authorization", "Bearer " + token}
	c := newClient(t, url)
	r := c.post(initBody, auth...)
	if r.status != 200 {
		t.Fatalf("initialize with the token: %d %s", r.status, r.body)
	}
	c.sid = r.header.Get("Mcp-Session-Id")
	if r := c.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, auth...); r.status != 202 {
		t.Fatalf("notifications/initialized: %d %s", r.status, r.body)
	}
	r = c.post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get-env","arguments":{}}}`, auth...)
	if r.status != 200 {
		t.Fatalf("get-env: %d %s", r.status, r.body)
	}
	m := decodeAnswer(t, r)
	var result struct {
		Content []struct{ Type, Text string }
		IsError bool
	}
	if err := json.Unmarshal(m.Result, &result); err != nil || len(result.Content) != 1 || result.IsError {
		t.Fatalf("get-env answered %s (%v)", r.body, err)
	}
	env := map[string]string{}
	if err := json.Unmarshal([]byte(result.Content[0].Text), &env); err != nil {
		t.Fatalf("get-env text is not a JSON object of strings: %v\n%.500s", err, result.Content[0].Text)
	}
	return string(r.body), env
}

func randomToken(t *testing.T) string {
	t.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "tok-" + hex.EncodeToString(b)
}

// TestChildEnvNeverSeesBridgeSecrets runs the real binary with bearer tokens
// in STELAE_AUTH_TOKENS and other bridge settings in its environment, in
// front of the official server-everything: its get-env tool, which hands
// the child's whole environment to any client, shows the bridge's ordinary
// variables but none of the bridge's own, and never the token.
func TestChildEnvNeverSeesBridgeSecrets(t *testing.T) {
	bin := everythingBin(t)
	token := randomToken(t)
	// The bridge binary inherits the test's environment.
	t.Setenv("STELAE_AUTH_TOKENS", token)
	t.Setenv("STELAE_SOME_FUTURE_SETTING", "bridge-only")
	t.Setenv("STELAE_LOG_LEVEL", "debug")
	t.Setenv("MAX_STDIO_CONNECTIONS", "7")
	t.Setenv("AUDIT_LOG_BODIES", "false")
	t.Setenv("CHILDENV_ORDINARY", "ordinary-value")
	config := filepath.Join(t.TempDir(), "destinations.yaml")
	if err := os.WriteFile(config, []byte(fmt.Sprintf("destinations:\n  everything:\n    command: %q\n", bin)), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startBinary(t, config)
	defer func() {
		if t.Failed() {
			t.Logf("bridge logs:\n%s", p.logs.String())
		}
	}()
	url := p.base + "/everything/mcp"
	// The token is really in force.
	if r := newClient(t, url).post(initBody); r.status != 401 {
		t.Fatalf("initialize without the token: %d; want 401 (STELAE_AUTH_TOKENS not read?)", r.status)
	}
	raw, env := childEnvironment(t, url, token)
	if strings.Contains(raw, token) {
		t.Errorf("get-env shows the bearer token from STELAE_AUTH_TOKENS to the client")
	}
	for _, name := range []string{"STELAE_AUTH_TOKENS", "STELAE_SOME_FUTURE_SETTING", "STELAE_LOG_LEVEL", "MAX_STDIO_CONNECTIONS", "AUDIT_LOG_BODIES"} {
		if v, ok := env[name]; ok {
			t.Errorf("the child sees the bridge's %s (%d bytes)", name, len(v))
		}
	}
	if env["CHILDENV_ORDINARY"] != "ordinary-value" {
		t.Errorf("CHILDENV_ORDINARY = %q; the bridge's ordinary variables should reach the child", env["CHILDENV_ORDINARY"])
	}
	if env["PATH"] == "" {
		t.Error("the child has no PATH")
	}
}

// TestChildEnvMinimal: with base_env: minimal, server-everything sees PATH
// and HOME but not the bridge's other variables, plus what the destination's
// env: sets, which may even be a STELAE_ name.
func TestChildEnvMinimal(t *testing.T) {
	bin := everythingBin(t)
	token := randomToken(t)
	t.Setenv("STELAE_AUTH_TOKENS", token)
	t.Setenv("CHILDENV_ORDINARY", "ordinary-value")
	home := t.TempDir()
	t.Setenv("HOME", home)
	config := filepath.Join(t.TempDir(), "destinations.yaml")
	src := fmt.Sprintf(`destinations:
  everything:
    command: %q
    base_env: minimal
    env:
      EXPLICIT_FOR_CHILD: "yes"
      STELAE_CHOSEN_BY_OPERATOR: chosen
`, bin)
	if err := os.WriteFile(config, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startBinary(t, config)
	defer func() {
		if t.Failed() {
			t.Logf("bridge logs:\n%s", p.logs.String())
		}
	}()
	raw, env := childEnvironment(t, p.base+"/everything/mcp", token)
	if strings.Contains(raw, token) {
		t.Errorf("get-env shows the bearer token to the client")
	}
	want := map[string]string{"PATH": os.Getenv("PATH"), "HOME": home, "EXPLICIT_FOR_CHILD": "yes", "STELAE_CHOSEN_BY_OPERATOR": "chosen"}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s = %q; want %q", k, env[k], v)
		}
	}
	if _, ok := env["CHILDENV_ORDINARY"]; ok {
		t.Error("base_env: minimal passed CHILDENV_ORDINARY on")
	}
}
