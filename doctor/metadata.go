package doctor

import (
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
)

// resourceMetadata is in a WWW-Authenticate challenge (RFC 9728 §5.1).
var resourceMetadata = regexp.MustCompile(`resource_metadata="([^"]+)"`)

// checkMetadata: an endpoint that needs a token publishes where to get
// one — its protected-resource metadata at the paths clients try, naming
// the URL the client used, and its authorization server's metadata with
// what claude.ai's sign-in needs.
func (r *run) checkMetadata() {
	if !r.protected {
		r.skip("metadata", "the endpoint answered without a token: no OAuth metadata is needed")
		return
	}
	origin := r.u.Scheme + "://" + r.u.Host
	var tried []string
	m := resourceMetadata.FindStringSubmatch(r.challenge)
	if m == nil && strings.Contains(r.challenge, `realm="stelae-bridge"`) {
		// The bridge's static tokens: no OAuth to check.
		r.warn("metadata", "the endpoint takes a static bearer token (no OAuth)", "ChatGPT and claude.ai connectors sign in with OAuth only; Claude Desktop and Code, VS Code and Cursor can send the token as a header",
			"for ChatGPT and claude.ai, give the destination an 'auth:' block (auth: {issuer: builtin} is the bridge's own server)")
		return
	}
	if m != nil {
		tried = append(tried, m[1])
	}
	tried = append(tried, origin+"/.well-known/oauth-protected-resource"+r.u.Path, origin+"/.well-known/oauth-protected-resource")
	var prm struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	found := ""
	for _, u := range tried {
		if !r.sameOrigin(u) {
			continue // a challenge that points elsewhere is not fetched
		}
		ex := r.do(http.MethodGet, u, "", "Accept", "application/json")
		if ex.err == nil && ex.status == http.StatusOK && json.Unmarshal(ex.body, &prm) == nil && prm.Resource != "" {
			found = u
			break
		}
	}
	if found == "" {
		r.fail("resource-metadata", "no protected-resource metadata at "+strings.Join(tried, ", "), "the proxy does not forward /.well-known/ to the bridge", fixWellKnown)
		return
	}
	if strings.TrimSuffix(prm.Resource, "/") != strings.TrimSuffix(r.u.String(), "/") {
		r.fail("resource-metadata", fmt.Sprintf("the metadata names the resource %s, not %s", prm.Resource, r.u), "the bridge does not know the URL clients use: its -public-url differs, or it is not set behind a proxy", fixPublicURL)
		return
	}
	if len(prm.AuthorizationServers) == 0 {
		r.fail("resource-metadata", "the metadata names no authorization server", "", "give the destination an 'auth:' block with its issuer")
		return
	}
	r.pass("resource-metadata", "at "+found+", naming "+prm.Resource+" and the issuer "+prm.AuthorizationServers[0])
	r.checkIssuer(prm.AuthorizationServers[0])
}

// sameOrigin reports whether u is on the endpoint's scheme, host and port
// (the doctor fetches nothing else a server names).
func (r *run) sameOrigin(u string) bool {
	p, err := url.Parse(u)
	return err == nil && p.Scheme == r.u.Scheme && p.Host == r.u.Host
}

// checkIssuer: the authorization server's metadata is found where clients
// look (RFC 8414 and OpenID Connect forms), and says what claude.ai's
// sign-in with a client ID metadata document needs.
func (r *run) checkIssuer(issuer string) {
	iu, err := url.Parse(issuer)
	if err != nil || iu.Host == "" {
		r.fail("issuer-metadata", fmt.Sprintf("the issuer %q is not a URL", issuer), "", "fix the 'auth:' block's issuer")
		return
	}
	if !r.sameOrigin(issuer) {
		r.skip("issuer-metadata", "the issuer "+issuer+" is another server's: check it with its own tools")
		return
	}
	origin, path := iu.Scheme+"://"+iu.Host, strings.TrimSuffix(iu.Path, "/")
	forms := []string{origin + "/.well-known/oauth-authorization-server" + path, origin + "/.well-known/openid-configuration" + path, origin + path + "/.well-known/openid-configuration"}
	var md struct {
		Issuer                string   `json:"issuer"`
		AuthorizationEndpoint string   `json:"authorization_endpoint"`
		TokenEndpoint         string   `json:"token_endpoint"`
		RegistrationEndpoint  string   `json:"registration_endpoint"`
		AuthMethods           []string `json:"token_endpoint_auth_methods_supported"`
		CIMD                  bool     `json:"client_id_metadata_document_supported"`
	}
	found := ""
	for _, u := range forms {
		ex := r.do(http.MethodGet, u, "", "Accept", "application/json")
		if ex.err == nil && ex.status == http.StatusOK && json.Unmarshal(ex.body, &md) == nil && md.Issuer != "" {
			found = u
			break
		}
	}
	if found == "" {
		r.fail("issuer-metadata", "no authorization server metadata at "+strings.Join(forms, ", "), "the proxy does not forward /.well-known/ to the bridge", fixWellKnown)
		return
	}
	if md.Issuer != issuer {
		r.fail("issuer-metadata", fmt.Sprintf("the metadata at %s names the issuer %s, not %s", found, md.Issuer, issuer), "the bridge does not know the URL clients use", fixPublicURL)
		return
	}
	r.pass("issuer-metadata", "at "+found)
	switch {
	case !md.CIMD || !slices.Contains(md.AuthMethods, "none"):
		r.fail("cimd", fmt.Sprintf("client_id_metadata_document_supported %v, token_endpoint_auth_methods_supported %q", md.CIMD, md.AuthMethods),
			"claude.ai signs in with a client ID metadata document, which needs both (true, and \"none\" among the methods)", fixCIMD)
	default:
		r.pass("cimd", "client ID metadata documents are supported, with public clients (\"none\"): claude.ai's sign-in")
		if md.AuthorizationEndpoint != "" && r.sameOrigin(md.AuthorizationEndpoint) {
			r.checkCIMDFetch(md.AuthorizationEndpoint)
		}
	}
	if md.RegistrationEndpoint != "" && r.sameOrigin(md.RegistrationEndpoint) && md.AuthorizationEndpoint != "" {
		r.checkRegistration(md.RegistrationEndpoint, md.AuthorizationEndpoint)
		return
	}
	if md.AuthorizationEndpoint != "" && r.sameOrigin(md.AuthorizationEndpoint) {
		// The authorization endpoint answers (a request without a client
		// is refused by the server itself, not by a proxy's 404).
		ex := r.do(http.MethodGet, md.AuthorizationEndpoint, "")
		if ex.err == nil && ex.status == http.StatusNotFound && !strings.Contains(string(ex.body), "client") {
			r.fail("oauth-paths", fmt.Sprintf("%s answers 404", md.AuthorizationEndpoint), "the proxy does not forward the authorization server's paths", fixOAuthPaths)
			return
		}
		r.pass("oauth-paths", fmt.Sprintf("%s is reached (%d without a client, as expected)", md.AuthorizationEndpoint, ex.status))
	}
}

// doctorRedirect is where the doctor's test client says it returns to
// (nothing is ever sent there: it never approves).
const doctorRedirect = "http://127.0.0.1/stelae-bridge-doctor/callback"

// checkRegistration: a client registers (RFC 7591, as ChatGPT does), its
// authorization request reaches the approval page, and the doctor's test
// client is then deleted (RFC 7592) — registered and removed.
func (r *run) checkRegistration(registration, authorize string) {
	ex := r.do(http.MethodPost, registration, `{"client_name":"stelae-bridge doctor (a test client, deleted at once)","redirect_uris":["`+doctorRedirect+`"],"token_endpoint_auth_method":"none","grant_types":["authorization_code"],"response_types":["code"]}`,
		"Content-Type", "application/json", "Authorization", noAuth)
	var reg struct {
		ClientID string `json:"client_id"`
		URI      string `json:"registration_client_uri"`
		Token    string `json:"registration_access_token"`
	}
	switch {
	case ex.err != nil:
		r.fail("oauth-paths", ex.err.Error(), "", fixOAuthPaths)
		return
	case ex.status == http.StatusNotFound && !strings.Contains(string(ex.body), "invalid"):
		r.fail("oauth-paths", fmt.Sprintf("%s answers 404", registration), "the proxy does not forward the authorization server's paths", fixOAuthPaths)
		return
	case ex.status != http.StatusCreated || json.Unmarshal(ex.body, &reg) != nil || reg.ClientID == "":
		r.fail("registration", fmt.Sprintf("registering a client: %d %.200s", ex.status, ex.body), "ChatGPT registers itself this way (RFC 7591)", "look at the bridge's log for the registration")
		return
	}
	defer r.deregister(reg.ClientID, reg.URI, reg.Token)
	q := url.Values{"response_type": {"code"}, "client_id": {reg.ClientID}, "redirect_uri": {doctorRedirect}, "state": {"doctor"},
		"code_challenge": {"E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"}, "code_challenge_method": {"S256"}, "resource": {r.u.String()}}
	page := r.do(http.MethodGet, authorize+"?"+q.Encode(), "", "Authorization", noAuth)
	switch {
	case page.err != nil:
		r.fail("oauth-paths", page.err.Error(), "", fixOAuthPaths)
	case page.status == http.StatusNotFound:
		r.fail("oauth-paths", fmt.Sprintf("%s answers 404", authorize), "the proxy does not forward the authorization server's paths", fixOAuthPaths)
	case page.status == http.StatusOK && strings.HasPrefix(page.header.Get("Content-Type"), "text/html"):
		r.pass("oauth-paths", "a registered client's authorization request reaches the approval page ("+authorize+")")
	default:
		r.fail("oauth-paths", fmt.Sprintf("the authorization request got %d %.200s", page.status, page.body), "the approval page does not open: the request's resource may not be the URL the bridge knows", fixPublicURL)
	}
}

// deregister deletes the doctor's test client (RFC 7592), and says so.
func (r *run) deregister(id, uri, token string) {
	if uri == "" || token == "" || !r.sameOrigin(uri) {
		r.warn("registration", "the test client "+id+" stays registered: the server offers no deletion (RFC 7592)", "", "remove it with the server's own tools ('stelae-bridge auth revoke "+id+"' on the bridge's); an unapproved registration of the bridge's goes by itself after a day")
		return
	}
	ex := r.do(http.MethodDelete, uri, "", "Authorization", "Bearer "+token)
	if ex.err != nil || ex.status != http.StatusNoContent {
		r.warn("registration", fmt.Sprintf("deleting the test client %s: %d %v", id, ex.status, ex.err), "", "remove it with 'stelae-bridge auth revoke "+id+"'")
		return
	}
	r.pass("registration", "a client registers (RFC 7591, as ChatGPT does), and the doctor's was deleted (RFC 7592)")
}

// checkCIMDFetch: the authorization server fetches a known client's
// metadata document (claude.ai's), as that client's sign-in makes it do,
// and opens its approval page. Where the server cannot reach it (no
// internet, its address guard), the check says so and is not failed.
func (r *run) checkCIMDFetch(authorize string) {
	if r.opts.Offline {
		r.skip("cimd-fetch", "not checked (doctor -offline, or the console's box unticked): the server would fetch "+r.opts.CIMDClient+" from the internet")
		return
	}
	q := url.Values{"response_type": {"code"}, "client_id": {r.opts.CIMDClient}, "redirect_uri": {r.opts.CIMDRedirect}, "state": {"doctor"},
		"code_challenge": {"E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"}, "code_challenge_method": {"S256"}, "resource": {r.u.String()}}
	ex := r.do(http.MethodGet, authorize+"?"+q.Encode(), "", "Authorization", noAuth)
	switch {
	case ex.err != nil:
		r.skip("cimd-fetch", "not checked: "+ex.err.Error())
	case ex.status == http.StatusOK && strings.HasPrefix(ex.header.Get("Content-Type"), "text/html"):
		r.pass("cimd-fetch", "the server fetched "+r.opts.CIMDClient+" and opened its approval page")
	default:
		r.skip("cimd-fetch", fmt.Sprintf("not checked: the server could not use %s (%d): %s", r.opts.CIMDClient, ex.status, pageText(ex.body)))
	}
}

// blocks are a page's head, styles and scripts, and tags its HTML tags:
// dropped from its text.
var (
	blocks = regexp.MustCompile(`(?is)<(head|style|script)\b.*?</(head|style|script)>`)
	tags   = regexp.MustCompile(`<[^>]*>`)
)

// pageText is an error page's text, short.
func pageText(body []byte) string {
	t := html.UnescapeString(strings.Join(strings.Fields(tags.ReplaceAllString(blocks.ReplaceAllString(string(body), " "), " ")), " "))
	if len(t) > 300 {
		t = t[:300] + "…"
	}
	return t
}
