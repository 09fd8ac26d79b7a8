package authserver

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// This file is the authorization endpoint and its approval page: the
// operator sees which client asks for which destination, types the
// passphrase, and approves or denies. Once the operator invited users
// (users.go), the page also asks for a name: a user types theirs and their
// secret (usersignin.go) and the grant is theirs; with no name, the
// passphrase approves as the operator, as before.

// authRequest is a validated authorization request.
type authRequest struct {
	client      *Client
	redirectURI string
	state       string
	challenge   string
	resource    string
	destination string
	scope       string
}

// pendingCode is an authorization code as stored (by its hash).
type pendingCode struct {
	ClientID    string    `json:"client_id"`
	RedirectURI string    `json:"redirect_uri"`
	Challenge   string    `json:"code_challenge"`
	Resource    string    `json:"resource"`
	Scope       string    `json:"scope"`
	Expires     time.Time `json:"expires"`
	grantee
}

// codeTTL bounds an authorization code's life.
const codeTTL = 60 * time.Second

const csrfCookie = "stelae_csrf"

// parseAuthRequest validates the request's parameters. A problem with the
// client or the redirect URI is shown on the page (never redirected:
// the redirect URI cannot be trusted); others redirect with an error.
func (srv *Server) parseAuthRequest(r *http.Request, q url.Values) (*authRequest, *pageError, string) {
	clientID := q.Get("client_id")
	if clientID == "" {
		return nil, &pageError{http.StatusBadRequest, "The request names no client (client_id is missing)."}, ""
	}
	c, err := srv.lookupClient(r, clientID)
	if errors.Is(err, errCIMDBusy) {
		return nil, &pageError{http.StatusServiceUnavailable, "This client's metadata document cannot be fetched now: " + err.Error()}, ""
	}
	if err != nil {
		return nil, &pageError{http.StatusBadRequest, "This client is not known to the bridge: " + err.Error()}, ""
	}
	ru := q.Get("redirect_uri")
	if ru == "" && len(c.RedirectURIs) == 1 {
		ru = c.RedirectURIs[0]
	}
	if !slices.Contains(c.RedirectURIs, ru) {
		return nil, &pageError{http.StatusBadRequest, fmt.Sprintf("The redirect URI %q is not one this client registered.", truncate(ru, 200))}, ""
	}
	ar := &authRequest{client: c, redirectURI: ru, state: q.Get("state"), challenge: q.Get("code_challenge"), resource: q.Get("resource"), scope: q.Get("scope")}
	switch {
	case q.Get("response_type") != "code":
		return ar, nil, "unsupported_response_type"
	case ar.challenge == "" || q.Get("code_challenge_method") != "S256":
		return ar, nil, "invalid_request" // PKCE S256 is required; plain is refused
	case len(ar.challenge) < 43 || len(ar.challenge) > 128:
		return ar, nil, "invalid_request"
	case ar.resource == "":
		return ar, nil, "invalid_target"
	}
	dest, ok := srv.opts.Resources(baseOf(r.Context()), ar.resource)
	if !ok {
		return ar, nil, "invalid_target"
	}
	ar.destination = dest
	if ar.scope == "" {
		ar.scope = "mcp"
	}
	return ar, nil, ""
}

// pageError is a problem shown on the page instead of redirected.
type pageError struct {
	status int
	msg    string
}

// redirectError sends the client back with an OAuth error (RFC 6749
// §4.1.2.1) and the issuer (RFC 9207).
func (srv *Server) redirectError(w http.ResponseWriter, r *http.Request, ar *authRequest, code, desc string) {
	redirectBack(w, r, ar, "error", code, "error_description", desc)
}

// authError answers an authorization request the client got wrong: by a
// redirect to the client (RFC 6749 §4.1.2.1) once the operator approved
// it or declared it in the file, on the page before — a self-registered
// client or a metadata document nobody approved would make the bridge's
// hostname an open redirector.
func (srv *Server) authError(w http.ResponseWriter, r *http.Request, ar *authRequest, code string) {
	if ar.client.Source == SourceConfig || !ar.client.Approved.IsZero() {
		srv.redirectError(w, r, ar, code, errorDescriptions[code])
		return
	}
	srv.page(w, http.StatusBadRequest, pageData{Error: fmt.Sprintf("The client's request is wrong (%s: %s). It is shown here, not sent back, because this client was never approved; start again from the client.", code, errorDescriptions[code])})
}

// redirectBack sends the browser to the client's redirect URI with params
// (name, value pairs), the request's state and the issuer (RFC 9207).
func redirectBack(w http.ResponseWriter, r *http.Request, ar *authRequest, params ...string) {
	u, _ := url.Parse(ar.redirectURI)
	q := u.Query()
	for i := 0; i+1 < len(params); i += 2 {
		q.Set(params[i], params[i+1])
	}
	if ar.state != "" {
		q.Set("state", ar.state)
	}
	q.Set("iss", baseOf(r.Context()))
	u.RawQuery = q.Encode()
	http.Redirect(w, r, u.String(), http.StatusFound)
}

var errorDescriptions = map[string]string{
	"unsupported_response_type": "response_type must be code",
	"invalid_request":           "PKCE is required: send code_challenge with code_challenge_method=S256",
	"invalid_target":            "resource (RFC 8707) must name one of this bridge's MCP endpoints",
}

// authorize serves GET (the approval page) and POST (the operator's
// decision).
func (srv *Server) authorize(w http.ResponseWriter, r *http.Request) {
	pageHeaders(w)
	switch r.Method {
	case http.MethodGet:
		ar, pe, code := srv.parseAuthRequest(r, r.URL.Query())
		if pe != nil {
			srv.page(w, pe.status, pageData{Error: pe.msg})
			return
		}
		if code != "" {
			srv.authError(w, r, ar, code)
			return
		}
		token := newID("", 24)
		http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: token, Path: PathAuthorize, HttpOnly: true, Secure: strings.HasPrefix(baseOf(r.Context()), "https://"), SameSite: http.SameSiteStrictMode, MaxAge: 900})
		srv.page(w, http.StatusOK, srv.pageFor(r, ar, token, ""))
	case http.MethodPost:
		srv.decide(w, r)
	default:
		w.Header().Set("Allow", "GET, POST")
		srv.page(w, http.StatusMethodNotAllowed, pageData{Error: "Use GET."})
	}
}

// pageHeaders are the headers of the server's pages (the approval page,
// the invite page): never cached, never framed, no script, no resource from
// anywhere.
func pageHeaders(w http.ResponseWriter) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'")
	w.Header().Set("Referrer-Policy", "same-origin") // no-referrer would make the form post Origin: null
}

func (srv *Server) pageFor(r *http.Request, ar *authRequest, csrf, problem string) pageData {
	host := ar.redirectURI
	if u, err := url.Parse(ar.redirectURI); err == nil {
		host = u.Host
	}
	name := ar.client.Name
	if name == "" {
		name = ar.client.ID
	}
	return pageData{ClientName: name, ClientID: ar.client.ID, RedirectHost: host, Destination: ar.destination, Scope: ar.scope,
		Query: r.URL.RawQuery, CSRF: csrf, Problem: problem, Approved: !ar.client.Approved.IsZero(), Users: srv.users.any()}
}

// decide handles the form: CSRF, lockout, passphrase, then a code.
func (srv *Server) decide(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		srv.page(w, http.StatusBadRequest, pageData{Error: "The form could not be read."})
		return
	}
	q, err := url.ParseQuery(r.PostForm.Get("query"))
	if err != nil {
		srv.page(w, http.StatusBadRequest, pageData{Error: "The form lost the authorization request; start again from the client."})
		return
	}
	ar, pe, code := srv.parseAuthRequest(r, q)
	if pe != nil {
		srv.page(w, pe.status, pageData{Error: pe.msg})
		return
	}
	if code != "" {
		srv.authError(w, r, ar, code)
		return
	}
	cookie, err := r.Cookie(csrfCookie)
	form := r.PostForm.Get("csrf")
	if err != nil || form == "" || subtle.ConstantTimeCompare([]byte(cookie.Value), []byte(form)) != 1 {
		srv.page(w, http.StatusForbidden, pageData{Error: "This form did not come from the bridge's own page (CSRF check failed). Start again from the client."})
		return
	}
	r.URL.RawQuery = r.PostForm.Get("query")
	if r.PostForm.Get("decision") == "deny" {
		srv.log.Info("authorization denied by the operator", "client_id", ar.client.ID)
		srv.redirectError(w, r, ar, "access_denied", "the operator denied access")
		return
	}
	secure := strings.HasPrefix(baseOf(r.Context()), "https://")
	var g grantee
	if name := strings.TrimSpace(r.PostForm.Get("name")); name != "" && !strings.EqualFold(name, OperatorSubject) {
		ut := srv.tryUser(w, r, name, r.PostForm.Get("passphrase"), secure, "approval")
		if problem, status := ut.problem(w); problem != "" {
			d := srv.pageFor(r, ar, form, problem)
			if CheckName(name) == nil {
				d.Name = name // a name, never the secret
			}
			srv.page(w, status, d)
			return
		}
		g = ut.g
	} else if !srv.operatorApproves(w, r, ar, form, secure) {
		return
	}
	// A destination that asks each user for credentials they have not
	// entered: the credentials page first, the code after (credentials.go).
	if srv.askCredentials(w, r, ar, g) {
		return
	}
	srv.grantCode(w, r, ar, g)
}

// grantCode approves ar for g: the client is kept as approved, a code is
// stored, and the browser goes back to the client with it.
func (srv *Server) grantCode(w http.ResponseWriter, r *http.Request, ar *authRequest, g grantee) {
	codeValue := newID("", 32)
	pc := pendingCode{ClientID: ar.client.ID, RedirectURI: ar.redirectURI, Challenge: ar.challenge, Resource: ar.resource, Scope: ar.scope, Expires: time.Now().Add(codeTTL), grantee: g}
	now := time.Now().UTC()
	err := srv.store.db.Update(func(tx *bolt.Tx) error {
		// A client approved for the first time is kept (metadata-document
		// and configured ones too), so it can be listed and revoked.
		var c Client
		ok, err := get(tx, bucketClients, []byte(ar.client.ID), &c)
		if err != nil {
			return err
		}
		if !ok {
			c = *ar.client
		}
		if c.Approved.IsZero() {
			c.Approved = now
		}
		if err := put(tx, bucketClients, []byte(c.ID), &c); err != nil {
			return err
		}
		return put(tx, bucketCodes, hashKey(codeValue), pc)
	})
	if err != nil {
		srv.log.Error("could not store an authorization code", "error", err)
		srv.page(w, http.StatusInternalServerError, pageData{Error: "The bridge could not store the approval; see its log."})
		return
	}
	if g.Subject != "" {
		name, _ := srv.UserName(g.Subject)
		srv.log.Info("authorization approved by a user", "client_id", ar.client.ID, "destination", ar.destination, "user", name, "subject", g.Subject)
	} else {
		srv.log.Info("authorization approved", "client_id", ar.client.ID, "destination", ar.destination)
	}
	redirectBack(w, r, ar, "code", codeValue)
}

// operatorApproves checks the operator's passphrase on the approval form
// (lockout.go); false when it answered the page itself.
func (srv *Server) operatorApproves(w http.ResponseWriter, r *http.Request, ar *authRequest, form string, secure bool) bool {
	t := srv.tryPassphrase(w, r, r.PostForm.Get("passphrase"), r.PostForm.Get("unlock"), secure, "approval")
	if t.wait > 0 {
		w.Header().Set("Retry-After", fmt.Sprint(int(t.wait.Seconds())+1))
		d := srv.pageFor(r, ar, form, fmt.Sprintf("Too many wrong passphrases. Try again in %s.", t.wait.Round(time.Second)))
		d.Locked = !t.browser
		srv.page(w, http.StatusTooManyRequests, d)
		return false
	}
	if !t.ok {
		d := srv.pageFor(r, ar, form, "Wrong passphrase.")
		d.Locked = t.unlocked
		srv.page(w, http.StatusUnauthorized, d)
		return false
	}
	return true
}

// pageData fills the page template.
type pageData struct {
	Error                                           string
	ClientName, ClientID, RedirectHost, Destination string
	Scope, Query, CSRF, Problem                     string
	Approved                                        bool
	// Locked asks for an unlock code ('stelae-bridge auth unlock').
	Locked bool
	// Users asks for a name besides the secret (the operator invited
	// users); Name is the name typed before.
	Users bool
	Name  string
}

func (srv *Server) page(w http.ResponseWriter, status int, d pageData) {
	srv.render(w, status, pageTemplate, "approval page", d)
}

// render writes one of the server's pages: status, then tmpl with d (a
// failure, which only a template's own defect makes, is logged as what's).
func (srv *Server) render(w http.ResponseWriter, status int, tmpl *template.Template, what string, d any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if err := tmpl.Execute(w, d); err != nil {
		srv.log.Error(what, "error", err)
	}
}

var pageTemplate = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>stelae-bridge: approve access</title>
<style>
body{font:16px/1.5 system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem;color:#111}
h1{font-size:1.4rem}dl{display:grid;grid-template-columns:auto minmax(0,1fr);gap:.3rem 1rem}dt{font-weight:600}
dd{margin:0;min-width:0;overflow-wrap:anywhere}code{overflow-wrap:anywhere}
label{display:block;margin-top:1rem;font-weight:600}input[type=password],input[type=text]{box-sizing:border-box;width:100%;font-size:1rem;padding:.4rem}
button{font-size:1rem;padding:.5rem 1.2rem;margin:1rem .5rem 0 0}.problem{color:#a00;font-weight:600}
</style>
</head>
<body>
<main>
{{if .Error}}
<h1>This request cannot be approved</h1>
<p class="problem" role="alert">{{.Error}}</p>
{{else}}
<h1>Approve access to your MCP server?</h1>
<dl>
<dt>Client</dt><dd id="client">{{.ClientName}}</dd>
<dt>Client id</dt><dd><code>{{.ClientID}}</code></dd>
<dt>Returns to</dt><dd id="redirect-host">{{.RedirectHost}}</dd>
<dt>Destination</dt><dd id="destination">{{.Destination}}</dd>
<dt>Scope</dt><dd>{{.Scope}}</dd>
</dl>
{{if .Approved}}<p>You approved this client before.</p>{{end}}
{{if .Problem}}<p class="problem" id="problem" role="alert">{{.Problem}}</p>{{end}}
<form method="post" action="/oauth/authorize">
<input type="hidden" name="query" value="{{.Query}}">
<input type="hidden" name="csrf" value="{{.CSRF}}">
{{if .Users}}<label for="name">Your name</label>
<p>The name the operator invited you as. The bridge's operator leaves it empty and types the bridge passphrase.</p>
<input type="text" id="name" name="name" value="{{.Name}}" autocomplete="username" autocapitalize="none" spellcheck="false" maxlength="64" autofocus>
<label for="passphrase">Your secret (or the bridge passphrase)</label>
<input type="password" id="passphrase" name="passphrase" autocomplete="current-password">
{{else}}<label for="passphrase">Bridge passphrase</label>
<input type="password" id="passphrase" name="passphrase" autocomplete="current-password" autofocus>
{{end}}
{{if .Locked}}<label for="unlock">Unlock code</label>
<p>If you are the bridge's operator: run <code>stelae-bridge auth unlock</code> on its host and enter the code it prints.</p>
<input type="password" id="unlock" name="unlock" autocomplete="off">
{{end}}<button type="submit" name="decision" value="approve" id="approve">Approve</button>
<button type="submit" name="decision" value="deny" id="deny">Deny</button>
</form>
{{end}}
</main>
</body>
</html>
`))
