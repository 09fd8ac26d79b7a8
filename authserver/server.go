package authserver

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/stelae-bridge/stelae-bridge/oauth"
)

// Options configure the server.
type Options struct {
	// Passphrase is what the operator types on the approval page.
	Passphrase string
	// AccessTTL is an access token's life (default 1 hour); RefreshTTL a
	// refresh token's (default 30 days); KeyRotation how old the signing
	// key may get before a new one signs (default 30 days).
	AccessTTL, RefreshTTL, KeyRotation time.Duration
	// MaxClients caps the clients registered by DCR and not revoked
	// (default 1000; never-approved ones go after a day);
	// RegistrationsPerMinute limits registrations from one address (an
	// IPv6 address by its /64; default 20).
	MaxClients             int
	RegistrationsPerMinute int
	// Clients are pre-registered clients.
	Clients []Client
	// Resources reports whether a resource URL (RFC 8707) is one of the
	// bridge's endpoints, for the issuer base the request came in under.
	Resources func(base, resource string) (destination string, ok bool)
	// CIMDTransportForTests replaces the guarded transport that fetches
	// client metadata documents. Only tests set it; no flag or file can.
	CIMDTransportForTests http.RoundTripper
	// Logger is the server's logger.
	Logger hclog.Logger
}

func (o *Options) setDefaults() {
	if o.AccessTTL <= 0 {
		o.AccessTTL = time.Hour
	}
	if o.RefreshTTL <= 0 {
		o.RefreshTTL = 30 * 24 * time.Hour
	}
	if o.KeyRotation <= 0 {
		o.KeyRotation = 30 * 24 * time.Hour
	}
	if o.MaxClients <= 0 {
		o.MaxClients = 1000
	}
	if o.RegistrationsPerMinute <= 0 {
		o.RegistrationsPerMinute = 20
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.Resources == nil {
		o.Resources = func(string, string) (string, bool) { return "", false }
	}
}

// Server is the built-in OAuth 2.1 authorization server.
type Server struct {
	opts  Options
	log   hclog.Logger
	store *Store
	keys  *keyRing
	cimd  *cimdFetcher
	// passHash is the passphrase's SHA-256, compared in constant time.
	passHash      [32]byte
	registrations addrLimit
	guesses       *guesses
	userGuesses   *userGuesses
	unlock        unlockCode
	// users are the invited users as the checks of each request need
	// them (users.go).
	users users
	// creds is the bridge's side of the credentials page
	// (SetCredentials), credSignIns the page's sign-ins (credentials.go).
	creds       atomic.Pointer[credentialsBox]
	credSignIns credSignIns
	// now is the clock of users' invites and sign-ins (time.Now; tests
	// set it before the server serves).
	now func() time.Time
	// verified remembers access tokens already checked.
	verified oauth.TokenCache
	// revMu guards revoked, the clients revoked, revokedFams, the
	// refresh-token families revoked (as in the store), and onRevoked,
	// OnClientRevoked's functions.
	revMu       sync.RWMutex
	revoked     map[string]bool
	revokedFams map[string]bool
	onRevoked   []func(clientID string, subjects []string)
}

// Open opens the server's state at path (created if needed).
func Open(path string, opts Options) (*Server, error) {
	opts.setDefaults()
	if len(opts.Passphrase) < 8 {
		return nil, errors.New("the built-in authorization server needs a passphrase of at least 8 characters (STELAE_OAUTH_PASSPHRASE or -oauth-passphrase-file)")
	}
	store, err := OpenStore(path)
	if err != nil {
		return nil, err
	}
	keys, err := store.loadKeys(opts.KeyRotation)
	if err != nil {
		store.Close()
		return nil, err
	}
	srv := &Server{opts: opts, log: opts.Logger, store: store, keys: keys, passHash: sha256.Sum256([]byte(opts.Passphrase)), guesses: newGuesses(), userGuesses: newUserGuesses(), now: time.Now, revoked: map[string]bool{}, revokedFams: map[string]bool{}}
	clients, err := store.Clients()
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("reading the clients: %w", err)
	}
	for _, c := range clients {
		if c.Revoked {
			srv.revoked[c.ID] = true
		}
	}
	if err := store.revokedFamilies(func(id string) { srv.revokedFams[id] = true }); err != nil {
		store.Close()
		return nil, fmt.Errorf("reading the refresh-token families: %w", err)
	}
	if err := srv.loadUsers(); err != nil {
		store.Close()
		return nil, fmt.Errorf("reading the users: %w", err)
	}
	srv.cimd = newCIMDFetcher(store, opts.CIMDTransportForTests, opts.Logger.Named("cimd"))
	srv.registrations = addrLimit{per: time.Minute, max: opts.RegistrationsPerMinute}
	return srv, nil
}

// SetResources sets Options.Resources; the bridge calls it once, before it
// serves.
func (srv *Server) SetResources(f func(base, resource string) (string, bool)) { srv.opts.Resources = f }

// RevokeClient ends a client's access at once: its refresh tokens stop
// working and its access tokens are refused from now on.
//
// Then OnClientRevoked's functions are called with the subjects its
// tokens spoke for (the bridge stops those users' children).
func (srv *Server) RevokeClient(id string) error {
	subjects, err := srv.store.revokeClient(id)
	if err != nil {
		return err
	}
	srv.revMu.Lock()
	srv.revoked[id] = true
	fs := slices.Clone(srv.onRevoked)
	srv.revMu.Unlock()
	srv.log.Info("client revoked", "client_id", id, "users", len(subjects))
	for _, f := range fs {
		f(id, subjects)
	}
	return nil
}

// OnClientRevoked registers f, called after a client was revoked (its
// tokens are refused by then) with its id and the subjects its tokens
// spoke for, on the goroutine that revoked it; it should not block long.
func (srv *Server) OnClientRevoked(f func(clientID string, subjects []string)) {
	srv.revMu.Lock()
	defer srv.revMu.Unlock()
	srv.onRevoked = append(srv.onRevoked, f)
}

// familyRevoked notes that a refresh-token family was revoked: the access
// tokens issued from it are refused from now on (RFC 9700 §4.14.2).
func (srv *Server) familyRevoked(id string) {
	srv.revMu.Lock()
	srv.revokedFams[id] = true
	srv.revMu.Unlock()
}

func (srv *Server) isFamilyRevoked(id string) bool {
	srv.revMu.RLock()
	defer srv.revMu.RUnlock()
	return srv.revokedFams[id]
}

func (srv *Server) isRevoked(id string) bool {
	srv.revMu.RLock()
	defer srv.revMu.RUnlock()
	return srv.revoked[id]
}

// Close closes the server's state.
func (srv *Server) Close() error { return srv.store.Close() }

// Store is the server's state (for the auth subcommands).
func (srv *Server) Store() *Store { return srv.store }

// Paths the server answers under the bridge's base URL.
const (
	PathAuthorize = "/oauth/authorize"
	PathToken     = "/oauth/token"
	PathRegister  = "/oauth/register"
	PathRevoke    = "/oauth/revoke"
	PathJWKS      = "/oauth/jwks"
	PathInvite    = "/oauth/invite"
)

// baseKey carries the issuer base URL of a request in its context.
type baseKey struct{}

// WithBase returns ctx carrying the issuer base URL (the bridge's public
// URL for the request).
func WithBase(ctx context.Context, base string) context.Context {
	return context.WithValue(ctx, baseKey{}, base)
}

func baseOf(ctx context.Context) string {
	b, _ := ctx.Value(baseKey{}).(string)
	return b
}

// ServeHTTP serves the server's endpoints and metadata; the request's
// context must carry its base URL (WithBase).
func (srv *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch path := strings.TrimSuffix(r.URL.Path, "/"); {
	case path == PathAuthorize:
		srv.authorize(w, r)
	case path == PathToken:
		srv.token(w, r)
	case path == PathRegister:
		srv.register(w, r)
	case strings.HasPrefix(path, PathRegister+"/"):
		srv.deregister(w, r, strings.TrimPrefix(path, PathRegister+"/"))
	case path == PathRevoke:
		srv.revoke(w, r)
	case path == PathInvite:
		srv.invite(w, r)
	case path == PathCredentials, strings.HasPrefix(path, PathCredentials+"/"):
		srv.credentialsPage(w, r)
	case path == PathJWKS:
		w.Header().Set("Cache-Control", "public, max-age=300")
		writeJSON(w, http.StatusOK, srv.keys.keySet())
	case strings.HasPrefix(path, "/.well-known/oauth-authorization-server"), strings.HasPrefix(path, "/.well-known/openid-configuration"):
		srv.metadata(w, r)
	default:
		oauthError(w, http.StatusNotFound, "invalid_request", "no such endpoint")
	}
}

// metadata is RFC 8414's document (also served at the OIDC discovery path
// clients try).
func (srv *Server) metadata(w http.ResponseWriter, r *http.Request) {
	base := baseOf(r.Context())
	w.Header().Set("Cache-Control", "public, max-age=300")
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                         base,
		"authorization_endpoint":                         base + PathAuthorize,
		"token_endpoint":                                 base + PathToken,
		"registration_endpoint":                          base + PathRegister,
		"revocation_endpoint":                            base + PathRevoke,
		"jwks_uri":                                       base + PathJWKS,
		"response_types_supported":                       []string{"code"},
		"grant_types_supported":                          []string{"authorization_code", "refresh_token"},
		"code_challenge_methods_supported":               []string{"S256"},
		"token_endpoint_auth_methods_supported":          []string{"none"},
		"revocation_endpoint_auth_methods_supported":     []string{"none"},
		"client_id_metadata_document_supported":          true,
		"authorization_response_iss_parameter_supported": true,
		"scopes_supported":                               []string{"mcp"},
		"subject_types_supported":                        []string{"public"},
		"id_token_signing_alg_values_supported":          []string{"ES256"},
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if h.Get("Cache-Control") == "" {
		h.Set("Cache-Control", "no-store")
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// oauthError writes an OAuth error response (RFC 6749 §5.2).
func oauthError(w http.ResponseWriter, status int, code, desc string) {
	writeJSON(w, status, map[string]string{"error": code, "error_description": desc})
}

// addrLimit allows max events per window from each address (addrKey).
type addrLimit struct {
	per time.Duration
	max int
	// mu guards byKey.
	mu    sync.Mutex
	byKey windows
}

// window counts the events of one period from its start.
type window struct {
	start time.Time
	n     int
}

// windows are the current windows by key (an address). They hold at most
// addrLimitKeys keys: past that, windows that ended go first, then an
// arbitrary one (whose address may only be let through sooner).
type windows map[string]*window

const addrLimitKeys = 10000

// at is key's window at now: its own, a new one when it has none, renewed
// when its period per has passed.
func (ws windows) at(key string, now time.Time, per time.Duration) *window {
	w := ws[key]
	if w == nil {
		if len(ws) >= addrLimitKeys {
			for k, v := range ws {
				if now.Sub(v.start) >= per {
					delete(ws, k)
				}
			}
			for k := range ws {
				if len(ws) < addrLimitKeys {
					break
				}
				delete(ws, k)
			}
		}
		w = &window{start: now}
		ws[key] = w
	}
	if now.Sub(w.start) >= per {
		*w = window{start: now}
	}
	return w
}

func (l *addrLimit) allow(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byKey == nil {
		l.byKey = windows{}
	}
	w := l.byKey.at(key, time.Now(), l.per)
	w.n++
	return w.n <= l.max
}

// clientAddr is the request's remote address without the port.
func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// isLoopbackHost reports whether host names a loopback address.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}
