package console

import (
	"crypto/sha256"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/stelae-bridge/stelae-bridge/lockout"
	"github.com/stelae-bridge/stelae-bridge/session"
)

// Options configure a Console.
type Options struct {
	// Backend is what the console shows and acts on.
	Backend Backend
	// Tail is the access entries the endpoints record (NewTail).
	Tail *Tail
	// AuthOn: the bridge asks for credentials (operator tokens, OAuth);
	// the console then asks for an operator's. With auth off it asks for
	// its own per-run token (OpenToken), from this machine only unless
	// Remote.
	AuthOn bool
	// Tokens are the static operator tokens; Passphrase the built-in
	// server (nil when it is not running).
	Tokens     []string
	Passphrase Passphrase
	// Remote serves the console beyond this machine while auth is off
	// (-console-remote).
	Remote bool
	// BaseURL is the bridge's origin as the request reached it (for the
	// Origin check and Secure cookies).
	BaseURL func(r *http.Request) string
	// Version is the bridge's version; AuthMode says how the bridge
	// authenticates, for the page.
	Version  string
	AuthMode string
	// PublicURL is the bridge's -public-url ("" for none): the doctor
	// panel's first URL.
	PublicURL string
	// Done closes when the bridge stops: event streams end.
	Done <-chan struct{}
	// Every is how often a stream sends the state (default 1 s); the log
	// goes every Every/4.
	Every  time.Duration
	Logger hclog.Logger
}

// maxStreams bounds the event streams open at once.
const maxStreams = 32

// Console serves /console and everything under it.
type Console struct {
	opts Options
	log  hclog.Logger
	// openToken opens the console while auth is off: random, one per
	// process ("" with auth on).
	openToken string
	// tokMu guards tokens, the credentials that cannot be guessed (the
	// operator tokens, or [openToken]), and tokenHashes, their digests
	// (a sign-in made with a token lasts while its token does). SetTokens
	// replaces both.
	tokMu       sync.RWMutex
	tokens      []string
	tokenHashes map[[32]byte]bool
	logins      logins
	labels      clientLabels
	// people serializes the people actions (people.go), so that each
	// one's check of whom a name names holds while it acts ('stelae-bridge
	// auth' commands over the admin socket are not serialized with them).
	people sync.Mutex
	// doctor is held by the doctor's run from the page (one at a time).
	doctor sync.Mutex
	// mu guards streams (the open event streams), snap and snapAt (the
	// last state, shared by the viewers), prev and prevAt (the traffic at
	// the last rate sample, and when) and rates (calls and errors per
	// second by destination, from the last two samples).
	mu      sync.Mutex
	streams int
	snap    []byte
	snapAt  time.Time
	prev    map[string]traffic
	prevAt  time.Time
	rates   map[string][2]float64
}

// New returns the console.
func New(opts Options) *Console {
	if opts.Every <= 0 {
		opts.Every = time.Second
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if opts.Tail == nil {
		opts.Tail = NewTail()
	}
	if opts.BaseURL == nil {
		opts.BaseURL = func(r *http.Request) string { return "http://" + r.Host }
	}
	c := &Console{opts: opts, log: opts.Logger,
		logins: logins{byHash: map[[32]byte]*login{}, guesses: lockout.Lockout{Free: freeTries, FreeAll: freeAllTries}}}
	tokens := opts.Tokens
	if !opts.AuthOn {
		c.openToken = random()
		tokens = []string{c.openToken}
	}
	c.setTokens(tokens)
	return c
}

// SetTokens replaces the operator tokens (the bridge's tokens file read
// again): a token no longer listed opens the console no more, from the
// next request on, and the browsers signed in with it are signed out
// (their next request, event streams included, is refused). With auth off
// the console's own token of the run stays the only one: ignored.
func (c *Console) SetTokens(tokens []string) {
	if !c.opts.AuthOn {
		return
	}
	c.setTokens(tokens)
	c.logins.mu.Lock()
	n := 0
	for h, l := range c.logins.byHash {
		if l.token != ([32]byte{}) && !c.tokenLive(l.token) {
			delete(c.logins.byHash, h)
			n++
		}
	}
	c.logins.mu.Unlock()
	if n > 0 {
		c.log.Info("operator tokens removed: the browsers signed in with them are signed out", "signed_out", n)
	}
}

func (c *Console) setTokens(tokens []string) {
	hashes := make(map[[32]byte]bool, len(tokens))
	for _, t := range tokens {
		hashes[sha256.Sum256([]byte(t))] = true
	}
	c.tokMu.Lock()
	c.tokens, c.tokenHashes = append([]string(nil), tokens...), hashes
	c.tokMu.Unlock()
}

// tokenLive reports whether the token of digest h is still one of the
// operator tokens.
func (c *Console) tokenLive(h [32]byte) bool {
	c.tokMu.RLock()
	defer c.tokMu.RUnlock()
	return c.tokenHashes[h]
}

// hasTokens reports whether any operator token is configured now.
func (c *Console) hasTokens() bool {
	c.tokMu.RLock()
	defer c.tokMu.RUnlock()
	return len(c.tokens) > 0
}

// Path is where the console is served.
const Path = "/console"

// ServeHTTP serves /console and its paths.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	// The bridge's CORS layer may have allowed the request's origin: the
	// console is same-origin only.
	h.Del("Access-Control-Allow-Origin")
	h.Del("Access-Control-Expose-Headers")
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin") // no-referrer makes a form's Origin "null", which sameOrigin refuses
	h.Set("Cache-Control", "no-store")
	switch path := strings.TrimSuffix(r.URL.Path, "/"); path {
	case Path:
		if onlyGet(w, r) {
			if token := r.URL.Query().Get("token"); token != "" && !c.opts.AuthOn {
				c.serveTokenLink(w, r, token)
			} else if v := c.admit(w, r, true); v != nil {
				c.renderConsole(w, v)
			}
		}
	case Path + "/login":
		c.serveLogin(w, r)
	case Path + "/logout":
		c.serveLogout(w, r)
	case Path + "/events":
		if onlyGet(w, r) {
			if v := c.admit(w, r, false); v != nil {
				c.serveEvents(w, r, v)
			}
		}
	case Path + "/api/state":
		if onlyGet(w, r) {
			if v := c.admit(w, r, false); v != nil {
				writeJSON(w, http.StatusOK, json.RawMessage(c.state()))
			}
		}
	case Path + "/api/log":
		if onlyGet(w, r) {
			if v := c.admit(w, r, false); v != nil {
				entries, _ := c.opts.Tail.since(0, tailSize)
				writeJSON(w, http.StatusOK, entries)
			}
		}
	case Path + "/api/sessions/end", Path + "/api/restart", Path + "/api/clients/revoke", Path + "/api/users/stop", Path + "/api/credentials/delete",
		Path + "/api/people/invite", Path + "/api/people/disable", Path + "/api/people/enable", Path + "/api/people/remove":
		c.serveAction(w, r, strings.TrimPrefix(path, Path+"/api/"))
	case Path + "/api/doctor":
		c.serveDoctor(w, r)
	default:
		if name, ok := strings.CutPrefix(path, Path+"/assets/"); ok {
			serveAsset(w, r, name)
			return
		}
		writeError(w, http.StatusNotFound, "no console page at "+r.URL.Path+"; the console is at /console")
	}
}

func onlyGet(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	w.Header().Set("Allow", "GET, HEAD")
	writeError(w, http.StatusMethodNotAllowed, r.URL.Path+" answers GET only")
	return false
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status, body = http.StatusInternalServerError, []byte(`{"error":{"message":"could not encode the answer"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]string{"message": msg}})
}

// state is the current State as JSON, made at most once per Every/2
// whatever the number of viewers.
func (c *Console) state() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	if c.snap != nil && now.Sub(c.snapAt) < c.opts.Every/2 {
		return c.snap
	}
	st := State{Bridge: BridgeInfo{Version: c.opts.Version, Auth: c.opts.AuthMode, PublicURL: c.opts.PublicURL, Now: now.UTC()}}
	st.Destinations = c.opts.Backend.Destinations()
	st.Profiles = c.opts.Backend.Profiles()
	clients, enabled, err := c.opts.Backend.Clients()
	st.Clients, st.ClientsEnabled = clients, enabled
	if err != nil {
		st.ClientsError = err.Error()
	}
	st.People, st.PeopleEnabled, err = c.opts.Backend.People()
	if err != nil {
		st.PeopleError = err.Error()
	}
	if st.People == nil {
		st.People = []Person{}
	}
	c.sampleRates(now)
	counts := c.opts.Tail.traffic()
	clientOf := c.labels.byShort()
	names := map[string]string{}
	for _, cl := range st.Clients {
		names[cl.ID] = cl.Name
	}
	for i := range st.Destinations {
		d := &st.Destinations[i]
		for j := range d.Sessions {
			s := &d.Sessions[j]
			if id, ok := clientOf[s.Principal]; ok {
				s.OAuthClient, s.OAuthClientName = id, names[id]
			}
		}
		t := counts[d.Name]
		d.Calls, d.Errors = t.calls, t.errors
		r := c.rates[d.Name]
		d.CallsPerS, d.ErrorsPerS = r[0], r[1]
	}
	body, err := json.Marshal(st)
	if err != nil {
		body = []byte(`{}`)
	}
	c.snap, c.snapAt = body, now
	return body
}

// sampleRates updates the rates once at least a second has passed since
// the last sample. c.mu must be held.
func (c *Console) sampleRates(now time.Time) {
	if !c.prevAt.IsZero() && now.Sub(c.prevAt) < time.Second {
		return
	}
	counts := c.opts.Tail.traffic()
	if el := now.Sub(c.prevAt).Seconds(); !c.prevAt.IsZero() && el < 10 {
		c.rates = map[string][2]float64{}
		for d, t := range counts {
			p := c.prev[d]
			c.rates[d] = [2]float64{float64(t.calls-p.calls) / el, float64(t.errors-p.errors) / el}
		}
	} else {
		// The first sample, or the first for a while (nobody watched):
		// no rate until the next.
		c.rates = nil
	}
	c.prev, c.prevAt = counts, now
}

// Serves reports whether path (without a trailing slash) is under the
// console's: /console and what is under it. (The bridge gives a
// destination named "console" its endpoint routes first.)
func Serves(path string) bool {
	rest, ok := strings.CutPrefix(path, Path)
	return ok && (rest == "" || rest[0] == '/')
}

// maxLabels bounds the principals whose OAuth client is remembered (past
// it an arbitrary one is forgotten: a label is for display only).
const maxLabels = 4096

// clientLabels remembers which OAuth client each principal's token named,
// so that a session's principal (a hash) can be shown with its client.
type clientLabels struct {
	// mu guards byPrincipal.
	mu          sync.RWMutex
	byPrincipal map[session.Principal]string
}

// NoteClient records that p's access token was issued to the OAuth client
// clientID (the bridge's auth layer calls it for each request an OAuth
// token admitted; a label for the operator, never used to route or
// admit).
func (c *Console) NoteClient(p session.Principal, clientID string) {
	if clientID == "" || p == (session.Principal{}) {
		return
	}
	label := truncateLabel(clientID)
	l := &c.labels
	l.mu.RLock()
	same := l.byPrincipal[p] == label
	l.mu.RUnlock()
	if same {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byPrincipal == nil {
		l.byPrincipal = map[session.Principal]string{}
	}
	if _, ok := l.byPrincipal[p]; !ok && len(l.byPrincipal) >= maxLabels {
		for k := range l.byPrincipal {
			delete(l.byPrincipal, k)
			break
		}
	}
	l.byPrincipal[p] = label
}

// byShort is the labels by the principals' short names (as sessions show
// them).
func (l *clientLabels) byShort() map[string]string {
	l.mu.RLock()
	defer l.mu.RUnlock()
	out := make(map[string]string, len(l.byPrincipal))
	for p, id := range l.byPrincipal {
		out[p.Short()] = id
	}
	return out
}

// truncateLabel caps a client id at 300 bytes (a metadata document's URL
// can be long; the page wraps it).
func truncateLabel(s string) string {
	if len(s) <= 300 {
		return s
	}
	return s[:300] + "…"
}
