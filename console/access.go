package console

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"github.com/stelae-bridge/stelae-bridge/httpx"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/stelae-bridge/stelae-bridge/lockout"
)

// Who may use the console, and how they sign in.

// Passphrase is the built-in authorization server's operator passphrase
// (authserver.Server implements it). OperatorSignIn checks a passphrase
// typed on the console's sign-in as the approval page checks its own:
// under the approval page's lockout, with its ways in (a trusted browser's
// tries counted on their own, the one-time code of 'auth unlock' through
// the lockout), and a success trusts the browser (its cookie set on w,
// Secure when secure). wait > 0: held, nothing checked; askUnlock: offer
// the unlock-code field.
type Passphrase interface {
	OperatorSignIn(w http.ResponseWriter, r *http.Request, passphrase, unlock string, secure bool) (ok bool, wait time.Duration, askUnlock bool)
}

const (
	cookieName = "stelae_console"
	// loginFor is how long a sign-in lasts.
	loginFor = 12 * time.Hour
	// maxLogins bounds the sign-ins kept (the oldest goes first).
	maxLogins  = 64
	csrfHeader = "X-CSRF-Token"
	// freeTries and freeAllTries are how many wrong tries the sign-in
	// takes from one address (an IPv6 address by its /64), and from
	// everyone together, before each waits (without a built-in server,
	// whose lockout holds the passphrase's). Only wrong tries wait: the
	// credentials that open the console then (operator tokens, the per-run
	// token) cannot be guessed and are checked first, whatever the counts.
	freeTries    = 10
	freeAllTries = 30
)

// viewer is who a request is from, once admitted.
type viewer struct {
	// csrf is the token its actions must carry ("" for a bearer-token
	// request: no browser sends that header by itself).
	csrf string
	// login is its sign-in (nil: a bearer token).
	login *login
}

// login is one sign-in; its key in logins is the hash of its cookie.
type login struct {
	csrf    string
	expires time.Time
	// token is the digest of the operator token it was made with (zero
	// for the passphrase): it ends when the token is removed (SetTokens).
	token [32]byte
}

// logins are the signed-in browsers, and the sign-in's own counts of
// wrong tries when there is no built-in server to hold guesses.
type logins struct {
	// mu guards byHash; it is taken before Console.tokMu, never after.
	mu     sync.Mutex
	byHash map[[32]byte]*login
	// guesses are the wrong tries by address and for everyone, forgotten
	// an hour after the last (it has its own lock).
	guesses lockout.Lockout
}

// random is a fresh 32-byte token in hex.
func random() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// canSignIn reports whether any operator credential is configured (with
// auth off, the per-run token always is).
func (c *Console) canSignIn() bool {
	return !c.opts.AuthOn || c.hasTokens() || c.opts.Passphrase != nil
}

// OpenToken is the per-run token that opens the console while auth is
// off ("" with auth on): the bridge prints it once, in its startup
// banner, as the link http://HOST:PORT/console?token=…, and nowhere else.
func (c *Console) OpenToken() string { return c.openToken }

// admit returns r's viewer, or writes the refusal (401 with the sign-in
// page for a page request, JSON otherwise) and returns nil.
func (c *Console) admit(w http.ResponseWriter, r *http.Request, page bool) *viewer {
	if !c.local(w, r, page) {
		return nil
	}
	if !c.canSignIn() {
		c.refuse(w, r, page, http.StatusForbidden, "the console needs an operator credential, and none is configured: give the bridge an operator token (a line of -auth-tokens-file with a token alone: a named token is a user's) or run the built-in authorization server (STELAE_OAUTH_PASSPHRASE); an MCP client's access token never opens it")
		return nil
	}
	if token, ok := httpx.Bearer(r); ok {
		if c.staticToken(token) {
			return &viewer{}
		}
		why := "this bearer token is not an operator token: the console takes the bridge's operator tokens only, the lines of its tokens file with a token alone (a named token, NAME: TOKEN, is a user's; an MCP client's access token never opens it)"
		if !c.opts.AuthOn {
			why = "this bearer token is not the console's token of this run (the bridge prints a new one each time it starts, in the console's link)"
		}
		c.refuse(w, r, page, http.StatusUnauthorized, why)
		return nil
	}
	if l := c.loginOf(r); l != nil {
		return &viewer{csrf: l.csrf, login: l}
	}
	why := "sign in with an operator token or the built-in server's passphrase"
	if !c.opts.AuthOn {
		why = "auth is off, so the console asks for its token of this run: open the link the bridge printed as it started (http://127.0.0.1:PORT/console?token=…), type that token on the sign-in page, or send Authorization: Bearer <token>"
	}
	c.refuse(w, r, page, http.StatusUnauthorized, why)
	return nil
}

// local refuses (false) a request from beyond this machine while auth is
// off, unless Options.Remote.
func (c *Console) local(w http.ResponseWriter, r *http.Request, page bool) bool {
	if c.opts.AuthOn || c.opts.Remote {
		return true
	}
	if why := c.notLocal(r); why != "" {
		c.refuse(w, r, page, http.StatusForbidden, why)
		return false
	}
	return true
}

// loginPage is the sign-in page as this console shows it.
func (c *Console) loginPage() loginPage {
	if !c.opts.AuthOn {
		return loginPage{Open: true}
	}
	return loginPage{Passphrase: c.opts.Passphrase != nil, Token: c.hasTokens()}
}

// refuse answers a viewer the console does not admit: the sign-in page
// (which shows no data) for a page, a JSON error otherwise.
func (c *Console) refuse(w http.ResponseWriter, r *http.Request, page bool, status int, why string) {
	if page {
		d := c.loginPage()
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

// staticToken compares token in constant time with every credential
// that cannot be guessed: the operator tokens, or with auth off the
// per-run token.
func (c *Console) staticToken(token string) bool {
	c.tokMu.RLock()
	defer c.tokMu.RUnlock()
	return httpx.OneOf(c.tokens, token)
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
	if time.Now().After(l.expires) || l.token != ([32]byte{}) && !c.tokenLive(l.token) {
		// Expired, or its token was removed since (a sign-in that checked
		// the token as SetTokens removed it is caught here).
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
	if time.Now().After(l.expires) || l.token != ([32]byte{}) && !c.tokenLive(l.token) {
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

// serveLogin signs an operator in with the form's "credential": an
// operator token (with auth off, the per-run token) or the passphrase,
// then sends the browser to the console. A token is checked first, in
// constant time, and never held by any lockout (it cannot be guessed);
// the passphrase is the built-in server's to check, under its lockout and
// with its ways in (OperatorSignIn). Without a built-in server the
// console's own counts hold wrong tries, per address and for everyone.
func (c *Console) serveLogin(w http.ResponseWriter, r *http.Request) {
	if !c.formPost(w, r, "sign in by POSTing the form of /console") {
		return
	}
	if !c.local(w, r, true) {
		return
	}
	if !c.canSignIn() {
		http.Redirect(w, r, "/console", http.StatusSeeOther)
		return
	}
	given := r.PostFormValue("credential")
	if given != "" && c.staticToken(given) {
		c.signIn(w, r, "token", sha256.Sum256([]byte(given)))
		return
	}
	page := c.loginPage()
	if c.opts.Passphrase != nil {
		ok, wait, askUnlock := c.opts.Passphrase.OperatorSignIn(w, r, given, r.PostFormValue("unlock"), c.secure(r))
		page.Unlock = askUnlock
		switch {
		case wait > 0:
			c.tooMany(w, wait, page)
		case !ok:
			c.wrong(w, page, "That is not an operator token or the passphrase.")
		default:
			c.signIn(w, r, "passphrase", [32]byte{})
		}
		return
	}
	msg := "That is not an operator token."
	if !c.opts.AuthOn {
		msg = "That is not the console's token of this run (the bridge prints it as it starts, in the console's link)."
	}
	c.wrongTry(w, r, page, msg)
}

// serveTokenLink signs in the browser that opened the console's link of
// this run (GET /console?token=…, auth off) and sends it to /console,
// without the token in its address bar.
func (c *Console) serveTokenLink(w http.ResponseWriter, r *http.Request, token string) {
	if !c.local(w, r, true) {
		return
	}
	if c.staticToken(token) {
		c.signIn(w, r, "the console's link", sha256.Sum256([]byte(token)))
		return
	}
	c.wrongTry(w, r, c.loginPage(), "That link's token is not this run's: the bridge prints a new link each time it starts.")
}

// wrongTry answers a wrong credential where the console's own counts hold
// guesses: 429 while r's address (or everyone) waits, else 401 and a
// failure charged.
func (c *Console) wrongTry(w http.ResponseWriter, r *http.Request, page loginPage, msg string) {
	key := lockout.AddrKey(r.RemoteAddr)
	if wait := c.logins.guesses.Locked(key); wait > 0 {
		c.tooMany(w, wait, page)
		return
	}
	c.logins.guesses.Failed(key)
	c.log.Warn("wrong credential on the console's sign-in", "remote", r.RemoteAddr)
	c.wrong(w, page, msg)
}

func (c *Console) tooMany(w http.ResponseWriter, wait time.Duration, page loginPage) {
	w.Header().Set("Retry-After", fmt.Sprint(int(wait.Seconds())+1))
	page.Error = "Too many wrong tries. Try again in " + wait.Round(time.Second).String() + "."
	c.renderLogin(w, http.StatusTooManyRequests, page)
}

func (c *Console) wrong(w http.ResponseWriter, page loginPage, msg string) {
	page.Error = msg
	w.Header().Set("WWW-Authenticate", `Bearer realm="stelae-bridge console"`)
	c.renderLogin(w, http.StatusUnauthorized, page)
}

// secure reports whether the console is reached over https (its cookies
// are then Secure).
func (c *Console) secure(r *http.Request) bool {
	return strings.HasPrefix(c.opts.BaseURL(r), "https://")
}

// signIn starts a sign-in for r's browser (its cookie) and sends it to
// the console; how names the credential for the log (never the
// credential).
func (c *Console) signIn(w http.ResponseWriter, r *http.Request, how string, token [32]byte) {
	value := random()
	l := &login{csrf: random(), expires: time.Now().Add(loginFor), token: token}
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
	c.log.Info("operator signed in to the console", "remote", r.RemoteAddr, "with", how)
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: value, Path: "/console", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: c.secure(r), MaxAge: int(loginFor.Seconds())})
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
