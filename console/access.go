package console

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Who may use the console, and how they sign in.

// Passphrase is the built-in authorization server's operator passphrase
// and its lockout (authserver.Server implements it).
type Passphrase interface {
	OperatorLocked(r *http.Request) time.Duration
	OperatorPassphrase(given string) bool
	OperatorFailed(r *http.Request)
	OperatorSucceeded(r *http.Request)
}

const (
	cookieName = "stelae_console"
	// loginFor is how long a sign-in lasts.
	loginFor = 12 * time.Hour
	// maxLogins bounds the sign-ins kept (the oldest goes first).
	maxLogins  = 64
	csrfHeader = "X-CSRF-Token"
)

// viewer is who a request is from, once admitted.
type viewer struct {
	// csrf is the token its actions must carry ("" for a bearer-token
	// request: no browser sends that header by itself).
	csrf string
	// login is its sign-in (nil: a bearer token, or auth off).
	login *login
}

// login is one sign-in; its key in logins is the hash of its cookie.
type login struct {
	csrf    string
	expires time.Time
}

// logins are the signed-in browsers, and the sign-in's own lockout when
// there is no built-in server to hold guesses.
type logins struct {
	// mu guards byHash, failures and lockedUntil.
	mu     sync.Mutex
	byHash map[[32]byte]*login
	// failures and lockedUntil hold guesses when there is no
	// Passphrase: past 10 wrong tries in a row, each waits twice as
	// long as the last (2 s … 15 min).
	failures    int
	lockedUntil time.Time
}

// random is a fresh 32-byte token in hex.
func random() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// canSignIn reports whether any operator credential is configured.
func (c *Console) canSignIn() bool { return len(c.opts.Tokens) > 0 || c.opts.Passphrase != nil }

// admit returns r's viewer, or writes the refusal (401 with the sign-in
// page for a page request, JSON otherwise) and returns nil.
func (c *Console) admit(w http.ResponseWriter, r *http.Request, page bool) *viewer {
	if !c.opts.AuthOn {
		if why := c.notLocal(r); why != "" && !c.opts.Remote {
			c.refuse(w, r, page, http.StatusForbidden, why)
			return nil
		}
		return &viewer{csrf: c.openCSRF}
	}
	if !c.canSignIn() {
		c.refuse(w, r, page, http.StatusForbidden, "the console needs an operator credential, and none is configured: give the bridge operator tokens (-auth-tokens-file) or run the built-in authorization server (STELAE_OAUTH_PASSPHRASE); an MCP client's access token never opens it")
		return nil
	}
	if token, ok := bearer(r); ok {
		if c.staticToken(token) {
			return &viewer{}
		}
		c.refuse(w, r, page, http.StatusUnauthorized, "this bearer token is not an operator token: the console takes the bridge's static operator tokens only (an MCP client's access token never opens it)")
		return nil
	}
	if l := c.loginOf(r); l != nil {
		return &viewer{csrf: l.csrf, login: l}
	}
	c.refuse(w, r, page, http.StatusUnauthorized, "sign in with an operator token or the built-in server's passphrase")
	return nil
}

// refuse answers a viewer the console does not admit: the sign-in page
// (which shows no data) for a page, a JSON error otherwise.
func (c *Console) refuse(w http.ResponseWriter, r *http.Request, page bool, status int, why string) {
	if page {
		d := loginPage{Passphrase: c.opts.Passphrase != nil, Token: len(c.opts.Tokens) > 0}
		if status == http.StatusForbidden {
			d.Unavailable = why
		}
		if status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Bearer realm="stelae-bridge console"`)
		}
		c.renderLogin(w, status, d)
		return
	}
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="stelae-bridge console"`)
	}
	writeError(w, status, why)
}

// notLocal says why r is not from this machine ("" when it is): its peer
// is not a loopback address, its Host is not a loopback name, or a proxy
// or tunnel forwarded it (a tunnel on this machine connects from
// loopback, but says whom it forwards).
func (c *Console) notLocal(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil || !loopback(host) {
		return "auth is off, so the console is served to this machine only (loopback); to open it to others, turn auth on (operator tokens or the built-in server) or start the bridge with -console-remote"
	}
	if !loopback(hostOnly(r.Host)) {
		return "auth is off, so the console is served at a loopback address only (http://127.0.0.1:PORT/console); this request named host " + r.Host + "; turn auth on, or start the bridge with -console-remote"
	}
	for _, h := range []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Real-Ip", "Cf-Connecting-Ip", "True-Client-Ip"} {
		if r.Header.Get(h) != "" {
			return "auth is off, so the console is served to this machine only, and this request came through a proxy or tunnel (" + h + "); turn auth on, or start the bridge with -console-remote"
		}
	}
	return ""
}

func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	return ip != nil && ip.IsLoopback()
}

func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]")
}

// bearer is r's bearer token.
func bearer(r *http.Request) (string, bool) {
	scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	token = strings.TrimSpace(token)
	if !strings.EqualFold(scheme, "Bearer") || token == "" {
		return "", false
	}
	return token, true
}

// staticToken compares token in constant time with every operator token.
func (c *Console) staticToken(token string) bool {
	ok := 0
	for _, t := range c.opts.Tokens {
		ok |= subtle.ConstantTimeCompare([]byte(t), []byte(token))
	}
	return ok == 1
}

// loginOf is r's sign-in, nil when its cookie names none (or an expired
// one).
func (c *Console) loginOf(r *http.Request) *login {
	ck, err := r.Cookie(cookieName)
	if err != nil || len(ck.Value) != 64 {
		return nil
	}
	h := sha256.Sum256([]byte(ck.Value))
	c.logins.mu.Lock()
	defer c.logins.mu.Unlock()
	l := c.logins.byHash[h]
	if l == nil {
		return nil
	}
	if time.Now().After(l.expires) {
		delete(c.logins.byHash, h)
		return nil
	}
	return l
}

// signedIn reports whether l is still a live sign-in (not signed out,
// not expired).
func (c *Console) signedIn(l *login) bool {
	c.logins.mu.Lock()
	defer c.logins.mu.Unlock()
	if time.Now().After(l.expires) {
		return false
	}
	for _, o := range c.logins.byHash {
		if o == l {
			return true
		}
	}
	return false
}

// sameOrigin refuses (false) a state-changing request a browser sent from
// another site: its Origin, when sent, must be the bridge's own, and its
// Sec-Fetch-Site, when sent, same-origin.
func (c *Console) sameOrigin(w http.ResponseWriter, r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		writeError(w, http.StatusForbidden, "this request came from another site ("+site+"); the console's actions are taken from its own page only")
		return false
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		u, err := url.Parse(origin)
		if err != nil || !strings.EqualFold(u.Host, r.Host) && !strings.EqualFold(origin, c.opts.BaseURL(r)) {
			writeError(w, http.StatusForbidden, "this request came from another origin ("+origin+"); the console's actions are taken from its own page only")
			return false
		}
	}
	return true
}

// csrfOK checks an action's CSRF token (got) against the viewer's.
func (v *viewer) csrfOK(got string) bool {
	return v.csrf == "" || subtle.ConstantTimeCompare([]byte(v.csrf), []byte(got)) == 1
}

// serveLogin signs an operator in with an operator token or the
// passphrase (the form's "credential"), then sends the browser to the
// console.
func (c *Console) serveLogin(w http.ResponseWriter, r *http.Request) {
	if !c.formPost(w, r, "sign in by POSTing the form of /console") {
		return
	}
	page := loginPage{Passphrase: c.opts.Passphrase != nil, Token: len(c.opts.Tokens) > 0}
	if !c.opts.AuthOn || !c.canSignIn() {
		http.Redirect(w, r, "/console", http.StatusSeeOther)
		return
	}
	if wait := c.locked(r); wait > 0 {
		w.Header().Set("Retry-After", strings.TrimSuffix(wait.Round(time.Second).String(), "s"))
		page.Error = "Too many wrong tries. Try again in " + wait.Round(time.Second).String() + "."
		c.renderLogin(w, http.StatusTooManyRequests, page)
		return
	}
	given := r.PostFormValue("credential")
	ok := given != "" && c.staticToken(given)
	if !ok && given != "" && c.opts.Passphrase != nil {
		ok = c.opts.Passphrase.OperatorPassphrase(given)
	}
	if !ok {
		c.failed(r)
		page.Error = "That is not an operator token or the passphrase."
		w.Header().Set("WWW-Authenticate", `Bearer realm="stelae-bridge console"`)
		c.renderLogin(w, http.StatusUnauthorized, page)
		return
	}
	c.succeeded(r)
	value := random()
	l := &login{csrf: random(), expires: time.Now().Add(loginFor)}
	c.logins.mu.Lock()
	if len(c.logins.byHash) >= maxLogins {
		var oldest [32]byte
		var at time.Time
		for h, o := range c.logins.byHash {
			if at.IsZero() || o.expires.Before(at) {
				oldest, at = h, o.expires
			}
		}
		delete(c.logins.byHash, oldest)
	}
	c.logins.byHash[sha256.Sum256([]byte(value))] = l
	c.logins.mu.Unlock()
	c.log.Info("operator signed in to the console", "remote", r.RemoteAddr)
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: value, Path: "/console", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: strings.HasPrefix(c.opts.BaseURL(r), "https://"), MaxAge: int(loginFor.Seconds())})
	http.Redirect(w, r, "/console", http.StatusSeeOther)
}

// serveLogout ends the sign-in of the request's cookie.
func (c *Console) serveLogout(w http.ResponseWriter, r *http.Request) {
	if !c.formPost(w, r, "sign out by POSTing the console's sign-out form") {
		return
	}
	if l := c.loginOf(r); l != nil {
		if subtle.ConstantTimeCompare([]byte(l.csrf), []byte(r.PostFormValue("csrf"))) != 1 {
			writeError(w, http.StatusForbidden, "the sign-out form did not come from the console's page (CSRF check failed)")
			return
		}
		ck, _ := r.Cookie(cookieName)
		c.logins.mu.Lock()
		delete(c.logins.byHash, sha256.Sum256([]byte(ck.Value)))
		c.logins.mu.Unlock()
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/console", HttpOnly: true, SameSite: http.SameSiteStrictMode, MaxAge: -1})
	http.Redirect(w, r, "/console", http.StatusSeeOther)
}

// formPost admits a sign-in or sign-out form: a POST (else 405, saying
// how), same-origin, its body capped at 8 KiB.
func (c *Console) formPost(w http.ResponseWriter, r *http.Request, how string) bool {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		writeError(w, http.StatusMethodNotAllowed, how)
		return false
	}
	if !c.sameOrigin(w, r) {
		return false
	}
	r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
	return true
}

// locked is how long r must wait before it may try a credential.
func (c *Console) locked(r *http.Request) time.Duration {
	if c.opts.Passphrase != nil {
		return c.opts.Passphrase.OperatorLocked(r)
	}
	c.logins.mu.Lock()
	defer c.logins.mu.Unlock()
	return max(0, time.Until(c.logins.lockedUntil))
}

// freeTries is how many wrong tries in a row the sign-in takes before it
// makes each wait (without a built-in server, whose lockout holds them).
const freeTries = 10

func (c *Console) failed(r *http.Request) {
	if c.opts.Passphrase != nil {
		c.opts.Passphrase.OperatorFailed(r)
		return
	}
	c.log.Warn("wrong operator credential on the console's sign-in", "remote", r.RemoteAddr)
	c.logins.mu.Lock()
	defer c.logins.mu.Unlock()
	c.logins.failures++
	if n := c.logins.failures - freeTries; n > 0 {
		wait := min(2*time.Second<<min(n-1, 10), 15*time.Minute)
		c.logins.lockedUntil = time.Now().Add(wait)
	}
}

func (c *Console) succeeded(r *http.Request) {
	if c.opts.Passphrase != nil {
		c.opts.Passphrase.OperatorSucceeded(r)
		return
	}
	c.logins.mu.Lock()
	c.logins.failures, c.logins.lockedUntil = 0, time.Time{}
	c.logins.mu.Unlock()
}
