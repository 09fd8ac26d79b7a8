//go:build unix

package tests

// A reload that changes only a user-isolated destination's credentials (issue 35) restarts only the
// children whose environment it changes, directly and through a profile, and no one else's.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

// TestUserCredentialsReload (issue 35): a reload that changes only a
// user-isolated destination's 'credentials:' restarts only the children
// whose environment (or missing variables) it changes — through the
// destination and through a profile it is a member of — and leaves every
// other user's child and session, and the shared destination, untouched.
//
// alice and bob have API_TOKEN provisioned, bob also EXTRA; carol has
// nothing (the stand-in). Reload 1 declares EXTRA (optional): bob's child
// restarts with it, alice's and carol's stay. Reload 2 changes API_TOKEN's
// description: no child's environment changes, so alice's and bob's stay;
// carol's stand-in, whose message names the description, is made again.
func TestUserCredentialsReload(t *testing.T) {
	dir := t.TempDir()
	creds := filepath.Join(dir, "credentials")
	if err := os.MkdirAll(filepath.Join(creds, "peruser"), 0o700); err != nil {
		t.Fatal(err)
	}
	for u, content := range map[string]string{"alice": "API_TOKEN=tok-alice\n", "bob": "API_TOKEN=tok-bob\nEXTRA=bob-extra\n"} {
		if err := os.WriteFile(filepath.Join(creds, "peruser", u), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte("alice: rl-token-alice\nbob: rl-token-bob\ncarol: rl-token-carol\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	command, args, env := fakemcp.Command(fakemcp.ModeServer)
	envJSON, _ := json.Marshal(env)
	config := filepath.Join(dir, "destinations.yaml")
	write := func(credentials string) {
		t.Helper()
		yaml := fmt.Sprintf(`destinations:
  shared: {command: %q, args: [%q], env: %s}
  peruser:
    command: %q
    args: [%q]
    env: %s
    isolation: user
    credentials: %s
profiles:
  all: {destinations: [shared, peruser]}
`, command, args[0], envJSON, command, args[0], envJSON, credentials)
		if err := os.WriteFile(config, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`{API_TOKEN: {description: "your token"}}`)
	p := startBinary(t, config, "-auth-tokens-file", tokens, "-credentials-dir", creds)
	url, purl := p.base+"/peruser/mcp", p.base+"/p/all/mcp"

	type user struct {
		name      string
		direct    *client // a session on the destination
		profile   *client // a session on the profile
		pid, ppid int     // their child's pid, directly and in the profile
	}
	users := map[string]*user{}
	getenv := func(c *client, tool string) (string, bool) {
		t.Helper()
		var v struct {
			Value   string `json:"value"`
			IsError bool   `json:"isError"`
		}
		res := resultOK(t, tool, c.callTool(`"e"`, tool, map[string]string{"name": "EXTRA"}))
		_ = json.Unmarshal(res, &v)
		return v.Value, v.IsError
	}
	pidOf := func(c *client, tool string) int {
		t.Helper()
		var w childWho
		if err := json.Unmarshal(resultOK(t, tool, c.callTool(`"w"`, tool, nil)), &w); err != nil {
			t.Fatal(err)
		}
		return w.PID
	}
	sharedPID := 0
	for _, name := range []string{"alice", "bob", "carol"} {
		u := &user{name: name, direct: authedClient(t, url, "rl-token-"+name), profile: authedClient(t, purl, "rl-token-"+name)}
		u.direct.initialize()
		u.profile.initialize()
		u.profile.post(`{"jsonrpc":"2.0","id":"l","method":"tools/list"}`)
		if name != "carol" {
			u.pid, u.ppid = pidOf(u.direct, "whoami"), pidOf(u.profile, "peruser__whoami")
			if v, _ := getenv(u.direct, "getenv"); v != "" {
				t.Fatalf("%s's child has EXTRA=%q before it is declared", name, v)
			}
		} else if _, isErr := getenv(u.direct, "getenv"); !isErr {
			t.Fatal("carol, with no credentials, reached a child")
		}
		users[name] = u
	}
	shared := authedClient(t, p.base+"/shared/mcp", "rl-token-alice")
	shared.initialize()
	sharedPID = pidOf(shared, "whoami")

	reload := func(n float64) {
		t.Helper()
		if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		key := `stelae_config_reloads_total{result="applied"}`
		waitFor(t, 15*time.Second, fmt.Sprintf("%s = %v", key, n), func() bool {
			return scrapeURL(t, p.base, "Authorization", "Bearer rl-token-alice")[key] >= n
		})
	}
	// ended reports whether c's session was ended by the reload.
	ended := func(c *client, tool string) bool {
		t.Helper()
		r := c.callTool(`"x"`, tool, nil)
		switch r.status {
		case http.StatusOK:
			return false
		case http.StatusNotFound:
			return true
		}
		t.Fatalf("%s after the reload: %d %s", tool, r.status, r.body)
		return false
	}

	// Reload 1: EXTRA declared. bob's environment changes; alice's and
	// carol's (still missing the same) do not.
	write(`{API_TOKEN: {description: "your token"}, EXTRA: {description: "more", optional: true}}`)
	reload(1)
	for _, tc := range []struct {
		name  string
		ended bool
	}{{"alice", false}, {"bob", true}, {"carol", false}} {
		u := users[tc.name]
		if got := ended(u.direct, "whoami"); got != tc.ended {
			t.Errorf("reload 1: %s's session on the destination ended: %v; want %v", tc.name, got, tc.ended)
		}
		if got := ended(u.profile, "peruser__whoami"); got != tc.ended {
			t.Errorf("reload 1: %s's session on the profile ended: %v; want %v", tc.name, got, tc.ended)
		}
	}
	alice := users["alice"]
	if pid := pidOf(alice.direct, "whoami"); pid != alice.pid {
		t.Errorf("alice's child changed in reload 1: %d, was %d", pid, alice.pid)
	}
	if pid := pidOf(alice.profile, "peruser__whoami"); pid != alice.ppid {
		t.Errorf("alice's child in the profile changed in reload 1: %d, was %d", pid, alice.ppid)
	}
	bob := users["bob"]
	bob.direct, bob.profile = authedClient(t, url, "rl-token-bob"), authedClient(t, purl, "rl-token-bob")
	bob.direct.initialize()
	bob.profile.initialize()
	bob.profile.post(`{"jsonrpc":"2.0","id":"l","method":"tools/list"}`)
	if v, _ := getenv(bob.direct, "getenv"); v != "bob-extra" {
		t.Errorf("bob's new child's EXTRA: %q; want his provisioned value", v)
	}
	if v, _ := getenv(bob.profile, "peruser__getenv"); v != "bob-extra" {
		t.Errorf("bob's new child in the profile: EXTRA %q; want his provisioned value", v)
	}
	if pid := pidOf(bob.direct, "whoami"); pid == bob.pid {
		t.Errorf("bob's child was not restarted (pid %d)", pid)
	}
	bob.pid, bob.ppid = pidOf(bob.direct, "whoami"), pidOf(bob.profile, "peruser__whoami")

	// Reload 2: only API_TOKEN's description. No environment changes;
	// carol's stand-in names the description, and is made again.
	write(`{API_TOKEN: {description: "your API token, read scope"}, EXTRA: {description: "more", optional: true}}`)
	reload(2)
	for _, tc := range []struct {
		name  string
		ended bool
	}{{"alice", false}, {"bob", false}, {"carol", true}} {
		if got := ended(users[tc.name].direct, "whoami"); got != tc.ended {
			t.Errorf("reload 2: %s's session on the destination ended: %v; want %v", tc.name, got, tc.ended)
		}
	}
	for _, u := range []*user{alice, bob} {
		if pid := pidOf(u.direct, "whoami"); pid != u.pid {
			t.Errorf("%s's child changed in reload 2: %d, was %d", u.name, pid, u.pid)
		}
	}
	carol := authedClient(t, url, "rl-token-carol")
	carol.initialize()
	if r := carol.callTool(`"e"`, "getenv", map[string]string{"name": "API_TOKEN"}); !strings.Contains(string(r.body), "read scope") {
		t.Errorf("carol's stand-in after reload 2 does not name the new description: %s", r.body)
	}
	// The shared destination's child and session: untouched throughout.
	if pid := pidOf(shared, "whoami"); pid != sharedPID {
		t.Errorf("the shared destination's child changed: %d, was %d", pid, sharedPID)
	}
}
