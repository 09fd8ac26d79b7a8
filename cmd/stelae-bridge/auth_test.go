package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/stelae-bridge/stelae-bridge/authserver"
)

// registerClient registers a client through the server's DCR endpoint.
func registerClient(t *testing.T, as *authserver.Server) string {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, authserver.PathRegister, strings.NewReader(`{"client_name":"Listed App","redirect_uris":["https://app.example/cb"]}`))
	as.ServeHTTP(rec, req.WithContext(authserver.WithBase(context.Background(), "https://bridge.example")))
	if rec.Code != http.StatusCreated {
		t.Fatalf("register: %d %s", rec.Code, rec.Body)
	}
	i := strings.Index(rec.Body.String(), `"client_id":"`)
	id := rec.Body.String()[i+len(`"client_id":"`):]
	return id[:strings.IndexByte(id, '"')]
}

// TestAuthCommands: 'auth clients' and 'auth revoke' on the database when no
// bridge runs, and through a running bridge's admin socket, which revokes
// at once.
// TestAuthUsage: every wrong use says what was wrong, on stderr with exit
// 2; -help goes to stdout with exit 0.
func TestAuthUsage(t *testing.T) {
	env := map[string]string{"STELAE_STATE_DIR": t.TempDir()}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"auth"}, "which command?"},
		{[]string{"auth", "revokee", "x"}, `unknown command "revokee"`},
		{[]string{"auth", "revoke"}, "takes one CLIENT_ID"},
		{[]string{"auth", "revoke", "a", "b"}, "takes one CLIENT_ID"},
		{[]string{"auth", "clients", "extra"}, "takes no arguments"},
		{[]string{"auth", "revoke", "x", "-no-such-flag"}, "-no-such-flag"},
	} {
		code, out, errOut := runCmd(t, tc.args, env)
		if code != 2 || !strings.Contains(errOut, tc.want) || out != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2 and %q on stderr", tc.args, code, out, errOut, tc.want)
		}
	}
	for _, args := range [][]string{{"auth", "-help"}, {"auth", "revoke", "-h"}} {
		code, out, errOut := runCmd(t, args, env)
		if code != 0 || !strings.Contains(out, "auth revoke CLIENT_ID") || errOut != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want the usage on stdout", args, code, out, errOut)
		}
	}
	// After --, what looks like a flag is a client id.
	if code, _, errOut := runCmd(t, []string{"auth", "revoke", "--", "-odd"}, env); code != 1 || !strings.Contains(errOut, "no built-in authorization server state") {
		t.Errorf("revoke -- -odd: %d %s", code, errOut)
	}
}

func TestAuthCommands(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"STELAE_STATE_DIR": dir}
	if code, _, errOut := runCmd(t, []string{"auth", "clients"}, env); code != 1 || !strings.Contains(errOut, "no built-in authorization server state") {
		t.Errorf("no state: %d %s", code, errOut)
	}
	if code, _, errOut := runCmd(t, []string{"auth", "unlock"}, env); code != 1 || !strings.Contains(errOut, "no bridge answers") {
		t.Errorf("auth unlock with no bridge: %d %s", code, errOut)
	}
	as, err := authserver.Open(filepath.Join(dir, "oauth.db"), authserver.Options{Passphrase: "a long enough passphrase"})
	if err != nil {
		t.Fatal(err)
	}
	id := registerClient(t, as)
	as.Close()

	code, out, errOut := runCmd(t, []string{"auth", "clients"}, env)
	if code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "Listed App") || !strings.Contains(out, "not approved") {
		t.Errorf("auth clients: %d\n%s%s", code, out, errOut)
	}
	// The flags after the client id, in the order -help prints them.
	if code, out, errOut := runCmd(t, []string{"auth", "revoke", id, "-state-dir", dir}, nil); code != 0 || !strings.Contains(out, "revoked "+id) {
		t.Errorf("auth revoke CLIENT_ID -state-dir DIR: %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := runCmd(t, []string{"auth", "revoke", "dcr_nope"}, env); code != 1 || !strings.Contains(errOut, "unknown client") {
		t.Errorf("revoke of an unknown client: %d %s", code, errOut)
	}

	// With a bridge running, the commands go through its socket.
	as, err = authserver.Open(filepath.Join(dir, "oauth.db"), authserver.Options{Passphrase: "a long enough passphrase"})
	if err != nil {
		t.Fatal(err)
	}
	defer as.Close()
	id2 := registerClient(t, as)
	stop, err := serveAdmin(as, filepath.Join(dir, adminSocket), hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	code, out, errOut = runCmd(t, []string{"auth", "clients"}, env)
	if code != 0 || !strings.Contains(out, id2) || !strings.Contains(out, "revoked") {
		t.Errorf("auth clients through the bridge: %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := runCmd(t, []string{"auth", "revoke", id2}, env); code != 0 {
		t.Fatalf("auth revoke through the bridge: %d %s", code, errOut)
	}
	cs, err := as.Store().Clients()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if c.ID == id2 && !c.Revoked {
			t.Error("the running server did not revoke the client")
		}
	}
	// auth unlock: a one-time code from the running bridge.
	code, out, errOut = runCmd(t, []string{"auth", "unlock"}, env)
	if code != 0 || !strings.Contains(out, "Unlock code (one use, 10 minutes): ") {
		t.Errorf("auth unlock through the bridge: %d\n%s%s", code, out, errOut)
	}
	if code, _, _ := runCmd(t, []string{"auth"}, env); code != 2 {
		t.Errorf("auth without a command: %d", code)
	}
}

// inviteCode is the code of the link 'auth invite' printed.
func inviteCode(t *testing.T, out string) string {
	t.Helper()
	m := regexp.MustCompile(`/oauth/invite\?code=([A-Za-z0-9_-]{43})\n`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no invite link in %q", out)
	}
	return m[1]
}

// acceptInvite sets a secret with an invite code on the running server's
// invite page.
func acceptInvite(t *testing.T, as *authserver.Server, code, secret string) int {
	t.Helper()
	ctx := authserver.WithBase(context.Background(), "https://bridge.example")
	rec := httptest.NewRecorder()
	as.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, authserver.PathInvite+"?code="+code, nil).WithContext(ctx))
	if rec.Code != http.StatusOK {
		return rec.Code
	}
	csrf := rec.Result().Cookies()[0]
	form := url.Values{"code": {code}, "csrf": {csrf.Value}, "secret": {secret}, "confirm": {secret}}
	req := httptest.NewRequest(http.MethodPost, authserver.PathInvite, strings.NewReader(form.Encode())).WithContext(ctx)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.AddCookie(csrf)
	rec = httptest.NewRecorder()
	as.ServeHTTP(rec, req)
	return rec.Code
}

// userLine is the line of 'auth users' naming name ("" when none).
func userLine(out, name string) string {
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == name {
			return l
		}
	}
	return ""
}

// TestAuthUserCommands: 'auth invite|users|disable|enable|remove' on the
// database when no bridge runs, and through a running bridge's admin
// socket, where disable and remove refuse the user at once and call
// OnUserGone; the other users stay as they were.
func TestAuthUserCommands(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"STELAE_STATE_DIR": dir}
	if code, _, errOut := runCmd(t, []string{"auth", "users"}, env); code != 1 || !strings.Contains(errOut, "no built-in authorization server state") {
		t.Errorf("no state: %d %s", code, errOut)
	}
	as, err := authserver.Open(filepath.Join(dir, "oauth.db"), authserver.Options{Passphrase: "a long enough passphrase"})
	if err != nil {
		t.Fatal(err)
	}
	as.Close()

	// No bridge: the database.
	code, out, errOut := runCmd(t, []string{"auth", "invite", "alice"}, env)
	if code != 0 || !strings.Contains(out, "invited alice (subject u_") || !strings.Contains(out, "prefix it with the bridge's public URL") {
		t.Fatalf("auth invite with no bridge: %d\n%s%s", code, out, errOut)
	}
	aliceCode := inviteCode(t, out)
	code, out, _ = runCmd(t, []string{"auth", "invite", "dora", "-public-url", "https://mcp.example.com/"}, env)
	if code != 0 || !strings.Contains(out, "\n  https://mcp.example.com/oauth/invite?code=") {
		t.Errorf("auth invite -public-url: %d\n%s", code, out)
	}
	if code, out, _ := runCmd(t, []string{"auth", "invite", "erin"}, map[string]string{"STELAE_STATE_DIR": dir, "STELAE_PUBLIC_URL": "https://env.example"}); code != 0 || !strings.Contains(out, "https://env.example/oauth/invite?code=") {
		t.Errorf("auth invite with STELAE_PUBLIC_URL: %d\n%s", code, out)
	}
	if code, _, errOut := runCmd(t, []string{"auth", "disable", "dora"}, env); code != 0 {
		t.Errorf("auth disable with no bridge: %d %s", code, errOut)
	}
	code, out, _ = runCmd(t, []string{"auth", "users"}, env)
	if code != 0 || !strings.Contains(userLine(out, "alice"), "invited") || !strings.Contains(userLine(out, "dora"), "invited, disabled") || !strings.Contains(out, "LAST SIGN-IN") {
		t.Errorf("auth users with no bridge: %d\n%s", code, out)
	}
	if code, _, errOut := runCmd(t, []string{"auth", "remove", "erin"}, env); code != 0 || userLine(func() string { _, o, _ := runCmd(t, []string{"auth", "users"}, env); return o }(), "erin") != "" {
		t.Errorf("auth remove with no bridge: %d %s", code, errOut)
	}
	for _, tc := range []struct {
		args []string
		exit int
		want string
	}{
		{[]string{"auth", "disable", "nobody"}, 1, "no such user"},
		{[]string{"auth", "remove", "nobody"}, 1, "no such user"},
		{[]string{"auth", "invite", "no spaces"}, 2, "letters, digits"},
		{[]string{"auth", "invite", "operator"}, 2, "letters, digits"},
		{[]string{"auth", "invite"}, 2, "takes one NAME"},
		{[]string{"auth", "users", "x"}, 2, "takes no arguments"},
	} {
		if code, out, errOut := runCmd(t, tc.args, env); code != tc.exit || !strings.Contains(errOut, tc.want) || out != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want %d and %q", tc.args, code, out, errOut, tc.exit, tc.want)
		}
	}

	// A bridge runs: the commands go through its socket.
	as, err = authserver.Open(filepath.Join(dir, "oauth.db"), authserver.Options{Passphrase: "a long enough passphrase"})
	if err != nil {
		t.Fatal(err)
	}
	defer as.Close()
	var mu sync.Mutex
	var gone []string
	as.OnUserGone(func(s string) { mu.Lock(); gone = append(gone, s); mu.Unlock() })
	stop, err := serveAdmin(as, filepath.Join(dir, adminSocket), hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	// The invite written while no bridge ran works now, once.
	if status := acceptInvite(t, as, aliceCode, "alice's secret 1"); status != http.StatusOK {
		t.Errorf("the invite made with no bridge, on the running one: %d", status)
	}
	if status := acceptInvite(t, as, aliceCode, "alice's secret 2"); status != http.StatusGone {
		t.Errorf("the same invite again: %d, want 410", status)
	}
	code, out, errOut = runCmd(t, []string{"auth", "invite", "carol"}, env)
	if code != 0 {
		t.Fatalf("auth invite through the bridge: %d %s", code, errOut)
	}
	if status := acceptInvite(t, as, inviteCode(t, out), "carol's secret 1"); status != http.StatusOK {
		t.Errorf("the invite made through the bridge: %d", status)
	}
	carol, _ := userByName(t, as, "carol")
	alice, _ := userByName(t, as, "alice")
	code, out, _ = runCmd(t, []string{"auth", "users"}, env)
	if code != 0 || !strings.Contains(userLine(out, "carol"), carol.Subject+" ") || !strings.HasSuffix(userLine(out, "carol"), "active") || !strings.HasSuffix(userLine(out, "alice"), "active") {
		t.Errorf("auth users through the bridge: %d\n%s", code, out)
	}
	if code, out, errOut := runCmd(t, []string{"auth", "disable", "carol"}, env); code != 0 || !strings.Contains(out, "disabled carol (subject "+carol.Subject+")") {
		t.Errorf("auth disable through the bridge: %d %s%s", code, out, errOut)
	}
	if u, _ := userByName(t, as, "carol"); !u.Disabled {
		t.Error("the running server did not disable carol")
	}
	if u, _ := userByName(t, as, "alice"); u.Disabled {
		t.Error("disabling carol disabled alice")
	}
	if code, _, errOut := runCmd(t, []string{"auth", "enable", "carol"}, env); code != 0 {
		t.Errorf("auth enable through the bridge: %d %s", code, errOut)
	}
	if u, _ := userByName(t, as, "carol"); u.Disabled {
		t.Error("the running server did not enable carol")
	}
	if code, _, errOut := runCmd(t, []string{"auth", "remove", "carol"}, env); code != 0 {
		t.Errorf("auth remove through the bridge: %d %s", code, errOut)
	}
	if _, ok := userByName(t, as, "carol"); ok {
		t.Error("the running server did not remove carol")
	}
	if _, ok := as.UserName(carol.Subject); ok {
		t.Error("the running server still knows carol's subject")
	}
	if name, ok := as.UserName(alice.Subject); !ok || name != "alice" {
		t.Errorf("alice after carol's removal: %q %v", name, ok)
	}
	mu.Lock()
	if len(gone) != 2 || gone[0] != carol.Subject || gone[1] != carol.Subject {
		t.Errorf("OnUserGone through the bridge: %q, want carol's subject twice (disable, remove)", gone)
	}
	mu.Unlock()
	if code, _, errOut := runCmd(t, []string{"auth", "disable", "carol"}, env); code != 1 || !strings.Contains(errOut, "no such user") {
		t.Errorf("auth disable of a removed user through the bridge: %d %s", code, errOut)
	}
}

// userByName finds a user of the running server.
func userByName(t *testing.T, as *authserver.Server, name string) (authserver.User, bool) {
	t.Helper()
	us, err := as.Users()
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range us {
		if u.Name == name {
			return u, true
		}
	}
	return authserver.User{}, false
}
