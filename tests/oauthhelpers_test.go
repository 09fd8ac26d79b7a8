//go:build unix

package tests

// OAuth helpers for the tests of the built-in authorization server, the OAuth resource side, the
// console and the browser pages: oauthClient, a public client driven by hand (register, approve
// with testPassphrase, exchange codes, post the server's forms), pkce and formField; and
// challenge, which parses a 401's WWW-Authenticate Bearer challenge.

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stelae-bridge/stelae-bridge/authserver"
)

const testPassphrase = "correct horse battery staple"

// oauthClient is a public OAuth client driven by hand: it registers, asks
// for approval (the operator's part is done by posting the page's form),
// and exchanges codes and refresh tokens.
type oauthClient struct {
	t           *testing.T
	base        string
	id          string
	redirectURI string
	http        *http.Client
}

func newOAuthClient(t *testing.T, base string) *oauthClient {
	jar, _ := cookiejar.New(nil)
	return &oauthClient{t: t, base: base, redirectURI: "https://client.example/callback",
		http: &http.Client{Jar: jar, Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (c *oauthClient) register() {
	c.t.Helper()
	body := fmt.Sprintf(`{"client_name":"Test Connector","redirect_uris":[%q],"token_endpoint_auth_method":"none","grant_types":["authorization_code","refresh_token"]}`, c.redirectURI)
	resp, err := c.http.Post(c.base+"/oauth/register", "application/json", strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		ClientID string `json:"client_id"`
	}
	if resp.StatusCode != http.StatusCreated || json.NewDecoder(resp.Body).Decode(&out) != nil || out.ClientID == "" {
		c.t.Fatalf("register: %d", resp.StatusCode)
	}
	c.id = out.ClientID
}

// pkce returns a verifier and its S256 challenge.
func pkce(seed string) (string, string) {
	v := base64.RawURLEncoding.EncodeToString([]byte(strings.Repeat(seed, 64)))[:60]
	sum := sha256.Sum256([]byte(v))
	return v, base64.RawURLEncoding.EncodeToString(sum[:])
}

// authorizeURL builds an authorization request; over changes parameters.
func (c *oauthClient) authorizeURL(challenge, resource string, over ...string) string {
	q := url.Values{"response_type": {"code"}, "client_id": {c.id}, "redirect_uri": {c.redirectURI}, "state": {"st-1"},
		"code_challenge": {challenge}, "code_challenge_method": {"S256"}, "resource": {resource}, "scope": {"mcp"}}
	for i := 0; i+1 < len(over); i += 2 {
		if over[i+1] == "" {
			q.Del(over[i])
		} else {
			q.Set(over[i], over[i+1])
		}
	}
	return c.base + "/oauth/authorize?" + q.Encode()
}

var (
	formQuery = regexp.MustCompile(`name="query" value="([^"]*)"`)
	formCSRF  = regexp.MustCompile(`name="csrf" value="([^"]*)"`)
)

// approve opens the page and posts passphrase; it returns the page's
// answer (a redirect with a code when approved).
func (c *oauthClient) approve(authURL, passphrase string) (*http.Response, string) {
	c.t.Helper()
	resp, err := c.http.Get(authURL)
	if err != nil {
		c.t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return resp, string(page)
	}
	q, csrf := formQuery.FindSubmatch(page), formCSRF.FindSubmatch(page)
	if q == nil || csrf == nil {
		c.t.Fatalf("the page has no form: %s", page)
	}
	form := url.Values{"query": {html.UnescapeString(string(q[1]))}, "csrf": {string(csrf[1])}, "passphrase": {passphrase}, "decision": {"approve"}}
	req, _ := http.NewRequest(http.MethodPost, c.base+"/oauth/authorize", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", c.base)
	resp, err = c.http.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(body)
}

// code approves and returns the code from the redirect.
func (c *oauthClient) code(challenge, resource string) string {
	c.t.Helper()
	resp, page := c.approve(c.authorizeURL(challenge, resource), testPassphrase)
	loc, err := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || err != nil || loc.Query().Get("code") == "" {
		c.t.Fatalf("approval: %d %s %s", resp.StatusCode, resp.Header.Get("Location"), page)
	}
	if loc.Query().Get("state") != "st-1" || loc.Query().Get("iss") != c.base || !strings.HasPrefix(loc.String(), c.redirectURI) {
		c.t.Errorf("redirect %s: want state, iss and the registered redirect URI", loc)
	}
	return loc.Query().Get("code")
}

// tokenRequest posts to the token endpoint.
func (c *oauthClient) tokenRequest(form url.Values) (int, map[string]any) {
	c.t.Helper()
	if form.Get("client_id") == "" {
		form.Set("client_id", c.id)
	}
	resp, err := c.http.PostForm(c.base+"/oauth/token", form)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func (c *oauthClient) exchange(code, verifier string) (access, refresh string) {
	c.t.Helper()
	status, out := c.tokenRequest(url.Values{"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {verifier}, "redirect_uri": {c.redirectURI}})
	access, _ = out["access_token"].(string)
	refresh, _ = out["refresh_token"].(string)
	if status != 200 || access == "" || refresh == "" {
		c.t.Fatalf("token: %d %v", status, out)
	}
	return access, refresh
}

// approveAs posts the approval page's form for authURL as the user name
// with secret: the page's answer (a redirect to the client with a code,
// or to the credentials page first).
func (c *oauthClient) approveAs(authURL, name, secret string) *http.Response {
	c.t.Helper()
	resp, err := c.http.Get(authURL)
	if err != nil {
		c.t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	q, csrf := formQuery.FindSubmatch(page), formCSRF.FindSubmatch(page)
	if resp.StatusCode != http.StatusOK || q == nil || csrf == nil {
		c.t.Fatalf("the approval page: %d %s", resp.StatusCode, page)
	}
	form := url.Values{"query": {html.UnescapeString(string(q[1]))}, "csrf": {string(csrf[1])}, "name": {name}, "passphrase": {secret}, "decision": {"approve"}}
	return c.postForm(c.base+authserver.PathAuthorize, form)
}

// postForm posts form as the bridge's own page would.
func (c *oauthClient) postForm(target string, form url.Values) *http.Response {
	c.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, target, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", c.base)
	resp, err := c.http.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// codeFrom is the code of a redirect to the client.
func (c *oauthClient) codeFrom(resp *http.Response) string {
	c.t.Helper()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || err != nil || loc.Query().Get("code") == "" || !strings.HasPrefix(loc.String(), c.redirectURI) {
		c.t.Fatalf("want a redirect to the client with a code: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	return loc.Query().Get("code")
}

// get fetches target with c's cookies: its body.
func (c *oauthClient) get(target string) string {
	c.t.Helper()
	resp, err := c.http.Get(target)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		c.t.Fatalf("GET %s: %d %s", target, resp.StatusCode, body)
	}
	return string(body)
}

// formField is the value of the hidden field name of page.
func formField(t *testing.T, page, name string) string {
	t.Helper()
	m := regexp.MustCompile(`name="` + regexp.QuoteMeta(name) + `" value="([^"]*)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no field %s: %s", name, page)
	}
	return html.UnescapeString(m[1])
}

// challenge is a parsed WWW-Authenticate Bearer challenge.
func challenge(t *testing.T, r response) map[string]string {
	t.Helper()
	h := r.header.Get("WWW-Authenticate")
	rest, ok := strings.CutPrefix(h, "Bearer ")
	if !ok {
		t.Fatalf("WWW-Authenticate %q is not a Bearer challenge (status %d, body %s)", h, r.status, r.body)
	}
	out := map[string]string{}
	for rest != "" {
		k, v, ok := strings.Cut(rest, `="`)
		if !ok {
			t.Fatalf("WWW-Authenticate %q: bad parameter at %q", h, rest)
		}
		val, tail, _ := strings.Cut(v, `"`)
		out[strings.TrimSpace(k)] = val
		rest = strings.TrimPrefix(strings.TrimSpace(tail), ",")
		rest = strings.TrimSpace(rest)
	}
	return out
}
