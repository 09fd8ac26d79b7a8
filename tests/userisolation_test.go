//go:build unix

package tests

// 'isolation: user' (issue 35), a child per authenticated user: shared by a user's sessions and
// 2026-07-28 requests, the user cap, credentials and the stand-in, the console, the SDK clients, a
// profile member, and sessions across a restart.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stelae-bridge/stelae-bridge/bridge"
	"github.com/stelae-bridge/stelae-bridge/config"
	"github.com/stelae-bridge/stelae-bridge/credstore"
	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

// userBridge serves "fake" with a child per user, to the named tokens
// alice, bob and carol, at most maxUsers of them at once.
func userBridge(t *testing.T, maxUsers int, idle time.Duration) *testBridge {
	t.Helper()
	tokens := []string{"tok-alice", "tok-bob", "tok-carol", "tok-operator"}
	names := map[string]string{"tok-alice": "alice", "tok-bob": "bob", "tok-carol": "carol"}
	return newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{
		opts:      bridge.Options{AuthTokens: tokens, TokenNames: names},
		isolation: config.IsolationUser, maxUsers: maxUsers, userIdle: idle,
	})
}

// TestUserIsolation: each user's 2025 sessions and 2026-07-28 requests
// share one child of their own (one pid); another user's child is
// another; at the cap a new user is refused with 503 and Retry-After while
// the users who have children go on untouched (never evicted for the
// newcomer); once a user's child has been idle its place is free again.
func TestUserIsolation(t *testing.T) {
	b := userBridge(t, 2, 300*time.Millisecond)
	url := b.url("fake")
	session := func(token string) *client {
		c := authedClient(t, url, token)
		c.initialize()
		return c
	}
	a1, a2 := session("tok-alice"), session("tok-alice")
	pidA := whoamiCall(t, a1).PID
	if p := whoamiCall(t, a2).PID; p != pidA {
		t.Fatalf("alice's two sessions: pids %d and %d; want one child", pidA, p)
	}
	if p, r := modernWhoami(t, url, "tok-alice"); p != pidA {
		t.Fatalf("alice's 2026-07-28 request: pid %d (%d %s); want her child's %d", p, r.status, r.body, pidA)
	}
	bob := session("tok-bob")
	pidB := whoamiCall(t, bob).PID
	if pidB == pidA {
		t.Fatalf("bob shares alice's child (pid %d)", pidA)
	}
	// A third user at the cap of two: refused, the others untouched.
	r := authedClient(t, url, "tok-carol").post(initBody)
	if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" || !strings.Contains(string(r.body), "max_users") {
		t.Fatalf("a third user at the cap: %d %v %s; want 503 with Retry-After naming max_users", r.status, r.header, r.body)
	}
	for _, c := range []*client{a1, a2, bob} {
		want := pidA
		if c == bob {
			want = pidB
		}
		if p := whoamiCall(t, c).PID; p != want {
			t.Errorf("a user's session is served by pid %d after the refusal; want %d", p, want)
		}
	}
	// alice leaves: once her child is idle, her place is free.
	deleteSession(t, a1)
	deleteSession(t, a2)
	waitFor(t, 20*time.Second, "alice's child to stop", func() bool { return !alive(pidA) })
	var carol *client
	waitFor(t, 20*time.Second, "carol admitted in alice's place", func() bool {
		c := authedClient(t, url, "tok-carol")
		r := c.post(initBody)
		if r.status != http.StatusOK {
			return false
		}
		c.sid = r.header.Get("Mcp-Session-Id")
		carol = c
		return true
	})
	if p := whoamiCall(t, carol).PID; p == pidA || p == pidB {
		t.Errorf("carol is served by pid %d, another user's", p)
	}
	if p := whoamiCall(t, bob).PID; p != pidB {
		t.Errorf("bob's child changed: %d, was %d", p, pidB)
	}
	// A session id is its user's: another user using it gets 404.
	stolen := &client{t: t, url: url, sid: bob.sid, http: authedClient(t, url, "tok-carol").http}
	if r := stolen.callTool(`"s"`, "whoami", nil); r.status != http.StatusNotFound {
		t.Errorf("carol using bob's session id: %d %s; want 404", r.status, fmt.Sprint(string(r.body)))
	}
}

// TestUserCredentials: a user-isolated destination's 'credentials:' —
// each user's child has that user's own value in its environment (here
// provisioned by the operator: CredentialsDir/{destination}/{user}); a user
// without them gets no child at all but a stand-in that lists the tools
// and answers a call with a tool error saying what to supply and how; the
// values reach no log, no /healthz, no console state.
func TestUserCredentials(t *testing.T) {
	dir := t.TempDir()
	const aliceSecret, carolBad = "tok-alice-s3cr3t-value", "not-a-token-s3cr3t"
	if err := os.MkdirAll(filepath.Join(dir, "fake"), 0o700); err != nil {
		t.Fatal(err)
	}
	for user, content := range map[string]string{"alice": "# alice's\nAPI_TOKEN=" + aliceSecret + "\nOTHER=ignored\n", "carol": "API_TOKEN=" + carolBad + "\n"} {
		if err := os.WriteFile(filepath.Join(dir, "fake", user), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tokens := []string{"tok-alice", "tok-bob", "tok-carol", "tok-operator"}
	b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{
		opts:      bridge.Options{AuthTokens: tokens, TokenNames: map[string]string{"tok-alice": "alice", "tok-bob": "bob", "tok-carol": "carol"}, CredentialsDir: dir},
		isolation: config.IsolationUser,
		credentials: []config.Credential{{Name: "API_TOKEN", Description: "your API token", Pattern: regexp.MustCompile(`^tok-`)},
			{Name: "API_HOST", Description: "your host", Optional: true}},
	})
	url := b.url("fake")
	alice := authedClient(t, url, "tok-alice")
	alice.initialize()
	if v, isErr, text := getenvCall(t, alice, "API_TOKEN"); isErr || v != aliceSecret {
		t.Fatalf("alice's child's API_TOKEN: %q (error %v: %s); want her own", v, isErr, text)
	}
	if v, _, _ := getenvCall(t, alice, "OTHER"); v != "" {
		t.Errorf("an undeclared variable of the provisioning file reached the child: %q", v)
	}
	starts := func() int {
		n := 0
		for _, e := range b.journal() {
			if e.kind == "start" {
				n++
			}
		}
		return n
	}
	// bob has none, carol's does not match the pattern: no child, a
	// stand-in that tells them.
	for _, u := range []struct{ token, want string }{{"tok-bob", "API_TOKEN (your API token)"}, {"tok-carol", "does not have the expected form"}} {
		c := authedClient(t, url, u.token)
		c.initialize()
		r := c.post(`{"jsonrpc":"2.0","id":"l","method":"tools/list"}`)
		if r.status != http.StatusOK {
			t.Fatalf("%s: tools/list: %d %s", u.token, r.status, r.body)
		}
		v, isErr, text := getenvCall(t, c, "API_TOKEN")
		if !isErr || v != "" || !strings.Contains(text, u.want) || !strings.Contains(text, "operator to provision") {
			t.Errorf("%s: a call without credentials: %q error %v text %q; want a tool error saying %q", u.token, v, isErr, text, u.want)
		}
	}
	if n := starts(); n != 1 {
		t.Errorf("%d children started; want alice's alone (no half-configured child)", n)
	}
	// The values are nowhere but in alice's child (the places read by
	// the operator, each read for real: 200).
	read := func(path string) string {
		t.Helper()
		r := mustRequest(t, http.MethodGet, b.srv.URL+path, "", "", "Authorization", "Bearer tok-operator")
		if r.status != http.StatusOK {
			t.Fatalf("GET %s: %d %.300s", path, r.status, r.body)
		}
		return string(r.body)
	}
	for _, where := range []struct{ name, text string }{
		{"the bridge's log", b.logs.String()},
		{"/healthz?verbose", read("/healthz?verbose")},
		{"the console's state", read("/console/api/state")},
	} {
		for _, secret := range []string{aliceSecret, carolBad} {
			if strings.Contains(where.text, secret) {
				t.Errorf("%s holds a credential", where.name)
			}
		}
	}
}

// TestUserConsole: the console lists a user-isolated destination's users —
// those with a child (its state and pid) and those with credentials stored
// (their names and when, never a value) — and its two actions act on one
// user only: stopping alice's child leaves bob's, deleting bob's
// credentials leaves alice's, and bob's next call finds the stand-in.
func TestUserConsole(t *testing.T) {
	dir := t.TempDir()
	key, err := credstore.LoadKey(filepath.Join(dir, "credentials.key"), "")
	if err != nil {
		t.Fatal(err)
	}
	store, err := credstore.Open(filepath.Join(dir, "credentials.db"), key, credstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	const aliceSecret, bobSecret = "tok-alice-console-s3cret", "tok-bob-console-s3cret"
	for user, v := range map[string]string{"alice": aliceSecret, "bob": bobSecret} {
		if err := store.Set("fake", "t:"+user, user, map[string]string{"API_TOKEN": v}); err != nil {
			t.Fatal(err)
		}
	}
	b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{
		opts:        bridge.Options{AuthTokens: []string{"tok-alice", "tok-bob", "tok-operator"}, TokenNames: map[string]string{"tok-alice": "alice", "tok-bob": "bob"}, CredStore: store},
		isolation:   config.IsolationUser,
		credentials: []config.Credential{{Name: "API_TOKEN", Description: "your API token"}},
	})
	url := b.url("fake")
	clients := map[string]*client{}
	pids := map[string]int{}
	for _, u := range []string{"alice", "bob"} {
		c := authedClient(t, url, "tok-"+u)
		c.initialize()
		clients[u] = c
		v, isErr, text := getenvCall(t, c, "API_TOKEN")
		if isErr || v != map[string]string{"alice": aliceSecret, "bob": bobSecret}[u] {
			t.Fatalf("%s's child: %q %v %s", u, v, isErr, text)
		}
		pids[u] = whoamiCall(t, c).PID
	}
	type user struct {
		Key, Name, State string
		PID              int
		Credentials      []string
		Updated          string `json:"credentials_updated"`
	}
	users := func() map[string]user {
		t.Helper()
		r := mustRequest(t, http.MethodGet, b.srv.URL+"/console/api/state", "", "", "Authorization", "Bearer tok-operator")
		for _, s := range []string{aliceSecret, bobSecret} {
			if strings.Contains(string(r.body), s) {
				t.Fatal("the console's state holds a credential")
			}
		}
		var st struct {
			Destinations []struct {
				Name  string
				Users []user
			}
		}
		if err := jsonUnmarshal(r.body, &st); err != nil || len(st.Destinations) == 0 {
			t.Fatalf("state: %v %.300s", err, r.body)
		}
		out := map[string]user{}
		for _, u := range st.Destinations[0].Users {
			out[u.Name] = u
		}
		return out
	}
	us := users()
	for _, name := range []string{"alice", "bob"} {
		u := us[name]
		if u.Key != "t:"+name || u.PID != pids[name] || strings.Join(u.Credentials, ",") != "API_TOKEN" || u.Updated == "" {
			t.Errorf("the console's %s: %+v; want key t:%s, pid %d, API_TOKEN set", name, u, name, pids[name])
		}
	}
	action := func(path, user string) {
		t.Helper()
		r := mustRequest(t, http.MethodPost, b.srv.URL+"/console/api/"+path, "", fmt.Sprintf(`{"destination":"fake","user":%q}`, user), "Authorization", "Bearer tok-operator")
		if r.status != http.StatusOK {
			t.Fatalf("%s %s: %d %s", path, user, r.status, r.body)
		}
	}
	// The page shows them (the console in headless Chromium, signed in
	// with an operator token).
	if !testing.Short() {
		browser := browserFor(t)
		ctx, cancel := context.WithTimeout(browser, 2*time.Minute)
		defer cancel()
		pg := &page{t: t, ctx: ctx}
		if err := chromedp.Do(ctx, chromedp.Navigate(b.srv.URL+"/console")); err != nil {
			t.Fatal(err)
		}
		pg.waitJS("the sign-in form", `document.querySelector("#login #credential")`)
		if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#credential"), "tok-operator"), chromedp.Click(chromedp.CSS("#login-submit"))); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"alice", "bob"} {
			pg.waitJS(name+"'s row in the users' panel", fmt.Sprintf(`(() => { const r = document.querySelector('#users-body tr[data-user="t:%s"]'); return r && /API_TOKEN/.test(r.querySelector("td.credentials").textContent) && /pid %d/.test(r.querySelector("td.child").textContent) })()`, name, pids[name]))
		}
		if html := eval[string](pg, `document.documentElement.outerHTML`); strings.Contains(html, aliceSecret) || strings.Contains(html, bobSecret) {
			t.Error("the console's page holds a credential")
		}
	}
	// Stop alice's child: hers goes, bob's stays.
	action("users/stop", "t:alice")
	waitFor(t, 20*time.Second, "alice's child to stop", func() bool { return !alive(pids["alice"]) })
	if p := whoamiCall(t, clients["bob"]).PID; p != pids["bob"] {
		t.Errorf("bob's child changed (%d, was %d) when alice's was stopped", p, pids["bob"])
	}
	// Delete bob's credentials: his child stops, his next call gets the
	// stand-in; alice's stay stored.
	action("credentials/delete", "t:bob")
	waitFor(t, 20*time.Second, "bob's child to stop", func() bool { return !alive(pids["bob"]) })
	bob := authedClient(t, url, "tok-bob")
	bob.initialize()
	if v, isErr, text := getenvCall(t, bob, "API_TOKEN"); !isErr || v != "" || !strings.Contains(text, "API_TOKEN (your API token)") {
		t.Errorf("bob after his credentials were deleted: %q %v %s; want the stand-in's error", v, isErr, text)
	}
	if _, ok, err := store.Env("fake", "t:alice"); !ok || err != nil {
		t.Errorf("alice's credentials went with bob's: %v %v", ok, err)
	}
}

// TestUserIsolationWithSDKClients (issue 35): server-everything from npm
// with a child per user and a credential each (provisioned), its get-env
// tool allowed: the official TypeScript SDK client (a 2025 session) and the
// Go SDK client (the 2026-07-28 era) as alice and as bob each see their
// own user's value and never the other's; alice's TypeScript session and
// her 2026-07-28 requests are served by one child, bob's by another.
func TestUserIsolationWithSDKClients(t *testing.T) {
	node := node24(t)
	bin := everythingBin(t)
	dir := t.TempDir()
	creds := filepath.Join(dir, "credentials")
	if err := os.MkdirAll(filepath.Join(creds, "everything"), 0o700); err != nil {
		t.Fatal(err)
	}
	values := map[string]string{"alice": "alice-sdk-value-4e1f", "bob": "bob-sdk-value-9c2d"}
	for u, v := range values {
		if err := os.WriteFile(filepath.Join(creds, "everything", u), []byte("API_TOKEN="+v+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte("alice: sdk-token-alice\nbob: sdk-token-bob\nsdk-token-operator\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "destinations.yaml")
	yaml := fmt.Sprintf("destinations:\n  everything:\n    command: %q\n    isolation: user\n    roots: []\n    credentials:\n      API_TOKEN: {description: \"your token\"}\n", bin)
	if err := os.WriteFile(config, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startBinary(t, config, "-auth-tokens-file", tokens, "-credentials-dir", creds)
	url := p.base + "/everything/mcp"
	sees := func(who, text string) {
		t.Helper()
		for u, v := range values {
			if strings.Contains(text, v) != (u == who) {
				t.Errorf("%s's get-env shows %s's value: %v; want only their own", who, u, strings.Contains(text, v))
			}
		}
	}
	for _, u := range []string{"alice", "bob"} {
		// The TypeScript SDK client, a 2025 session (kept open).
		run := runClientScript(node, "ts-session.mjs", url, "--label", u, "--no-delete", "--header", "Authorization: Bearer sdk-token-"+u, "--call", "get-env {}")
		var s tsSession
		if err := json.Unmarshal([]byte(run.last), &s); err != nil || !s.OK || len(s.Calls) != 1 {
			t.Fatalf("%s's TypeScript client: %v %v\nstdout %s\nstderr %s", u, run.err, err, run.stdout, run.stderr)
		}
		sees(u, s.text(0))
		// The Go SDK client, the 2026-07-28 era.
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "go-" + u, Version: "1"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearerTransport{"sdk-token-" + u}}}, nil)
		if err != nil {
			cancel()
			t.Fatalf("%s's Go SDK client: %v", u, err)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get-env"})
		if err != nil || len(res.Content) == 0 {
			t.Fatalf("%s's Go SDK get-env: %v %+v", u, err, res)
		}
		text, _ := res.Content[0].(*mcp.TextContent)
		if text == nil {
			t.Fatalf("%s's Go SDK get-env: %+v", u, res.Content)
		}
		sees(u, text.Text)
		cs.Close()
		cancel()
	}
	// One child each: the console's users.
	r := mustRequest(t, http.MethodGet, p.base+"/console/api/state", "", "", "Authorization", "Bearer sdk-token-operator")
	var st struct {
		Destinations []struct {
			Users []struct {
				Name     string
				PID      int
				Sessions int
			}
		}
	}
	if err := json.Unmarshal(r.body, &st); err != nil || len(st.Destinations) != 1 {
		t.Fatalf("state: %v %.300s", err, r.body)
	}
	pids := map[string]int{}
	for _, u := range st.Destinations[0].Users {
		pids[u.Name] = u.PID
		if u.Sessions != 1 {
			t.Errorf("%s has %d sessions; want the TypeScript client's one (the 2026-07-28 requests have none)", u.Name, u.Sessions)
		}
	}
	if len(pids) != 2 || pids["alice"] == 0 || pids["bob"] == 0 || pids["alice"] == pids["bob"] {
		t.Errorf("users' children %v; want one each, distinct", pids)
	}
	if strings.Contains(string(r.body), values["alice"]) || strings.Contains(string(r.body), values["bob"]) {
		t.Error("the console's state holds a credential")
	}
}

// TestUserIsolationInAProfile (issue 35): a profile of a shared destination
// and one with a child per user: through the profile each user gets their
// own child of the user-isolated member, with their own credential, while
// the shared member's one child serves everybody — in a 2025 session and in
// a 2026-07-28 request alike.
func TestUserIsolationInAProfile(t *testing.T) {
	dir := t.TempDir()
	creds := filepath.Join(dir, "credentials")
	if err := os.MkdirAll(filepath.Join(creds, "peruser"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"alice", "bob"} {
		if err := os.WriteFile(filepath.Join(creds, "peruser", u), []byte("API_TOKEN=tok-"+u+"-profile\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte("alice: prof-token-alice\nbob: prof-token-bob\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	command, args, env := fakemcp.Command(fakemcp.ModeServer)
	envJSON, _ := json.Marshal(env)
	config := filepath.Join(dir, "destinations.yaml")
	yaml := fmt.Sprintf(`destinations:
  shared: {command: %q, args: [%q], env: %s}
  peruser:
    command: %q
    args: [%q]
    env: %s
    isolation: user
    credentials: {API_TOKEN: {description: "your token"}}
profiles:
  all: {destinations: [shared, peruser]}
`, command, args[0], envJSON, command, args[0], envJSON)
	if err := os.WriteFile(config, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startBinary(t, config, "-auth-tokens-file", tokens, "-credentials-dir", creds)
	url := p.base + "/p/all/mcp"
	type result struct {
		Value string `json:"value"`
		PID   int    `json:"pid"`
	}
	call := func(c *client, tool string, args any) result {
		t.Helper()
		var r result
		res := resultOK(t, tool, c.callTool(`"c"`, tool, args))
		if err := json.Unmarshal(res, &r); err != nil || r.PID == 0 {
			t.Fatalf("%s: %v %s", tool, err, res)
		}
		return r
	}
	sharedPIDs, userPIDs := map[int]bool{}, map[string]int{}
	for _, u := range []string{"alice", "bob"} {
		c := authedClient(t, url, "prof-token-"+u)
		c.initialize()
		c.post(`{"jsonrpc":"2.0","id":"l","method":"tools/list"}`)
		if got := call(c, "peruser__getenv", map[string]string{"name": "API_TOKEN"}); got.Value != "tok-"+u+"-profile" {
			t.Errorf("%s through the profile reads %q; want their own", u, got.Value)
		}
		userPIDs[u] = call(c, "peruser__whoami", nil).PID
		sharedPIDs[call(c, "shared__whoami", nil).PID] = true
		// A 2026-07-28 request of the same user: the same child.
		r := modernCall(t, url, `"m"`, "tools/call", `{"name":"peruser__whoami","arguments":{},`+modernMeta+`}`, "Authorization", "Bearer prof-token-"+u)
		var w result
		if r.status != http.StatusOK || json.Unmarshal(jsonMember(decode(t, r.body).Result, "structuredContent"), &w) != nil && json.Unmarshal(decode(t, r.body).Result, &w) != nil || w.PID != userPIDs[u] {
			t.Errorf("%s's 2026-07-28 request through the profile: pid %d (%d %.200s); want their child's %d", u, w.PID, r.status, r.body, userPIDs[u])
		}
	}
	if len(sharedPIDs) != 1 {
		t.Errorf("the shared member ran %d children for the two users; want one", len(sharedPIDs))
	}
	if userPIDs["alice"] == userPIDs["bob"] {
		t.Errorf("alice and bob share the user-isolated member's child (pid %d)", userPIDs["alice"])
	}
}

// TestUserSessionsSurviveARestart (issue 35): the sessions of a destination
// with a child per user come back with the bridge — each to its own
// user's endpoint — and go on without initializing again, on a new child
// of that user's; another user presenting one still gets 404.
func TestUserSessionsSurviveARestart(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte("alice: restart-token-alice\nbob: restart-token-bob\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	config := fakeDestinationsWith(t, map[string]string{"fake": fakemcp.ModeServer}, "    isolation: user\n")
	state, addr := t.TempDir(), freeAddr(t)
	a := startBinary(t, config, "-state-dir", state, "-listen", addr, "-auth-tokens-file", tokens)
	url := a.base + "/fake/mcp"
	clients, pids := map[string]*client{}, map[string]int{}
	for _, u := range []string{"alice", "bob"} {
		c := authedClient(t, url, "restart-token-"+u)
		c.initialize()
		clients[u], pids[u] = c, whoamiCall(t, c).PID
	}
	stopBinary(t, a)
	b := startBinary(t, config, "-state-dir", state, "-listen", addr, "-auth-tokens-file", tokens)
	if b.base != a.base {
		t.Fatalf("the new bridge listens at %s, not %s", b.base, a.base)
	}
	after := map[string]int{}
	for _, u := range []string{"alice", "bob"} {
		w := whoamiCall(t, clients[u]) // the same session: no 404, no initialize
		if w.PID == pids[u] {
			t.Errorf("%s is served by the old child (pid %d)", u, w.PID)
		}
		if w.Inits != 1 {
			t.Errorf("%s's new child was initialized %d times; want the bridge's one handshake", u, w.Inits)
		}
		after[u] = w.PID
	}
	if after["alice"] == after["bob"] {
		t.Errorf("after the restart alice and bob share a child (pid %d)", after["alice"])
	}
	stolen := &client{t: t, url: url, sid: clients["alice"].sid, http: authedClient(t, url, "restart-token-bob").http}
	if r := stolen.callTool(`"s"`, "whoami", nil); r.status != http.StatusNotFound {
		t.Errorf("bob presenting alice's session after the restart: %d; want 404", r.status)
	}
}
