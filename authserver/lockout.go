package authserver

import (
	"container/list"
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// This file is the approval page's defence against passphrase guessing.
//
// Every wrong passphrase is charged to the address it came from (an IPv6
// address by its /64) and to the whole server: past freeFailures from one
// address, or freeGlobalFailures from everyone together, each further try
// waits twice as long as the last (2 s … 15 min). Failures are forgotten
// an hour after the last. The addresses are kept in an LRU of at most
// lockoutMaxAddrs (the least recently failing go first; nothing is cleared
// wholesale), and while the server is locked no failure is even recorded.
//
// The operator keeps a way in that others' failures cannot block:
//   - a browser that entered the passphrase once gets a trusted-browser
//     cookie (random, stored hashed, 30 days): its tries are counted on
//     their own, never against the address or the server;
//   - 'stelae-bridge auth unlock' (admin socket) clears the counts and
//     prints a one-time unlock code (10 minutes); a form carrying it is not
//     held by the lockout, and its success trusts that browser.

const (
	freeFailures       = 5
	freeGlobalFailures = 10
	maxLockout         = 15 * time.Minute
	forgetFailures     = time.Hour
	lockoutMaxAddrs    = 10000
	trustedBrowserFor  = 30 * 24 * time.Hour
	operatorCookie     = "stelae_operator"
	unlockCodeFor      = 10 * time.Minute
	unlockCodeTries    = 5
)

var bucketBrowsers = []byte("browsers")

// failures counts one guesser's wrong tries.
type failures struct {
	n           int
	until, last time.Time
}

func (f *failures) wait(now time.Time) time.Duration {
	if now.Before(f.until) {
		return f.until.Sub(now)
	}
	return 0
}

func (f *failures) fail(now time.Time, free int) {
	if now.Sub(f.last) > forgetFailures {
		f.n = 0
	}
	f.last = now
	f.n++
	if f.n > free {
		f.until = now.Add(min(2*time.Second<<min(f.n-free-1, 10), maxLockout))
	}
}

// lockout keeps the counts. The zero value is ready.
type lockout struct {
	// mu guards the rest.
	mu  sync.Mutex
	all failures
	// max bounds byKey (lockoutMaxAddrs when 0); order is its LRU, most
	// recent first, of *addrEntry.
	max      int
	order    list.List
	byKey    map[string]*list.Element
	browsers map[string]*failures
}

type addrEntry struct {
	key string
	f   failures
}

// addrKey is the guesser an address stands for: an IPv4 address, or an
// IPv6 address's /64 (one host usually has all of it).
func addrKey(addr string) string {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return addr
	}
	a = a.WithZone("").Unmap()
	if a.Is6() {
		return netip.PrefixFrom(a, 64).Masked().String()
	}
	return a.String()
}

// locked returns how long a try from addr (no trusted browser) must wait.
func (l *lockout) locked(addr string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	d := l.all.wait(now)
	if e, ok := l.byKey[addrKey(addr)]; ok {
		d = max(d, e.Value.(*addrEntry).f.wait(now))
	}
	return d
}

// failed charges a wrong passphrase to addr and to the whole server.
func (l *lockout) failed(addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	l.all.fail(now, freeGlobalFailures)
	key := addrKey(addr)
	if l.byKey == nil {
		l.byKey = map[string]*list.Element{}
	}
	e, ok := l.byKey[key]
	if ok {
		l.order.MoveToFront(e)
	} else {
		e = l.order.PushFront(&addrEntry{key: key})
		l.byKey[key] = e
		limit := l.max
		if limit <= 0 {
			limit = lockoutMaxAddrs
		}
		for l.order.Len() > limit {
			last := l.order.Back()
			l.order.Remove(last)
			delete(l.byKey, last.Value.(*addrEntry).key)
		}
	}
	e.Value.(*addrEntry).f.fail(now, freeFailures)
}

// succeeded forgets addr's failures (the server's stay until they are
// forgotten: the operator's success says nothing about the others).
func (l *lockout) succeeded(addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.byKey[addrKey(addr)]; ok {
		l.order.Remove(e)
		delete(l.byKey, addrKey(addr))
	}
}

// lockedBrowser, failedBrowser and succeededBrowser count a trusted
// browser's tries on their own (key: its cookie's hash).
func (l *lockout) lockedBrowser(key string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if f := l.browsers[key]; f != nil {
		return f.wait(time.Now())
	}
	return 0
}

func (l *lockout) failedBrowser(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.browsers == nil {
		l.browsers = map[string]*failures{}
	}
	f := l.browsers[key]
	if f == nil {
		f = &failures{}
		l.browsers[key] = f
	}
	f.fail(time.Now(), freeFailures)
}

func (l *lockout) succeededBrowser(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.browsers, key)
}

// reset clears every count (auth unlock).
func (l *lockout) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all = failures{}
	l.order.Init()
	l.byKey = nil
	l.browsers = nil
}

// trustedBrowser returns the key of the request's trusted-browser cookie
// when it is one the server issued and still valid, else "".
func (srv *Server) trustedBrowser(r *http.Request) string {
	c, err := r.Cookie(operatorCookie)
	if err != nil || c.Value == "" || len(c.Value) > 100 {
		return ""
	}
	key := hashKey(c.Value)
	var expires time.Time
	err = srv.store.db.View(func(tx *bolt.Tx) error {
		_, err := get(tx, bucketBrowsers, key, &expires)
		return err
	})
	if err != nil || time.Now().After(expires) {
		return ""
	}
	return string(key)
}

// trustBrowser gives the browser of a successful approval its cookie.
func (srv *Server) trustBrowser(w http.ResponseWriter, r *http.Request) {
	value := newID("", 32)
	expires := time.Now().Add(trustedBrowserFor).UTC()
	err := srv.store.db.Update(func(tx *bolt.Tx) error {
		// Expired ones go when a new one comes.
		b := tx.Bucket(bucketBrowsers)
		var stale [][]byte
		_ = b.ForEach(func(k, v []byte) error {
			var t time.Time
			if t.UnmarshalJSON(v) != nil || time.Now().After(t) {
				stale = append(stale, append([]byte(nil), k...))
			}
			return nil
		})
		for _, k := range stale {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		return put(tx, bucketBrowsers, hashKey(value), expires)
	})
	if err != nil {
		srv.log.Error("could not remember the operator's browser; it will be subject to the lockout", "error", err)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: operatorCookie, Value: value, Path: PathAuthorize, HttpOnly: true,
		Secure: strings.HasPrefix(baseOf(r.Context()), "https://"), SameSite: http.SameSiteStrictMode, MaxAge: int(trustedBrowserFor.Seconds())})
}

// unlockCode is the one-time code of 'auth unlock'.
type unlockCode struct {
	// mu guards the rest.
	mu    sync.Mutex
	hash  [32]byte
	until time.Time
	tries int
}

// Unlock clears the lockout's counts and returns a one-time code, valid for
// unlockCodeFor, that lets a form through the lockout ('stelae-bridge auth
// unlock' on the admin socket).
func (srv *Server) Unlock() string {
	srv.lockout.reset()
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
