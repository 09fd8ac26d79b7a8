package authserver

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/stelae-bridge/stelae-bridge/lockout"
)

// This file is the approval page's defence against passphrase guessing.
//
// Every wrong passphrase is charged to the address it came from (an IPv6
// address by its /64) and to the whole server: past freeFailures from one
// address, or freeGlobalFailures from everyone together, each further try
// waits twice as long as the last (2 s … 15 min). Failures are forgotten
// an hour after the last; the addresses are kept in a bounded LRU (package
// lockout, shared with the console), and while an address waits its tries
// are not even checked. The console's sign-in checks the passphrase here
// too (OperatorSignIn), with the same counts and the same ways in.
//
// The operator keeps a way in that others' failures cannot block:
//   - a browser that entered the passphrase once (on the approval page or
//     the console's sign-in) gets a trusted-browser cookie (random, stored
//     hashed, 30 days, sent to every operator page): its tries are counted
//     on their own, never against the address or the server;
//   - 'stelae-bridge auth unlock' (admin socket) clears the counts and
//     prints a one-time unlock code (10 minutes); a form carrying it is not
//     held by the lockout, and its success trusts that browser.

const (
	freeFailures       = 5
	freeGlobalFailures = 10
	trustedBrowserFor  = 30 * 24 * time.Hour
	operatorCookie     = "stelae_operator"
	// operatorCookiePath is where the trusted-browser cookie is sent: the
	// whole origin, so that the console's sign-in (another operator page,
	// at its own path) sees it as the approval page does.
	operatorCookiePath = "/"
	unlockCodeFor      = 10 * time.Minute
	unlockCodeTries    = 5
)

var bucketBrowsers = []byte("browsers")

// guesses are the approval page's counts (and the console's, which asks
// through OperatorSignIn): addrs by address and for the whole server,
// browsers by trusted browser (the hash of its cookie), each on its own.
type guesses struct {
	addrs    lockout.Lockout
	browsers lockout.Lockout
}

func newGuesses() *guesses {
	return &guesses{addrs: lockout.Lockout{Free: freeFailures, FreeAll: freeGlobalFailures}, browsers: lockout.Lockout{Free: freeFailures}}
}

// reset clears every count (auth unlock).
func (g *guesses) reset() {
	g.addrs.Reset()
	g.browsers.Reset()
}

// operatorTry is one try of the passphrase on an operator page, counted
// as the approval page counts it.
type operatorTry struct {
	// ok: the passphrase was right. wait > 0: the try was held and
	// nothing was checked.
	ok   bool
	wait time.Duration
	// browser: a trusted browser's try (counted on its own); unlocked: an
	// unlock code let it through the lockout.
	browser, unlocked bool
}

// tryPassphrase checks a passphrase typed on an operator page (the
// approval page, the console's sign-in) under the lockout, with the
// operator's ways in: a trusted browser's tries and an unlock code's are
// counted on their own, everyone else's against the address and the
// whole server. A success that was not a trusted browser's trusts the
// browser (secure: its cookie is Secure). where names the page for the
// log.
func (srv *Server) tryPassphrase(w http.ResponseWriter, r *http.Request, passphrase, unlock string, secure bool, where string) operatorTry {
	addr := lockout.AddrKey(clientAddr(r))
	browser, browserValue := srv.trustedBrowser(r)
	t := operatorTry{browser: browser != ""}
	t.unlocked = browser == "" && srv.unlock.valid(unlock)
	switch {
	case t.browser:
		t.wait = srv.guesses.browsers.Locked(browser)
	case !t.unlocked:
		t.wait = srv.guesses.addrs.Locked(addr)
	}
	if t.wait > 0 {
		return t
	}
	given := sha256.Sum256([]byte(passphrase))
	if subtle.ConstantTimeCompare(given[:], srv.passHash[:]) != 1 {
		switch {
		case t.browser:
			srv.guesses.browsers.Failed(browser)
		case t.unlocked:
			srv.unlock.failed()
		default:
			srv.guesses.addrs.Failed(addr)
		}
		srv.log.Warn("wrong passphrase on an operator page", "page", where, "remote", clientAddr(r), "trusted_browser", t.browser, "unlock_code", t.unlocked)
		return t
	}
	t.ok = true
	// A success forgets only the counts it was charged to: behind a
	// tunnel the address is everyone's.
	switch {
	case t.browser:
		srv.guesses.browsers.Succeeded(browser)
		// A browser trusted under an older cookie path gets the cookie
		// where every operator page sees it.
		setOperatorCookie(w, browserValue, secure)
	case t.unlocked:
		srv.unlock.used()
		srv.trustBrowser(w, secure)
	default:
		srv.guesses.addrs.Succeeded(addr)
		srv.trustBrowser(w, secure)
	}
	return t
}

// trustedBrowser returns the key (and the value) of the request's
// trusted-browser cookie when it is one the server issued and still
// valid, else "". A browser may hold it under two paths (an older
// bridge's, the approval page's only): any valid one will do.
func (srv *Server) trustedBrowser(r *http.Request) (key, value string) {
	for _, c := range r.CookiesNamed(operatorCookie) {
		if c.Value == "" || len(c.Value) > 100 {
			continue
		}
		k := hashKey(c.Value)
		var rec browserRecord
		var ok bool
		_ = srv.store.db.View(func(tx *bolt.Tx) error {
			if v := tx.Bucket(bucketBrowsers).Get(k); v != nil {
				rec, ok = readBrowser(v)
			}
			return nil
		})
		// A user's trusted browser is never the operator's.
		if ok && rec.Subject == "" && time.Now().Before(rec.Expires) {
			return string(k), c.Value
		}
	}
	return "", ""
}

// trustBrowser gives the browser of a successful passphrase its cookie.
func (srv *Server) trustBrowser(w http.ResponseWriter, secure bool) {
	value := newID("", 32)
	// Expired ones go when a new one comes.
	err := srv.store.saveBrowser(hashKey(value), browserRecord{Expires: time.Now().Add(trustedBrowserFor).UTC()})
	if err != nil {
		srv.log.Error("could not remember the operator's browser; it will be subject to the lockout", "error", err)
		return
	}
	setOperatorCookie(w, value, secure)
}

// setOperatorCookie sets the trusted-browser cookie for every operator
// page (the approval page, the console's sign-in).
func setOperatorCookie(w http.ResponseWriter, value string, secure bool) {
	http.SetCookie(w, &http.Cookie{Name: operatorCookie, Value: value, Path: operatorCookiePath, HttpOnly: true,
		Secure: secure, SameSite: http.SameSiteStrictMode, MaxAge: int(trustedBrowserFor.Seconds())})
}

// unlockCode is the one-time code of 'auth unlock'.
type unlockCode struct {
	// mu guards the rest.
	mu    sync.Mutex
	hash  [32]byte
	until time.Time
	tries int
}

// Unlock clears the lockout's counts (the users' too: usersignin.go) and returns a one-time code, valid for
// unlockCodeFor, that lets a form through the lockout ('stelae-bridge auth
// unlock' on the admin socket).
func (srv *Server) Unlock() string {
	srv.guesses.reset()
	srv.userGuesses.reset()
	code := newID("", 12)
	srv.unlock.mu.Lock()
	srv.unlock.hash, srv.unlock.until, srv.unlock.tries = sha256.Sum256([]byte(code)), time.Now().Add(unlockCodeFor), 0
	srv.unlock.mu.Unlock()
	srv.log.Info("the approval page's lockout was cleared by 'auth unlock'; a one-time unlock code was issued", "valid_for", unlockCodeFor)
	return code
}

// valid reports whether given is the current unlock code.
func (u *unlockCode) valid(given string) bool {
	if given == "" {
		return false
	}
	h := sha256.Sum256([]byte(strings.TrimSpace(given)))
	u.mu.Lock()
	defer u.mu.Unlock()
	return time.Now().Before(u.until) && u.tries < unlockCodeTries && subtle.ConstantTimeCompare(h[:], u.hash[:]) == 1
}

// failed counts a wrong passphrase sent with the code; used ends it.
func (u *unlockCode) failed() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.tries++
}

func (u *unlockCode) used() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.until = time.Time{}
}
