package console

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/stelae-bridge/stelae-bridge/lockout"
	"github.com/stelae-bridge/stelae-bridge/session"
)

// fakeBackend is a Backend with one destination whose name is a marker:
// a page or answer that shows it leaked data.
type fakeBackend struct {
	mu      sync.Mutex
	actions []string
}

const marker = "secret-destination-name"

func (f *fakeBackend) Destinations() []Destination {
	return []Destination{{Name: marker, URL: "/" + marker + "/mcp", State: "running", PID: 4242, Sessions: []Session{}, Tools: []Tool{{Name: "rm", Allowed: false}}}}
}
func (f *fakeBackend) Profiles() []Profile { return []Profile{} }
func (f *fakeBackend) Clients() ([]Client, bool, error) {
	return []Client{{ID: "c_1", Name: "Claude"}}, true, nil
}
func (f *fakeBackend) record(a string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.actions = append(f.actions, a)
	return nil
}
func (f *fakeBackend) RevokeClient(id string) error { return f.record("revoke " + id) }
func (f *fakeBackend) EndSession(d, s string) error {
	if s == "missing1" {
		return fmt.Errorf("%w: no such session", ErrNotFound)
	}
	return f.record("end " + d + " " + s)
}
func (f *fakeBackend) Restart(d string) (string, error) {
	return "the child of " + d + " is restarting", f.record("restart " + d)
}
func (f *fakeBackend) StopUser(d, u string) error { return f.record("stop " + d + " " + u) }
func (f *fakeBackend) DeleteCredentials(d, u string) error {
	return f.record("delete credentials " + d + " " + u)
}
func (f *fakeBackend) done() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.actions...)
}

// fakePassphrase is the built-in server's passphrase check (its lockout
// is authserver's, tested in signin_test.go with the real server).
type fakePassphrase struct{ fails int }

func (p *fakePassphrase) OperatorSignIn(_ http.ResponseWriter, _ *http.Request, given, _ string, _ bool) (bool, time.Duration, bool) {
	if given == "the passphrase" {
		return true, 0, false
	}
	p.fails++
	return false, 0, false
}

// req is a request to the console as it reaches it, from addr.
func req(method, target, addr string, body string, hdr ...string) *http.Request {
	var r *http.Request
	if body != "" {
		r = httptest.NewRequest(method, target, strings.NewReader(body))
	} else {
		r = httptest.NewRequest(method, target, nil)
	}
	r.RemoteAddr = addr
	r.Host = "127.0.0.1:9090"
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			r.Host = hdr[i+1]
			continue
		}
		r.Header.Set(hdr[i], hdr[i+1])
	}
	return r
}

func serve(c *Console, r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	c.ServeHTTP(w, r)
	return w
}

const local = "127.0.0.1:50000"

// TestViewersWithoutCredentialSeeNoData: who the console admits, and
// that a refused viewer gets 401 or 403 and none of the data.
func TestViewersWithoutCredentialSeeNoData(t *testing.T) {
	withToken := Options{AuthOn: true, Tokens: []string{"operator-token"}}
	withPass := Options{AuthOn: true, Passphrase: &fakePassphrase{}}
	for _, tc := range []struct {
		name string
		opts Options
		r    *http.Request
		want int
	}{
		{"auth on, no credential: page", withToken, req("GET", "/console", local, ""), 401},
		{"auth on, no credential: state", withToken, req("GET", "/console/api/state", local, ""), 401},
		{"auth on, no credential: events", withToken, req("GET", "/console/events", local, ""), 401},
		{"auth on, no credential: log", withToken, req("GET", "/console/api/log", local, ""), 401},
		{"auth on, wrong token", withToken, req("GET", "/console/api/state", local, "", "Authorization", "Bearer nope"), 401},
		{"auth on, an MCP client's access token", withPass, req("GET", "/console/api/state", local, "", "Authorization", "Bearer eyJhbGciOiJFUzI1NiJ9.e30.sig"), 401},
		{"auth on, a forged cookie", withToken, req("GET", "/console/api/state", local, "", "Cookie", cookieName+"="+strings.Repeat("a", 64)), 401},
		{"auth on, no credential configured", Options{AuthOn: true}, req("GET", "/console", local, ""), 403},
		{"auth on, operator token", withToken, req("GET", "/console/api/state", "203.0.113.9:1", "", "Authorization", "Bearer operator-token"), 200},
		{"auth off, a remote peer", Options{}, req("GET", "/console/api/state", "203.0.113.9:1", "", "Authorization", "Bearer RUN-TOKEN"), 403},
		{"auth off, a remote peer: page", Options{}, req("GET", "/console", "203.0.113.9:1", "", "Authorization", "Bearer RUN-TOKEN"), 403},
		{"auth off, a public Host", Options{}, req("GET", "/console/api/state", local, "", "Host", "bridge.example.com", "Authorization", "Bearer RUN-TOKEN"), 403},
		{"auth off, through a tunnel", Options{}, req("GET", "/console/api/state", local, "", "X-Forwarded-For", "198.51.100.7", "Authorization", "Bearer RUN-TOKEN"), 403},
		{"auth off, through a proxy (Forwarded)", Options{}, req("GET", "/console/api/state", "[::1]:5", "", "Forwarded", "for=198.51.100.7", "Authorization", "Bearer RUN-TOKEN"), 403},
		{"auth off, a forwarder that adds no header, no token", Options{}, req("GET", "/console/api/state", local, ""), 401},
		{"auth off, a forwarder that adds no header, no token: page", Options{}, req("GET", "/console", local, ""), 401},
		{"auth off, a wrong token", Options{}, req("GET", "/console/api/state", local, "", "Authorization", "Bearer "+strings.Repeat("0", 64)), 401},
		{"auth off, this machine, the run's token", Options{}, req("GET", "/console/api/state", local, "", "Authorization", "Bearer RUN-TOKEN"), 200},
		{"auth off, this machine over IPv6, the run's token", Options{}, req("GET", "/console/api/state", "[::1]:5", "", "Host", "localhost:9090", "Authorization", "Bearer RUN-TOKEN"), 200},
		{"auth off, -console-remote, the run's token", Options{Remote: true}, req("GET", "/console/api/state", "203.0.113.9:1", "", "Host", "bridge.example.com", "Authorization", "Bearer RUN-TOKEN"), 200},
		{"auth off, -console-remote, no token", Options{Remote: true}, req("GET", "/console/api/state", "203.0.113.9:1", "", "Host", "bridge.example.com"), 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Backend = &fakeBackend{}
			c := New(tc.opts)
			if h := tc.r.Header.Get("Authorization"); strings.Contains(h, "RUN-TOKEN") {
				tc.r.Header.Set("Authorization", strings.Replace(h, "RUN-TOKEN", c.OpenToken(), 1))
			}
			w := serve(c, tc.r)
			if w.Code != tc.want {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.want, w.Body)
			}
			leaked := strings.Contains(w.Body.String(), marker)
			if tc.want != 200 && leaked {
				t.Errorf("a refused viewer got the data: %s", w.Body)
			}
			if tc.want == 200 && !leaked {
				t.Errorf("an admitted viewer did not get the state: %s", w.Body)
			}
			if tc.want == 401 && w.Header().Get("WWW-Authenticate") == "" {
				t.Error("a 401 without WWW-Authenticate")
			}
		})
	}
}

// signIn signs in through the form and returns the cookie and the page's
// CSRF token.
func signIn(t *testing.T, c *Console, credential string) (*http.Cookie, string) {
	t.Helper()
	w := serve(c, req("POST", "/console/login", local, url.Values{"credential": {credential}}.Encode(), "Content-Type", "application/x-www-form-urlencoded", "Origin", "http://127.0.0.1:9090"))
	if w.Code != http.StatusSeeOther {
		t.Fatalf("sign-in: %d %s", w.Code, w.Body)
	}
	var ck *http.Cookie
	for _, k := range w.Result().Cookies() {
		if k.Name == cookieName {
			ck = k
		}
	}
	if ck == nil || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/console" {
		t.Fatalf("sign-in cookie: %+v", ck)
	}
	page := serve(c, req("GET", "/console", local, "", "Cookie", ck.String()))
	if page.Code != 200 {
		t.Fatalf("the page after sign-in: %d", page.Code)
	}
	_, rest, ok := strings.Cut(page.Body.String(), `name="csrf-token" content="`)
	csrf, _, _ := strings.Cut(rest, `"`)
	if !ok || len(csrf) != 64 {
		t.Fatalf("no CSRF token in the page: %q", csrf)
	}
	return ck, csrf
}

// TestActionsNeedCSRFAndSameOrigin: an action takes effect only with the
// page's CSRF token, from the console's own origin, by an admitted
// viewer.
func TestActionsNeedCSRFAndSameOrigin(t *testing.T) {
	fb := &fakeBackend{}
	c := New(Options{Backend: fb, AuthOn: true, Tokens: []string{"operator-token"}, Passphrase: &fakePassphrase{}})
	ck, csrf := signIn(t, c, "the passphrase")
	body := `{"destination":"echo","session":"abcd1234"}`
	action := func(hdr ...string) *httptest.ResponseRecorder {
		return serve(c, req("POST", "/console/api/sessions/end", local, body, append([]string{"Content-Type", "application/json"}, hdr...)...))
	}
	for _, tc := range []struct {
		name string
		hdr  []string
		want int
	}{
		{"no cookie", []string{"X-CSRF-Token", csrf}, 401},
		{"no CSRF token", []string{"Cookie", ck.String()}, 403},
		{"a wrong CSRF token", []string{"Cookie", ck.String(), "X-CSRF-Token", strings.Repeat("0", 64)}, 403},
		{"another origin", []string{"Cookie", ck.String(), "X-CSRF-Token", csrf, "Origin", "https://evil.example"}, 403},
		{"another site", []string{"Cookie", ck.String(), "X-CSRF-Token", csrf, "Sec-Fetch-Site", "cross-site"}, 403},
		{"GET", nil, 405},
	} {
		var w *httptest.ResponseRecorder
		if tc.hdr == nil {
			w = serve(c, req("GET", "/console/api/sessions/end", local, "", "Cookie", ck.String()))
		} else {
			w = action(tc.hdr...)
		}
		if w.Code != tc.want {
			t.Errorf("%s: %d, want %d: %s", tc.name, w.Code, tc.want, w.Body)
		}
	}
	if got := fb.done(); len(got) != 0 {
		t.Fatalf("refused actions were taken: %v", got)
	}
	for _, a := range []struct{ path, body, want string }{
		{"/console/api/sessions/end", body, "end echo abcd1234"},
		{"/console/api/restart", `{"destination":"echo"}`, "restart echo"},
		{"/console/api/clients/revoke", `{"client_id":"c_1"}`, "revoke c_1"},
	} {
		w := serve(c, req("POST", a.path, local, a.body, "Content-Type", "application/json", "Cookie", ck.String(), "X-CSRF-Token", csrf,
			"Origin", "http://127.0.0.1:9090", "Sec-Fetch-Site", "same-origin"))
		if w.Code != 200 {
			t.Errorf("%s: %d %s", a.path, w.Code, w.Body)
		}
	}
	if got := fb.done(); strings.Join(got, "|") != "end echo abcd1234|restart echo|revoke c_1" {
		t.Errorf("actions taken: %v", got)
	}
	// What does not exist is a 404 with the backend's words.
	w := serve(c, req("POST", "/console/api/sessions/end", local, `{"destination":"echo","session":"missing1"}`, "Cookie", ck.String(), "X-CSRF-Token", csrf))
	if w.Code != 404 || !strings.Contains(w.Body.String(), "no such session") {
		t.Errorf("ending a missing session: %d %s", w.Code, w.Body)
	}
	// A bearer-token request (a script's) needs no CSRF token: no
	// browser sends that header by itself.
	w = serve(c, req("POST", "/console/api/restart", local, `{"destination":"b"}`, "Authorization", "Bearer operator-token"))
	if w.Code != 200 {
		t.Errorf("a script's restart: %d %s", w.Code, w.Body)
	}
	// Signed out, the cookie opens nothing.
	w = serve(c, req("POST", "/console/logout", local, url.Values{"csrf": {csrf}}.Encode(), "Content-Type", "application/x-www-form-urlencoded", "Cookie", ck.String()))
	if w.Code != http.StatusSeeOther {
		t.Fatalf("sign-out: %d %s", w.Code, w.Body)
	}
	if w := serve(c, req("GET", "/console/api/state", local, "", "Cookie", ck.String())); w.Code != 401 {
		t.Errorf("the cookie after sign-out: %d", w.Code)
	}
}

// tryFrom posts the sign-in form with cred from addr and returns the
// status.
func tryFrom(c *Console, addr, cred string) int {
	return serve(c, req("POST", "/console/login", addr, url.Values{"credential": {cred}}.Encode(), "Content-Type", "application/x-www-form-urlencoded")).Code
}

// TestSignInHoldsGuesses: a wrong passphrase is charged to the built-in
// server (which holds it); without one the console's own counts hold
// wrong tries from the guesser's address, past freeTries; another
// origin's form is refused before any check.
func TestSignInHoldsGuesses(t *testing.T) {
	pp := &fakePassphrase{}
	c := New(Options{Backend: &fakeBackend{}, AuthOn: true, Passphrase: pp})
	if got := tryFrom(c, local, "guess"); got != 401 || pp.fails != 1 {
		t.Errorf("a wrong passphrase: %d, %d failures charged", got, pp.fails)
	}
	c = New(Options{Backend: &fakeBackend{}, AuthOn: true, Tokens: []string{"operator-token"}})
	for i := range freeTries + 1 {
		if got := tryFrom(c, local, fmt.Sprint("guess", i)); got != 401 {
			t.Fatalf("wrong try %d: %d", i, got)
		}
	}
	if got := tryFrom(c, local, "guess again"); got != http.StatusTooManyRequests {
		t.Errorf("after %d wrong tries: %d, want 429", freeTries+1, got)
	}
	w := serve(c, req("POST", "/console/login", local, "credential=operator-token", "Content-Type", "application/x-www-form-urlencoded", "Origin", "https://evil.example"))
	if w.Code != 403 {
		t.Errorf("a cross-origin sign-in: %d", w.Code)
	}
}

// TestOwnCountsArePerAddress: without a built-in server, a guesser's
// wrong tries hold its own address only: a bystander's wrong try from
// another address is checked (401, not 429), and an operator token from
// the guesser's own address still signs in (it cannot be guessed, so no
// count holds it).
func TestOwnCountsArePerAddress(t *testing.T) {
	c := New(Options{Backend: &fakeBackend{}, AuthOn: true, Tokens: []string{"operator-token"}})
	const guesser, bystander = "198.51.100.7:4000", "203.0.113.5:4000"
	for i := range freeTries + 1 {
		tryFrom(c, guesser, fmt.Sprint("guess", i))
	}
	if got := tryFrom(c, guesser, "guess again"); got != http.StatusTooManyRequests {
		t.Fatalf("the guesser after %d wrong tries: %d, want 429", freeTries+1, got)
	}
	if got := tryFrom(c, bystander, "a typo"); got != http.StatusUnauthorized {
		t.Errorf("a bystander's typo from another address while the guesser waits: %d, want 401", got)
	}
	if got := tryFrom(c, bystander, "operator-token"); got != http.StatusSeeOther {
		t.Errorf("the operator token from another address: %d, want 303", got)
	}
	if got := tryFrom(c, guesser, "operator-token"); got != http.StatusSeeOther {
		t.Errorf("the operator token from the guesser's address: %d, want 303", got)
	}
}

// TestOwnCountsDecay: the console's whole count (everyone's wrong tries
// together) holds every address past freeAllTries, and is forgotten an
// hour after the last failure (a clock moved by hand, no sleep), as each
// address's is.
func TestOwnCountsDecay(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := New(Options{Backend: &fakeBackend{}, AuthOn: true, Tokens: []string{"operator-token"}})
	c.logins.guesses.Now = func() time.Time { return now }
	for i := range freeAllTries + 1 {
		tryFrom(c, fmt.Sprintf("10.0.%d.%d:1", i/200, i%200), "guess")
	}
	if got := tryFrom(c, "203.0.113.5:1", "a typo"); got != http.StatusTooManyRequests {
		t.Fatalf("a new address after %d wrong tries from as many addresses: %d, want 429", freeAllTries+1, got)
	}
	if got := tryFrom(c, "203.0.113.5:1", "operator-token"); got != http.StatusSeeOther {
		t.Errorf("the operator token while everyone waits: %d, want 303", got)
	}
	now = now.Add(lockout.MaxWait + time.Second)
	tryFrom(c, "10.9.9.9:1", "guess") // within the hour: the count goes on
	if got := tryFrom(c, "203.0.113.5:1", "a typo"); got != http.StatusTooManyRequests {
		t.Errorf("within the hour, the whole count was forgotten: %d", got)
	}
	now = now.Add(lockout.Forget + time.Second)
	if got := tryFrom(c, "203.0.113.5:1", "a typo"); got != http.StatusUnauthorized {
		t.Errorf("an hour after the last wrong try: %d, want 401 (the count forgotten)", got)
	}
}

// TestAuthOffNeedsTheRunsToken: with auth off, a request from this
// machine (a local forwarder adds no header) sees nothing without the
// per-run token: the sign-in page asks for it (401). The link of the
// banner signs the browser in and sends it to /console without the
// token in its address; a wrong link is refused; the token typed on the
// form signs in too; a remote peer is refused even with the token
// (loopback only) unless -console-remote; the token is never logged.
func TestAuthOffNeedsTheRunsToken(t *testing.T) {
	var logs strings.Builder
	var logMu sync.Mutex
	logger := hclog.New(&hclog.LoggerOptions{Output: lockedWriter{&logMu, &logs}, Level: hclog.Trace})
	c := New(Options{Backend: &fakeBackend{}, Logger: logger})
	token := c.OpenToken()
	if len(token) != 64 {
		t.Fatalf("the per-run token: %q", token)
	}
	if other := New(Options{Backend: &fakeBackend{}}).OpenToken(); other == token {
		t.Fatal("two consoles share a token")
	}
	if New(Options{AuthOn: true, Tokens: []string{"t"}}).OpenToken() != "" {
		t.Error("a console with auth on has a per-run token")
	}
	page := serve(c, req("GET", "/console", local, ""))
	if page.Code != 401 || strings.Contains(page.Body.String(), marker) || !strings.Contains(page.Body.String(), "Console token") || !strings.Contains(page.Body.String(), `name="credential"`) {
		t.Errorf("the page without the token: %d\n%s", page.Code, page.Body)
	}
	if w := serve(c, req("GET", "/console?token="+strings.Repeat("0", 64), local, "")); w.Code != 401 || len(w.Result().Cookies()) != 0 {
		t.Errorf("a wrong link: %d, cookies %v", w.Code, w.Result().Cookies())
	}
	if w := serve(c, req("GET", "/console?token="+token, "203.0.113.9:1", "")); w.Code != 403 {
		t.Errorf("the link from a remote peer: %d, want 403", w.Code)
	}
	link := serve(c, req("GET", "/console?token="+token, local, ""))
	if link.Code != http.StatusSeeOther || link.Header().Get("Location") != "/console" {
		t.Fatalf("the link: %d to %q", link.Code, link.Header().Get("Location"))
	}
	var ck *http.Cookie
	for _, k := range link.Result().Cookies() {
		if k.Name == cookieName {
			ck = k
		}
	}
	if ck == nil || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode {
		t.Fatalf("the link's cookie: %+v", ck)
	}
	if w := serve(c, req("GET", "/console", local, "", "Cookie", ck.String())); w.Code != 200 || !strings.Contains(w.Body.String(), `name="csrf-token"`) {
		t.Errorf("the page with the link's cookie: %d", w.Code)
	}
	if w := serve(c, req("GET", "/console/api/state", local, "", "Cookie", ck.String())); w.Code != 200 || !strings.Contains(w.Body.String(), marker) {
		t.Errorf("the state with the link's cookie: %d", w.Code)
	}
	if w := serve(c, req("GET", "/console/api/state", "203.0.113.9:1", "", "Cookie", ck.String())); w.Code != 403 {
		t.Errorf("the cookie from a remote peer: %d, want 403", w.Code)
	}
	if _, csrf := signIn(t, c, token); csrf == "" {
		t.Error("the form with the token gave no CSRF token")
	}
	if got := tryFrom(c, local, "not the token"); got != 401 {
		t.Errorf("a wrong token on the form: %d", got)
	}
	remote := New(Options{Backend: &fakeBackend{}, Remote: true})
	if w := serve(remote, req("GET", "/console?token="+remote.OpenToken(), "203.0.113.9:1", "", "Host", "bridge.example.com")); w.Code != http.StatusSeeOther {
		t.Errorf("-console-remote, the link from a remote peer: %d, want 303", w.Code)
	}
	logMu.Lock()
	defer logMu.Unlock()
	if strings.Contains(logs.String(), token) || !strings.Contains(logs.String(), "signed in") {
		t.Errorf("the log names the token, or no sign-in:\n%s", logs.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *strings.Builder
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// sessionsBackend is fakeBackend with two sessions of two principals.
type sessionsBackend struct{ fakeBackend }

func (*sessionsBackend) Destinations() []Destination {
	return []Destination{{Name: "notes", State: "running", Tools: []Tool{}, Sessions: []Session{
		{ID: "aaaaaaaa", Principal: session.Principal{7}.Short()}, {ID: "bbbbbbbb", Principal: session.Principal{8}.Short()}}}}
}

// TestSessionsNameTheirOAuthClient: a session whose principal an OAuth
// token made is shown with that token's client (its id, and its name
// among the built-in server's clients); a bystander principal's session,
// whose client the auth layer never named, is shown without one.
func TestSessionsNameTheirOAuthClient(t *testing.T) {
	c := New(Options{Backend: &sessionsBackend{}, AuthOn: true, Tokens: []string{"operator-token"}})
	c.NoteClient(session.Principal{7}, "c_1")
	c.NoteClient(session.Principal{}, "anonymous-never-labelled")
	w := serve(c, req("GET", "/console/api/state", local, "", "Authorization", "Bearer operator-token"))
	var st State
	if err := json.Unmarshal(w.Body.Bytes(), &st); err != nil || len(st.Destinations) != 1 || len(st.Destinations[0].Sessions) != 2 {
		t.Fatalf("state: %v %s", err, w.Body)
	}
	for _, s := range st.Destinations[0].Sessions {
		switch s.ID {
		case "aaaaaaaa":
			if s.OAuthClient != "c_1" || s.OAuthClientName != "Claude" {
				t.Errorf("the OAuth session: client %q named %q, want c_1 named Claude", s.OAuthClient, s.OAuthClientName)
			}
		default:
			if s.OAuthClient != "" || s.OAuthClientName != "" {
				t.Errorf("a bystander's session shows client %q %q", s.OAuthClient, s.OAuthClientName)
			}
		}
	}
	for i := range maxLabels + 10 { // bounded
		c.NoteClient(session.Principal{byte(i), byte(i >> 8), 1}, "c")
	}
	if n := len(c.labels.byShort()); n > maxLabels {
		t.Errorf("%d labels kept, want at most %d", n, maxLabels)
	}
}

// TestEveryAnswerIsFramedAndScriptless: every console answer — the page,
// the sign-in page, the API, an asset, a 404 — forbids framing and
// inline script and style, and is not cached.
func TestEveryAnswerIsFramedAndScriptless(t *testing.T) {
	c := New(Options{Backend: &fakeBackend{}, AuthOn: true, Tokens: []string{"operator-token"}})
	for _, r := range []*http.Request{
		req("GET", "/console", local, ""),
		req("GET", "/console", local, "", "Authorization", "Bearer operator-token"),
		req("GET", "/console/api/state", local, "", "Authorization", "Bearer operator-token"),
		req("GET", "/console/assets/console.js", local, ""),
		req("GET", "/console/assets/console.css", local, ""),
		req("GET", "/console/nothing", local, ""),
	} {
		w := httptest.NewRecorder()
		w.Header().Set("Access-Control-Allow-Origin", "*") // as the CORS layer would
		c.ServeHTTP(w, r)
		h := w.Header()
		csp := h.Get("Content-Security-Policy")
		if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe") || !strings.Contains(csp, "frame-ancestors 'none'") ||
			h.Get("X-Frame-Options") != "DENY" || h.Get("Cache-Control") != "no-store" && h.Get("Cache-Control") != "no-cache" ||
			h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Access-Control-Allow-Origin") != "" {
			t.Errorf("%s: headers %v", r.URL, h)
		}
	}
	// The assets carry no inline script or style.
	for _, name := range []string{"console.html", "login.html"} {
		b, _ := assets.ReadFile("assets/" + name)
		for _, bad := range []string{"<script>", "style=", "<style", "onclick", "onload", "javascript:"} {
			if strings.Contains(string(b), bad) {
				t.Errorf("%s holds %q: the CSP forbids it", name, bad)
			}
		}
	}
	js, _ := assets.ReadFile("assets/console.js")
	for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", ".style."} {
		if strings.Contains(string(js), bad) {
			t.Errorf("console.js uses %s", bad)
		}
	}
}

// TestTailKeepsTheNewest: the tail returns what came after a seq, oldest
// first, at most tailSize, and counts each destination's calls and
// errors.
func TestTailKeepsTheNewest(t *testing.T) {
	tl := NewTail()
	for i := range tailSize + 10 {
		status := 200
		if i%10 == 0 {
			status = 500
		}
		tl.Access(session.AccessEntry{Destination: "d", Method: "tools/call", RPCID: fmt.Sprint(i), Status: status})
	}
	all, last := tl.since(0, tailSize)
	if len(all) != tailSize || last != tailSize+10 || all[0].Seq != 11 || all[len(all)-1].RPCID != fmt.Sprint(tailSize+9) {
		t.Fatalf("since(0): %d entries, last %d, first seq %d", len(all), last, all[0].Seq)
	}
	if more, _ := tl.since(last-3, tailSize); len(more) != 3 || more[0].Seq != last-2 {
		t.Errorf("since(last-3): %+v", more)
	}
	if none, _ := tl.since(last, tailSize); len(none) != 0 {
		t.Errorf("since(last): %d entries", len(none))
	}
	if tr := tl.traffic()["d"]; tr.calls != tailSize+10 || tr.errors != (tailSize+10)/10 {
		t.Errorf("traffic: %+v", tr)
	}
	if newest, _ := tl.since(0, 5); len(newest) != 5 || newest[4].Seq != last || newest[0].Seq != last-4 {
		t.Errorf("since(0, 5): %+v", newest)
	}
	b, _ := json.Marshal(all[0])
	if !strings.Contains(string(b), `"principal":"anonymous"`) {
		t.Errorf("an entry of no principal: %s", b)
	}
}

// TestServes: the console's paths: /console and under it. (That a
// destination named "console" keeps /console/mcp is the bridge's rule,
// config.EndpointRoute: tests/console_test.go.)
func TestServes(t *testing.T) {
	for p, want := range map[string]bool{"/console": true, "/console/api/state": true, "/console/assets/console.js": true,
		"/consoles": false, "/consolex/api": false, "/x/console": false} {
		if Serves(p) != want {
			t.Errorf("Serves(%q) = %v", p, !want)
		}
	}
}

// BenchmarkTailAccess is what each POST pays the console's tail.
func BenchmarkTailAccess(b *testing.B) {
	tl := NewTail()
	e := session.AccessEntry{Destination: "d", Method: "tools/call", Tool: "echo", RPCID: "7", Status: 200, Time: time.Now()}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			tl.Access(e)
		}
	})
}

// TestStreamEndsWithItsSignIn: an event stream opened by a sign-in ends
// when the operator signs out (as it does when the sign-in expires),
// rather than showing the bridge to whoever holds the tab; the bridge's
// stop ends it too.
func TestStreamEndsWithItsSignIn(t *testing.T) {
	done := make(chan struct{})
	c := New(Options{Backend: &fakeBackend{}, AuthOn: true, Tokens: []string{"operator-token"}, Every: 40 * time.Millisecond, Done: done})
	srv := httptest.NewServer(c)
	defer srv.Close()
	// On a failure, the bridge's stop ends what streams are left before
	// the server waits for them.
	var stop sync.Once
	stopBridge := func() { stop.Do(func() { close(done) }) }
	defer stopBridge()
	ck, csrf := signIn(t, c, "operator-token")
	open := func() <-chan error {
		r, _ := http.NewRequest(http.MethodGet, srv.URL+"/console/events", nil)
		r.AddCookie(ck)
		resp, err := http.DefaultClient.Do(r)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("events: %v %v", err, resp)
		}
		ended := make(chan error, 1)
		go func() {
			defer resp.Body.Close()
			_, err := io.Copy(io.Discard, resp.Body)
			ended <- err
		}()
		return ended
	}
	ended := open()
	select {
	case err := <-ended:
		t.Fatalf("the stream ended while signed in: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	w := serve(c, req("POST", "/console/logout", local, url.Values{"csrf": {csrf}}.Encode(), "Content-Type", "application/x-www-form-urlencoded", "Cookie", ck.String()))
	if w.Code != http.StatusSeeOther {
		t.Fatalf("sign-out: %d", w.Code)
	}
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the stream outlived its sign-in by 10 s")
	}
	// A bearer-token stream ends when the bridge stops.
	r, _ := http.NewRequest(http.MethodGet, srv.URL+"/console/events", nil)
	r.Header.Set("Authorization", "Bearer operator-token")
	resp, err := http.DefaultClient.Do(r)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("events: %v %v", err, resp)
	}
	defer resp.Body.Close()
	stopBridge()
	stopped := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, resp.Body); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("the stream outlived the bridge's stop by 10 s")
	}
}
