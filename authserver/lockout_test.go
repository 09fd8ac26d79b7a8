package authserver

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// approvalForm posts the approval form for the configured client "app" from
// remote with passphrase (and an unlock code when given); cookies are sent
// besides the CSRF cookie (cookie and form value "csrf-1").
func approvalForm(t *testing.T, srv *Server, remote, passphrase string, cookies ...*http.Cookie) *httptest.ResponseRecorder {
	t.Helper()
	return approvalFormUnlock(srv, remote, passphrase, "", cookies...)
}

func approvalFormUnlock(srv *Server, remote, passphrase, unlock string, cookies ...*http.Cookie) *httptest.ResponseRecorder {
	form := url.Values{"query": {authorizeQuery("app", "https://app.example/cb")}, "csrf": {"csrf-1"}, "passphrase": {passphrase}, "decision": {"approve"}}
	if unlock != "" {
		form.Set("unlock", unlock)
	}
	return postForm(srv, PathAuthorize, remote, form, append(cookies, &http.Cookie{Name: csrfCookie, Value: "csrf-1"})...)
}

func lockoutServer(t *testing.T) *Server {
	return openTest(t, Options{Resources: notesOnly, Clients: []Client{{ID: "app", Name: "App", RedirectURIs: []string{"https://app.example/cb"}}}})
}

// TestPassphraseGuessesSpreadOverAddresses: 1,200 wrong guesses from 600
// addresses: every failure is charged to the whole server's budget, so
// only a few are checked before every address waits.
func TestPassphraseGuessesSpreadOverAddresses(t *testing.T) {
	srv := lockoutServer(t)
	checked, refused := 0, 0
	for round := range 2 {
		for i := range 600 {
			rec := approvalForm(t, srv, fmt.Sprintf("10.%d.%d.%d:4000", round, i/250, i%250), "wrong guess")
			switch rec.Code {
			case http.StatusUnauthorized:
				checked++
			case http.StatusTooManyRequests:
				refused++
			default:
				t.Fatalf("guess: %d %s", rec.Code, rec.Body)
			}
		}
	}
	t.Logf("1,200 guesses from 600 addresses: %d checked, %d refused with 429", checked, refused)
	if checked > 25 {
		t.Errorf("1,200 guesses from 600 addresses: %d checked, %d refused with 429; want at most 25 checked", checked, refused)
	}
}

// TestOperatorGetsInDuringAnAttack: behind a tunnel every request comes
// from 127.0.0.1; a browser that approved before keeps its way in however
// many wrong guesses others make.
func TestOperatorGetsInDuringAnAttack(t *testing.T) {
	srv := lockoutServer(t)
	const tunnel = "127.0.0.1:5555"
	ok := approvalForm(t, srv, tunnel, "a long enough passphrase")
	if ok.Code != http.StatusFound {
		t.Fatalf("the operator's first approval: %d", ok.Code)
	}
	cookies := ok.Result().Cookies()
	for range 50 {
		approvalForm(t, srv, tunnel, "wrong guess")
	}
	if rec := approvalForm(t, srv, tunnel, "wrong guess"); rec.Code != http.StatusTooManyRequests {
		t.Fatalf("the attacker after 50 wrong guesses: %d, want 429", rec.Code)
	}
	if rec := approvalForm(t, srv, tunnel, "a long enough passphrase", cookies...); rec.Code != http.StatusFound {
		t.Errorf("the operator's browser during the attack: %d, want a redirect with a code", rec.Code)
	}
}

// TestAuthUnlockLetsTheOperatorIn: a browser that never approved, behind
// the attacker's address: 'auth unlock' prints a one-time code, and the
// form carrying it goes through the lockout (once); the code is not
// accepted again.
func TestAuthUnlockLetsTheOperatorIn(t *testing.T) {
	srv := lockoutServer(t)
	const tunnel = "127.0.0.1:5555"
	for range 30 {
		approvalForm(t, srv, tunnel, "wrong guess")
	}
	rec := approvalForm(t, srv, tunnel, "a long enough passphrase")
	if rec.Code != http.StatusTooManyRequests || !strings.Contains(rec.Body.String(), "auth unlock") {
		t.Fatalf("during the attack: %d, want 429 with the unlock field\n%s", rec.Code, rec.Body)
	}
	code := srv.Unlock()
	for range 30 { // the attack goes on
		approvalForm(t, srv, tunnel, "wrong guess")
	}
	withCode := func(pass, code string) *httptest.ResponseRecorder { return approvalFormUnlock(srv, tunnel, pass, code) }
	if rec := withCode("a long enough passphrase", "not the code"); rec.Code != http.StatusTooManyRequests {
		t.Errorf("a wrong unlock code: %d, want 429", rec.Code)
	}
	if rec := withCode("a typo", code); rec.Code != http.StatusUnauthorized || !strings.Contains(rec.Body.String(), `name="unlock"`) {
		t.Errorf("a typo with the code: %d, want 401 with the unlock field again", rec.Code)
	}
	rec = withCode("a long enough passphrase", code)
	if rec.Code != http.StatusFound {
		t.Fatalf("with the unlock code: %d, want a redirect with a code", rec.Code)
	}
	if len(rec.Result().Cookies()) == 0 {
		t.Errorf("the unlocked browser was not trusted")
	}
	if rec := withCode("a long enough passphrase", code); rec.Code != http.StatusTooManyRequests {
		t.Errorf("the unlock code used twice: %d, want 429", rec.Code)
	}
}
