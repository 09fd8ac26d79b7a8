//go:build unix

package tests

// The built-in server's credentials page in headless Chromium: invited users enter their own
// credentials and each user's child gets theirs alone; a user without one gets the stand-in's
// error; disabling a user stops only their child.

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/stelae-bridge/stelae-bridge/authserver"
	"github.com/stelae-bridge/stelae-bridge/bridge"
	"github.com/stelae-bridge/stelae-bridge/config"
	"github.com/stelae-bridge/stelae-bridge/credstore"
	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

// TestCredentialsPageEndToEnd: the built-in server's invited users enter
// their own credentials on the credentials page in headless Chromium and
// each user's child has theirs alone. The operator invites alice and bob;
// each sets a secret through the invite page; alice signs in on the
// credentials page and enters her token (the page never shows it back),
// then gets an access token through the approval page; bob approves a
// client first, and the approval sends his browser to the credentials
// page, then on to the client with the code. Each user's sessions (and
// 2026-07-28 requests) share one child of theirs that reads their own
// value; carol, who went on without entering hers, gets the stand-in's
// tool error naming the page's URL; disabling alice stops her child at
// once and leaves bob's.
func TestCredentialsPageEndToEnd(t *testing.T) {
	chromium(t)
	dir := t.TempDir()
	as, err := authserver.Open(filepath.Join(dir, "oauth.db"), authserver.Options{Passphrase: testPassphrase})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { as.Close() })
	key, err := credstore.LoadKey(filepath.Join(dir, "credentials.key"), "")
	if err != nil {
		t.Fatal(err)
	}
	store, err := credstore.Open(filepath.Join(dir, "credentials.db"), key, credstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	addr := freeAddr(t)
	b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{
		opts:        bridge.Options{CredStore: store, PublicURL: "http://" + addr},
		addr:        addr,
		auth:        &config.Auth{Issuer: config.IssuerBuiltin},
		authServer:  as,
		isolation:   config.IsolationUser,
		credentials: []config.Credential{{Name: "API_TOKEN", Description: "your API token", Pattern: regexp.MustCompile(`^tok-`)}},
	})
	base := b.srv.URL
	pagePath := base + authserver.PathCredentials + "/fake"
	const aliceValue, bobValue = "tok-alice-e2e-s3cret", "tok-bob-e2e-s3cret"
	secrets := map[string]string{"alice": "alice's secret 1", "bob": "bob's own secret", "carol": "carol's secret!"}
	codes := map[string]string{}
	for _, name := range []string{"alice", "bob", "carol"} {
		code, _, _, err := as.InviteUser(name)
		if err != nil {
			t.Fatal(err)
		}
		codes[name] = code
	}

	browser := browserFor(t)
	ctx, cancel := context.WithTimeout(browser, 3*time.Minute)
	defer cancel()
	pg := &page{t: t, ctx: ctx}
	do := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			html, _ := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("body")))
			t.Fatalf("%s: %v\n%s", what, err, html)
		}
	}
	noValue := func(where string) {
		t.Helper()
		h := eval[string](pg, `document.documentElement.outerHTML`)
		for _, v := range []string{aliceValue, bobValue} {
			if strings.Contains(h, v) {
				t.Errorf("%s holds a credential's value", where)
			}
		}
	}
	setSecretInBrowser := func(name string) {
		t.Helper()
		do(name+"'s invite page", chromedp.Navigate(base+authserver.PathInvite+"?code="+url.QueryEscape(codes[name])),
			chromedp.WaitVisible(chromedp.CSS("#secret")),
			chromedp.SendKeys(chromedp.CSS("#secret"), secrets[name]), chromedp.SendKeys(chromedp.CSS("#confirm"), secrets[name]),
			chromedp.Click(chromedp.CSS("#set")))
		pg.waitJS(name+"'s secret to be set", `document.querySelector("#done")`)
	}

	// alice: her secret, then the credentials page — sign in, enter her
	// token, see it set (never shown), sign out.
	setSecretInBrowser("alice")
	do("the credentials page", chromedp.Navigate(pagePath), chromedp.WaitVisible(chromedp.CSS("#signin")))
	if v := eval[bool](pg, `!!document.querySelector("#v_API_TOKEN")`); v {
		t.Error("the credentials page shows the form before a sign-in")
	}
	do("alice's sign-in", chromedp.SendKeys(chromedp.CSS("#name"), "alice"), chromedp.SendKeys(chromedp.CSS("#secret"), secrets["alice"]), chromedp.Click(chromedp.CSS("#signin")))
	pg.waitJS("alice's variables", `document.querySelector("#v_API_TOKEN") && /Not set/.test(document.querySelector("#state-API_TOKEN").textContent)`)
	if got := pg.text("#name"); got != "alice" {
		t.Errorf("signed in as %q", got)
	}
	// A value not of the pattern: refused, named, not shown back.
	do("a wrong value", chromedp.SendKeys(chromedp.CSS("#v_API_TOKEN"), "not-a-token-s3cret"), chromedp.Click(chromedp.CSS("#save")))
	pg.waitJS("the refusal", `document.querySelector("#problems") && /API_TOKEN: does not have the expected form/.test(document.querySelector("#problems").textContent)`)
	if h := eval[string](pg, `document.documentElement.outerHTML`); strings.Contains(h, "not-a-token-s3cret") || eval[string](pg, `document.querySelector("#v_API_TOKEN").value`) != "" {
		t.Error("the refused value was shown back")
	}
	do("alice's token", chromedp.SendKeys(chromedp.CSS("#v_API_TOKEN"), aliceValue), chromedp.Click(chromedp.CSS("#save")))
	pg.waitJS("alice's token to be saved", `document.querySelector("#notice") && /Saved: API_TOKEN/.test(document.querySelector("#notice").textContent) && /^Set \(/.test(document.querySelector("#state-API_TOKEN").textContent)`)
	noValue("alice's page after she saved")
	do("alice's sign-out", chromedp.Click(chromedp.CSS("#signout")))
	pg.waitJS("the sign-in form again", `document.querySelector("#signin") && !document.querySelector("#v_API_TOKEN")`)
	// Her trusted-browser cookie pre-fills her name, never her secret.
	if name, secret := eval[string](pg, `document.querySelector("#name").value`), eval[string](pg, `document.querySelector("#secret").value`); name != "alice" || secret != "" {
		t.Errorf("the sign-in form after alice's sign-out: name %q, secret %q; want her name only", name, secret)
	}

	// alice's access token, through the approval page (with her name and
	// secret): her credentials are in, so the client gets its code at once.
	aliceClient := newOAuthClient(t, base)
	aliceClient.register()
	verifier, challenge := pkce("alice")
	aliceTok, _ := aliceClient.exchange(aliceClient.codeFrom(aliceClient.approveAs(aliceClient.authorizeURL(challenge, b.url("fake")), "alice", secrets["alice"])), verifier)

	// bob: his secret, then an approval in the browser; the page sends him
	// to the credentials page, signed in, then on to the client.
	setSecretInBrowser("bob")
	arrived := make(chan string, 1)
	cb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/callback" {
			http.NotFound(w, r)
			return
		}
		select {
		case arrived <- r.URL.String():
		default:
		}
		fmt.Fprint(w, "<p>back at the client</p>")
	}))
	defer cb.Close()
	bobClient := newOAuthClient(t, base)
	bobClient.redirectURI = cb.URL + "/callback"
	bobClient.register()
	verifier, challenge = pkce("bob")
	do("bob's approval page", chromedp.Navigate(bobClient.authorizeURL(challenge, b.url("fake"))), chromedp.WaitVisible(chromedp.CSS("#approve")),
		chromedp.SendKeys(chromedp.CSS("#name"), "bob"),
		chromedp.SendKeys(chromedp.CSS("#passphrase"), secrets["bob"]), chromedp.Click(chromedp.CSS("#approve")))
	pg.waitJS("the credentials page after bob's approval", `document.querySelector("#continue-note") && document.querySelector("#v_API_TOKEN") && document.querySelector("#name").textContent === "bob"`)
	do("bob's token", chromedp.SendKeys(chromedp.CSS("#v_API_TOKEN"), bobValue), chromedp.Click(chromedp.CSS("#save")))
	var got string
	select {
	case got = <-arrived:
	case <-ctx.Done():
		t.Fatal("bob's browser did not go on to the client after his credentials were saved")
	}
	u, _ := url.Parse(got)
	if u.Query().Get("code") == "" || u.Query().Get("state") != "st-1" || u.Query().Get("iss") != base {
		t.Fatalf("bob's browser arrived at %s; want the callback with code, state and iss", got)
	}
	bobTok, _ := bobClient.exchange(u.Query().Get("code"), verifier)

	// carol approves and goes on without entering hers (a client of her
	// own, driven by hand): her calls get the stand-in, which names the
	// page.
	carolClient := newOAuthClient(t, base)
	carolClient.register()
	setSecret := carolClient.get(base + authserver.PathInvite + "?code=" + url.QueryEscape(codes["carol"]))
	carolClient.postForm(base+authserver.PathInvite, url.Values{"code": {codes["carol"]}, "csrf": {formField(t, setSecret, "csrf")}, "secret": {secrets["carol"]}, "confirm": {secrets["carol"]}})
	verifier, challenge = pkce("carol")
	resp := carolClient.approveAs(carolClient.authorizeURL(challenge, b.url("fake")), "carol", secrets["carol"])
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != authserver.PathCredentials+"/fake" {
		t.Fatalf("carol's approval without credentials: %d %s; want the credentials page", resp.StatusCode, resp.Header.Get("Location"))
	}
	onPage := carolClient.get(pagePath)
	carolTok, _ := carolClient.exchange(carolClient.codeFrom(carolClient.postForm(pagePath, url.Values{"action": {"continue"}, "csrf": {formField(t, onPage, "csrf")}})), verifier)

	// Each user's calls: their own value, their own child; alice's two
	// sessions and her 2026-07-28 request on one.
	mcpURL := b.url("fake")
	sessionOf := func(token string) *client {
		c := authedClient(t, mcpURL, token)
		c.initialize()
		return c
	}
	alice1, alice2, bob := sessionOf(aliceTok), sessionOf(aliceTok), sessionOf(bobTok)
	for _, tc := range []struct {
		who  string
		c    *client
		want string
	}{{"alice's first session", alice1, aliceValue}, {"alice's second session", alice2, aliceValue}, {"bob's session", bob, bobValue}} {
		if v, isErr, text := getenvCall(t, tc.c, "API_TOKEN"); isErr || v != tc.want {
			t.Errorf("%s reads API_TOKEN %q (error %v: %.200s); want its user's own", tc.who, v, isErr, text)
		}
	}
	pidA, pidB := whoamiCall(t, alice1).PID, whoamiCall(t, bob).PID
	if p := whoamiCall(t, alice2).PID; p != pidA {
		t.Errorf("alice's two sessions have children %d and %d; want one", pidA, p)
	}
	if p, r := modernWhoami(t, mcpURL, aliceTok); p != pidA {
		t.Errorf("alice's 2026-07-28 request reached child %d (%d %.200s); want her sessions' %d", p, r.status, r.body, pidA)
	}
	if pidB == pidA {
		t.Fatalf("alice and bob share child %d", pidA)
	}
	carol := sessionOf(carolTok)
	if v, isErr, text := getenvCall(t, carol, "API_TOKEN"); !isErr || v != "" || !strings.Contains(text, pagePath) {
		t.Errorf("carol without credentials: %q %v %q; want the stand-in's tool error naming %s", v, isErr, text, pagePath)
	}

	// bob's client revoked: his token is refused and his child stops at
	// once; alice's child and sessions, and carol's, go on.
	if err := as.RevokeClient(bobClient.id); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "bob's child to stop", func() bool { return !alive(pidB) })
	if r := bob.callTool(`"r"`, "whoami", nil); r.status != http.StatusUnauthorized {
		t.Errorf("bob's session after his client was revoked: %d %.200s; want 401", r.status, r.body)
	}
	if p := whoamiCall(t, alice1).PID; p != pidA {
		t.Errorf("alice's child changed (%d, was %d) when bob's client was revoked", p, pidA)
	}
	if _, isErr, _ := getenvCall(t, carol, "API_TOKEN"); !isErr {
		t.Error("carol's session changed when bob's client was revoked")
	}

	// alice disabled: her child stops at once; carol's session goes on.
	if _, err := as.DisableUser("alice"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "alice's child to stop", func() bool { return !alive(pidA) })
	if _, isErr, _ := getenvCall(t, carol, "API_TOKEN"); !isErr {
		t.Error("carol's session changed when alice was disabled")
	}
	// The values are in the children only.
	for _, v := range []string{aliceValue, bobValue} {
		if strings.Contains(b.logs.String(), v) {
			t.Error("the bridge's log holds a credential's value")
		}
	}
}
