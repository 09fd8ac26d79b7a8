package authserver

import (
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeCredentials is the bridge's side of the page for the tests: the
// notes destination asks for API_TOKEN (tok-…) and HOST (optional); what a
// subject sets is kept in memory, merged as the bridge merges it.
type fakeCredentials struct {
	// mu guards the rest.
	mu          sync.Mutex
	stored      map[string]map[string]string // subject → vars
	updated     time.Time
	provisioned map[string][]string // subject → names
	sets        []map[string]string // what each Set was given
	deletes     int
}

var notesSpecs = []CredentialSpec{{Name: "API_TOKEN", Description: "your API token", Pattern: `tok-[a-z0-9-]+`, Required: true}, {Name: "HOST", Description: "your host"}}

func (f *fakeCredentials) Declared(dest string) ([]CredentialSpec, bool) {
	if dest != "notes" {
		return nil, false
	}
	return notesSpecs, true
}

func (f *fakeCredentials) Names(dest, subject string) (CredentialNames, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out CredentialNames
	for k := range f.stored[subject] {
		out.Stored = append(out.Stored, k)
	}
	slices.Sort(out.Stored)
	out.Updated = f.updated
	out.Provisioned = f.provisioned[subject]
	return out, nil
}

func (f *fakeCredentials) Set(dest, subject, display string, vars map[string]string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sets = append(f.sets, maps.Clone(vars))
	if f.stored == nil {
		f.stored = map[string]map[string]string{}
	}
	if f.stored[subject] == nil {
		f.stored[subject] = map[string]string{}
	}
	maps.Copy(f.stored[subject], vars)
	f.updated = time.Date(2030, 1, 2, 3, 4, 0, 0, time.UTC)
	return nil
}

func (f *fakeCredentials) Delete(dest, subject string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deletes++
	delete(f.stored, subject)
	return nil
}

func (f *fakeCredentials) setCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.sets)
}

const notesPage = PathCredentials + "/notes"

// pageClient is one browser on the credentials page: its cookies, its
// address, and every answer it got (searched for values).
type pageClient struct {
	t       *testing.T
	srv     *Server
	remote  string
	cookies map[string]*http.Cookie
	seen    []string
}

func newPageClient(t *testing.T, srv *Server, remote string) *pageClient {
	return &pageClient{t: t, srv: srv, remote: remote, cookies: map[string]*http.Cookie{}}
}

func (p *pageClient) keep(rec *httptest.ResponseRecorder) *httptest.ResponseRecorder {
	for _, c := range rec.Result().Cookies() {
		if c.MaxAge < 0 {
			delete(p.cookies, c.Name)
		} else {
			p.cookies[c.Name] = c
		}
	}
	var hdr strings.Builder
	_ = rec.Header().Write(&hdr)
	p.seen = append(p.seen, hdr.String()+rec.Body.String())
	return rec
}

func (p *pageClient) get(path string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	for _, c := range p.cookies {
		req.AddCookie(c)
	}
	return p.keep(serve(p.srv, req, p.remote))
}

// post sends form to path as a same-origin form would (Origin and
// Sec-Fetch-Site of the page), with header pairs over them ("" drops one).
func (p *pageClient) post(path string, form url.Values, header ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "https://bridge.example")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	for i := 0; i+1 < len(header); i += 2 {
		if header[i+1] == "" {
			req.Header.Del(header[i])
		} else {
			req.Header.Set(header[i], header[i+1])
		}
	}
	for _, c := range p.cookies {
		req.AddCookie(c)
	}
	return p.keep(serve(p.srv, req, p.remote))
}

var pageCSRF = regexp.MustCompile(`name="csrf" value="([^"]*)"`)

// csrf is the CSRF field of the page at path.
func (p *pageClient) csrf(path string) string {
	p.t.Helper()
	rec := p.get(path)
	m := pageCSRF.FindStringSubmatch(rec.Body.String())
	if m == nil {
		p.t.Fatalf("no form on %s: %d %s", path, rec.Code, rec.Body)
	}
	return m[1]
}

// signIn signs in on the page as name with secret.
func (p *pageClient) signIn(name, secret string) *httptest.ResponseRecorder {
	p.t.Helper()
	return p.post(notesPage, url.Values{"action": {"signin"}, "csrf": {p.csrf(notesPage)}, "name": {name}, "secret": {secret}})
}

// act posts a signed-in form (action, and name=value pairs).
func (p *pageClient) act(action string, kv ...string) *httptest.ResponseRecorder {
	p.t.Helper()
	form := url.Values{"action": {action}, "csrf": {p.csrf(notesPage)}}
	for i := 0; i+1 < len(kv); i += 2 {
		form.Add(kv[i], kv[i+1])
	}
	return p.post(notesPage, form)
}

// credentialsServer is usersServer with the fake bridge side and the users
// alice and bob.
func credentialsServer(t *testing.T) (*Server, *fakeCredentials) {
	srv := usersServer(t, "", nil)
	f := &fakeCredentials{}
	srv.SetCredentials(f)
	addUser(t, srv, "alice", "alice's secret 1")
	addUser(t, srv, "bob", "bob's own secret")
	return srv, f
}

// TestCredentialsPageSignIn: the page shows nothing of a destination's
// variables before a sign-in with name and secret, under the approval
// page's lockout and counts; the trusted-browser cookie pre-fills the name
// and never stands for the secret; a sign-in is an HttpOnly, SameSite
// Strict cookie of the page's path; the page's headers are the approval
// page's.
func TestCredentialsPageSignIn(t *testing.T) {
	bare := usersServer(t, "", nil)
	if rec := serve(bare, httptest.NewRequest(http.MethodGet, notesPage, nil), "192.0.2.1:4000"); rec.Code != http.StatusNotFound {
		t.Errorf("the page with no bridge behind it: %d, want 404", rec.Code)
	}
	srv, f := credentialsServer(t)
	alice := newPageClient(t, srv, "192.0.2.10:4000")
	for _, path := range []string{PathCredentials, PathCredentials + "/", PathCredentials + "/files", PathCredentials + "/notes/x"} {
		if rec := alice.get(path); rec.Code != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, rec.Code)
		}
	}
	rec := alice.get(notesPage)
	body := rec.Body.String()
	if rec.Code != http.StatusOK || !strings.Contains(body, `name="secret"`) || !strings.Contains(body, `name="name"`) || strings.Contains(body, "API_TOKEN") {
		t.Fatalf("the page before a sign-in: %d; want the sign-in form and no variable\n%s", rec.Code, body)
	}
	h := rec.Header()
	if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "frame-ancestors 'none'") ||
		h.Get("Cache-Control") != "no-store" || h.Get("X-Frame-Options") != "DENY" || h.Get("Referrer-Policy") != "same-origin" {
		t.Errorf("the page's headers: %v", h)
	}
	if c := alice.cookies[csrfCookie]; c == nil || c.Path != PathCredentials || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode {
		t.Errorf("the sign-in form's CSRF cookie: %+v", c)
	}

	// Signed in: a cookie of the page's own, then the variables.
	if rec := alice.signIn("alice", "not alice's secret"); rec.Code != http.StatusUnauthorized || alice.cookies[credSignInCookie] != nil {
		t.Errorf("a wrong secret: %d, want 401 and no sign-in", rec.Code)
	}
	rec = alice.signIn("alice", "alice's secret 1")
	c := alice.cookies[credSignInCookie]
	if rec.Code != http.StatusSeeOther || c == nil || !c.HttpOnly || !c.Secure || c.SameSite != http.SameSiteStrictMode || c.Path != PathCredentials {
		t.Fatalf("alice's sign-in: %d, cookie %+v", rec.Code, c)
	}
	page := alice.get(notesPage).Body.String()
	if !strings.Contains(page, "API_TOKEN") || !strings.Contains(page, "HOST") || !strings.Contains(page, `id="name">alice<`) || !strings.Contains(page, "Not set.") {
		t.Errorf("alice's page after her sign-in:\n%s", page)
	}

	// Her trusted-browser cookie pre-fills her name on a new sign-in, and
	// does not sign her in: the secret is asked, and a wrong one refused.
	browser := newPageClient(t, srv, "192.0.2.11:4000")
	browser.cookies[userCookie] = alice.cookies[userCookie]
	if browser.cookies[userCookie] == nil {
		t.Fatal("alice's sign-in set no trusted-browser cookie")
	}
	if body := browser.get(notesPage).Body.String(); !strings.Contains(body, `value="alice"`) || strings.Contains(body, "API_TOKEN") {
		t.Errorf("the page in alice's trusted browser: want her name pre-filled and no variable\n%s", body)
	}
	for _, secret := range []string{"", "wrong secret!!"} {
		if rec := browser.signIn("alice", secret); rec.Code != http.StatusUnauthorized || browser.cookies[credSignInCookie] != nil {
			t.Errorf("alice's trusted browser with secret %q: %d, want 401", secret, rec.Code)
		}
	}
	if rec := browser.act("set", "v_API_TOKEN", "tok-planted"); rec.Code != http.StatusUnauthorized || f.setCount() != 0 {
		t.Errorf("a set from the trusted browser without a sign-in: %d, %d sets", rec.Code, f.setCount())
	}

	// The lockout is the approval page's: guesses at bob here hold his
	// sign-in on the approval page too; alice (signed in) is untouched.
	guesser := newPageClient(t, srv, "203.0.113.9:4000")
	for range freeFailures + 1 {
		guesser.signIn("bob", "guess guess guess")
	}
	if rec := guesser.signIn("bob", "bob's own secret"); rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" {
		t.Errorf("bob after guesses on the credentials page: %d, want 429 with Retry-After", rec.Code)
	}
	if rec := signIn(srv, "192.0.2.77:4000", "bob", "bob's own secret"); rec.Code != http.StatusTooManyRequests {
		t.Errorf("bob on the approval page after guesses on the credentials page: %d, want 429 (one lockout)", rec.Code)
	}
	if rec := alice.get(notesPage); !strings.Contains(rec.Body.String(), `id="name">alice<`) {
		t.Error("alice's sign-in was held by the guesses at bob")
	}
	// The operator signs in with the passphrase and no name.
	op := newPageClient(t, srv, "127.0.0.1:4000")
	if rec := op.signIn("", testPassphrase); rec.Code != http.StatusSeeOther || !strings.Contains(op.get(notesPage).Body.String(), `id="name">operator<`) {
		t.Errorf("the operator's sign-in: %d", rec.Code)
	}
}

// TestCredentialsPageRefusals: a change needs a live sign-in of an active
// user, the CSRF token of that sign-in, the page's own origin and a body
// of at most 64 KiB; a sign-in needs the sign-in form's CSRF token and the
// page's origin. Nothing refused reaches the bridge.
func TestCredentialsPageRefusals(t *testing.T) {
	srv, f := credentialsServer(t)
	alice, bob := newPageClient(t, srv, "192.0.2.10:4000"), newPageClient(t, srv, "192.0.2.20:4000")
	alice.signIn("alice", "alice's secret 1")
	bob.signIn("bob", "bob's own secret")
	aliceCSRF, bobCSRF := alice.csrf(notesPage), bob.csrf(notesPage)
	set := func(csrf string) url.Values {
		return url.Values{"action": {"set"}, "csrf": {csrf}, "v_API_TOKEN": {"tok-refused-s3cret"}}
	}
	stranger := newPageClient(t, srv, "192.0.2.30:4000")
	strangerCSRF := stranger.csrf(notesPage)
	for _, tc := range []struct {
		name   string
		p      *pageClient
		form   url.Values
		header []string
		want   int
	}{
		{"no sign-in", stranger, set(strangerCSRF), nil, http.StatusUnauthorized},
		{"no CSRF token", alice, set(""), nil, http.StatusForbidden},
		{"a wrong CSRF token", alice, set("not-the-token"), nil, http.StatusForbidden},
		{"bob's CSRF token with alice's sign-in", alice, set(bobCSRF), nil, http.StatusForbidden},
		{"the sign-in form's token", alice, set(alice.cookies[csrfCookie].Value), nil, http.StatusForbidden},
		{"from another origin", alice, set(aliceCSRF), []string{"Origin", "https://evil.example"}, http.StatusForbidden},
		{"from an opaque origin", alice, set(aliceCSRF), []string{"Origin", "null"}, http.StatusForbidden},
		{"the bridge's host over http", alice, set(aliceCSRF), []string{"Origin", "http://bridge.example.evil"}, http.StatusForbidden},
		{"from another site", alice, set(aliceCSRF), []string{"Origin", "", "Sec-Fetch-Site", "cross-site"}, http.StatusForbidden},
		{"from a sibling site", alice, set(aliceCSRF), []string{"Origin", "", "Sec-Fetch-Site", "same-site"}, http.StatusForbidden},
		{"a body over 64 KiB", alice, url.Values{"action": {"set"}, "csrf": {aliceCSRF}, "v_API_TOKEN": {"tok-" + strings.Repeat("a", 64<<10)}}, nil, http.StatusRequestEntityTooLarge},
		{"delete from another origin", alice, url.Values{"action": {"delete"}, "csrf": {aliceCSRF}}, []string{"Origin", "https://evil.example"}, http.StatusForbidden},
		{"a sign-in without its form's token", stranger, url.Values{"action": {"signin"}, "csrf": {"forged"}, "name": {"alice"}, "secret": {"alice's secret 1"}}, nil, http.StatusForbidden},
		{"a sign-in from another origin", stranger, url.Values{"action": {"signin"}, "csrf": {strangerCSRF}, "name": {"alice"}, "secret": {"alice's secret 1"}}, []string{"Origin", "https://evil.example"}, http.StatusForbidden},
	} {
		if rec := tc.p.post(notesPage, tc.form, tc.header...); rec.Code != tc.want {
			t.Errorf("%s: %d, want %d\n%s", tc.name, rec.Code, tc.want, rec.Body)
		}
	}
	if n := f.setCount(); n != 0 || f.deletes != 0 {
		t.Fatalf("refused forms reached the bridge: %d sets, %d deletes", n, f.deletes)
	}
	if stranger.cookies[credSignInCookie] != nil {
		t.Error("a refused sign-in signed the browser in")
	}
	// The same form from the page's origin is taken (the refusals were
	// the guards'); a form without Origin nor Sec-Fetch-Site (no browser)
	// still needs the sign-in and its token.
	if rec := alice.post(notesPage, set(aliceCSRF)); rec.Code != http.StatusSeeOther || f.setCount() != 1 {
		t.Errorf("alice's form from the page: %d, %d sets", rec.Code, f.setCount())
	}
	if rec := bob.post(notesPage, set(bobCSRF), "Origin", "", "Sec-Fetch-Site", ""); rec.Code != http.StatusSeeOther || f.setCount() != 2 {
		t.Errorf("bob's form without Origin: %d, %d sets", rec.Code, f.setCount())
	}
	// Disabled: bob's sign-in ends at once.
	if _, err := srv.DisableUser("bob"); err != nil {
		t.Fatal(err)
	}
	if rec := bob.post(notesPage, set(bobCSRF)); rec.Code != http.StatusUnauthorized || f.setCount() != 2 {
		t.Errorf("a disabled user's form: %d, %d sets", rec.Code, f.setCount())
	}
	if rec := bob.signIn("bob", "bob's own secret"); rec.Code != http.StatusForbidden {
		t.Errorf("a disabled user's sign-in: %d, want 403", rec.Code)
	}
	// A sign-in lasts credSignInFor.
	now := time.Now().Add(credSignInFor + time.Second)
	srv.now = func() time.Time { return now }
	if rec := alice.post(notesPage, set(aliceCSRF)); rec.Code != http.StatusUnauthorized || f.setCount() != 2 {
		t.Errorf("a sign-in past its %s: %d", credSignInFor, rec.Code)
	}
}

// TestCredentialsPageValues: values are checked before they reach the
// bridge (declared names only, the pattern, no NUL), each problem naming
// the variable and never the value; an empty field leaves its variable as
// it is; the page says what is set and when and never shows a value back,
// in any answer; delete deletes.
func TestCredentialsPageValues(t *testing.T) {
	srv, f := credentialsServer(t)
	alice := newPageClient(t, srv, "192.0.2.10:4000")
	alice.signIn("alice", "alice's secret 1")
	const good, good2, host = "tok-alice-s3cret-1", "tok-alice-s3cret-2", "alice-host.s3cret.example"
	refused := []string{"nope-s3cret-value", "tok-with\x00nul", "LD-s3cret-value", "s3cret-in-a-bad-name"}
	for _, tc := range []struct {
		name string
		kv   []string
		want []string
	}{
		{"a value not of its pattern", []string{"v_API_TOKEN", refused[0]}, []string{"API_TOKEN: does not have the expected form (your API token)"}},
		{"a NUL byte", []string{"v_API_TOKEN", refused[1]}, []string{"API_TOKEN: not storable"}},
		{"an undeclared variable", []string{"v_API_TOKEN", good, "v_LD_PRELOAD", refused[2]}, []string{"LD_PRELOAD: not a variable this destination asks for"}},
		{"a name that is not one", []string{"v_API_TOKEN", good, "v_bad name", refused[3]}, []string{"a variable with an invalid name"}},
		{"a required one missing", []string{"v_HOST", host}, []string{"API_TOKEN: required and not given"}},
		{"nothing typed", []string{"v_API_TOKEN", "", "v_HOST", ""}, []string{"Nothing was changed"}},
	} {
		rec := alice.act("set", tc.kv...)
		for _, want := range tc.want {
			if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), want) {
				t.Errorf("%s: %d, want 400 saying %q\n%s", tc.name, rec.Code, want, rec.Body)
			}
		}
	}
	if n := f.setCount(); n != 0 {
		t.Fatalf("refused values reached the bridge (%d sets)", n)
	}
	// Good values: given to the bridge as typed; the page says set and
	// when, and the next page says so once.
	if rec := alice.act("set", "v_API_TOKEN", good, "v_HOST", ""); rec.Code != http.StatusSeeOther {
		t.Fatalf("a good value: %d %s", rec.Code, rec.Body)
	}
	page := alice.get(notesPage).Body.String()
	if !strings.Contains(page, "Saved: API_TOKEN.") || !strings.Contains(page, "Set (2030-01-02 03:04 UTC)") || !strings.Contains(page, `id="delete"`) {
		t.Errorf("the page after a set:\n%s", page)
	}
	if strings.Contains(alice.get(notesPage).Body.String(), "Saved:") {
		t.Error("the notice was shown twice")
	}
	// An empty field leaves its variable: only HOST goes to the bridge.
	alice.act("set", "v_API_TOKEN", "", "v_HOST", host)
	alice.act("set", "v_API_TOKEN", good2)
	f.mu.Lock()
	sets := slices.Clone(f.sets)
	f.mu.Unlock()
	if len(sets) != 3 || !maps.Equal(sets[0], map[string]string{"API_TOKEN": good}) || !maps.Equal(sets[1], map[string]string{"HOST": host}) || !maps.Equal(sets[2], map[string]string{"API_TOKEN": good2}) {
		t.Errorf("what the bridge was given: %v", sets)
	}
	if rec := alice.act("delete"); rec.Code != http.StatusSeeOther || f.deletes != 1 {
		t.Errorf("delete: %d, %d deletes", rec.Code, f.deletes)
	}
	if page := alice.get(notesPage).Body.String(); !strings.Contains(page, "were deleted") || strings.Contains(page, `id="delete"`) || !strings.Contains(page, "Not set.") {
		t.Errorf("the page after delete:\n%s", page)
	}
	// A required variable the operator provisioned for her is not
	// missing: HOST alone is taken, and the page says whose API_TOKEN is.
	users, _ := srv.Users()
	for _, u := range users {
		if u.Name == "alice" {
			f.mu.Lock()
			f.provisioned = map[string][]string{u.Subject: {"API_TOKEN"}}
			f.mu.Unlock()
		}
	}
	if rec := alice.act("set", "v_HOST", host); rec.Code != http.StatusSeeOther {
		t.Errorf("HOST alone over a provisioned API_TOKEN: %d\n%s", rec.Code, rec.Body)
	}
	if page := alice.get(notesPage).Body.String(); !strings.Contains(page, "Provisioned for you by the operator") {
		t.Errorf("the page does not say API_TOKEN was provisioned:\n%s", page)
	}
	// No value, nor the refused ones, in any answer.
	for _, v := range append([]string{good, good2, host}, refused...) {
		for i, seen := range alice.seen {
			if strings.Contains(seen, v) || strings.Contains(seen, url.QueryEscape(v)) || strings.Contains(seen, strings.ReplaceAll(v, "\x00", "\uFFFD")) {
				t.Errorf("answer %d holds a value typed (%.12s…)", i, v)
			}
		}
	}
	// Signing out ends the sign-in.
	alice.act("signout")
	if rec := alice.get(notesPage); strings.Contains(rec.Body.String(), "API_TOKEN") {
		t.Error("the page after signing out shows the variables")
	}
}

// TestApprovalAsksForCredentials: approving a client for a destination
// that asks for credentials its user has not entered sends the browser to
// the credentials page, signed in; once saved (or skipped), the browser
// goes on to the client with its code, which gives the user's tokens. A
// user who entered them goes straight to the client.
func TestApprovalAsksForCredentials(t *testing.T) {
	srv, f := credentialsServer(t)
	alice := newPageClient(t, srv, "192.0.2.10:4000")
	q := url.Values{"response_type": {"code"}, "client_id": {"app"}, "redirect_uri": {"https://app.example/cb"}, "state": {"s"},
		"code_challenge": {testChallenge}, "code_challenge_method": {"S256"}, "resource": {"https://bridge.example/notes/mcp"}}
	approve := func(p *pageClient, name, secret string) *httptest.ResponseRecorder {
		t.Helper()
		rec := p.get(PathAuthorize + "?" + q.Encode())
		m := pageCSRF.FindStringSubmatch(rec.Body.String())
		if m == nil {
			t.Fatalf("the approval page: %d %s", rec.Code, rec.Body)
		}
		return p.post(PathAuthorize, url.Values{"query": {q.Encode()}, "csrf": {m[1]}, "name": {name}, "passphrase": {secret}, "decision": {"approve"}})
	}
	exchange := func(rec *httptest.ResponseRecorder) string {
		t.Helper()
		code := codeOf(rec)
		if code == "" {
			t.Fatalf("no code: %d %s %s", rec.Code, rec.Header().Get("Location"), rec.Body)
		}
		if loc, _ := url.Parse(rec.Header().Get("Location")); !strings.HasPrefix(loc.String(), "https://app.example/cb?") || loc.Query().Get("state") != "s" {
			t.Errorf("the client's redirect: %s", loc)
		}
		status, out := tokenForm(t, srv, url.Values{"grant_type": {"authorization_code"}, "client_id": {"app"}, "code": {code}, "code_verifier": {testVerifier}})
		if status != http.StatusOK {
			t.Fatalf("exchange: %d %v", status, out)
		}
		return subjectOf(srv, out["access_token"].(string))
	}
	users, _ := srv.Users()
	subject := map[string]string{}
	for _, u := range users {
		subject[u.Name] = u.Subject
	}

	rec := approve(alice, "alice", "alice's secret 1")
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != notesPage || alice.cookies[credSignInCookie] == nil {
		t.Fatalf("approval without credentials: %d to %q; want 303 to the credentials page, signed in", rec.Code, rec.Header().Get("Location"))
	}
	if page := alice.get(notesPage).Body.String(); !strings.Contains(page, `id="continue-note"`) || !strings.Contains(page, `id="name">alice<`) {
		t.Errorf("the credentials page after the approval:\n%s", page)
	}
	// A refused value keeps her there; a good one sends her on.
	if rec := alice.act("set", "v_API_TOKEN", "not-a-token"); rec.Code != http.StatusBadRequest {
		t.Errorf("a refused value after the approval: %d", rec.Code)
	}
	if got := exchange(alice.act("set", "v_API_TOKEN", "tok-alice")); got != subject["alice"] {
		t.Errorf("the token after the credentials page is for %q, want alice's %q", got, subject["alice"])
	}
	// Once: the page no longer sends her on.
	if page := alice.get(notesPage).Body.String(); strings.Contains(page, `id="continue-note"`) {
		t.Error("the approval was continued twice")
	}
	// With them set, the approval gives the code at once.
	if got := exchange(approve(alice, "alice", "alice's secret 1")); got != subject["alice"] {
		t.Errorf("alice's second approval: sub %q", got)
	}
	// bob goes on without them; and the operator (no name) is asked too.
	bob := newPageClient(t, srv, "192.0.2.20:4000")
	if rec := approve(bob, "bob", "bob's own secret"); rec.Code != http.StatusSeeOther {
		t.Fatalf("bob's approval: %d", rec.Code)
	}
	if got := exchange(bob.act("continue")); got != subject["bob"] {
		t.Errorf("bob, going on without credentials: sub %q", got)
	}
	op := newPageClient(t, srv, "127.0.0.1:4000")
	if rec := approve(op, "", testPassphrase); rec.Code != http.StatusSeeOther || !strings.Contains(op.get(notesPage).Body.String(), `id="name">operator<`) {
		t.Errorf("the operator's approval: %d %s", rec.Code, rec.Header().Get("Location"))
	}
	// The operator provisioned bob's: no page.
	f.mu.Lock()
	f.provisioned = map[string][]string{subject["bob"]: {"API_TOKEN"}}
	f.mu.Unlock()
	if got := exchange(approve(bob, "bob", "bob's own secret")); got != subject["bob"] {
		t.Errorf("bob with provisioned credentials: sub %q", got)
	}
	// A user disabled between the approval and the page: no code.
	carol := newPageClient(t, srv, "192.0.2.40:4000")
	addUser(t, srv, "carol", "carol's secret!")
	approve(carol, "carol", "carol's secret!")
	if _, err := srv.DisableUser("carol"); err != nil {
		t.Fatal(err)
	}
	if rec := carol.act("continue"); codeOf(rec) != "" {
		t.Error("a disabled user's approval went on")
	}
}
