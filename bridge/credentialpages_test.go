package bridge

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stelae-bridge/stelae-bridge/authserver"
	"github.com/stelae-bridge/stelae-bridge/config"
	"github.com/stelae-bridge/stelae-bridge/credstore"
	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

// pageBridge is a bridge behind its built-in server: "fake" gives each
// user a child of their own with their API_TOKEN, "plain" is shared.
type pageBridge struct {
	t     *testing.T
	b     *Bridge
	as    *authserver.Server
	store *credstore.Store
	url   string
	http  *http.Client
}

func newPageBridge(t *testing.T) *pageBridge {
	t.Helper()
	dir := bboltDir(t)
	as, err := authserver.Open(filepath.Join(dir, "oauth.db"), authserver.Options{Passphrase: "a long enough passphrase"})
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
	command, args, env := fakemcp.Command(fakemcp.ModeServer)
	auth := &config.Auth{Issuer: config.IssuerBuiltin}
	cfg := &config.Config{Names: []string{"fake", "plain"}, Auth: auth, ProfileNames: []string{"both"},
		Profiles: map[string]*config.Profile{"both": {Name: "both", Destinations: []string{"fake", "plain"}}}, Destinations: map[string]*config.Destination{
			"fake": {Name: "fake", Command: command, Args: args, Env: env, Auth: auth, Isolation: config.IsolationUser,
				Credentials: []config.Credential{{Name: "API_TOKEN", Description: "your token", Pattern: regexp.MustCompile(`^tok-`)}, {Name: "API_HOST", Optional: true}}},
			"plain": {Name: "plain", Command: command, Args: args, Env: env, Auth: auth},
		}}
	b, err := New(cfg, Options{AuthServer: as, CredStore: store, StopGrace: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(b)
	t.Cleanup(func() {
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := b.Shutdown(ctx); err != nil {
			t.Error(err)
		}
	})
	return &pageBridge{t: t, b: b, as: as, store: store, url: srv.URL,
		http: &http.Client{Timeout: 20 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// do sends a request under host (the Host header: the bridge's name for
// the client), with header pairs; it returns the answer and its body.
func (p *pageBridge) do(method, host, path, body string, header ...string) (*http.Response, string) {
	p.t.Helper()
	req, err := http.NewRequest(method, p.url+path, strings.NewReader(body))
	if err != nil {
		p.t.Fatal(err)
	}
	req.Host = host
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	resp, err := p.http.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

var (
	pageCSRF  = regexp.MustCompile(`name="csrf" value="([^"]*)"`)
	pageQuery = regexp.MustCompile(`name="query" value="([^"]*)"`)
)

// csrfOf is the CSRF field of page and the Cookie header of resp's
// cookies.
func csrfOf(t *testing.T, resp *http.Response, page string) (string, string) {
	t.Helper()
	m := pageCSRF.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no form: %d %s", resp.StatusCode, page)
	}
	var cookies []string
	for _, c := range resp.Cookies() {
		cookies = append(cookies, c.Name+"="+c.Value)
	}
	return m[1], strings.Join(cookies, "; ")
}

// invite invites name and sets their secret through the invite page; it
// returns their subject.
func (p *pageBridge) invite(name, secret string) string {
	p.t.Helper()
	code, u, _, err := p.as.InviteUser(name)
	if err != nil {
		p.t.Fatal(err)
	}
	host := strings.TrimPrefix(p.url, "http://")
	resp, page := p.do(http.MethodGet, host, authserver.PathInvite+"?code="+url.QueryEscape(code), "")
	csrf, cookie := csrfOf(p.t, resp, page)
	form := url.Values{"code": {code}, "csrf": {csrf}, "secret": {secret}, "confirm": {secret}}
	if resp, page := p.do(http.MethodPost, host, authserver.PathInvite, form.Encode(), "Content-Type", "application/x-www-form-urlencoded", "Cookie", cookie); resp.StatusCode != http.StatusOK {
		p.t.Fatalf("%s's secret: %d %s", name, resp.StatusCode, page)
	}
	return u.Subject
}

// token signs name in on the approval page under host and returns an
// access token for host's fake destination.
func (p *pageBridge) token(host, name, secret string) string {
	p.t.Helper()
	return p.tokenFor(host, name, secret, "/fake/mcp")
}

// tokenFor is token for the resource at path.
func (p *pageBridge) tokenFor(host, name, secret, path string) string {
	p.t.Helper()
	const redirect = "https://client.example/cb"
	resp, body := p.do(http.MethodPost, host, authserver.PathRegister, fmt.Sprintf(`{"client_name":"t","redirect_uris":[%q],"token_endpoint_auth_method":"none"}`, redirect), "Content-Type", "application/json")
	var reg struct {
		ClientID string `json:"client_id"`
	}
	if resp.StatusCode != http.StatusCreated || json.Unmarshal([]byte(body), &reg) != nil {
		p.t.Fatalf("register: %d %s", resp.StatusCode, body)
	}
	verifier := strings.Repeat("v", 43)
	sum := sha256.Sum256([]byte(verifier))
	q := url.Values{"response_type": {"code"}, "client_id": {reg.ClientID}, "redirect_uri": {redirect}, "state": {"s"},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"}, "resource": {"http://" + host + path}}
	resp, page := p.do(http.MethodGet, host, authserver.PathAuthorize+"?"+q.Encode(), "")
	csrf, cookie := csrfOf(p.t, resp, page)
	query := html.UnescapeString(pageQuery.FindStringSubmatch(page)[1])
	form := url.Values{"query": {query}, "csrf": {csrf}, "name": {name}, "passphrase": {secret}, "decision": {"approve"}}
	resp, page = p.do(http.MethodPost, host, authserver.PathAuthorize, form.Encode(), "Content-Type", "application/x-www-form-urlencoded", "Cookie", cookie, "Origin", "http://"+host)
	loc, _ := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || loc == nil || loc.Query().Get("code") == "" {
		p.t.Fatalf("%s's approval under %s: %d %s %s", name, host, resp.StatusCode, resp.Header.Get("Location"), page)
	}
	form = url.Values{"grant_type": {"authorization_code"}, "client_id": {reg.ClientID}, "code": {loc.Query().Get("code")}, "code_verifier": {verifier}, "redirect_uri": {redirect}}
	resp, body = p.do(http.MethodPost, host, authserver.PathToken, form.Encode(), "Content-Type", "application/x-www-form-urlencoded")
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal([]byte(body), &tok) != nil || tok.AccessToken == "" {
		p.t.Fatalf("%s's token: %d %s", name, resp.StatusCode, body)
	}
	return tok.AccessToken
}

// mcpSession is a 2025 session of fake with a token, under a host.
type mcpSession struct {
	p                *pageBridge
	host, token, sid string
	// path is the endpoint's (/fake/mcp unless sessionAt says).
	path string
}

func (p *pageBridge) session(host, token string) *mcpSession {
	p.t.Helper()
	return p.sessionAt(host, token, "/fake/mcp")
}

// sessionAt is a session on the endpoint at path.
func (p *pageBridge) sessionAt(host, token, path string) *mcpSession {
	p.t.Helper()
	s := &mcpSession{p: p, host: host, token: token, path: path}
	status, _ := s.call(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if status != http.StatusOK || s.sid == "" {
		p.t.Fatalf("initialize: %d", status)
	}
	s.call(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return s
}

// call posts msg in the session: the status and the JSON-RPC answer (from
// JSON or the SSE stream's message).
func (s *mcpSession) call(msg string) (int, json.RawMessage) {
	s.p.t.Helper()
	h := []string{"Content-Type", "application/json", "Accept", "application/json, text/event-stream", "Authorization", "Bearer " + s.token, "Mcp-Protocol-Version", "2025-06-18"}
	if s.sid != "" {
		h = append(h, "Mcp-Session-Id", s.sid)
	}
	resp, body := s.p.do(http.MethodPost, s.host, s.path, msg, h...)
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		s.sid = sid
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(strings.NewReader(body))
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data:"); ok && strings.Contains(d, `"id"`) {
				return resp.StatusCode, json.RawMessage(strings.TrimSpace(d))
			}
		}
	}
	return resp.StatusCode, json.RawMessage(body)
}

// childAnswer is what the fake child's whoami and getenv answer.
type childAnswer struct {
	PID     int    `json:"pid"`
	Value   string `json:"value"`
	IsError bool   `json:"isError"`
}

// tool calls a fake tool: the status and its answer.
func (s *mcpSession) tool(name, args string) (int, childAnswer) {
	s.p.t.Helper()
	status, msg := s.call(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"` + name + `","arguments":` + args + `}}`)
	var m struct {
		Result childAnswer `json:"result"`
	}
	_ = json.Unmarshal(msg, &m)
	return status, m.Result
}

func (s *mcpSession) pid() int {
	s.p.t.Helper()
	status, w := s.tool("whoami", "{}")
	if status != http.StatusOK || w.PID == 0 {
		s.p.t.Fatalf("whoami under %s: %d", s.host, status)
	}
	return w.PID
}

// apiToken is API_TOKEN in the session's child.
func (s *mcpSession) apiToken() string {
	s.p.t.Helper()
	_, v := s.tool("getenv", `{"name":"API_TOKEN"}`)
	if v.IsError {
		return "(the stand-in)"
	}
	return v.Value
}

// TestCredentialPagesSeam: the bridge's side of the credentials page. A
// user of the built-in server is one user whatever Host they reached the
// bridge by ("b:" and their subject: their tokens under two names share
// one child and the credentials the page stored); Set and Delete restart
// that user's child only (their session ends, their next one has the new
// value; another user's child and session go on); UserGone stops a user's
// children and, removed, deletes what they stored; Declared is the
// user-isolated destinations behind the built-in server, their patterns
// read as the spawn reads them.
func TestCredentialPagesSeam(t *testing.T) {
	p := newPageBridge(t)
	cp := credentialPages{p.b}
	aliceSub, bobSub := p.invite("alice", "alice's secret 1"), p.invite("bob", "bob's own secret")
	if specs, ok := cp.Declared("fake"); !ok || len(specs) != 2 || specs[0].Name != "API_TOKEN" || !specs[0].Required || specs[1].Required {
		t.Fatalf("Declared(fake) = %v %v", specs, ok)
	}
	for _, d := range []string{"plain", "nope", ""} {
		if _, ok := cp.Declared(d); ok {
			t.Errorf("Declared(%q) is true", d)
		}
	}
	// A prefix pattern ("^tok-") takes what the spawn takes.
	if err := cp.Set("fake", aliceSub, "alice", map[string]string{"API_TOKEN": "nope"}); err == nil {
		t.Error("a value not of the pattern was stored")
	}
	for sub, v := range map[string]string{aliceSub: "tok-alice-1", bobSub: "tok-bob-1"} {
		if err := cp.Set("fake", sub, "x", map[string]string{"API_TOKEN": v}); err != nil {
			t.Fatalf("Set: %v", err)
		}
	}
	if n, err := cp.Names("fake", aliceSub); err != nil || strings.Join(n.Stored, ",") != "API_TOKEN" || n.Updated.IsZero() {
		t.Errorf("Names(alice) = %+v %v", n, err)
	}
	// Two names of the bridge (the issuer differs): one user.
	host1 := strings.TrimPrefix(p.url, "http://")
	host2 := strings.Replace(host1, "127.0.0.1", "localhost", 1)
	aliceTok1, aliceTok2 := p.token(host1, "alice", "alice's secret 1"), p.token(host2, "alice", "alice's secret 1")
	bobTok := p.token(host1, "bob", "bob's own secret")
	a1 := p.session(host1, aliceTok1)
	pidA := a1.pid()
	if v := a1.apiToken(); v != "tok-alice-1" {
		t.Fatalf("alice's child's API_TOKEN: %q", v)
	}
	a2 := p.session(host2, aliceTok2)
	if pid := a2.pid(); pid != pidA {
		t.Errorf("alice's session under %s has child %d, under %s %d: want one child (one user whatever the Host)", host2, pid, host1, pidA)
	}
	if v := a2.apiToken(); v != "tok-alice-1" {
		t.Errorf("alice under %s reads API_TOKEN %q", host2, v)
	}
	bob := p.session(host1, bobTok)
	pidB := bob.pid()
	if pidB == pidA || bob.apiToken() != "tok-bob-1" {
		t.Fatalf("bob's child: %d (alice's %d)", pidB, pidA)
	}

	// Alice replaces hers: her sessions end, her next one reads the new
	// value on a new child; bob's goes on with the same child.
	if err := cp.Set("fake", aliceSub, "alice", map[string]string{"API_TOKEN": "tok-alice-2"}); err != nil {
		t.Fatal(err)
	}
	if status, _ := a1.tool("whoami", "{}"); status != http.StatusNotFound {
		t.Errorf("alice's session after her credentials changed: %d, want 404 (it ended with her child)", status)
	}
	a3 := p.session(host1, aliceTok1)
	if pid, v := a3.pid(), a3.apiToken(); pid == pidA || v != "tok-alice-2" {
		t.Errorf("alice after Set: child %d (was %d), API_TOKEN %q; want a new child with the new value", pid, pidA, v)
	}
	if pid := bob.pid(); pid != pidB {
		t.Errorf("bob's child changed (%d, was %d) when alice set hers", pid, pidB)
	}
	// A variable set alone keeps the others.
	if err := cp.Set("fake", aliceSub, "alice", map[string]string{"API_HOST": "alice.example"}); err != nil {
		t.Fatal(err)
	}
	if v := p.session(host1, aliceTok1).apiToken(); v != "tok-alice-2" {
		t.Errorf("alice's API_TOKEN after she set API_HOST alone: %q", v)
	}
	// Delete: her child stops, the stand-in answers her next call.
	if err := cp.Delete("fake", aliceSub); err != nil {
		t.Fatal(err)
	}
	a4 := p.session(host1, aliceTok1)
	if v := a4.apiToken(); v != "(the stand-in)" {
		t.Errorf("alice after Delete reads %q", v)
	}
	if pid := bob.pid(); pid != pidB {
		t.Errorf("bob's child changed when alice deleted hers")
	}
	// Bob removed: his session ends, his credentials go; alice's
	// session stays.
	users := func() map[string]string {
		out := map[string]string{}
		for _, u := range p.b.t().endpoints["fake"].Users() {
			out[u.Key] = u.Name
		}
		return out
	}
	if us := users(); us[BuiltinUserKey(aliceSub)] != "alice" || us[BuiltinUserKey(bobSub)] != "bob" {
		t.Errorf("the users' children: %v; want alice's and bob's by their keys, named", us)
	}
	if _, err := p.as.RemoveUser("bob"); err != nil {
		t.Fatal(err)
	}
	if _, ok := users()[BuiltinUserKey(bobSub)]; ok {
		t.Error("a removed user's child is still there")
	}
	if _, ok, _ := p.store.Lookup("fake", BuiltinUserKey(bobSub)); ok {
		t.Error("a removed user's credentials are still stored")
	}
	if status, _ := a4.tool("whoami", "{}"); status != http.StatusOK {
		t.Errorf("alice's session after bob was removed: %d", status)
	}
	// The stand-in's link needs the public URL.
	if u := p.b.credentialsURL("fake"); u != "" {
		t.Errorf("credentialsURL without a public URL: %q", u)
	}
	p.b.opts.PublicURL = "https://bridge.example/"
	if u := p.b.credentialsURL("fake"); u != "https://bridge.example/oauth/credentials/fake" {
		t.Errorf("credentialsURL = %q", u)
	}
	if u := p.b.credentialsURL("plain"); u != "" {
		t.Errorf("credentialsURL(plain) = %q", u)
	}
}

// TestConsoleDeleteCredentialsEndsEveryChild: the console's "delete
// credentials" for a user ends their children that had them — of the
// destination and of a profile it is a member of — and no one else's.
func TestConsoleDeleteCredentialsEndsEveryChild(t *testing.T) {
	p := newPageBridge(t)
	cp := credentialPages{p.b}
	aliceSub, bobSub := p.invite("alice", "alice's secret 1"), p.invite("bob", "bob's own secret")
	for sub, v := range map[string]string{aliceSub: "tok-alice-1", bobSub: "tok-bob-1"} {
		if err := cp.Set("fake", sub, "x", map[string]string{"API_TOKEN": v}); err != nil {
			t.Fatal(err)
		}
	}
	host := strings.TrimPrefix(p.url, "http://")
	aliceTok, bobTok := p.token(host, "alice", "alice's secret 1"), p.token(host, "bob", "bob's own secret")
	profTok := map[string]string{"alice": p.tokenFor(host, "alice", "alice's secret 1", "/p/both/mcp"), "bob": p.tokenFor(host, "bob", "bob's own secret", "/p/both/mcp")}
	sessions := map[string][2]*mcpSession{}
	for u, tok := range map[string]string{"alice": aliceTok, "bob": bobTok} {
		direct, prof := p.session(host, tok), p.sessionAt(host, profTok[u], "/p/both/mcp")
		prof.call(`{"jsonrpc":"2.0","id":"l","method":"tools/list"}`)
		if status, v := prof.tool("fake__getenv", `{"name":"API_TOKEN"}`); status != http.StatusOK || v.Value != "tok-"+u+"-1" {
			t.Fatalf("%s through the profile: %d %+v", u, status, v)
		}
		_ = direct.pid()
		sessions[u] = [2]*mcpSession{direct, prof}
	}
	if err := (*consoleBackend)(p.b).DeleteCredentials("fake", BuiltinUserKey(aliceSub)); err != nil {
		t.Fatal(err)
	}
	for u, want := range map[string]int{"alice": http.StatusNotFound, "bob": http.StatusOK} {
		for i, s := range sessions[u] {
			tool := []string{"whoami", "fake__whoami"}[i]
			if status, _ := s.tool(tool, "{}"); status != want {
				t.Errorf("%s's session at %s after alice's credentials were deleted: %d; want %d", u, s.path, status, want)
			}
		}
	}
}
