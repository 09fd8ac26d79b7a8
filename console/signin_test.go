package console_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stelae-bridge/stelae-bridge/authserver"
	"github.com/stelae-bridge/stelae-bridge/console"
)

// The console's sign-in with the real built-in authorization server: its
// lockout, and the operator's ways in (an operator token, a trusted
// browser, the unlock code). An external test: console never imports
// authserver; only this test joins them, as the bridge does.

const (
	passphrase    = "a long enough passphrase"
	operatorToken = "operator-token-that-cannot-be-guessed"
	// peerHeader names the address a request stands for (the test's
	// server sets RemoteAddr from it): every real connection here is
	// loopback, the address of a tunnel's every user.
	peerHeader = "X-Test-Peer"
)

// emptyBackend shows nothing; its actions are never taken here.
type emptyBackend struct{ console.Backend }

func (emptyBackend) Destinations() []console.Destination      { return []console.Destination{} }
func (emptyBackend) Profiles() []console.Profile              { return []console.Profile{} }
func (emptyBackend) Clients() ([]console.Client, bool, error) { return []console.Client{}, true, nil }
func (emptyBackend) People() ([]console.Person, bool, error)  { return []console.Person{}, true, nil }

// operatorSite serves the console and the built-in server on one
// loopback origin, as the bridge does.
func operatorSite(t *testing.T) (*httptest.Server, *authserver.Server) {
	t.Helper()
	srv, err := authserver.Open(filepath.Join(t.TempDir(), "oauth.db"), authserver.Options{Passphrase: passphrase,
		Resources: func(string, string) (string, bool) { return "notes", true },
		Clients:   []authserver.Client{{ID: "app", Name: "App", RedirectURIs: []string{"https://app.example/cb"}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	c := console.New(console.Options{Backend: emptyBackend{}, AuthOn: true, Tokens: []string{operatorToken}, Passphrase: srv})
	var ts *httptest.Server
	ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.Header.Get(peerHeader); p != "" {
			r.RemoteAddr = p
		}
		if console.Serves(strings.TrimSuffix(r.URL.Path, "/")) {
			c.ServeHTTP(w, r)
			return
		}
		srv.ServeHTTP(w, r.WithContext(authserver.WithBase(r.Context(), ts.URL)))
	}))
	t.Cleanup(ts.Close)
	return ts, srv
}

// browser is one browser: its own cookies, redirects not followed.
type browser struct {
	t    *testing.T
	base string
	c    *http.Client
}

func newBrowser(t *testing.T, base string) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, base: base, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// do sends a request from peer ("" for the connection's own loopback
// address) and returns the status and body.
func (b *browser) do(method, path, peer string, form url.Values) (int, string) {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequestWithContext(context.Background(), method, b.base+path, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if peer != "" {
		req.Header.Set(peerHeader, peer)
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

// signIn posts the console's sign-in form.
func (b *browser) signIn(peer, credential, unlock string) (int, string) {
	form := url.Values{"credential": {credential}}
	if unlock != "" {
		form.Set("unlock", unlock)
	}
	return b.do(http.MethodPost, "/console/login", peer, form)
}

// approve approves the client "app" on the approval page with the
// passphrase, as the operator's browser does.
func (b *browser) approve() {
	b.t.Helper()
	q := url.Values{"response_type": {"code"}, "client_id": {"app"}, "redirect_uri": {"https://app.example/cb"}, "state": {"s"},
		"code_challenge": {strings.Repeat("c", 43)}, "code_challenge_method": {"S256"}, "resource": {"https://bridge.example/notes/mcp"}}.Encode()
	status, page := b.do(http.MethodGet, authserver.PathAuthorize+"?"+q, "", nil)
	_, rest, _ := strings.Cut(page, `name="csrf" value="`)
	csrf, _, _ := strings.Cut(rest, `"`)
	if status != http.StatusOK || csrf == "" {
		b.t.Fatalf("the approval page: %d\n%s", status, page)
	}
	if status, page := b.do(http.MethodPost, authserver.PathAuthorize, "", url.Values{"query": {q}, "csrf": {csrf}, "passphrase": {passphrase}, "decision": {"approve"}}); status != http.StatusFound {
		b.t.Fatalf("the approval: %d\n%s", status, page)
	}
}

// attack makes n wrong sign-ins from peer with a browser of its own.
func attack(t *testing.T, base, peer string, n int) {
	t.Helper()
	a := newBrowser(t, base)
	for i := range n {
		if status, _ := a.signIn(peer, fmt.Sprint("guess ", i), ""); status != http.StatusUnauthorized && status != http.StatusTooManyRequests {
			t.Fatalf("a guess: %d", status)
		}
	}
}

// TestOperatorTokenSignsInDuringAnAttack: guesses from another address
// and from the operator's own (behind a tunnel, everyone's) hold the
// passphrase — a fresh browser's passphrase gets 429 — but an operator
// token, which cannot be guessed, is checked first and signs in from any
// address.
func TestOperatorTokenSignsInDuringAnAttack(t *testing.T) {
	ts, _ := operatorSite(t)
	attack(t, ts.URL, "198.51.100.7:4000", 30)
	attack(t, ts.URL, "", 30)
	if status, _ := newBrowser(t, ts.URL).signIn("203.0.113.5:4000", passphrase, ""); status != http.StatusTooManyRequests {
		t.Fatalf("the passphrase from a fresh browser during the attack: %d, want 429 (the lockout holds)", status)
	}
	for _, peer := range []string{"203.0.113.5:4000", "198.51.100.7:4000", ""} {
		status, page := newBrowser(t, ts.URL).signIn(peer, operatorToken, "")
		if status != http.StatusSeeOther {
			t.Errorf("the operator token from %q during the attack: %d, want 303\n%s", peer, status, page)
		}
	}
}

// TestTrustedBrowserSignsInDuringAnAttack: a browser that approved a
// client on the approval page, and one that signed in to the console
// with the passphrase, are trusted browsers: their passphrase signs in
// to the console while guesses from their own address hold everyone
// else's (who is offered the unlock-code field).
func TestTrustedBrowserSignsInDuringAnAttack(t *testing.T) {
	ts, _ := operatorSite(t)
	approved := newBrowser(t, ts.URL)
	approved.approve()
	signedIn := newBrowser(t, ts.URL)
	if status, _ := signedIn.signIn("", passphrase, ""); status != http.StatusSeeOther {
		t.Fatalf("the passphrase before any attack: %d", status)
	}
	attack(t, ts.URL, "", 50)
	if status, page := newBrowser(t, ts.URL).signIn("", passphrase, ""); status != http.StatusTooManyRequests || !strings.Contains(page, `name="unlock"`) {
		t.Fatalf("a fresh browser during the attack: %d, want 429 with the unlock-code field\n%s", status, page)
	}
	for name, b := range map[string]*browser{"the browser that approved": approved, "the browser that signed in before": signedIn} {
		if status, page := b.signIn("", passphrase, ""); status != http.StatusSeeOther {
			t.Errorf("%s, during the attack: %d, want 303\n%s", name, status, page)
		}
	}
}

// TestUnlockCodeOnTheConsole: 'auth unlock”s one-time code gets a
// browser that was never trusted through the lockout on the console's
// sign-in, as on the approval page: a wrong code is held, a typo with
// the code asks again, the passphrase with it signs in and trusts the
// browser; the code is not accepted twice.
func TestUnlockCodeOnTheConsole(t *testing.T) {
	ts, srv := operatorSite(t)
	attack(t, ts.URL, "", 30)
	code := srv.Unlock()
	attack(t, ts.URL, "", 30) // the attack goes on
	op := newBrowser(t, ts.URL)
	if status, _ := op.signIn("", passphrase, "not the code"); status != http.StatusTooManyRequests {
		t.Errorf("a wrong unlock code: %d, want 429", status)
	}
	if status, page := op.signIn("", "a typo", code); status != http.StatusUnauthorized || !strings.Contains(page, `name="unlock"`) {
		t.Errorf("a typo with the code: %d, want 401 with the unlock-code field again\n%s", status, page)
	}
	if status, page := op.signIn("", passphrase, code); status != http.StatusSeeOther {
		t.Fatalf("the passphrase with the unlock code: %d, want 303\n%s", status, page)
	}
	attack(t, ts.URL, "", 30)
	if status, _ := op.signIn("", passphrase, ""); status != http.StatusSeeOther {
		t.Errorf("the unlocked browser, trusted since, during the attack: %d, want 303", status)
	}
	if status, _ := newBrowser(t, ts.URL).signIn("", passphrase, code); status != http.StatusTooManyRequests {
		t.Errorf("the unlock code used twice: %d, want 429", status)
	}
}
