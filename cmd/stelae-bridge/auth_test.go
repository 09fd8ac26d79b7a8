package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
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
