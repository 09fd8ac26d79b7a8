//go:build unix

package tests

// The tokens file read again on SIGHUP and with -watch (issue 35): removed tokens are refused and
// their users' children stop, bystanders go on; the console's operator tokens follow the file.

import (
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

// TestTokensFileReload (issue 35): the tokens file is read again on
// SIGHUP (and with -watch when it changes). A removed token is refused
// from then on and its user's children stop at once (their sessions
// end); a named user whose token was replaced keeps their child (the
// user is the name); a bystander's sessions and child, and the shared
// destination's child, are untouched; an invalid or empty file changes
// nothing.
func TestTokensFileReload(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	write := func(content string) {
		t.Helper()
		// A new file renamed over the old, as editors and config tools do.
		tmp := tokens + ".new"
		if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, tokens); err != nil {
			t.Fatal(err)
		}
	}
	write("alice: tr-alice-1\nbob: tr-bob-1\ncarol: tr-carol-1\n")
	config := destinationsFile(t, map[string]string{"peruser": fakemcp.ModeServer, "shared": fakemcp.ModeServer},
		map[string]string{"peruser": "    isolation: user\n"})
	p := startBinary(t, config, "-auth-tokens-file", tokens, "-watch")
	url, sharedURL := p.base+"/peruser/mcp", p.base+"/shared/mcp"
	session := func(u, token string) *client {
		c := authedClient(t, u, token)
		c.initialize()
		return c
	}
	status := func(token string) int {
		r := mustRequest(t, http.MethodPost, url, "", initBody, "Authorization", "Bearer "+token)
		return r.status
	}
	alice, bob, carol := session(url, "tr-alice-1"), session(url, "tr-bob-1"), session(url, "tr-carol-1")
	carolShared := session(sharedURL, "tr-carol-1")
	pidA, pidB, pidC, pidShared := whoamiCall(t, alice).PID, whoamiCall(t, bob).PID, whoamiCall(t, carol).PID, whoamiCall(t, carolShared).PID

	// bob removed, alice's token replaced: SIGHUP.
	write("alice: tr-alice-2\ncarol: tr-carol-1\n")
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "bob's token to be refused", func() bool { return status("tr-bob-1") == http.StatusUnauthorized })
	waitFor(t, 20*time.Second, "bob's child to stop", func() bool { return !alive(pidB) })
	if s := status("tr-alice-1"); s != http.StatusUnauthorized {
		t.Errorf("alice's replaced token: %d; want 401", s)
	}
	if r := bob.callTool(`"b"`, "whoami", nil); r.status != http.StatusUnauthorized {
		t.Errorf("bob's session after his token was removed: %d; want 401", r.status)
	}
	if p := whoamiCall(t, session(url, "tr-alice-2")).PID; p != pidA {
		t.Errorf("alice with her new token reaches child %d; want her child %d (one user: her name)", p, pidA)
	}
	if p := whoamiCall(t, carol).PID; p != pidC {
		t.Errorf("carol's child changed: %d, was %d", p, pidC)
	}
	if p := whoamiCall(t, carolShared).PID; p != pidShared {
		t.Errorf("the shared child changed: %d, was %d", p, pidShared)
	}

	// An invalid file (a name with no token), then an empty one (which
	// would open what the tokens protect): each read (SIGHUP, or -watch
	// first) and refused as invalid; carol, whom they leave out, is still
	// let in.
	reloads := func(result string) float64 {
		return scrapeURL(t, p.base, "Authorization", "Bearer tr-carol-1")[`stelae_tokens_reloads_total{result="`+result+`"}`]
	}
	for i, file := range []string{"alice: tr-alice-2\ndave:\n", "# nobody\n"} {
		before := reloads("invalid")
		write(file)
		if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 20*time.Second, "the tokens file to be refused as invalid", func() bool { return reloads("invalid") > before })
		if s := status("tr-carol-1"); s != http.StatusOK {
			t.Errorf("carol after invalid tokens file %d: %d; want 200 (nothing changed)", i, s)
		}
	}
	// -watch, no signal: dave added.
	write("alice: tr-alice-2\ncarol: tr-carol-1\ndave: tr-dave-1\n")
	waitFor(t, 20*time.Second, "dave's token to be let in (-watch)", func() bool { return status("tr-dave-1") == http.StatusOK })
	if p := whoamiCall(t, carol).PID; p != pidC {
		t.Errorf("carol's child changed after the invalid and empty files: %d, was %d", p, pidC)
	}
}

// TestConsoleOperatorTokens (issue 35): the console's operator tokens are
// the tokens file's lines with a token alone; a named token is a user's,
// and a user is not the operator for having one (alice, given a token to
// run a server as herself, could otherwise end bob's sessions and delete
// his credentials). They follow the file when it is read again: a removed
// operator token opens the console no more, and the browser signed in
// with it is signed out, while the other operator's token and browser,
// and alice's MCP session, go on.
func TestConsoleOperatorTokens(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	write := func(content string) {
		t.Helper()
		if err := os.WriteFile(tokens+".new", []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tokens+".new", tokens); err != nil {
			t.Fatal(err)
		}
	}
	write("ct-operator-1\nct-operator-2\nalice: ct-alice\n")
	config := destinationsFile(t, map[string]string{"fake": fakemcp.ModeServer}, nil)
	p := startBinary(t, config, "-auth-tokens-file", tokens)
	state := func(token string) int {
		return mustRequest(t, http.MethodGet, p.base+"/console/api/state", "", "", "Authorization", "Bearer "+token).status
	}
	// A browser signed in with token: its state request's status.
	browser := func(token string) func() int {
		t.Helper()
		jar, _ := cookiejar.New(nil)
		c := &http.Client{Jar: jar, Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		req, _ := http.NewRequest(http.MethodPost, p.base+"/console/login", strings.NewReader(url.Values{"credential": {token}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", p.base)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("signing in with %s: %d", token, resp.StatusCode)
		}
		return func() int {
			resp, err := c.Get(p.base + "/console/api/state")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}
	}
	alice := authedClient(t, p.base+"/fake/mcp", "ct-alice")
	alice.initialize()
	whoamiCall(t, alice)
	if s := state("ct-alice"); s != http.StatusUnauthorized {
		t.Errorf("the console with alice's named token: %d; want 401 (a user's token)", s)
	}
	one, two := browser("ct-operator-1"), browser("ct-operator-2")
	for _, s := range []int{state("ct-operator-1"), state("ct-operator-2"), one(), two()} {
		if s != http.StatusOK {
			t.Fatalf("the console with an operator token: %d; want 200", s)
		}
	}

	write("ct-operator-2\nct-operator-3\nalice: ct-alice\n")
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "the removed operator token to open the console no more", func() bool { return state("ct-operator-1") == http.StatusUnauthorized })
	if s := one(); s != http.StatusUnauthorized {
		t.Errorf("the browser signed in with the removed token: %d; want 401", s)
	}
	for what, s := range map[string]int{"the other operator's token": state("ct-operator-2"), "the other operator's browser": two(), "the added token": state("ct-operator-3")} {
		if s != http.StatusOK {
			t.Errorf("%s after the reload: %d; want 200", what, s)
		}
	}
	if s := state("ct-alice"); s != http.StatusUnauthorized {
		t.Errorf("the console with alice's named token after the reload: %d; want 401", s)
	}
	if r := alice.callTool(`"after"`, "whoami", nil); r.status != http.StatusOK {
		t.Errorf("alice's session after the reload: %d; want 200", r.status)
	}
}
