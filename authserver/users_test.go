package authserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"github.com/stelae-bridge/stelae-bridge/lockout"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

const testPassphrase = "a long enough passphrase"

// usersServer is a server with the configured client "app" for the notes
// destination, its database at path (a new one when "").
func usersServer(t *testing.T, path string, log hclog.Logger) *Server {
	t.Helper()
	if path == "" {
		path = filepath.Join(t.TempDir(), "oauth.db")
	}
	srv, err := Open(path, Options{Passphrase: testPassphrase, Resources: notesOnly, Logger: log,
		Clients: []Client{{ID: "app", Name: "App", RedirectURIs: []string{"https://app.example/cb"}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// invitePage opens an invite link; it returns the answer and the form's
// CSRF cookie (nil when none was set).
func invitePage(srv *Server, code string) (*httptest.ResponseRecorder, *http.Cookie) {
	rec := serve(srv, httptest.NewRequest(http.MethodGet, PathInvite+"?code="+url.QueryEscape(code), nil), "192.0.2.50:4000")
	for _, c := range rec.Result().Cookies() {
		if c.Name == csrfCookie {
			return rec, c
		}
	}
	return rec, nil
}

// setSecret posts the invite form with secret and confirm.
func setSecret(srv *Server, code, secret, confirm string, csrf *http.Cookie) *httptest.ResponseRecorder {
	form := url.Values{"code": {code}, "csrf": {"no cookie"}, "secret": {secret}, "confirm": {confirm}}
	var cookies []*http.Cookie
	if csrf != nil {
		form.Set("csrf", csrf.Value)
		cookies = append(cookies, csrf)
	}
	return postForm(srv, PathInvite, "192.0.2.50:4000", form, cookies...)
}

// addUser invites name and sets their secret through the invite page.
func addUser(t *testing.T, srv *Server, name, secret string) User {
	t.Helper()
	code, u, _, err := srv.InviteUser(name)
	if err != nil {
		t.Fatal(err)
	}
	rec, csrf := invitePage(srv, code)
	if rec.Code != http.StatusOK || csrf == nil {
		t.Fatalf("the invite page of %s: %d %s", name, rec.Code, rec.Body)
	}
	if rec := setSecret(srv, code, secret, secret, csrf); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "Your secret is set") {
		t.Fatalf("setting %s's secret: %d %s", name, rec.Code, rec.Body)
	}
	return u
}

// signIn posts the approval form for "app" with name (empty: the
// operator) and secret from remote, with cookies.
func signIn(srv *Server, remote, name, secret string, cookies ...*http.Cookie) *httptest.ResponseRecorder {
	q := url.Values{"response_type": {"code"}, "client_id": {"app"}, "redirect_uri": {"https://app.example/cb"}, "state": {"s"},
		"code_challenge": {testChallenge}, "code_challenge_method": {"S256"}, "resource": {"https://bridge.example/notes/mcp"}}
	form := url.Values{"query": {q.Encode()}, "csrf": {"csrf-1"}, "name": {name}, "passphrase": {secret}, "decision": {"approve"}}
	return postForm(srv, PathAuthorize, remote, form, append(cookies, &http.Cookie{Name: csrfCookie, Value: "csrf-1"})...)
}

var testVerifier = strings.Repeat("v", 43)

var testChallenge = func() string {
	sum := sha256.Sum256([]byte(testVerifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}()

// grant is an access token and a refresh token.
type grant struct{ access, refresh string }

// codeOf is the code of an approval's redirect ("" when it was none).
func codeOf(rec *httptest.ResponseRecorder) string {
	loc, _ := url.Parse(rec.Header().Get("Location"))
	if rec.Code != http.StatusFound || loc == nil {
		return ""
	}
	return loc.Query().Get("code")
}

// tokensFor signs in (name, secret) and exchanges the code.
func tokensFor(t *testing.T, srv *Server, remote, name, secret string) grant {
	t.Helper()
	rec := signIn(srv, remote, name, secret)
	code := codeOf(rec)
	if code == "" {
		t.Fatalf("sign-in of %q: %d %s", name, rec.Code, rec.Body)
	}
	status, out := tokenForm(t, srv, url.Values{"grant_type": {"authorization_code"}, "client_id": {"app"}, "code": {code}, "code_verifier": {testVerifier}})
	if status != http.StatusOK {
		t.Fatalf("code exchange of %q: %d %v", name, status, out)
	}
	return grant{out["access_token"].(string), out["refresh_token"].(string)}
}

// subjectOf verifies an access token and returns its subject ("" when
// refused).
func subjectOf(srv *Server, access string) string {
	c, err := srv.Verifier().Verify(WithBase(context.Background(), "https://bridge.example"), access)
	if err != nil {
		return ""
	}
	return c.Subject
}

// refreshOf rotates g's refresh token: the status, and the new grant.
func refreshOf(t *testing.T, srv *Server, g grant) (int, grant) {
	t.Helper()
	status, out := tokenForm(t, srv, url.Values{"grant_type": {"refresh_token"}, "client_id": {"app"}, "refresh_token": {g.refresh}})
	if status != http.StatusOK {
		return status, grant{}
	}
	return status, grant{out["access_token"].(string), out["refresh_token"].(string)}
}

var subjectPattern = regexp.MustCompile(`^u_[0-9a-f]{32}$`)

// TestUsersSignInAsThemselves: invite → secret → approval page → tokens:
// each user's tokens carry their own subject (also after a refresh), and
// the operator's passphrase still approves as the operator.
func TestUsersSignInAsThemselves(t *testing.T) {
	srv := usersServer(t, "", nil)
	page := func() string {
		return serve(srv, httptest.NewRequest(http.MethodGet, PathAuthorize+"?"+authorizeQuery("app", "https://app.example/cb"), nil), "192.0.2.1:4000").Body.String()
	}
	if strings.Contains(page(), `name="name"`) {
		t.Fatal("with no users the approval page asks for a name")
	}
	if _, _, _, err := srv.InviteUser("alice"); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(page(), `name="name"`) {
		t.Error("with only a pending invite the approval page asks for a name")
	}
	alice := addUser(t, srv, "alice", "alice's secret 1")
	bob := addUser(t, srv, "Bob", "bob's own secret")
	if !strings.Contains(page(), `name="name"`) {
		t.Error("with users the approval page asks for no name")
	}
	if !subjectPattern.MatchString(alice.Subject) || !subjectPattern.MatchString(bob.Subject) || alice.Subject == bob.Subject {
		t.Fatalf("subjects %q and %q: want two different u_ and 32 hex digits", alice.Subject, bob.Subject)
	}
	for _, tc := range []struct {
		name, typed, secret, want string
	}{
		{"alice", "alice", "alice's secret 1", alice.Subject},
		{"bob, name typed in another case", "bob", "bob's own secret", bob.Subject},
		{"the operator, no name", "", testPassphrase, OperatorSubject},
		{"the operator, named so", "operator", testPassphrase, OperatorSubject},
	} {
		g := tokensFor(t, srv, "192.0.2.1:4000", tc.typed, tc.secret)
		if got := subjectOf(srv, g.access); got != tc.want {
			t.Errorf("%s: the access token's sub is %q, want %q", tc.name, got, tc.want)
		}
		status, g2 := refreshOf(t, srv, g)
		if got := subjectOf(srv, g2.access); status != http.StatusOK || got != tc.want {
			t.Errorf("%s after a refresh: %d, sub %q, want %q", tc.name, status, got, tc.want)
		}
	}
	if name, ok := srv.UserName(alice.Subject); !ok || name != "alice" {
		t.Errorf("UserName(alice's subject) = %q %v", name, ok)
	}
	if name, ok := srv.UserName(OperatorSubject); !ok || name != "operator" {
		t.Errorf("UserName(operator) = %q %v", name, ok)
	}
	us, err := srv.Users()
	if err != nil || len(us) != 2 {
		t.Fatalf("Users: %v %v", us, err)
	}
	for _, u := range us {
		if u.Invited || u.Disabled || u.LastSignIn.IsZero() || u.Created.IsZero() {
			t.Errorf("after signing in: %+v", u)
		}
	}
	// A user's secret is not the passphrase, nor the passphrase a user's.
	if rec := signIn(srv, "192.0.2.1:4000", "alice", testPassphrase); rec.Code != http.StatusUnauthorized {
		t.Errorf("alice with the operator's passphrase: %d, want 401", rec.Code)
	}
	if rec := signIn(srv, "192.0.2.1:4000", "", "alice's secret 1"); rec.Code != http.StatusUnauthorized {
		t.Errorf("no name with alice's secret: %d, want 401", rec.Code)
	}
}

// TestInviteCodes: a code works once, for inviteFor; a used, expired,
// replaced or unknown one is refused, saying so; a short or mistyped
// secret sets nothing.
func TestInviteCodes(t *testing.T) {
	srv := usersServer(t, "", nil)
	var mu sync.Mutex
	now := time.Now()
	srv.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }

	late, _, _, _ := srv.InviteUser("late")
	_, lateCSRF := invitePage(srv, late)
	advance(inviteFor - time.Second)
	lastMinute, _, _, _ := srv.InviteUser("lastminute")
	advance(2 * time.Second) // late's 7 days are over; lastminute's not
	used, _, _, _ := srv.InviteUser("used")
	_, csrf := invitePage(srv, used)
	if rec := setSecret(srv, used, "twelve chars!", "twelve chars!", csrf); rec.Code != http.StatusOK {
		t.Fatalf("first use: %d", rec.Code)
	}
	replaced, _, _, _ := srv.InviteUser("twice")
	newer, _, _, _ := srv.InviteUser("twice")
	fresh, _, _, _ := srv.InviteUser("fresh")
	_, freshCSRF := invitePage(srv, fresh)

	for _, tc := range []struct {
		name, code, secret, confirm string
		csrf                        *http.Cookie
		status                      int
		want                        string
	}{
		{"used", used, "another secret!", "another secret!", csrf, http.StatusGone, "already used"},
		{"replaced by a newer invite", replaced, "twelve chars!", "twelve chars!", csrf, http.StatusNotFound, "newer invite"},
		{"expired", late, "twelve chars!", "twelve chars!", lateCSRF, http.StatusGone, "expired"},
		{"unknown", "not-a-code", "twelve chars!", "twelve chars!", csrf, http.StatusNotFound, "operator for a new invite"},
		{"too short", fresh, "eleven char", "eleven char", freshCSRF, http.StatusBadRequest, "at least 12 characters"},
		{"typed differently", fresh, "twelve chars!", "twelve chars?", freshCSRF, http.StatusBadRequest, "differ"},
		{"no CSRF cookie", fresh, "twelve chars!", "twelve chars!", nil, http.StatusForbidden, "CSRF"},
	} {
		if tc.code != fresh {
			if rec, _ := invitePage(srv, tc.code); rec.Code != tc.status || !strings.Contains(rec.Body.String(), tc.want) {
				t.Errorf("%s: GET %d, want %d saying %q\n%s", tc.name, rec.Code, tc.status, tc.want, rec.Body)
			}
		}
		rec := setSecret(srv, tc.code, tc.secret, tc.confirm, tc.csrf)
		if rec.Code != tc.status || !strings.Contains(rec.Body.String(), tc.want) {
			t.Errorf("%s: POST %d, want %d saying %q\n%s", tc.name, rec.Code, tc.status, tc.want, rec.Body)
		}
		if strings.Contains(rec.Body.String(), tc.secret) || strings.Contains(rec.Body.String(), tc.confirm) {
			t.Errorf("%s: the page shows the secret typed", tc.name)
		}
	}
	// The refusals set nothing: fresh is still invited, and its code works.
	if rec := signIn(srv, "192.0.2.9:4000", "fresh", "twelve chars!"); rec.Code != http.StatusUnauthorized {
		t.Errorf("a user whose secret was refused signs in: %d", rec.Code)
	}
	if rec := setSecret(srv, fresh, "twelve chars!", "twelve chars!", freshCSRF); rec.Code != http.StatusOK {
		t.Errorf("fresh's code after the refusals: %d", rec.Code)
	}
	if rec := setSecret(srv, newer, "twelve chars!", "twelve chars!", csrf); rec.Code != http.StatusOK {
		t.Errorf("the newer invite: %d", rec.Code)
	}
	if rec, _ := invitePage(srv, lastMinute); rec.Code != http.StatusOK {
		t.Errorf("an invite 1 s before its end: %d", rec.Code)
	}
	// A user invited again sets a new secret with the new code; the old
	// one works until then, and the subject stays.
	code, u, existed, err := srv.InviteUser("used")
	if err != nil || !existed {
		t.Fatalf("invite of an existing user: %v %v", existed, err)
	}
	if rec := signIn(srv, "192.0.2.9:4000", "used", "twelve chars!"); rec.Code != http.StatusFound {
		t.Errorf("the old secret before the new one is set: %d", rec.Code)
	}
	_, c := invitePage(srv, code)
	setSecret(srv, code, "a new secret here", "a new secret here", c)
	if rec := signIn(srv, "192.0.2.9:4000", "used", "twelve chars!"); rec.Code != http.StatusUnauthorized {
		t.Errorf("the old secret after the new one: %d", rec.Code)
	}
	if g := tokensFor(t, srv, "192.0.2.9:4000", "used", "a new secret here"); subjectOf(srv, g.access) != u.Subject {
		t.Errorf("after a new secret the subject changed")
	}
	for _, bad := range []string{"", "operator", "OPERATOR", "has space", "semi;colon", strings.Repeat("x", 65), "ünï"} {
		if _, _, _, err := srv.InviteUser(bad); err == nil {
			t.Errorf("invite of %q accepted", bad)
		}
	}
}

// TestUserLockoutIsTheirOwn: wrong secrets for one user are charged to
// that name and that address only: another user, and the operator, still
// sign in; the operator's wrong passphrases never hold a user; a user's
// trusted browser is not held by guesses at their name, and is never the
// operator's trusted browser.
func TestUserLockoutIsTheirOwn(t *testing.T) {
	srv := usersServer(t, "", nil)
	addUser(t, srv, "alice", "alice's secret 1")
	addUser(t, srv, "bob", "bob's own secret")
	// Alice's browser signed in before the attack.
	ok := signIn(srv, "198.51.100.7:4000", "alice", "alice's secret 1")
	var aliceCookie *http.Cookie
	for _, c := range ok.Result().Cookies() {
		if c.Name == userCookie {
			aliceCookie = c
		}
	}
	if ok.Code != http.StatusFound || aliceCookie == nil || !aliceCookie.HttpOnly || aliceCookie.SameSite != http.SameSiteStrictMode {
		t.Fatalf("alice's first sign-in: %d, cookie %+v", ok.Code, aliceCookie)
	}

	const attacker = "203.0.113.66:4000"
	for range freeFailures + 3 {
		signIn(srv, attacker, "alice", "guess guess guess")
	}
	for _, tc := range []struct {
		name, remote, user, secret string
		cookie                     *http.Cookie
		want                       int
	}{
		{"alice guessed at, from the attacker", attacker, "alice", "alice's secret 1", nil, http.StatusTooManyRequests},
		{"alice guessed at, from elsewhere", "192.0.2.3:4000", "alice", "alice's secret 1", nil, http.StatusTooManyRequests},
		{"bob, from the attacker's address", attacker, "bob", "bob's own secret", nil, http.StatusTooManyRequests},
		{"bob, from elsewhere", "192.0.2.3:4000", "bob", "bob's own secret", nil, http.StatusFound},
		{"the operator, from the attacker's address", attacker, "", testPassphrase, nil, http.StatusFound},
		{"alice's trusted browser", "192.0.2.3:4000", "alice", "alice's secret 1", aliceCookie, http.StatusFound},
	} {
		var cookies []*http.Cookie
		if tc.cookie != nil {
			cookies = append(cookies, tc.cookie)
		}
		rec := signIn(srv, tc.remote, tc.user, tc.secret, cookies...)
		if rec.Code != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, rec.Code, tc.want)
		}
		if strings.Contains(rec.Body.String(), tc.secret) {
			t.Errorf("%s: the page shows the secret", tc.name)
		}
	}

	// The operator's lockout never holds a user.
	const tunnel = "127.0.0.1:5555"
	for range 30 {
		signIn(srv, tunnel, "", "wrong passphrase")
	}
	if rec := signIn(srv, tunnel, "", testPassphrase); rec.Code != http.StatusTooManyRequests {
		t.Fatalf("the operator behind a guessed-at tunnel: %d, want 429", rec.Code)
	}
	if rec := signIn(srv, tunnel, "bob", "bob's own secret"); rec.Code != http.StatusFound {
		t.Errorf("bob behind the tunnel the operator's lockout holds: %d, want a code", rec.Code)
	}
	// Alice's cookie as the operator's: not a trusted browser of the
	// operator (the tunnel still holds it).
	asOperator := &http.Cookie{Name: operatorCookie, Value: aliceCookie.Value}
	if rec := signIn(srv, tunnel, "", testPassphrase, asOperator); rec.Code != http.StatusTooManyRequests {
		t.Errorf("the operator's try with a user's trusted-browser cookie: %d, want 429 (held as any browser)", rec.Code)
	}
	// 'auth unlock' clears the users' counts too.
	srv.Unlock()
	if rec := signIn(srv, attacker, "alice", "alice's secret 1"); rec.Code != http.StatusFound {
		t.Errorf("alice after auth unlock: %d", rec.Code)
	}
}

// TestUserGoneRefusesTheirTokens: disabling or removing a user refuses
// their access and refresh tokens at once (and after a restart), their
// codes not yet exchanged, and their sign-in; another user's tokens keep
// working; OnUserGone is called with the subject.
func TestUserGoneRefusesTheirTokens(t *testing.T) {
	path := filepath.Join(t.TempDir(), "oauth.db")
	srv := usersServer(t, path, nil)
	alice := addUser(t, srv, "alice", "alice's secret 1")
	bob := addUser(t, srv, "bob", "bob's own secret")
	carol := addUser(t, srv, "carol", "carol's secret!")
	var gone []string
	srv.OnUserGone(func(s string) { gone = append(gone, s) })

	const from = "192.0.2.1:4000"
	aliceG, bobG, carolG := tokensFor(t, srv, from, "alice", "alice's secret 1"), tokensFor(t, srv, from, "bob", "bob's own secret"), tokensFor(t, srv, from, "carol", "carol's secret!")
	opG := tokensFor(t, srv, from, "", testPassphrase)
	aliceCode := codeOf(signIn(srv, from, "alice", "alice's secret 1"))
	subjectOf(srv, aliceG.access) // in the verified cache

	if _, err := srv.DisableUser("alice"); err != nil {
		t.Fatal(err)
	}
	if len(gone) != 1 || gone[0] != alice.Subject {
		t.Errorf("OnUserGone after disabling alice: %q, want [%s]", gone, alice.Subject)
	}
	if subjectOf(srv, aliceG.access) != "" {
		t.Error("a disabled user's access token is still accepted")
	}
	if status, _ := refreshOf(t, srv, aliceG); status != http.StatusBadRequest {
		t.Errorf("a disabled user's refresh token: %d, want 400", status)
	}
	if status, out := tokenForm(t, srv, url.Values{"grant_type": {"authorization_code"}, "client_id": {"app"}, "code": {aliceCode}, "code_verifier": {testVerifier}}); status != http.StatusBadRequest {
		t.Errorf("a disabled user's code: %d %v, want 400", status, out)
	}
	if rec := signIn(srv, from, "alice", "alice's secret 1"); rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "disabled") {
		t.Errorf("a disabled user's sign-in: %d", rec.Code)
	}
	if rec := signIn(srv, from, "alice", "a wrong secret!"); rec.Code != http.StatusUnauthorized || strings.Contains(rec.Body.String(), "disabled") {
		t.Errorf("a wrong secret for a disabled user: %d (it may not say the user is disabled)", rec.Code)
	}
	// Bystanders: bob's and the operator's tokens work.
	if subjectOf(srv, bobG.access) != bob.Subject || subjectOf(srv, opG.access) != OperatorSubject {
		t.Error("disabling alice refused another's access token")
	}
	var status int
	if status, bobG = refreshOf(t, srv, bobG); status != http.StatusOK {
		t.Errorf("bob's refresh after alice was disabled: %d", status)
	}

	if _, err := srv.RemoveUser("bob"); err != nil {
		t.Fatal(err)
	}
	if len(gone) != 2 || gone[1] != bob.Subject {
		t.Errorf("OnUserGone after removing bob: %q", gone)
	}
	if subjectOf(srv, bobG.access) != "" {
		t.Error("a removed user's access token is still accepted")
	}
	if status, _ := refreshOf(t, srv, bobG); status != http.StatusBadRequest {
		t.Errorf("a removed user's refresh token: %d, want 400", status)
	}
	if _, ok := srv.UserName(bob.Subject); ok {
		t.Error("UserName knows a removed user")
	}
	if rec := signIn(srv, from, "bob", "bob's own secret"); rec.Code != http.StatusUnauthorized {
		t.Errorf("a removed user's sign-in: %d", rec.Code)
	}
	if subjectOf(srv, carolG.access) != carol.Subject {
		t.Error("removing bob refused carol's access token")
	}
	// bob invited again is another subject, and bob's old tokens stay
	// refused.
	_, bob2, _, _ := srv.InviteUser("bob")
	if bob2.Subject == bob.Subject {
		t.Error("a removed user's subject was given again")
	}

	// Enabled again: alice signs in; her tokens from before stay refused.
	if _, err := srv.EnableUser("alice"); err != nil {
		t.Fatal(err)
	}
	if subjectOf(srv, aliceG.access) != "" {
		t.Error("an access token from before the user was disabled works after enable")
	}
	aliceNew := tokensFor(t, srv, from, "alice", "alice's secret 1")
	if subjectOf(srv, aliceNew.access) != alice.Subject {
		t.Error("alice enabled again: her new token is refused")
	}
	if _, err := srv.DisableUser("nobody"); err == nil {
		t.Error("disabling an unknown user succeeded")
	}
	if len(gone) != 2 {
		t.Errorf("OnUserGone called for an unknown user: %q", gone)
	}

	// After a restart: the same.
	srv.Close()
	srv = usersServer(t, path, nil)
	for _, tc := range []struct {
		name   string
		access string
		want   string
	}{
		{"alice's token from before she was disabled", aliceG.access, ""},
		{"alice's token after she was enabled", aliceNew.access, alice.Subject},
		{"removed bob's", bobG.access, ""},
		{"carol's", carolG.access, carol.Subject},
		{"the operator's", opG.access, OperatorSubject},
	} {
		if got := subjectOf(srv, tc.access); got != tc.want {
			t.Errorf("after a restart, %s: sub %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestUsersStoredAndLoggedWithoutSecrets: the database and the log hold no
// secret, invite code, refresh token or cookie in clear, and the log
// names users and subjects.
func TestUsersStoredAndLoggedWithoutSecrets(t *testing.T) {
	var logBuf strings.Builder
	var logMu sync.Mutex
	log := hclog.New(&hclog.LoggerOptions{Level: hclog.Trace, Output: lockedWriter{&logMu, &logBuf}})
	path := filepath.Join(t.TempDir(), "oauth.db")
	srv := usersServer(t, path, log)
	const secret = "dave's very own secret"
	code, dave, _, err := srv.InviteUser("dave")
	if err != nil {
		t.Fatal(err)
	}
	rec, csrf := invitePage(srv, code)
	if rec.Code != http.StatusOK {
		t.Fatalf("the invite page: %d", rec.Code)
	}
	setSecret(srv, code, secret, secret, csrf)
	signIn(srv, "192.0.2.1:4000", "dave", "a wrong secret for dave")
	ok := signIn(srv, "192.0.2.1:4000", "dave", secret)
	var cookie string
	for _, c := range ok.Result().Cookies() {
		if c.Name == userCookie {
			cookie = c.Value
		}
	}
	g := tokensFor(t, srv, "192.0.2.1:4000", "dave", secret)
	if _, err := srv.DisableUser("dave"); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	db, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	logMu.Lock()
	logged := logBuf.String()
	logMu.Unlock()
	for what, v := range map[string]string{"the secret": secret, "a wrong secret": "a wrong secret for dave", "the invite code": code,
		"the refresh token": g.refresh, "the trusted-browser cookie": cookie, "the passphrase": testPassphrase} {
		if v == "" {
			t.Fatalf("no %s to look for", what)
		}
		if bytes.Contains(db, []byte(v)) {
			t.Errorf("the database holds %s in clear", what)
		}
		if strings.Contains(logged, v) {
			t.Errorf("the log holds %s", what)
		}
	}
	for _, want := range []string{"user invited", "invite used", "user signed in", "wrong name or secret", "user disabled"} {
		if !strings.Contains(logged, want) {
			t.Errorf("the log does not say %q", want)
		}
	}
	if !strings.Contains(logged, dave.Subject) || !strings.Contains(logged, "user=dave") {
		t.Errorf("the log does not name dave and his subject:\n%s", logged)
	}
}

// TestUserPagesHTML: the invite page and the approval page with users are
// served as the approval page always was (no cache, no frame, no script),
// with a CSRF field, and never show a secret back.
func TestUserPagesHTML(t *testing.T) {
	srv := usersServer(t, "", nil)
	addUser(t, srv, "erin", "erin's secret 1")
	code, _, _, _ := srv.InviteUser("frank")
	rec, csrf := invitePage(srv, code)
	bad := setSecret(srv, code, "frank's secret1", "frank's secret2", csrf)
	approval := serve(srv, httptest.NewRequest(http.MethodGet, PathAuthorize+"?"+authorizeQuery("app", "https://app.example/cb"), nil), "192.0.2.1:4000")
	wrong := signIn(srv, "192.0.2.1:4000", "erin", "not erin's secret")
	for name, r := range map[string]*httptest.ResponseRecorder{"invite page": rec, "invite page after a mistyped secret": bad, "approval page": approval, "approval page after a wrong secret": wrong} {
		h := r.Header()
		if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("%s: CSP %q", name, csp)
		}
		if h.Get("Cache-Control") != "no-store" || h.Get("X-Frame-Options") != "DENY" {
			t.Errorf("%s: Cache-Control %q, X-Frame-Options %q", name, h.Get("Cache-Control"), h.Get("X-Frame-Options"))
		}
		body := r.Body.String()
		if !strings.Contains(body, `name="csrf" value="`) || strings.Contains(body, "<script") {
			t.Errorf("%s: no CSRF field, or a script\n%s", name, body)
		}
		for _, s := range []string{"frank's secret1", "frank's secret2", "not erin's secret", "erin's secret 1"} {
			if strings.Contains(body, s) || strings.Contains(body, strings.ReplaceAll(s, "'", "&#39;")) {
				t.Errorf("%s shows a secret back", name)
			}
		}
	}
	if csrf == nil || !csrf.HttpOnly || csrf.SameSite != http.SameSiteStrictMode || csrf.Path != PathInvite {
		t.Errorf("the invite page's CSRF cookie: %+v", csrf)
	}
	if !strings.Contains(wrong.Body.String(), `value="erin"`) {
		t.Error("the approval page after a wrong secret forgot the name")
	}
	if !strings.Contains(rec.Body.String(), "frank") || !strings.Contains(rec.Body.String(), `autocomplete="new-password"`) {
		t.Errorf("the invite page:\n%s", rec.Body)
	}
}

// TestUserSignInHeldBeforeTheKDF: a try held by the lockout costs no
// hashing (so guesses cannot buy the bridge's CPU).
func TestUserSignInHeldBeforeTheKDF(t *testing.T) {
	srv := usersServer(t, "", nil)
	addUser(t, srv, "gina", "gina's secret 1")
	for range freeFailures + 1 {
		signIn(srv, "203.0.113.1:4000", "gina", "wrong secret..")
	}
	before := kdfAsks.Load()
	if code := signIn(srv, "203.0.113.1:4000", "gina", "wrong secret..").Code; code != http.StatusTooManyRequests {
		t.Errorf("a held try: %d, want 429", code)
	}
	if n := kdfAsks.Load() - before; n != 0 {
		t.Errorf("a try the lockout held hashed %d times, want 0", n)
	}
	// A try let through hashes once (a name nobody has too).
	before = kdfAsks.Load()
	signIn(srv, "192.0.2.77:4000", "nobody", "wrong secret..")
	if n := kdfAsks.Load() - before; n != 1 {
		t.Errorf("a try for a name nobody has hashed %d times, want 1 (as for a user)", n)
	}
}

func ExampleCheckName() {
	for _, n := range []string{"alice", "bob.smith-2", "operator", "no spaces"} {
		fmt.Println(n, CheckName(n) == nil)
	}
	// Output:
	// alice true
	// bob.smith-2 true
	// operator false
	// no spaces false
}

// TestGhostNamesKeepUsersCounts: guesses at names nobody has, from many
// addresses, never push a user's count out of the lockout (their LRU is
// their own), and a made-up name is held as a user's is (the lockout
// does not tell which names exist).
func TestGhostNamesKeepUsersCounts(t *testing.T) {
	srv := usersServer(t, "", nil)
	addUser(t, srv, "hana", "hana's secret 1")
	const keep = 4 // each count keeps this many names here
	srv.userGuesses.names.Max, srv.userGuesses.ghosts.Max = keep, keep
	// The counts' clock stands still: hana's wait (2 s after her sixth
	// wrong try) must not pass while the made-up names are tried (each a
	// hash: seconds under -race on a busy machine, where it once did).
	at := time.Now()
	still := func() time.Time { return at }
	for _, l := range []*lockout.Lockout{&srv.userGuesses.names, &srv.userGuesses.ghosts, &srv.userGuesses.addrs, &srv.userGuesses.browsers} {
		l.Now = still
	}
	for i := range freeFailures + 1 {
		signIn(srv, fmt.Sprintf("198.51.100.%d:4000", i), "hana", "guess guess guess")
		signIn(srv, fmt.Sprintf("198.51.100.%d:4000", i), "nobody", "guess guess guess")
	}
	for i := range 3 * keep {
		signIn(srv, fmt.Sprintf("203.0.113.%d:4000", i), fmt.Sprintf("ghost%d", i), "guess guess guess")
	}
	if rec := signIn(srv, "192.0.2.200:4000", "hana", "hana's secret 1"); rec.Code != http.StatusTooManyRequests {
		t.Errorf("hana after guesses at %d made-up names: %d, want 429 (her count kept)", 3*keep, rec.Code)
	}
	for i := range freeFailures + 1 {
		signIn(srv, fmt.Sprintf("198.51.100.%d:4000", 100+i), "nobody2", "guess guess guess")
	}
	if rec := signIn(srv, "192.0.2.201:4000", "nobody2", "guess guess guess"); rec.Code != http.StatusTooManyRequests {
		t.Errorf("a made-up name guessed at as hana was: %d, want 429 as for a user", rec.Code)
	}
}

// TestClientRevokedNamesItsUsers: revoking a client calls OnClientRevoked
// with the subjects its tokens spoke for, each once (the bridge stops
// their children), after its tokens are refused; revoking it again names
// no one.
func TestClientRevokedNamesItsUsers(t *testing.T) {
	srv := usersServer(t, "", nil)
	alice := addUser(t, srv, "alice", "alice's secret 1")
	bob := addUser(t, srv, "bob", "bob's own secret")
	addUser(t, srv, "carol", "carol's secret!") // no token: not named
	const from = "192.0.2.1:4000"
	aliceG := tokensFor(t, srv, from, "alice", "alice's secret 1")
	tokensFor(t, srv, from, "alice", "alice's secret 1") // a second grant
	tokensFor(t, srv, from, "bob", "bob's own secret")
	tokensFor(t, srv, from, "", testPassphrase)
	type call struct {
		id       string
		subjects []string
		refused  bool
	}
	var calls []call
	srv.OnClientRevoked(func(id string, subjects []string) {
		calls = append(calls, call{id, slices.Sorted(slices.Values(subjects)), subjectOf(srv, aliceG.access) == ""})
	})
	if err := srv.RevokeClient("app"); err != nil {
		t.Fatal(err)
	}
	want := slices.Sorted(slices.Values([]string{alice.Subject, bob.Subject, OperatorSubject}))
	if len(calls) != 1 || calls[0].id != "app" || !slices.Equal(calls[0].subjects, want) || !calls[0].refused {
		t.Fatalf("OnClientRevoked: %+v; want app with %v, its tokens refused by then", calls, want)
	}
	if err := srv.RevokeClient("app"); err != nil {
		t.Fatal(err)
	}
	if len(calls) != 2 || len(calls[1].subjects) != 0 {
		t.Errorf("revoking it again: %+v; want no one named", calls)
	}
}
