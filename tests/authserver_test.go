//go:build unix

package tests

// The built-in OAuth authorization server (issuer: builtin): discovery, approval, code and refresh
// exchanges, revocation, refusals, the registration cap, expired tokens, preregistered clients, a
// profile as one resource, and the TypeScript SDK client's own flow. builtinBridge serves a bridge
// behind it; the hand-driven OAuth client is in oauthhelpers_test.go.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stelae-bridge/stelae-bridge/authserver"
	"github.com/stelae-bridge/stelae-bridge/config"
	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

// builtinBridge serves notes and files behind the built-in authorization
// server, its state in dir.
func builtinBridge(t *testing.T, dir string) (*testBridge, *authserver.Server) {
	t.Helper()
	return builtinBridgeAt(t, dir, "", authserver.Options{})
}

// builtinBridgeAt is builtinBridge listening on addr (any when empty),
// with the server's options.
func builtinBridgeAt(t *testing.T, dir, addr string, opts authserver.Options) (*testBridge, *authserver.Server) {
	t.Helper()
	opts.Passphrase = testPassphrase
	as, err := authserver.Open(filepath.Join(dir, "oauth.db"), opts)
	if err != nil {
		t.Fatal(err)
	}
	b := newBridge(t, map[string]string{"notes": fakemcp.ModeServer, "files": fakemcp.ModeServer}, bridgeConfig{
		defaultDest: "notes",
		auth:        &config.Auth{Issuer: config.IssuerBuiltin},
		authServer:  as,
		addr:        addr,
	})
	t.Cleanup(func() { as.Close() })
	return b, as
}

func TestBuiltinAuthorizationServerFlow(t *testing.T) {
	dir := t.TempDir()
	b, as := builtinBridge(t, dir)
	base := b.srv.URL
	notes := b.url("notes")
	// Discovery: PRM → the bridge itself → its metadata.
	var prm struct {
		AuthorizationServers []string `json:"authorization_servers"`
	}
	r := mustRequest(t, http.MethodGet, base+"/.well-known/oauth-protected-resource/notes/mcp", "", "")
	if json.Unmarshal(r.body, &prm) != nil || len(prm.AuthorizationServers) != 1 || prm.AuthorizationServers[0] != base {
		t.Fatalf("PRM: %s", r.body)
	}
	for _, p := range []string{"/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"} {
		var md map[string]any
		r := mustRequest(t, http.MethodGet, base+p, "", "")
		if json.Unmarshal(r.body, &md) != nil || md["issuer"] != base || md["token_endpoint"] != base+"/oauth/token" ||
			md["client_id_metadata_document_supported"] != true || md["authorization_response_iss_parameter_supported"] != true {
			t.Fatalf("%s: %s", p, r.body)
		}
	}

	c := newOAuthClient(t, base)
	c.register()
	verifier, challenge := pkce("v")
	access, refresh := c.exchange(c.code(challenge, notes), verifier)

	// The token opens notes, not files.
	if r := mustRequest(t, http.MethodPost, notes, "", initBody, "Authorization", "Bearer "+access); r.status != 200 {
		t.Fatalf("notes with the token: %d %s", r.status, r.body)
	}
	if r := mustRequest(t, http.MethodPost, b.url("files"), "", initBody, "Authorization", "Bearer "+access); r.status != 401 {
		t.Errorf("files with a token for notes: %d", r.status)
	}
	// Refresh rotates; reusing the old refresh token revokes the family.
	status, out := c.tokenRequest(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}})
	refresh2, _ := out["refresh_token"].(string)
	if status != 200 || refresh2 == "" || refresh2 == refresh {
		t.Fatalf("refresh: %d %v", status, out)
	}
	if status, out := c.tokenRequest(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}}); status != 400 || out["error"] != "invalid_grant" {
		t.Fatalf("reused refresh token: %d %v", status, out)
	}
	if status, _ := c.tokenRequest(url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh2}}); status != 400 {
		t.Errorf("the family of a reused refresh token still works: %d", status)
	}
	// Revoking the client refuses its access tokens at once.
	if err := as.RevokeClient(c.id); err != nil {
		t.Fatal(err)
	}
	if r := mustRequest(t, http.MethodPost, notes, "", initBody, "Authorization", "Bearer "+access); r.status != 401 {
		t.Errorf("revoked client's token: %d", r.status)
	}
	if status, out := c.tokenRequest(url.Values{"grant_type": {"authorization_code"}}); status != 401 || out["error"] != "invalid_client" {
		t.Errorf("revoked client at the token endpoint: %d %v", status, out)
	}
	// Nothing secret in the log.
	for _, secret := range []string{testPassphrase, access, refresh, refresh2} {
		if strings.Contains(b.logs.String(), secret) {
			t.Errorf("a secret is in the log: %.12s…", secret)
		}
	}
}

func TestBuiltinAuthorizationServerRefusals(t *testing.T) {
	b, _ := builtinBridge(t, t.TempDir())
	base, notes := b.srv.URL, b.url("notes")
	c := newOAuthClient(t, base)
	c.register()
	verifier, challenge := pkce("w")

	// Errors shown on the page, never redirected: unknown client, foreign
	// redirect URI.
	for name, u := range map[string]string{
		"unknown client":       c.authorizeURL(challenge, notes, "client_id", "dcr_nope"),
		"foreign redirect URI": c.authorizeURL(challenge, notes, "redirect_uri", "https://evil.example/cb"),
	} {
		resp, page := c.approve(u, testPassphrase)
		if resp.StatusCode != 400 || resp.Header.Get("Location") != "" || !strings.Contains(page, "cannot be approved") {
			t.Errorf("%s: %d %s", name, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
	// Errors of a client never approved are shown on the page (no open
	// redirector from the bridge's hostname); once approved, redirected.
	resp, err := c.http.Get(c.authorizeURL(challenge, notes, "response_type", "token"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Location") != "" {
		t.Errorf("an error of a client never approved: %d %q, want 400 on the page", resp.StatusCode, resp.Header.Get("Location"))
	}
	c.code(challenge, notes)
	// Errors redirected to the client.
	for name, tc := range map[string]struct {
		over []string
		code string
	}{
		"PKCE missing":     {[]string{"code_challenge", ""}, "invalid_request"},
		"PKCE plain":       {[]string{"code_challenge_method", "plain"}, "invalid_request"},
		"resource missing": {[]string{"resource", ""}, "invalid_target"},
		"foreign resource": {[]string{"resource", "https://elsewhere.example/mcp"}, "invalid_target"},
		"response type":    {[]string{"response_type", "token"}, "unsupported_response_type"},
	} {
		resp, err := c.http.Get(c.authorizeURL(challenge, notes, tc.over...))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		loc, _ := url.Parse(resp.Header.Get("Location"))
		if resp.StatusCode != http.StatusFound || loc.Query().Get("error") != tc.code || loc.Query().Get("state") != "st-1" {
			t.Errorf("%s: %d %s, want a redirect with error=%s", name, resp.StatusCode, loc, tc.code)
		}
	}
	// CSRF: a post without the page's token is refused.
	form := url.Values{"query": {strings.TrimPrefix(c.authorizeURL(challenge, notes), base+"/oauth/authorize?")}, "passphrase": {testPassphrase}, "decision": {"approve"}}
	resp, err = http.PostForm(base+"/oauth/authorize", form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("post without CSRF token: %d", resp.StatusCode)
	}
	// Wrong verifier, code replay, another client's code, other redirect URI.
	code := c.code(challenge, notes)
	if status, out := c.tokenRequest(url.Values{"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {strings.Repeat("x", 60)}}); status != 400 || out["error"] != "invalid_grant" {
		t.Errorf("wrong verifier: %d %v", status, out)
	}
	if status, _ := c.tokenRequest(url.Values{"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {verifier}}); status != 400 {
		t.Errorf("code used after a failed attempt: %d (codes are single-use)", status)
	}
	code = c.code(challenge, notes)
	c.exchange(code, verifier)
	if status, _ := c.tokenRequest(url.Values{"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {verifier}}); status != 400 {
		t.Errorf("code replay: %d", status)
	}
	other := newOAuthClient(t, base)
	other.register()
	code = c.code(challenge, notes)
	if status, _ := other.tokenRequest(url.Values{"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {verifier}}); status != 400 {
		t.Errorf("another client's code: %d", status)
	}
	code = c.code(challenge, notes)
	if status, _ := c.tokenRequest(url.Values{"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {verifier}, "redirect_uri": {"https://client.example/other"}}); status != 400 {
		t.Errorf("other redirect URI: %d", status)
	}
	// Passphrase guessing is locked out.
	var locked bool
	for i := 0; i < 8; i++ {
		resp, _ := c.approve(c.authorizeURL(challenge, notes), "wrong guess")
		if resp.StatusCode == http.StatusTooManyRequests {
			locked = true
			break
		}
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("wrong passphrase: %d", resp.StatusCode)
		}
	}
	if !locked {
		t.Error("8 wrong passphrases in a row were not locked out")
	}
	// Tampered and expired access tokens are refused by the resource side.
	_, challenge2 := pkce("w")
	_ = challenge2
	if r := mustRequest(t, http.MethodPost, notes, "", initBody, "Authorization", "Bearer eyJhbGciOiJFUzI1NiJ9.e30.AAAA"); r.status != 401 {
		t.Errorf("tampered token: %d", r.status)
	}
}

func TestBuiltinRegistrationCap(t *testing.T) {
	as, err := authserver.Open(filepath.Join(t.TempDir(), "oauth.db"), authserver.Options{Passphrase: testPassphrase, MaxClients: 3, RegistrationsPerMinute: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer as.Close()
	b := newBridge(t, map[string]string{"notes": fakemcp.ModeServer}, bridgeConfig{auth: &config.Auth{Issuer: config.IssuerBuiltin}, authServer: as})
	codes := map[int]int{}
	for i := 0; i < 6; i++ {
		resp, err := http.Post(b.srv.URL+"/oauth/register", "application/json", strings.NewReader(`{"redirect_uris":["https://a.example/cb"]}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		codes[resp.StatusCode]++
	}
	if codes[201] != 3 || codes[503] != 3 {
		t.Errorf("registrations over a cap of 3: %v", codes)
	}
}

// tsOAuthApp runs tests/clients/ts-oauth-app.mjs.
type tsOAuthRun struct {
	OK          bool     `json:"ok"`
	Failure     string   `json:"failure"`
	Authorized  bool     `json:"authorized"`
	ClientID    string   `json:"clientId"`
	Tools       []string `json:"tools"`
	Echo        string   `json:"echo"`
	TokensSaved int      `json:"tokensSaved"`
	Page        struct {
		Client, Destination, RedirectHost string
	} `json:"page"`
	Steps []struct {
		Method, URL string
		Status      int
	} `json:"steps"`
}

func runTSOAuthApp(t *testing.T, args ...string) tsOAuthRun {
	t.Helper()
	node := node24(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{filepath.Join("clients", "ts-oauth-app.mjs")}, args...)...)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var out tsOAuthRun
	if jerr := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &out); jerr != nil || err != nil || !out.OK {
		t.Fatalf("ts-oauth-app %v: %v (%v): %s\nstdout %s\nstderr %s", args, err, jerr, out.Failure, stdout.String(), stderr.String())
	}
	return out
}

// TestBuiltinTypeScriptSDKClient: the official TypeScript SDK client's own
// OAuth flow against the built-in server — registering through DCR, and
// identified by a client metadata document served over https from a test
// CA — approve, connect, list and call tools; then the bridge restarts and
// the client, its access token gone stale, refreshes and calls again.
func TestBuiltinTypeScriptSDKClient(t *testing.T) {
	doc := httptest.NewTLSServer(nil)
	defer doc.Close()
	docURL := doc.URL + "/clients/ts-app.json"
	doc.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/clients/ts-app.json" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"client_id":%q,"client_name":"CIMD Test App","redirect_uris":["https://client.example/callback"],"token_endpoint_auth_method":"none"}`, docURL)
	})
	for _, tc := range []struct {
		name string
		args []string
		want string // client id prefix
		who  string // the client the page names
	}{
		{"dcr", nil, "dcr_", "ts-oauth-app"},
		{"cimd", []string{"--cimd", docURL}, docURL, "CIMD Test App"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := ln.Addr().String()
			ln.Close()
			opts := authserver.Options{CIMDTransportForTests: doc.Client().Transport}
			b, as := builtinBridgeAt(t, dir, addr, opts)
			stateFile := filepath.Join(dir, "client-state.json")
			args := append([]string{b.url("notes"), stateFile, testPassphrase}, tc.args...)
			first := runTSOAuthApp(t, args...)
			if !first.Authorized || !strings.HasPrefix(first.ClientID, tc.want) || !slices.Contains(first.Tools, "echo") || !strings.Contains(first.Echo, "approved") {
				t.Fatalf("first run: %+v", first)
			}
			if first.Page.Client != tc.who || first.Page.Destination != "notes" || first.Page.RedirectHost != "client.example" {
				t.Errorf("the approval page showed %+v", first.Page)
			}
			// The bridge restarts on the same state and address.
			b.close()
			as.Close()
			b2, _ := builtinBridgeAt(t, dir, addr, opts)
			again := runTSOAuthApp(t, append(args, "--stale-access")...)
			if again.Authorized || again.TokensSaved == 0 || !strings.Contains(again.Echo, "approved") {
				t.Fatalf("after the restart: %+v", again)
			}
			refreshed := false
			for _, s := range again.Steps {
				refreshed = refreshed || (s.URL == b2.srv.URL+"/oauth/token" && s.Status == 200)
			}
			if !refreshed {
				t.Errorf("no token refresh after the restart: %+v", again.Steps)
			}
		})
	}
}

// TestBuiltinExpiredAccessToken: an access token past its life is refused
// by the resource side (the built-in issuer tolerates no skew: it is the
// bridge's own clock).
func TestBuiltinExpiredAccessToken(t *testing.T) {
	// A token's exp is in whole seconds: with a 1 s lifetime it could be
	// expired (exp = the next second) a few milliseconds after it was
	// issued. Three seconds leave it at least two.
	b, _ := builtinBridgeAt(t, t.TempDir(), "", authserver.Options{AccessTTL: 3 * time.Second})
	c := newOAuthClient(t, b.srv.URL)
	c.register()
	verifier, challenge := pkce("e")
	access, _ := c.exchange(c.code(challenge, b.url("notes")), verifier)
	if r := mustRequest(t, http.MethodPost, b.url("notes"), "", initBody, "Authorization", "Bearer "+access); r.status != 200 {
		t.Fatalf("fresh token: %d %s", r.status, r.body)
	}
	waitFor(t, 15*time.Second, "the access token to expire", func() bool {
		r := mustRequest(t, http.MethodPost, b.url("notes"), "", initBody, "Authorization", "Bearer "+access)
		return r.status == 401 && strings.Contains(string(r.body), "expired")
	})
}

// TestBuiltinPreregisteredClient: a client declared in the configuration
// goes through the same approval and token exchange, and can be revoked.
func TestBuiltinPreregisteredClient(t *testing.T) {
	b, as := builtinBridgeAt(t, t.TempDir(), "", authserver.Options{Clients: []authserver.Client{{ID: "my-script", Name: "My Script", RedirectURIs: []string{"http://127.0.0.1:8976/cb"}}}})
	c := newOAuthClient(t, b.srv.URL)
	c.id, c.redirectURI = "my-script", "http://127.0.0.1:8976/cb"
	verifier, challenge := pkce("p")
	access, _ := c.exchange(c.code(challenge, b.url("notes")), verifier)
	if r := mustRequest(t, http.MethodPost, b.url("notes"), "", initBody, "Authorization", "Bearer "+access); r.status != 200 {
		t.Fatalf("pre-registered client's token: %d %s", r.status, r.body)
	}
	if err := as.RevokeClient("my-script"); err != nil {
		t.Fatal(err)
	}
	if r := mustRequest(t, http.MethodPost, b.url("notes"), "", initBody, "Authorization", "Bearer "+access); r.status != 401 {
		t.Errorf("revoked pre-registered client's token: %d", r.status)
	}
	if resp, _ := c.approve(c.authorizeURL(challenge, b.url("notes")), testPassphrase); resp.StatusCode != 400 {
		t.Errorf("revoked pre-registered client on the approval page: %d", resp.StatusCode)
	}
}

// TestBuiltinOAuthForAProfile: a profile behind the built-in authorization
// server is one protected resource: its own metadata at
// /.well-known/oauth-protected-resource/p/{profile}/mcp, one approval for
// all its members, and its token opens the profile only — not its
// members' own endpoints (a member's token does not open the profile
// either).
func TestBuiltinOAuthForAProfile(t *testing.T) {
	dir := t.TempDir()
	as, err := authserver.Open(filepath.Join(dir, "oauth.db"), authserver.Options{Passphrase: testPassphrase})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { as.Close() })
	b := newBridge(t, map[string]string{"notes": fakemcp.ModeServer, "files": fakemcp.ModeServer}, bridgeConfig{
		auth: &config.Auth{Issuer: config.IssuerBuiltin}, authServer: as, profiles: map[string][]string{"both": {"notes", "files"}},
	})
	base := b.srv.URL
	profileURL := base + "/p/both/mcp"
	var prm struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	r := mustRequest(t, http.MethodGet, base+"/.well-known/oauth-protected-resource/p/both/mcp", "", "")
	if json.Unmarshal(r.body, &prm) != nil || prm.Resource != profileURL || len(prm.AuthorizationServers) != 1 || prm.AuthorizationServers[0] != base {
		t.Fatalf("the profile's PRM: %d %s", r.status, r.body)
	}
	r = mustRequest(t, http.MethodPost, profileURL, "", initBody)
	if r.status != http.StatusUnauthorized || !strings.Contains(r.header.Get("WWW-Authenticate"), "/.well-known/oauth-protected-resource/p/both/mcp") {
		t.Fatalf("the profile without a token: %d %q", r.status, r.header.Get("WWW-Authenticate"))
	}

	c := newOAuthClient(t, base)
	c.register()
	verifier, challenge := pkce("profile")
	access, _ := c.exchange(c.code(challenge, profileURL), verifier)
	pc := newClient(t, profileURL)
	if r := pc.post(initBody, "Authorization", "Bearer "+access); r.status != http.StatusOK {
		t.Fatalf("the profile with its token: %d %s", r.status, r.body)
	} else {
		pc.sid = r.header.Get("Mcp-Session-Id")
	}
	names := toolNames(t, pc.post(`{"jsonrpc":"2.0","id":"l","method":"tools/list"}`, "Authorization", "Bearer "+access))
	if !slices.Contains(names, "notes__echo") || !slices.Contains(names, "files__echo") {
		t.Errorf("the profile lists %v", names)
	}
	for _, member := range []string{"notes", "files"} {
		if r := mustRequest(t, http.MethodPost, b.url(member), "", initBody, "Authorization", "Bearer "+access); r.status != http.StatusUnauthorized {
			t.Errorf("%s's endpoint with the profile's token: %d", member, r.status)
		}
	}
	verifier2, challenge2 := pkce("notes")
	notesToken, _ := c.exchange(c.code(challenge2, b.url("notes")), verifier2)
	if r := mustRequest(t, http.MethodPost, profileURL, "", initBody, "Authorization", "Bearer "+notesToken); r.status != http.StatusUnauthorized {
		t.Errorf("the profile with a token for notes: %d", r.status)
	}
}
