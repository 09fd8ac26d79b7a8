package authserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/stelae-bridge/stelae-bridge/lockout"
)

// This file is a user's sign-in on the approval page (and the credentials
// page, credentials.go, under the same counts): their name and
// secret, under a lockout of their own that never touches the operator's
// (lockout.go).
//
// A wrong secret (or a name nobody has) is charged to the name and to the
// address it came from (an IPv6 address by its /64): past freeFailures of
// either, each further try waits twice as long as the last (2 s … 15
// min). There is no count for the whole server: one user locked never
// holds another, nor the operator, and the operator's passphrase lockout
// never holds a user. A browser where the user signed in before carries
// their trusted-browser cookie (userCookie, stored hashed with their
// subject, 30 days): its tries for that user are counted on their own, so
// others' guesses at the name or from the address never hold it.
// 'stelae-bridge auth unlock' clears these counts too.

// userCookie is a user's trusted-browser cookie; the operator's is
// operatorCookie (a browser may hold both).
const userCookie = "stelae_user"

// userGuesses are the users' counts: by name and by address, and by
// trusted browser. Names nobody has are counted as a user's are (so the
// lockout does not tell which names exist) but apart, in ghosts: guesses
// at made-up names never push a user's count out of names' LRU, which
// holds every user's.
type userGuesses struct {
	names, ghosts, addrs, browsers lockout.Lockout
}

func newUserGuesses() *userGuesses {
	return &userGuesses{names: lockout.Lockout{Free: freeFailures, Max: maxUsers}, ghosts: lockout.Lockout{Free: freeFailures},
		addrs: lockout.Lockout{Free: freeFailures}, browsers: lockout.Lockout{Free: freeFailures}}
}

// byName is the count of the name typed: a user's, or a ghost's.
func (g *userGuesses) byName(exists bool) *lockout.Lockout {
	if exists {
		return &g.names
	}
	return &g.ghosts
}

func (g *userGuesses) reset() {
	g.names.Reset()
	g.ghosts.Reset()
	g.addrs.Reset()
	g.browsers.Reset()
}

// userTry is one sign-in of a user on one of their pages.
type userTry struct {
	// ok: name and secret were right and the user may sign in; then
	// g is whom the grant is for.
	ok bool
	g  grantee
	// wait > 0: the try was held and nothing was checked.
	wait time.Duration
	// disabled: the secret was right but the operator disabled the user.
	disabled bool
	// busy: the secret could not be checked now (too many at once).
	busy bool
}

// browserRecord is a trusted browser as stored: a user's (Subject set), or
// the operator's — stored as its bare expiry time, as before users.
type browserRecord struct {
	Expires time.Time `json:"expires"`
	Subject string    `json:"subject,omitempty"`
}

// readBrowser reads a stored trusted browser, either form.
func readBrowser(v []byte) (browserRecord, bool) {
	var b browserRecord
	if json.Unmarshal(v, &b.Expires) == nil {
		return b, true
	}
	if json.Unmarshal(v, &b) == nil && b.Subject != "" {
		return b, true
	}
	return browserRecord{}, false
}

// tryUser checks name and secret typed on a user's page (where: the
// approval page, the credentials page) under the users' lockout, the same
// counts whichever page. A success trusts the browser for that user
// (secure: the cookie is Secure) and notes the sign-in.
func (srv *Server) tryUser(w http.ResponseWriter, r *http.Request, name, secret string, secure bool, where string) userTry {
	addr := lockout.AddrKey(clientAddr(r))
	valid := CheckName(name) == nil
	key := string(userKey(name))
	var u *userRecord
	if valid {
		_ = srv.store.db.View(func(tx *bolt.Tx) error {
			u, _, _ = getUser(tx, name)
			return nil
		})
	}
	browser := ""
	if u != nil {
		browser = srv.userBrowser(r, u.Subject)
	}
	var t userTry
	switch {
	case browser != "":
		t.wait = srv.userGuesses.browsers.Locked(browser)
	case valid:
		t.wait = max(srv.userGuesses.byName(u != nil).Locked(key), srv.userGuesses.addrs.Locked(addr))
	default:
		t.wait = srv.userGuesses.addrs.Locked(addr)
	}
	if t.wait > 0 {
		srv.log.Warn("a user's sign-in was held by the lockout", "page", where, "user", logName(name), "remote", clientAddr(r), "trusted_browser", browser != "")
		return t
	}
	var stored *secretHash
	if u != nil {
		stored = u.Secret
	}
	right, err := stored.check(r.Context(), secret)
	if err != nil {
		t.busy = true
		if errors.Is(err, errKDFBusy) {
			srv.log.Warn("a user's sign-in could not be checked: too many at once", "user", logName(name))
		}
		return t
	}
	if !right {
		switch {
		case browser != "":
			srv.userGuesses.browsers.Failed(browser)
		case valid:
			srv.userGuesses.byName(u != nil).Failed(key)
			srv.userGuesses.addrs.Failed(addr)
		default:
			srv.userGuesses.addrs.Failed(addr)
		}
		srv.log.Warn("wrong name or secret", "page", where, "user", logName(name), "remote", clientAddr(r), "trusted_browser", browser != "")
		return t
	}
	// A success forgets only the counts it was charged to.
	if browser != "" {
		srv.userGuesses.browsers.Succeeded(browser)
	} else {
		srv.userGuesses.names.Succeeded(key)
		srv.userGuesses.addrs.Succeeded(addr)
	}
	if u.Disabled {
		t.disabled = true
		srv.log.Warn("a disabled user tried to sign in", "user", u.Name, "subject", u.Subject)
		return t
	}
	now := srv.now().UTC()
	err = srv.store.db.Update(func(tx *bolt.Tx) error {
		cur, ok, err := getUser(tx, name)
		if err != nil || !ok || cur.Subject != u.Subject {
			return err
		}
		cur.LastSignIn = now
		return put(tx, bucketUsers, userKey(name), cur)
	})
	if err != nil {
		srv.log.Error("could not note a user's sign-in", "user", u.Name, "error", err)
	}
	if browser == "" {
		srv.trustUserBrowser(w, u.Subject, secure)
	}
	srv.log.Info("user signed in", "page", where, "user", u.Name, "subject", u.Subject)
	t.ok, t.g = true, grantee{Subject: u.Subject, User: key}
	return t
}

// problem is what the page says of a try that did not sign the user in,
// and its status ("" when it did); it sets Retry-After on w where waiting
// helps.
func (t userTry) problem(w http.ResponseWriter) (string, int) {
	switch {
	case t.wait > 0:
		w.Header().Set("Retry-After", fmt.Sprint(int(t.wait.Seconds())+1))
		return fmt.Sprintf("Too many wrong secrets for this name or from this address. Try again in %s, or ask the bridge's operator.", t.wait.Round(time.Second)), http.StatusTooManyRequests
	case t.busy:
		w.Header().Set("Retry-After", "5")
		return "The bridge is checking too many sign-ins at once. Try again in a few seconds.", http.StatusServiceUnavailable
	case t.disabled:
		return "Your account is disabled. Ask the bridge's operator.", http.StatusForbidden
	case !t.ok:
		return "Wrong name or secret.", http.StatusUnauthorized
	}
	return "", 0
}

// logName is a typed name as it may be logged: a valid name as it is,
// anything else not at all (it may be a secret typed in the wrong field).
func logName(name string) string {
	if CheckName(name) != nil {
		return "(not a valid name)"
	}
	return name
}

// userBrowser returns the key of the request's trusted-browser cookie when
// it is one the server issued to subject and still valid, else "".
func (srv *Server) userBrowser(r *http.Request, subject string) string {
	for _, c := range r.CookiesNamed(userCookie) {
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
		if ok && rec.Subject == subject && srv.now().Before(rec.Expires) {
			return string(k)
		}
	}
	return ""
}

// trustUserBrowser gives the browser of a user's successful sign-in its
// cookie.
func (srv *Server) trustUserBrowser(w http.ResponseWriter, subject string, secure bool) {
	value := newID("", 32)
	rec := browserRecord{Expires: srv.now().Add(trustedBrowserFor).UTC(), Subject: subject}
	if err := srv.store.saveBrowser(hashKey(value), rec); err != nil {
		srv.log.Error("could not remember a user's browser; it will be subject to the lockout", "subject", subject, "error", err)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: userCookie, Value: value, Path: operatorCookiePath, HttpOnly: true,
		Secure: secure, SameSite: http.SameSiteStrictMode, MaxAge: int(trustedBrowserFor.Seconds())})
}

// saveBrowser stores a trusted browser (the operator's as its bare expiry,
// a user's with their subject), dropping the expired ones.
func (s *Store) saveBrowser(key []byte, rec browserRecord) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketBrowsers)
		now := time.Now()
		var stale [][]byte
		_ = b.ForEach(func(k, v []byte) error {
			if r, ok := readBrowser(v); !ok || now.After(r.Expires) {
				stale = append(stale, append([]byte(nil), k...))
			}
			return nil
		})
		for _, k := range stale {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		if rec.Subject == "" {
			return put(tx, bucketBrowsers, key, rec.Expires)
		}
		return put(tx, bucketBrowsers, key, rec)
	})
}

// forgetBrowsersOf deletes the trusted browsers of subject.
func forgetBrowsersOf(tx *bolt.Tx, subject string) error {
	b := tx.Bucket(bucketBrowsers)
	var gone [][]byte
	_ = b.ForEach(func(k, v []byte) error {
		if r, ok := readBrowser(v); ok && r.Subject == subject {
			gone = append(gone, append([]byte(nil), k...))
		}
		return nil
	})
	for _, k := range gone {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}
