//go:build unix

package tests

// A principal is an HMAC of its token under the install's key (issue 34): the same token is the
// same principal across a restart of one install, and another principal on another install.

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stelae-bridge/stelae-bridge/session"
	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

// TestPrincipalsAreKeyedPerInstall (issue 34): a principal is an HMAC of
// the token under the install's key (principal.key in the state
// directory), not its unsalted SHA-256 — so sessions.db, which keeps each
// session's owner, lets no one test a guessed token offline. The same
// token is the same principal across a restart of one install (its
// session goes on), and another principal on another install.
func TestPrincipalsAreKeyedPerInstall(t *testing.T) {
	token := randomToken(t)
	t.Setenv("STELAE_AUTH_TOKENS", token) // the binaries inherit it
	auth := []string{"Authorization", "Bearer " + token}
	config := fakeDestinations(t, map[string]string{"fake": fakemcp.ModeServer})
	state, addr := t.TempDir(), freeAddr(t)

	a := startBinary(t, config, "-state-dir", state, "-listen", addr)
	c := newClient(t, a.base+"/fake/mcp")
	r := c.post(initBody, auth...)
	if r.status != http.StatusOK {
		t.Fatalf("initialize: %d %s", r.status, r.body)
	}
	c.sid = r.header.Get("Mcp-Session-Id")
	c.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, auth...)
	first := shownPrincipal(t, a, auth)
	stopBinary(t, a)

	// What the file keeps: the keyed principal, never the token's SHA-256
	// in any encoding.
	db, err := os.ReadFile(filepath.Join(state, "sessions.db"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(token))
	asJSON, _ := json.Marshal(session.Principal(sum))
	for name, enc := range map[string][]byte{
		"raw": sum[:], "hex": []byte(hex.EncodeToString(sum[:])), "HEX": []byte(strings.ToUpper(hex.EncodeToString(sum[:]))),
		"base64": []byte(base64.StdEncoding.EncodeToString(sum[:])), "base64url": []byte(base64.RawURLEncoding.EncodeToString(sum[:])),
		"JSON array": asJSON, "first 8 bytes": sum[:8],
	} {
		if bytes.Contains(db, enc) {
			t.Errorf("sessions.db holds the token's unsalted SHA-256 (%s)", name)
		}
	}
	key, err := os.ReadFile(filepath.Join(state, "principal.key"))
	if err != nil {
		t.Fatal(err)
	}
	pk, err := session.NewPrincipalKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if keyed, _ := json.Marshal(pk.Token(token)); !bytes.Contains(db, keyed) {
		t.Error("sessions.db does not hold the keyed principal either: the check above looked for the wrong encoding")
	}
	if st, err := os.Stat(filepath.Join(state, "principal.key")); err != nil || st.Mode().Perm() != 0o600 || st.Size() != 32 {
		t.Errorf("principal.key: %v %v", st.Mode(), err)
	}

	// The same install again: the same principal, so the session goes on.
	b := startBinary(t, config, "-state-dir", state, "-listen", addr)
	resumed := &client{t: t, url: b.base + "/fake/mcp", sid: c.sid}
	resultOK(t, "echo after the restart", resumed.post(toolCallBody(`"after"`, "echo", map[string]string{"text": "after"}), auth...))
	if again := shownPrincipal(t, b, auth); again != first {
		t.Errorf("the token's principal after a restart: %s; before: %s", again, first)
	}

	// Another install: another principal for the same token.
	other := startBinary(t, config)
	o := newClient(t, other.base+"/fake/mcp")
	if r := o.post(initBody, auth...); r.status != http.StatusOK {
		t.Fatalf("initialize on the other install: %d %s", r.status, r.body)
	}
	if p := shownPrincipal(t, other, auth); p == first {
		t.Errorf("two installs show the same principal %s for one token", p)
	}
}

// shownPrincipal is the principal /healthz?verbose shows for the one
// session of p.
func shownPrincipal(t *testing.T, p *binaryProc, auth []string) string {
	t.Helper()
	r := mustRequest(t, http.MethodGet, p.base+"/healthz?verbose", "", "", auth...)
	m := regexp.MustCompile(`"principal":\s*"(u:[0-9a-f]{8})"`).FindAllSubmatch(r.body, -1)
	if r.status != http.StatusOK || len(m) != 1 {
		t.Fatalf("/healthz?verbose: %d %s; want one session with a principal", r.status, r.body)
	}
	return string(m[0][1])
}
