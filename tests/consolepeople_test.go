//go:build unix

package tests

// The console's People panel (issue 35) in headless Chromium: inviting, disabling, enabling and
// removing the built-in server's users, each with a child of their own; each invite link shows in
// the invite's answer and nowhere else.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/stelae-bridge/stelae-bridge/authserver"
	"github.com/stelae-bridge/stelae-bridge/bridge"
	"github.com/stelae-bridge/stelae-bridge/config"
	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

// TestConsolePeople (issue 35): the console manages the built-in server's
// users, in headless Chromium over a real bridge with a child per user.
// The operator invites alice, bob and carol from the People panel: each
// answer shows that person's one-time link (under -public-url, whole) and
// nothing else ever does — not the console's state, its event stream, its
// log tail, the page once dismissed, nor the bridge's log. A name already
// a user's and a name no user may have are refused, saying why. alice
// sets her secret on the invite page in the browser, bob by hand; each
// gets a token and a child of their own. Disabling alice refuses her token
// at once and stops her child while bob's child and session go on and
// carol stays invited; enabling her leaves her old token refused; removing
// bob stops his child and refuses his token while alice's new session
// goes on. Acting on a name that passed to another person (bob removed,
// Bob invited again) is refused, and the new Bob is untouched; a new link
// for carol replaces her first.
func TestConsolePeople(t *testing.T) {
	chromium(t)
	dir := t.TempDir()
	as, err := authserver.Open(filepath.Join(dir, "oauth.db"), authserver.Options{Passphrase: testPassphrase})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { as.Close() })
	addr := freeAddr(t)
	b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{
		opts:       bridge.Options{PublicURL: "http://" + addr},
		addr:       addr,
		auth:       &config.Auth{Issuer: config.IssuerBuiltin},
		authServer: as,
		isolation:  config.IsolationUser,
	})
	as.OnUserGone(b.bridge.BuiltinUserGone) // as cmd/stelae-bridge registers it
	base := b.srv.URL
	mcpURL := b.url("fake")

	browser := browserFor(t)
	ctx, cancel := context.WithTimeout(browser, 4*time.Minute)
	defer cancel()
	pg := &page{t: t, ctx: ctx}
	do := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			html, _ := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("body")))
			t.Fatalf("%s: %v\n%s", what, err, html)
		}
	}
	// fetch is what the page's own fetch of path gets (with its cookie).
	fetch := func(path string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`fetch(%q, {cache: "no-store"}).then(r => r.text())`, path), chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("fetch %s: %v", path, err)
		}
		return v
	}
	// post is an action as the page's script sends it (its CSRF token,
	// its origin): the status and the answer.
	post := func(path, body string) (int, string) {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[[]any](fmt.Sprintf(`fetch(%q, {method: "POST", headers: {"Content-Type": "application/json",
			"X-CSRF-Token": document.querySelector('meta[name="csrf-token"]').content}, body: %q}).then(async r => [r.status, await r.text()])`, path, body), chromedp.EvalAwaitPromise))
		if err != nil || len(v) != 2 {
			t.Fatalf("POST %s: %v %v", path, err, v)
		}
		status, _ := v[0].(float64)
		text, _ := v[1].(string)
		return int(status), text
	}
	type person struct{ Name, Subject, Key, State, LastSignIn string }
	people := func() map[string]person {
		t.Helper()
		var st struct {
			PeopleEnabled bool `json:"people_enabled"`
			People        []struct {
				person
				LastSignIn string `json:"last_sign_in"`
			}
		}
		body := fetch("/console/api/state")
		if err := json.Unmarshal([]byte(body), &st); err != nil || !st.PeopleEnabled {
			t.Fatalf("the console's state: %v %.300s", err, body)
		}
		out := map[string]person{}
		for _, p := range st.People {
			p.person.LastSignIn = p.LastSignIn
			out[p.Name] = p.person
		}
		return out
	}
	notice := func(what, re string) {
		t.Helper()
		pg.waitJS(what, fmt.Sprintf(`/%s/.test(document.querySelector("#notice").textContent)`, re))
	}
	row := func(name string) string { return fmt.Sprintf(`#people-body tr[data-person=%q]`, name) }
	stateOf := func(name, want string) {
		t.Helper()
		pg.waitJS(name+" "+want+" on the page", fmt.Sprintf(`(document.querySelector('%s td.person-state')||{}).textContent === %q`, row(name), want))
	}

	// Sign in with the passphrase: the People panel, empty.
	do("the console's sign-in", chromedp.Navigate(base+"/console"), chromedp.WaitVisible(chromedp.CSS("#credential")),
		chromedp.SendKeys(chromedp.CSS("#credential"), testPassphrase), chromedp.Click(chromedp.CSS("#login-submit")))
	pg.waitJS("the People panel", `!document.querySelector("#people").hidden && /Nobody invited yet/.test(document.querySelector("#people-body").textContent)`)

	// invite invites name from the panel and returns the link the answer
	// showed, then dismisses it.
	invite := func(name string) string {
		t.Helper()
		do("inviting "+name, chromedp.SendKeys(chromedp.CSS("#invite-name"), name), chromedp.Click(chromedp.CSS("#invite")))
		pg.waitJS(name+"'s link", fmt.Sprintf(`!document.querySelector("#invite-answer").hidden && document.querySelector("#invite-link").value.startsWith(%q) && document.querySelector("#invite-message").textContent.includes(%q)`,
			"http://"+addr+authserver.PathInvite+"?code=", name))
		link := eval[string](pg, `document.querySelector("#invite-link").value`)
		do("dismissing the link", chromedp.Click(chromedp.CSS("#invite-done")))
		pg.waitJS("the link to go", `document.querySelector("#invite-answer").hidden && document.querySelector("#invite-link").value === ""`)
		return link
	}
	links := map[string]string{}
	for _, name := range []string{"alice", "bob", "carol"} {
		links[name] = invite(name)
		stateOf(name, "invited")
	}
	codeOf := func(link string) string {
		u, err := url.Parse(link)
		if err != nil || u.Query().Get("code") == "" {
			t.Fatalf("not an invite link: %q", link)
		}
		return u.Query().Get("code")
	}
	// A name already a user's, and a name no user may have: refused,
	// saying why and what to do; nothing shown as a link.
	do("inviting alice again", chromedp.SendKeys(chromedp.CSS("#invite-name"), "ALICE"), chromedp.Click(chromedp.CSS("#invite")))
	notice("the refusal of a name already a user's", `alice is already a user .*New link`)
	eval[string](pg, `document.querySelector("#invite-name").value = ""`)
	do("inviting a bad name", chromedp.SendKeys(chromedp.CSS("#invite-name"), "al ice"), chromedp.Click(chromedp.CSS("#invite")))
	notice("the refusal of a bad name", `^"al ice" cannot be a user's name: a user's name is 1 to 64 letters.*; choose another$`)
	if !eval[bool](pg, `document.querySelector("#invite-answer").hidden`) {
		t.Error("a refused invite shows a link")
	}
	if ps := people(); len(ps) != 3 {
		t.Errorf("after the refusals: %v; want alice, bob and carol only", ps)
	}

	// The links are nowhere else: the state, the log tail, the event
	// stream, the page, the bridge's log.
	noLinks := func() {
		t.Helper()
		evs, err := chromedp.Run(ctx, chromedp.Evaluate[string](`new Promise(res => { const es = new EventSource("/console/events"); let buf = "", n = 0;
			es.addEventListener("log", e => { buf += e.data; });
			es.addEventListener("state", e => { buf += e.data; if (++n >= 2) { es.close(); res(buf); } }); })`, chromedp.EvalAwaitPromise))
		if err != nil || !strings.Contains(evs, `"people"`) {
			t.Fatalf("the event stream: %v %.300s", err, evs)
		}
		for where, s := range map[string]string{
			"the console's state":  fetch("/console/api/state"),
			"the console's log":    fetch("/console/api/log"),
			"the console's events": evs,
			"the console's page":   eval[string](pg, `document.documentElement.outerHTML`),
			"the page as served":   fetch("/console"),
			"the bridge's log":     b.logs.String(),
		} {
			for name, link := range links {
				if strings.Contains(s, codeOf(link)) {
					t.Errorf("%s holds %s's invite code", where, name)
				}
			}
		}
	}
	noLinks()

	// alice sets her secret in the browser, bob by hand.
	secrets := map[string]string{"alice": "alice's own secret", "bob": "bob's secret, his"}
	do("alice's invite page", chromedp.Navigate(links["alice"]), chromedp.WaitVisible(chromedp.CSS("#secret")),
		chromedp.SendKeys(chromedp.CSS("#secret"), secrets["alice"]), chromedp.SendKeys(chromedp.CSS("#confirm"), secrets["alice"]),
		chromedp.Click(chromedp.CSS("#set")))
	pg.waitJS("alice's secret to be set", `document.querySelector("#done")`)
	do("the console again", chromedp.Navigate(base+"/console"))
	bobClient := newOAuthClient(t, base)
	bobClient.register()
	setPage := bobClient.get(links["bob"])
	if r := bobClient.postForm(base+authserver.PathInvite, url.Values{"code": {codeOf(links["bob"])}, "csrf": {formField(t, setPage, "csrf")},
		"secret": {secrets["bob"]}, "confirm": {secrets["bob"]}}); r.StatusCode != http.StatusOK {
		t.Fatalf("bob's secret: %d", r.StatusCode)
	}
	// Each gets a token through the approval page, and a child.
	tokenOf := func(c *oauthClient, name string) string {
		t.Helper()
		verifier, challenge := pkce(name)
		tok, _ := c.exchange(c.codeFrom(c.approveAs(c.authorizeURL(challenge, mcpURL), name, secrets[name])), verifier)
		return tok
	}
	aliceClient := newOAuthClient(t, base)
	aliceClient.register()
	aliceTok, bobTok := tokenOf(aliceClient, "alice"), tokenOf(bobClient, "bob")
	sessionOf := func(token string) *client {
		c := authedClient(t, mcpURL, token)
		c.initialize()
		return c
	}
	alice, bob := sessionOf(aliceTok), sessionOf(bobTok)
	pidA, pidB := whoamiCall(t, alice).PID, whoamiCall(t, bob).PID
	if pidA == pidB {
		t.Fatalf("alice and bob share child %d", pidA)
	}
	// (The state is made at most twice a second: wait for one made now.)
	var ps map[string]person
	waitFor(t, 10*time.Second, "alice and bob active, signed in, in the console's state", func() bool {
		ps = people()
		return ps["alice"].State == "active" && ps["alice"].LastSignIn != "" && ps["bob"].State == "active" && ps["bob"].LastSignIn != ""
	})
	for _, name := range []string{"alice", "bob"} {
		if p := ps[name]; p.Key != "b:"+p.Subject {
			t.Errorf("%s's key: %+v", name, p)
		}
	}
	if ps["carol"].State != "invited" {
		t.Errorf("carol: %+v", ps["carol"])
	}
	stateOf("alice", "active")
	stateOf("carol", "invited")
	// Their children are the "Users' children" panel's: a link there.
	for _, name := range []string{"alice", "bob"} {
		pg.waitJS(name+"'s children link", fmt.Sprintf(`(a => a && a.getAttribute("href") === "#users" && a.textContent === "1 running")(document.querySelector('%s td.children a'))`, row(name)))
	}
	noLinks()

	// Disable alice: her token is refused at once, her child stops; bob's
	// child and session go on, carol stays invited.
	pg.confirm(row("alice") + " button.disable-person")
	notice("alice disabled", `alice is disabled`)
	if r := alice.post(toolCallBody(`7`, "whoami", nil)); r.status != http.StatusUnauthorized {
		t.Errorf("alice's token right after she was disabled: %d %.200s; want 401", r.status, r.body)
	}
	waitFor(t, 20*time.Second, "alice's child to stop", func() bool { return !alive(pidA) })
	if p := whoamiCall(t, bob).PID; p != pidB {
		t.Errorf("bob's child changed (%d, was %d) when alice was disabled", p, pidB)
	}
	stateOf("alice", "disabled")
	if ps := people(); ps["bob"].State != "active" || ps["carol"].State != "invited" || ps["alice"].State != "disabled" {
		t.Errorf("after alice was disabled: %+v", ps)
	}
	// Enable her: she may sign in again; her old token stays refused.
	do("enabling alice", chromedp.Click(chromedp.CSS(row("alice")+" button.enable-person")))
	notice("alice enabled", `alice is enabled`)
	stateOf("alice", "active")
	if r := authedClient(t, mcpURL, aliceTok).post(initBody); r.status != http.StatusUnauthorized {
		t.Errorf("alice's old token after she was enabled: %d; want 401", r.status)
	}
	alice = sessionOf(tokenOf(aliceClient, "alice"))
	pidA = whoamiCall(t, alice).PID

	// Remove bob: his token is refused, his child stops; alice's session
	// goes on.
	pg.confirm(row("bob") + " button.remove-person")
	notice("bob removed", `bob is removed`)
	if r := bob.post(toolCallBody(`8`, "whoami", nil)); r.status != http.StatusUnauthorized {
		t.Errorf("bob's token right after he was removed: %d; want 401", r.status)
	}
	waitFor(t, 20*time.Second, "bob's child to stop", func() bool { return !alive(pidB) })
	if p := whoamiCall(t, alice).PID; p != pidA {
		t.Errorf("alice's child changed (%d, was %d) when bob was removed", p, pidA)
	}
	pg.waitJS("bob's row to go", fmt.Sprintf(`!document.querySelector('%s')`, row("bob")))
	oldBob := ps["bob"].Subject

	// The name passes to another person: a stale action on the old bob
	// is refused and the new Bob untouched.
	links["Bob"] = invite("Bob")
	stateOf("Bob", "invited")
	newBob := people()["Bob"]
	if newBob.Subject == "" || newBob.Subject == oldBob {
		t.Fatalf("Bob invited again: %+v (the old bob was %s)", newBob, oldBob)
	}
	for _, action := range []string{"remove", "disable"} {
		status, body := post("/console/api/people/"+action, fmt.Sprintf(`{"name":"bob","subject":%q}`, oldBob))
		if status != http.StatusConflict || !strings.Contains(body, "is now another person") || !strings.Contains(body, "nothing was done") {
			t.Errorf("%s with the old bob's subject: %d %s; want 409, nothing done", action, status, body)
		}
	}
	if status, body := post("/console/api/people/disable", `{"name":"carol"}`); status != http.StatusBadRequest || !strings.Contains(body, "subject") {
		t.Errorf("disable without a subject: %d %s; want 400 asking for it", status, body)
	}
	if status, body := post("/console/api/people/enable", `{"name":"dave","subject":"u_x"}`); status != http.StatusNotFound || !strings.Contains(body, `no user is named \"dave\"`) {
		t.Errorf("enabling an unknown name: %d %s; want 404", status, body)
	}
	if p := people()["Bob"]; p != newBob {
		t.Errorf("the new Bob changed: %+v, was %+v", p, newBob)
	}

	// A new link for carol replaces her first.
	pg.confirm(row("carol") + " button.new-link")
	pg.waitJS("carol's new link", fmt.Sprintf(`!document.querySelector("#invite-answer").hidden && document.querySelector("#invite-link").value.startsWith(%q)`, "http://"+addr+authserver.PathInvite+"?code="))
	newLink := eval[string](pg, `document.querySelector("#invite-link").value`)
	// At a phone's width, with the link shown, the page does not scroll
	// sideways.
	do("a phone's width", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(1), chromedp.EmulateMobile))
	pg.waitJS("the phone's layout", `window.innerWidth === 390`)
	if over := eval[float64](pg, `document.documentElement.scrollWidth - window.innerWidth`); over > 1 {
		t.Errorf("at 390 px the page is %v px wider than the viewport", over)
	}
	do("a desktop's width", chromedp.EmulateViewport(1280, 900))
	do("dismissing the link", chromedp.Click(chromedp.CSS("#invite-done")))
	if newLink == links["carol"] {
		t.Fatal("carol's new link is her first")
	}
	if r := mustRequest(t, http.MethodGet, links["carol"], "", ""); r.status != http.StatusNotFound {
		t.Errorf("carol's first link after a new one: %d; want 404", r.status)
	}
	links["carol (new)"] = newLink
	noLinks()
	if ps := people(); ps["carol"].State != "invited" || ps["alice"].State != "active" || ps["Bob"].State != "invited" || len(ps) != 3 {
		t.Errorf("at the end: %+v", ps)
	}
}
