//go:build unix

package tests

// The bridge as an OAuth resource server in front of the test issuer: refusals and their
// challenges, an issuer that is down, protected-resource metadata, sessions bound to their
// principal, the TypeScript SDK client's flow, and opaque tokens checked by introspection.

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/stelae-bridge/stelae-bridge/bridge"
	"github.com/stelae-bridge/stelae-bridge/config"
	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
	"github.com/stelae-bridge/stelae-bridge/tests/testissuer"
)

// oauthBridge serves notes and files (notes the default) behind the test
// issuer, scope mcp required.
func oauthBridge(t *testing.T, iss *testissuer.Issuer, opts bridge.Options) *testBridge {
	t.Helper()
	return newBridge(t, map[string]string{"notes": fakemcp.ModeServer, "files": fakemcp.ModeServer}, bridgeConfig{
		defaultDest: "notes",
		auth:        &config.Auth{Issuer: iss.URL, Scopes: []string{"mcp"}},
		opts:        opts,
	})
}

func newIssuer(t *testing.T) *testissuer.Issuer {
	iss := testissuer.New()
	t.Cleanup(iss.Close)
	return iss
}

func TestOAuthRefusals(t *testing.T) {
	iss := newIssuer(t)
	other := newIssuer(t)
	b := oauthBridge(t, iss, bridge.Options{AuthTokens: []string{"static-operator-token"}, OAuthMinRefresh: 100 * time.Millisecond})
	notes, files := b.url("notes"), b.url("files")
	good := testissuer.Claims{Subject: "alice", Audience: []string{notes}, Scope: "mcp", ClientID: "chatgpt"}
	with := func(f func(*testissuer.Claims)) testissuer.Claims { c := good; f(&c); return c }
	prmNotes := b.srv.URL + "/.well-known/oauth-protected-resource/notes/mcp"
	for _, tc := range []struct {
		name, url, token string
		status           int
		errCode          string // error= in the challenge
		words            string // in the JSON-RPC error message
	}{
		{"no token", notes, "", 401, "", "needs an OAuth access token"},
		{"malformed", notes, "abc", 401, "invalid_token", "not a JWT"},
		{"bad signature", notes, iss.Token(good)[:len(iss.Token(good))-4] + "AAAA", 401, "invalid_token", "signature"},
		{"alg none", notes, iss.TokenAlgNone(good), 401, "invalid_token", "not a JWT"},
		{"HS256 with the public key", notes, iss.TokenHS256WithPublicKey(good), 401, "invalid_token", "not a JWT"},
		{"expired", notes, iss.Token(with(func(c *testissuer.Claims) { c.Expiry = time.Now().Add(-time.Hour) })), 401, "invalid_token", "expired"},
		{"not yet valid", notes, iss.Token(with(func(c *testissuer.Claims) { c.NotBefore = time.Now().Add(time.Hour) })), 401, "invalid_token", "not valid yet"},
		{"another issuer", notes, other.Token(good), 401, "invalid_token", "signature"},
		{"wrong audience", notes, iss.Token(with(func(c *testissuer.Claims) { c.Audience = []string{"https://elsewhere.example/mcp"} })), 401, "invalid_token", "elsewhere"},
		{"token for another destination", files, iss.Token(good), 401, "invalid_token", "notes/mcp"},
		{"missing scope", notes, iss.Token(with(func(c *testissuer.Claims) { c.Scope = "other" })), 403, "insufficient_scope", "scope mcp"},
		{"unknown kid", notes, iss.TokenWith(testissuer.Unpublished("k9", jose.RS256), good), 401, "invalid_token", "kid \"k9\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h []string
			if tc.token != "" {
				h = []string{"Authorization", "Bearer " + tc.token}
			}
			r := mustRequest(t, http.MethodPost, tc.url, "", initBody, h...)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			checkTransportError(t, tc.name, r, tc.status, 0, tc.words)
			ch := challenge(t, r)
			wantPRM := prmNotes
			if tc.url == files {
				wantPRM = b.srv.URL + "/.well-known/oauth-protected-resource/files/mcp"
			}
			if ch["resource_metadata"] != wantPRM || ch["scope"] != "mcp" || ch["error"] != tc.errCode {
				t.Errorf("challenge %v; want resource_metadata %s, scope mcp, error %q", ch, wantPRM, tc.errCode)
			}
			if tc.token != "" && strings.Contains(r.header.Get("WWW-Authenticate")+string(r.body)+b.logs.String(), tc.token) {
				t.Error("the token was echoed or logged")
			}
			if sid := r.header.Get("Mcp-Session-Id"); sid != "" {
				t.Errorf("a refused request got session %s", sid)
			}
		})
	}
	// A good token, the static operator token, and the open routes.
	if r := mustRequest(t, http.MethodPost, notes, "", initBody, "Authorization", "Bearer "+iss.Token(good)); r.status != 200 || r.header.Get("Mcp-Session-Id") == "" {
		t.Fatalf("valid token: %d %s", r.status, r.body)
	}
	if r := mustRequest(t, http.MethodPost, files, "", initBody, "Authorization", "Bearer static-operator-token"); r.status != 200 {
		t.Fatalf("static token alongside OAuth: %d %s", r.status, r.body)
	}
	for _, path := range []string{"/healthz", "/.well-known/oauth-protected-resource/notes/mcp"} {
		if r := mustRequest(t, http.MethodGet, b.srv.URL+path, "", ""); r.status != 200 {
			t.Errorf("%s without a token: %d", path, r.status)
		}
	}
	for _, path := range []string{"/metrics", "/tools/list", "/.well-known/mcp/manifest.json", "/healthz?verbose"} {
		r := mustRequest(t, http.MethodGet, b.srv.URL+path, "", "")
		if r.status != 401 || challenge(t, r)["resource_metadata"] != b.srv.URL+"/.well-known/oauth-protected-resource" {
			t.Errorf("%s without a token: %d %v", path, r.status, r.header.Get("WWW-Authenticate"))
		}
		if r := mustRequest(t, http.MethodGet, b.srv.URL+path, "", "", "Authorization", "Bearer "+iss.Token(good)); r.status != 200 {
			t.Errorf("%s with a token for one of the bridge's resources: %d %s", path, r.status, r.body)
		}
	}
	// The default destination at /mcp and POST / is protected the same way,
	// with its own metadata URL.
	for path, prm := range map[string]string{"/mcp": "/.well-known/oauth-protected-resource/mcp", "/": "/.well-known/oauth-protected-resource"} {
		r := mustRequest(t, http.MethodPost, b.srv.URL+path, "", initBody)
		if r.status != 401 || challenge(t, r)["resource_metadata"] != b.srv.URL+prm {
			t.Errorf("POST %s without a token: %d %s", path, r.status, r.header.Get("WWW-Authenticate"))
		}
		tok := iss.Token(with(func(c *testissuer.Claims) { c.Audience = []string{b.srv.URL + strings.TrimSuffix(path, "/")} }))
		if r := mustRequest(t, http.MethodPost, b.srv.URL+path, "", initBody, "Authorization", "Bearer "+tok); r.status != 200 {
			t.Errorf("POST %s with a token for it: %d %s", path, r.status, r.body)
		}
	}
	// After the issuer rotates its key, a token of the new key is accepted:
	// the bridge fetches the keys again on the unknown kid, once the
	// -oauth-key-refetch interval since the last such fetch (the unknown
	// kid above) has passed.
	iss.Rotate("k2", jose.ES256, false)
	rotated := iss.Token(good)
	waitFor(t, 10*time.Second, "a token of the rotated key to be accepted", func() bool {
		return mustRequest(t, http.MethodPost, notes, "", initBody, "Authorization", "Bearer "+rotated).status == 200
	})
}

func TestOAuthIssuerDown(t *testing.T) {
	iss := newIssuer(t)
	iss.Down.Store(true)
	b := oauthBridge(t, iss, bridge.Options{})
	tok := iss.Token(testissuer.Claims{Subject: "alice", Audience: []string{b.url("notes")}, Scope: "mcp"})
	for i := 0; i < 5; i++ {
		r := mustRequest(t, http.MethodPost, b.url("notes"), "", initBody, "Authorization", "Bearer "+tok)
		checkTransportError(t, "issuer down", r, 503, 0, "cannot validate access tokens", iss.URL)
		if r.header.Get("Retry-After") == "" || r.header.Get("WWW-Authenticate") != "" {
			t.Errorf("503 headers: %v", r.header)
		}
	}
	iss.Down.Store(false)
	// The bridge retries the issuer at most every -oauth-key-refetch (30 s
	// by default); with a short one it recovers at once.
	b2 := oauthBridge(t, iss, bridge.Options{OAuthMinRefresh: 10 * time.Millisecond})
	tok2 := iss.Token(testissuer.Claims{Subject: "alice", Audience: []string{b2.url("notes")}, Scope: "mcp"})
	if r := mustRequest(t, http.MethodPost, b2.url("notes"), "", initBody, "Authorization", "Bearer "+tok2); r.status != 200 {
		t.Fatalf("issuer back: %d %s", r.status, r.body)
	}
}

func TestOAuthResourceMetadata(t *testing.T) {
	iss := newIssuer(t)
	for _, tc := range []struct {
		name    string
		opts    bridge.Options
		headers []string
		base    func(b *testBridge) string
	}{
		{"request host", bridge.Options{}, nil, func(b *testBridge) string { return b.srv.URL }},
		{"public url", bridge.Options{PublicURL: "https://mcp.example.com/"}, nil, func(*testBridge) string { return "https://mcp.example.com" }},
		{"trusted forwarded headers", bridge.Options{TrustProxyHeaders: true}, []string{"X-Forwarded-Proto", "https", "X-Forwarded-Host", "tunnel.example.net"}, func(*testBridge) string { return "https://tunnel.example.net" }},
		{"untrusted forwarded headers", bridge.Options{}, []string{"X-Forwarded-Proto", "https", "X-Forwarded-Host", "tunnel.example.net"}, func(b *testBridge) string { return b.srv.URL }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := oauthBridge(t, iss, tc.opts)
			base := tc.base(b)
			for path, resource := range map[string]string{
				"/.well-known/oauth-protected-resource/notes/mcp": base + "/notes/mcp",
				"/.well-known/oauth-protected-resource/files/mcp": base + "/files/mcp",
				"/.well-known/oauth-protected-resource/mcp":       base + "/mcp",
				"/.well-known/oauth-protected-resource":           base,
			} {
				r := mustRequest(t, http.MethodGet, b.srv.URL+path, "", "", tc.headers...)
				var doc struct {
					Resource             string   `json:"resource"`
					AuthorizationServers []string `json:"authorization_servers"`
					ScopesSupported      []string `json:"scopes_supported"`
					BearerMethods        []string `json:"bearer_methods_supported"`
				}
				if r.status != 200 || json.Unmarshal(r.body, &doc) != nil {
					t.Fatalf("%s: %d %s", path, r.status, r.body)
				}
				if doc.Resource != resource || len(doc.AuthorizationServers) != 1 || doc.AuthorizationServers[0] != iss.URL ||
					strings.Join(doc.ScopesSupported, " ") != "mcp" || strings.Join(doc.BearerMethods, " ") != "header" {
					t.Errorf("%s: %s; want resource %s", path, r.body, resource)
				}
				if ct, cc := r.header.Get("Content-Type"), r.header.Get("Cache-Control"); ct != "application/json" || !strings.Contains(cc, "max-age") {
					t.Errorf("%s: Content-Type %q, Cache-Control %q", path, ct, cc)
				}
			}
			// The 401's resource_metadata is one of those URLs, and it has
			// the same base.
			r := mustRequest(t, http.MethodPost, b.url("files"), "", initBody, tc.headers...)
			if got := challenge(t, r)["resource_metadata"]; got != base+"/.well-known/oauth-protected-resource/files/mcp" {
				t.Errorf("401 names %s", got)
			}
			if r := mustRequest(t, http.MethodGet, b.srv.URL+"/.well-known/oauth-protected-resource/nope/mcp", "", ""); r.status != 404 {
				t.Errorf("metadata of no destination: %d", r.status)
			}
		})
	}
	// CORS-readable when CORS is on.
	b := oauthBridge(t, iss, bridge.Options{AllowedOrigins: []string{"https://inspector.example"}})
	r := mustRequest(t, http.MethodGet, b.srv.URL+"/.well-known/oauth-protected-resource/notes/mcp", "", "", "Origin", "https://inspector.example")
	if r.status != 200 || r.header.Get("Access-Control-Allow-Origin") != "https://inspector.example" {
		t.Errorf("CORS: %d %v", r.status, r.header)
	}
	// Without any auth: block the documents stay 404.
	open := fakeBridge(t, bridge.Options{})
	if r := mustRequest(t, http.MethodGet, open.srv.URL+"/.well-known/oauth-protected-resource/fake/mcp", "", ""); r.status != 404 || !strings.Contains(string(r.body), "does not use OAuth") {
		t.Errorf("no auth: %d %s", r.status, r.body)
	}
}

func TestOAuthSessionBinding(t *testing.T) {
	iss := newIssuer(t)
	b := oauthBridge(t, iss, bridge.Options{})
	notes := b.url("notes")
	tokenAt := func(sub, client string, at time.Time) string {
		return iss.Token(testissuer.Claims{Subject: sub, Audience: []string{notes}, Scope: "mcp", ClientID: client, IssuedAt: at})
	}
	token := func(sub, client string) string { return tokenAt(sub, client, time.Time{}) }
	c := newClient(t, notes)
	// The first token was issued two seconds ago (the issuer's clock).
	r := c.post(initBody, "Authorization", "Bearer "+tokenAt("alice", "claude", time.Now().Add(-2*time.Second)))
	if r.status != 200 {
		t.Fatalf("initialize: %d %s", r.status, r.body)
	}
	c.sid = r.header.Get("Mcp-Session-Id")
	// A refreshed token (same issuer, subject and client; a new jti, a
	// later iat and exp) keeps the session.
	if r := c.callToolWith(`"e1"`, "echo", map[string]any{"text": "hi"}, "Authorization", "Bearer "+token("alice", "claude")); r.status != 200 {
		t.Fatalf("refreshed token on the session: %d %s", r.status, r.body)
	}
	// Another subject, or another client of the same subject, is told the
	// session does not exist.
	for _, who := range [][2]string{{"bob", "claude"}, {"alice", "other-client"}} {
		r := c.callToolWith(`"e2"`, "echo", map[string]any{"text": "hi"}, "Authorization", "Bearer "+token(who[0], who[1]))
		if r.status != 404 {
			t.Errorf("%v on alice's session: %d %s, want 404", who, r.status, r.body)
		}
	}
}

// callToolWith is callTool with extra headers.
func (c *client) callToolWith(id, name string, args any, headers ...string) response {
	c.t.Helper()
	a, _ := json.Marshal(args)
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "method": "tools/call", "params": map[string]any{"name": name, "arguments": json.RawMessage(a)}})
	return c.post(string(body), headers...)
}

// TestOAuthTypeScriptSDKClient: the official TypeScript SDK client finds
// the metadata from the 401, then the issuer's metadata, gets a token for
// the endpoint from the issuer (client_credentials, RFC 8707 resource) and
// connects, lists and calls tools with it.
func TestOAuthTypeScriptSDKClient(t *testing.T) {
	node := node24(t)
	iss := newIssuer(t)
	b := oauthBridge(t, iss, bridge.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join("clients", "ts-oauth.mjs"), b.url("notes"), iss.ClientID, iss.ClientSecret)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var out struct {
		OK      bool     `json:"ok"`
		Failure string   `json:"failure"`
		Tools   []string `json:"tools"`
		Echo    string   `json:"echo"`
		Steps   []struct {
			Method, URL string
			Status      int
		} `json:"steps"`
	}
	if jerr := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &out); jerr != nil || err != nil || !out.OK {
		t.Fatalf("ts-oauth: %v (%v): %s\nstdout %s\nstderr %s", err, jerr, out.Failure, stdout.String(), stderr.String())
	}
	if !slices.Contains(out.Tools, "echo") || !strings.Contains(out.Echo, "through oauth") {
		t.Errorf("tools %v, echo %q", out.Tools, out.Echo)
	}
	// The SDK's own discovery, in order: 401 on the endpoint, the metadata
	// it names, the issuer's metadata, the token, then the endpoint again.
	want := []struct {
		url    string
		status int
	}{
		{b.url("notes"), 401},
		{b.srv.URL + "/.well-known/oauth-protected-resource/notes/mcp", 200},
		{iss.URL + "/.well-known/oauth-authorization-server", 200},
		{iss.URL + "/token", 200},
		{b.url("notes"), 200},
	}
	i := 0
	for _, s := range out.Steps {
		if i < len(want) && s.URL == want[i].url && s.Status == want[i].status {
			i++
		}
	}
	if i < len(want) {
		t.Errorf("discovery steps %+v; missing %+v and after", out.Steps, want[i])
	}
}

// TestOAuthOpaqueTokens: an issuer's opaque access tokens are validated by
// introspection with the bridge's own client credentials.
func TestOAuthOpaqueTokens(t *testing.T) {
	iss := newIssuer(t)
	b := oauthBridge(t, iss, bridge.Options{OAuthIntrospectionClientID: iss.ClientID, OAuthIntrospectionSecret: iss.ClientSecret})
	notes := b.url("notes")
	tok := iss.OpaqueToken(testissuer.Claims{Subject: "alice", Audience: []string{notes}, Scope: "mcp", ClientID: "cli"})
	if r := mustRequest(t, http.MethodPost, notes, "", initBody, "Authorization", "Bearer "+tok); r.status != 200 {
		t.Fatalf("opaque token: %d %s", r.status, r.body)
	}
	for name, tok := range map[string]string{
		"inactive":         "opaque-never-issued",
		"another resource": iss.OpaqueToken(testissuer.Claims{Subject: "alice", Audience: []string{b.url("files")}, Scope: "mcp"}),
	} {
		r := mustRequest(t, http.MethodPost, notes, "", initBody, "Authorization", "Bearer "+tok)
		if r.status != 401 || challenge(t, r)["error"] != "invalid_token" {
			t.Errorf("%s: %d %s", name, r.status, r.body)
		}
		if strings.Contains(b.logs.String(), tok) || strings.Contains(b.logs.String(), iss.ClientSecret) {
			t.Errorf("%s: a token or the introspection secret is in the log", name)
		}
	}
}
