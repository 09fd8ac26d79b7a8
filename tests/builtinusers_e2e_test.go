//go:build unix

package tests

// Issue 35 end to end: the real binary with the built-in server, invited users signing in with
// headless Chromium, server-everything with a child and a credential per user, and the TypeScript
// and Go SDK clients: each user sees only their own value, a user without one gets the credentials
// page, and revoking a client stops only that user's child.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stelae-bridge/stelae-bridge/authserver"
)

// tsElicitSession is what tests/clients/ts-session.mjs prints, with the
// params of the elicitation requests it received.
type tsElicitSession struct {
	tsSession
	Elicitations []struct {
		Mode          string `json:"mode"`
		URL           string `json:"url"`
		ElicitationID string `json:"elicitationId"`
		Message       string `json:"message"`
	} `json:"elicitations"`
}

// TestBuiltinUsersEndToEnd is issue 35's "Done means", first bullet, with
// real parts: the real binary with the built-in authorization server
// (auth: {issuer: builtin}, -public-url on loopback) in front of
// server-everything from npm with a child per user and an API_TOKEN each
// (its get-env tool, which shows the child's environment, allowed). The
// operator invites alice, bob and carol with 'stelae-bridge auth invite';
// each, in a browser of their own (headless Chromium), sets a secret
// through the invite link, signs in on the approval page of a client
// registered by DCR and is sent to the credentials page: alice and bob
// enter different tokens, carol goes back to her client without one.
// Then, as each user, the official TypeScript SDK client (2025 sessions,
// kept open) and the go-sdk client (the 2026-07-28 era):
//   - each user sees only their own value; alice's two sessions and her
//     2026-07-28 requests are one child (one pid), bob's another;
//   - carol gets the stand-in: the TypeScript client that declared
//     URL-mode elicitation gets elicitation/create with mode "url" and the
//     credentials page under -public-url, and after it accepts, the
//     stand-in's tool error; clients that did not declare it (none, or form
//     mode only; the go-sdk client) get the tool error with the page's URL;
//     she opens that URL in her browser, enters her token, and her next
//     call reaches a child of her own with her value;
//   - revoking one of bob's two clients ('stelae-bridge auth revoke')
//     stops bob's child; his other client's next call gets a new one.
//
// Every action on one user checks the others' children (the same process)
// and sessions (answering with their own value) are untouched.
func TestBuiltinUsersEndToEnd(t *testing.T) {
	node := node24(t)
	everything := everythingBin(t)
	browser := browserFor(t)
	bridgeBin := bridgeBinary(t)
	started := time.Now()
	dir := t.TempDir()
	state := t.TempDir()
	// -public-url must be known before the start: the address is chosen
	// first and given to -listen.
	addr := freeAddr(t)
	public := "http://" + addr
	mcpURL := public + "/everything/mcp"
	pageURL := public + authserver.PathCredentials + "/everything"
	const passphrase = "the operator's passphrase of the e2e test"
	config := filepath.Join(dir, "destinations.yaml")
	yaml := fmt.Sprintf(`destinations:
  everything:
    command: %q
    isolation: user
    auth: {issuer: builtin}
    roots: []
    tools: {allow: [get-env]}
    credentials:
      API_TOKEN: {description: "your API token"}
`, everything)
	if err := os.WriteFile(config, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bridgeBin, "-config", config, "-listen", addr, "-state-dir", state, "-public-url", public)
	cmd.Env = append(os.Environ(), "STELAE_OAUTH_PASSPHRASE="+passphrase)
	p := runBinary(t, cmd)
	if p.base != public {
		t.Fatalf("the bridge listens at %s, not %s", p.base, public)
	}

	// The operator's command line, against the running bridge (its admin
	// socket in the state directory).
	cli := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c := exec.CommandContext(ctx, bridgeBin, append(append([]string{"auth"}, args...), "-state-dir", state, "-public-url", public)...)
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("stelae-bridge auth %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	inviteLink := regexp.MustCompile(`(?m)^\s+(` + regexp.QuoteMeta(public+authserver.PathInvite) + `\?code=\S+)\s*$`)

	// The clients' callbacks (on loopback): each client's own path.
	arrivals := map[string]chan url.Values{}
	for _, k := range []string{"alice", "bob", "bob2", "carol"} {
		arrivals["/cb/"+k] = make(chan url.Values, 1)
	}
	cb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ch := arrivals[r.URL.Path]
		if ch == nil {
			http.NotFound(w, r)
			return
		}
		select {
		case ch <- r.URL.Query():
		default:
		}
		fmt.Fprint(w, "<p id=back>back at the client</p>")
	}))
	defer cb.Close()

	type user struct {
		name, secret, value string
		ctx                 context.Context // their own browser
		pg                  *page
	}
	users := map[string]*user{
		"alice": {name: "alice", secret: "alice's e2e secret", value: "alice-e2e-token-7f3a9c"},
		"bob":   {name: "bob", secret: "bob's own e2e secret", value: "bob-e2e-token-c91d04"},
		"carol": {name: "carol", secret: "carol's e2e secret!", value: "carol-e2e-token-52be6e"},
	}
	do := func(u *user, what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(u.ctx, actions...); err != nil {
			html, _ := chromedp.Run(u.ctx, chromedp.OuterHTML(chromedp.CSS("body")))
			t.Fatalf("%s: %s: %v\n%s", u.name, what, err, html)
		}
	}
	// approve registers a client (DCR) whose callback is key's, approves
	// it in u's browser and returns the client and its verifier; the
	// browser is then on the credentials page or back at the client.
	approve := func(u *user, key string) (*oauthClient, string) {
		t.Helper()
		oc := newOAuthClient(t, public)
		oc.redirectURI = cb.URL + "/cb/" + key
		oc.register()
		verifier, challenge := pkce(key)
		do(u, "the approval page", chromedp.Navigate(oc.authorizeURL(challenge, mcpURL)), chromedp.WaitVisible(chromedp.CSS("#approve")),
			chromedp.SetValue(chromedp.CSS("#name"), u.name), chromedp.SendKeys(chromedp.CSS("#passphrase"), u.secret), chromedp.Click(chromedp.CSS("#approve")))
		return oc, verifier
	}
	// token waits for the browser to arrive at key's callback and
	// exchanges the code (by hand, as the client would).
	token := func(u *user, oc *oauthClient, key, verifier string) string {
		t.Helper()
		var q url.Values
		select {
		case q = <-arrivals["/cb/"+key]:
		case <-time.After(30 * time.Second):
			html, _ := chromedp.Run(u.ctx, chromedp.OuterHTML(chromedp.CSS("body")))
			t.Fatalf("%s's browser did not arrive at the client's callback %s\n%s", u.name, key, html)
		}
		if q.Get("code") == "" || q.Get("state") != "st-1" || q.Get("iss") != public {
			t.Fatalf("%s's browser arrived at the client with %v; want code, state and iss", u.name, q)
		}
		access, _ := oc.exchange(q.Get("code"), verifier)
		return access
	}

	// Each user: invited by the operator; in their own browser, the
	// invite link (their secret), then the approval page, which sends
	// them to the credentials page: alice and bob enter theirs, carol
	// goes back to the client without.
	clients, tokens := map[string]*oauthClient{}, map[string]string{}
	for _, name := range []string{"alice", "bob", "carol"} {
		u := users[name]
		m := inviteLink.FindStringSubmatch(cli("invite", name))
		if m == nil {
			t.Fatalf("'auth invite %s' printed no link under %s", name, public)
		}
		tab, cancel := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
		t.Cleanup(cancel)
		if err := chromedp.Do(tab, chromedp.Navigate("about:blank")); err != nil {
			t.Fatalf("%s's browser: %v", name, err)
		}
		ctx, cancelCtx := context.WithTimeout(tab, 3*time.Minute)
		t.Cleanup(cancelCtx)
		u.ctx, u.pg = ctx, &page{t: t, ctx: ctx}
		do(u, "the invite page", chromedp.Navigate(m[1]), chromedp.WaitVisible(chromedp.CSS("#secret")),
			chromedp.SendKeys(chromedp.CSS("#secret"), u.secret), chromedp.SendKeys(chromedp.CSS("#confirm"), u.secret), chromedp.Click(chromedp.CSS("#set")))
		u.pg.waitJS(name+"'s secret to be set", `document.querySelector("#done")`)
		oc, verifier := approve(u, name)
		u.pg.waitJS("the credentials page after "+name+"'s approval",
			fmt.Sprintf(`document.querySelector("#continue-note") && document.querySelector("#v_API_TOKEN") && document.querySelector("#name").textContent === %q`, name))
		if name == "carol" {
			do(u, "going back without credentials", chromedp.Click(chromedp.CSS("#skip")))
		} else {
			do(u, "the token", chromedp.SendKeys(chromedp.CSS("#v_API_TOKEN"), u.value), chromedp.Click(chromedp.CSS("#save")))
		}
		clients[name], tokens[name] = oc, token(u, oc, name, verifier)
	}
	// bob approves a second client (his credentials are in: straight
	// back to the client).
	oc, verifier := approve(users["bob"], "bob2")
	clients["bob2"], tokens["bob2"] = oc, token(users["bob"], oc, "bob2", verifier)
	t.Logf("three users invited, signed in and approved in %v", time.Since(started).Round(time.Millisecond))

	// What the bridge and the system say of the users' children: the
	// console's users (the operator signed in with the passphrase) and
	// the processes under the bridge whose environment holds a value.
	jar, _ := cookiejar.New(nil)
	operator := &http.Client{Jar: jar, Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	{
		req, _ := http.NewRequest(http.MethodPost, public+"/console/login", strings.NewReader(url.Values{"credential": {passphrase}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", public)
		resp, err := operator.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("the console's sign-in with the passphrase: %d", resp.StatusCode)
		}
	}
	type consoleUser struct {
		Name     string
		PID      int
		Sessions int
	}
	consoleUsers := func() map[string]consoleUser {
		t.Helper()
		resp, err := operator.Get(public + "/console/api/state")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var st struct {
			Destinations []struct {
				Name  string
				Users []consoleUser
			}
		}
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || resp.StatusCode != http.StatusOK || len(st.Destinations) != 1 {
			t.Fatalf("the console's state: %d %v", resp.StatusCode, err)
		}
		out := map[string]consoleUser{}
		for _, u := range st.Destinations[0].Users {
			if _, twice := out[u.Name]; twice {
				t.Errorf("the console lists %s twice: %+v", u.Name, st.Destinations[0].Users)
			}
			out[u.Name] = u
		}
		return out
	}
	// childrenWith are the processes under the bridge (its reapers aside)
	// whose environment has API_TOKEN=value: what the child reads.
	childrenWith := func(value string) []int {
		var out []int
		for _, pid := range descendants(p.cmd.Process.Pid) {
			if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); exe == bridgeBin {
				continue
			}
			env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
			if err == nil && slices.ContainsFunc(bytes.Split(env, []byte{0}), func(kv []byte) bool { return string(kv) == "API_TOKEN="+value }) {
				out = append(out, pid)
			}
		}
		return out
	}
	// childOf is name's one child, as the process tree and the console
	// both see it (the console's state is a snapshot up to half its
	// period old: waited for).
	childOf := func(name string) proc {
		t.Helper()
		pids := childrenWith(users[name].value)
		if len(pids) != 1 {
			t.Fatalf("%s's children (processes under the bridge with their value): %v; want one", name, pids)
		}
		waitFor(t, 10*time.Second, fmt.Sprintf("the console to show %s's child %d", name, pids[0]), func() bool { return consoleUsers()[name].PID == pids[0] })
		return watchProc(t, pids[0])
	}
	// sees fails unless text shows who's value and no other user's.
	sees := func(what, who, text string) {
		t.Helper()
		for name, u := range users {
			if strings.Contains(text, u.value) != (name == who) {
				t.Errorf("%s (%s): shows %s's value: %v; want %s's alone: %.300s", what, who, name, strings.Contains(text, u.value), who, text)
			}
		}
	}
	// ts runs one TypeScript SDK client session as token's user, kept
	// open (no DELETE), calling get-env once.
	ts := func(label, tok string, extra ...string) tsElicitSession {
		t.Helper()
		run := runClientScript(node, "ts-session.mjs", append([]string{mcpURL, "--label", label, "--no-delete", "--deadline", "40000",
			"--header", "Authorization: Bearer " + tok, "--call", "get-env {}"}, extra...)...)
		var s tsElicitSession
		if err := json.Unmarshal([]byte(run.last), &s); err != nil || !s.OK || len(s.Calls) != 1 || s.SessionID == "" {
			t.Fatalf("%s's TypeScript client: %v %v\nstdout %s\nstderr %s", label, run.err, err, run.stdout, run.stderr)
		}
		return s
	}
	tsAll := func(runs map[string][]string) map[string]tsElicitSession {
		t.Helper()
		var mu sync.Mutex // guards out
		out := map[string]tsElicitSession{}
		var wg sync.WaitGroup
		for label, args := range runs {
			wg.Go(func() {
				run := runClientScript(node, "ts-session.mjs", append([]string{mcpURL, "--label", label, "--no-delete", "--deadline", "40000", "--call", "get-env {}"}, args...)...)
				var s tsElicitSession
				if err := json.Unmarshal([]byte(run.last), &s); err != nil || !s.OK || len(s.Calls) != 1 || s.SessionID == "" {
					t.Errorf("%s's TypeScript client: %v %v\nstdout %s\nstderr %s", label, run.err, err, run.stdout, run.stderr)
				}
				mu.Lock()
				out[label] = s
				mu.Unlock()
			})
		}
		wg.Wait()
		if t.Failed() {
			t.FailNow()
		}
		return out
	}
	// goCall is one get-env of the go-sdk client (the 2026-07-28 era, no
	// session) as token's user, with opts: its result.
	goCall := func(label, tok string, opts *mcp.ClientOptions) (*mcp.CallToolResult, error) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
		defer cancel()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "go-" + label, Version: "1"}, opts).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: mcpURL, HTTPClient: &http.Client{Transport: bearerTransport{tok}}}, nil)
		if err != nil {
			t.Fatalf("%s's Go SDK client: %v", label, err)
		}
		defer cs.Close()
		if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
			t.Fatalf("%s's Go SDK client speaks %s; want 2026-07-28", label, v)
		}
		return cs.CallTool(ctx, &mcp.CallToolParams{Name: "get-env"})
	}
	goText := func(label, tok string) string {
		t.Helper()
		res, err := goCall(label, tok, nil)
		if err != nil || res == nil || len(res.Content) == 0 {
			t.Fatalf("%s's Go SDK get-env: %v %+v", label, err, res)
		}
		text, _ := res.Content[0].(*mcp.TextContent)
		if text == nil {
			t.Fatalf("%s's Go SDK get-env: %+v", label, res.Content)
		}
		return text.Text
	}
	// sessionText is one get-env in an open session (sid, version) with
	// tok, by hand: the status and the result's text.
	sessionText := func(sid, version, tok string) (int, string) {
		t.Helper()
		c := authedClient(t, mcpURL, tok)
		c.sid = sid
		r := c.post(toolCallBody(`"e2e"`, "get-env", map[string]any{}), "Mcp-Protocol-Version", version)
		if r.status != http.StatusOK {
			return r.status, string(r.body)
		}
		msgs := []rpc{}
		if strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") {
			msgs = sseMessages(t, r.body)
		} else {
			msgs = append(msgs, decode(t, r.body))
		}
		for _, m := range msgs {
			if string(m.ID) == `"e2e"` && len(m.Result) > 0 {
				return r.status, textOf(m.Result)
			}
		}
		return r.status, "no result: " + string(r.body)
	}

	// alice (two TypeScript sessions) and bob (one) at once, then the
	// go-sdk client as each.
	runs := tsAll(map[string][]string{
		"alice-1": {"--header", "Authorization: Bearer " + tokens["alice"]},
		"alice-2": {"--header", "Authorization: Bearer " + tokens["alice"]},
		"bob-1":   {"--header", "Authorization: Bearer " + tokens["bob"]},
	})
	for label, s := range runs {
		sees(label+"'s TypeScript session", label[:strings.IndexByte(label, '-')], s.text(0))
	}
	sees("alice's go-sdk request", "alice", goText("alice", tokens["alice"]))
	sees("bob's go-sdk request (his second client)", "bob", goText("bob", tokens["bob2"]))
	childA, childB := childOf("alice"), childOf("bob")
	if childA.pid == childB.pid {
		t.Fatalf("alice and bob share child %d", childA.pid)
	}
	sees("alice's second go-sdk request", "alice", goText("alice", tokens["alice"]))
	waitFor(t, 10*time.Second, "the console to show alice's two sessions and bob's one (the 2026-07-28 requests have none)", func() bool {
		cu := consoleUsers()
		return cu["alice"].Sessions == 2 && cu["bob"].Sessions == 1
	})
	// sessions are each user's open TypeScript sessions, as they must
	// keep answering.
	type openSession struct{ user, sid, version, token string }
	sessions := []openSession{
		{"alice", runs["alice-1"].SessionID, runs["alice-1"].ProtocolVersion, tokens["alice"]},
		{"alice", runs["alice-2"].SessionID, runs["alice-2"].ProtocolVersion, tokens["alice"]},
		{"bob", runs["bob-1"].SessionID, runs["bob-1"].ProtocolVersion, tokens["bob"]},
	}
	children := map[string]proc{"alice": childA, "bob": childB}
	// untouched checks every user's child but those of except is the same
	// process as before, and their sessions answer with their own value
	// on it.
	untouched := func(after string, except ...string) {
		t.Helper()
		for name, c := range children {
			if slices.Contains(except, name) {
				continue
			}
			if !c.alive() {
				t.Errorf("after %s, %s's child (pid %d) is gone", after, name, c.pid)
			} else if now := childOf(name); now != c {
				t.Errorf("after %s, %s's child is %d; want %d", after, name, now.pid, c.pid)
			}
		}
		for _, s := range sessions {
			if slices.Contains(except, s.user) {
				continue
			}
			status, text := sessionText(s.sid, s.version, s.token)
			if status != http.StatusOK {
				t.Errorf("after %s, %s's session %.8s: %d %.300s", after, s.user, s.sid, status, text)
				continue
			}
			sees(fmt.Sprintf("after %s, %s's session %.8s", after, s.user, s.sid), s.user, text)
		}
	}
	untouched("the first calls")
	t.Logf("alice's child %d, bob's %d at %v", childA.pid, childB.pid, time.Since(started).Round(time.Millisecond))

	// carol, without credentials, gets the stand-in. The TypeScript
	// client that declared URL-mode elicitation is asked to open the
	// credentials page under -public-url; once it accepts, the call ends
	// with the stand-in's tool error.
	carolAuth := "Authorization: Bearer " + tokens["carol"]
	s := ts("carol-url", tokens["carol"], "--elicit-modes", "url")
	if s.ElicitationRequests != 1 || len(s.Elicitations) != 1 {
		t.Fatalf("carol's client that declared URL mode got %d elicitation requests; want 1: %+v", s.ElicitationRequests, s)
	}
	if e := s.Elicitations[0]; e.Mode != "url" || e.URL != pageURL || e.ElicitationID == "" || !strings.Contains(e.Message, "API_TOKEN (your API token)") {
		t.Errorf("carol's URL-mode elicitation: %+v; want mode url, url %s, an elicitationId, a message naming API_TOKEN", e, pageURL)
	}
	if c := s.Calls[0]; !c.Result.IsError || !strings.Contains(s.text(0), pageURL) {
		t.Errorf("carol's call after she accepted: %+v; want the stand-in's tool error naming %s", c, pageURL)
	}
	sees("carol's stand-in", "", s.text(0))
	// Clients that did not declare URL mode — none, or form mode only —
	// get no elicitation, only the tool error with the page's URL.
	for label, r := range tsAll(map[string][]string{
		"carol-none": {"--header", carolAuth},
		"carol-form": {"--header", carolAuth, "--caps", "elicitation"},
	}) {
		if r.ElicitationRequests != 0 || !r.Calls[0].Result.IsError || !strings.Contains(r.text(0), pageURL) {
			t.Errorf("%s: %d elicitation requests, call %+v; want none and the tool error naming %s", label, r.ElicitationRequests, r.Calls[0], pageURL)
		}
	}
	// The go-sdk client (2026-07-28) without elicitation: the tool
	// error with the page's URL.
	res, err := goCall("carol", tokens["carol"], nil)
	if err != nil || res == nil || !res.IsError || len(res.Content) == 0 {
		t.Errorf("carol's go-sdk call without elicitation: %v %+v; want the stand-in's tool error", err, res)
	} else if text, _ := res.Content[0].(*mcp.TextContent); text == nil || !strings.Contains(text.Text, pageURL) {
		t.Errorf("carol's go-sdk call without elicitation: %+v; want the tool error naming %s", res.Content, pageURL)
	}
	// The go-sdk client (2026-07-28) that declared URL mode gets it as an
	// input request (input_required), answers it and retries: the
	// stand-in's tool error; one that declared form mode only is not
	// asked.
	for _, tc := range []struct {
		label string
		caps  *mcp.ElicitationCapabilities
		asked int
	}{{"carol-go-url", &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}, 1}, {"carol-go-form", &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}, 0}} {
		var mu sync.Mutex // guards asked
		var asked []*mcp.ElicitParams
		res, err := goCall(tc.label, tokens["carol"], &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{Elicitation: tc.caps},
			ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				mu.Lock()
				defer mu.Unlock()
				asked = append(asked, req.Params)
				return &mcp.ElicitResult{Action: "accept"}, nil
			}})
		mu.Lock()
		if len(asked) != tc.asked || tc.asked > 0 && (asked[0].Mode != "url" || asked[0].URL != pageURL || asked[0].ElicitationID == "") {
			t.Errorf("%s was asked %d times (%+v); want %d, mode url, %s", tc.label, len(asked), asked, tc.asked, pageURL)
		}
		mu.Unlock()
		if err != nil || res == nil || !res.IsError || len(res.Content) == 0 {
			t.Errorf("%s: %v %+v; want the stand-in's tool error", tc.label, err, res)
		} else if text, _ := res.Content[0].(*mcp.TextContent); text == nil || !strings.Contains(text.Text, pageURL) {
			t.Errorf("%s: %+v; want the tool error naming %s", tc.label, res.Content, pageURL)
		}
	}
	if pids := childrenWith(users["carol"].value); len(pids) != 0 || consoleUsers()["carol"].PID != 0 {
		t.Errorf("carol without credentials has children %v (the console: %+v); want none (a stand-in)", pids, consoleUsers()["carol"])
	}
	untouched("carol's calls to the stand-in")

	// carol opens the page the elicitation gave, in her browser (still
	// signed in from her approval, or signing in), enters her token; her
	// next call reaches a child of her own with it.
	carol := users["carol"]
	do(carol, "the page of the elicitation", chromedp.Navigate(s.Elicitations[0].URL))
	carol.pg.waitJS("the credentials page", `document.querySelector("#v_API_TOKEN") || document.querySelector("#signin")`)
	if eval[bool](carol.pg, `!document.querySelector("#v_API_TOKEN")`) {
		do(carol, "signing in", chromedp.SetValue(chromedp.CSS("#name"), "carol"), chromedp.SendKeys(chromedp.CSS("#secret"), carol.secret), chromedp.Click(chromedp.CSS("#signin")))
		carol.pg.waitJS("carol's variables", `document.querySelector("#v_API_TOKEN")`)
	}
	do(carol, "her token", chromedp.SendKeys(chromedp.CSS("#v_API_TOKEN"), carol.value), chromedp.Click(chromedp.CSS("#save")))
	carol.pg.waitJS("carol's token to be saved", `document.querySelector("#notice") && /Saved: API_TOKEN/.test(document.querySelector("#notice").textContent)`)
	s = ts("carol-again", tokens["carol"], "--elicit-modes", "url")
	if s.ElicitationRequests != 0 || s.Calls[0].Result.IsError {
		t.Errorf("carol's call once her token is in: %d elicitation requests, %+v", s.ElicitationRequests, s.Calls[0])
	}
	sees("carol's session once her token is in", "carol", s.text(0))
	sees("carol's go-sdk request once her token is in", "carol", goText("carol", tokens["carol"]))
	childC := childOf("carol")
	if childC.pid == childA.pid || childC.pid == childB.pid {
		t.Fatalf("carol's child %d is another user's", childC.pid)
	}
	untouched("carol entered her token")
	children["carol"] = childC
	sessions = append(sessions, openSession{"carol", s.SessionID, s.ProtocolVersion, tokens["carol"]})

	// One of bob's clients revoked: his child stops (his session with
	// that client's token is refused); alice's and carol's children and
	// sessions go on; his other client's next call starts a new child of
	// his, with his value.
	cli("revoke", clients["bob"].id)
	childB.waitGone(t, 20*time.Second, "bob's child after his client was revoked")
	if status, text := sessionText(runs["bob-1"].SessionID, runs["bob-1"].ProtocolVersion, tokens["bob"]); status != http.StatusUnauthorized {
		t.Errorf("bob's session with the revoked client's token: %d %.300s; want 401", status, text)
	}
	untouched("bob's client was revoked", "bob")
	sees("bob's other client after the revocation", "bob", goText("bob", tokens["bob2"]))
	if now := childOf("bob"); now.pid == childB.pid || now.pid == childA.pid || now.pid == childC.pid {
		t.Errorf("bob's new child is %d (his old %d, alice's %d, carol's %d)", now.pid, childB.pid, childA.pid, childC.pid)
	}
	untouched("bob's other client called again", "bob")

	for name, u := range users {
		if strings.Contains(p.logs.String(), u.value) {
			t.Errorf("the bridge's log holds %s's value", name)
		}
	}
	t.Logf("done in %v", time.Since(started).Round(time.Millisecond))
}
