// Package testissuer is an OAuth 2.1 / OIDC issuer for the tests, built on
// go-jose: signing keys that can be rotated, RFC 8414 and OIDC discovery
// documents, a JWKS endpoint that can be taken down, and a token endpoint
// for the client_credentials grant that honours RFC 8707's resource
// parameter. It runs on loopback (httptest).
package testissuer

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/subtle"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Key is one signing key.
type Key struct {
	kid  string
	alg  jose.SignatureAlgorithm
	priv crypto.Signer
}

// Issuer is a running test issuer.
type Issuer struct {
	srv *httptest.Server
	// URL is the issuer URL (no trailing slash).
	URL string
	// ClientID and ClientSecret are the one confidential client the token
	// endpoint knows.
	ClientID, ClientSecret string
	// JWKSFetches counts requests for the key set.
	JWKSFetches atomic.Int64
	// Down makes the metadata and key endpoints answer 503.
	Down atomic.Bool

	// mu guards keys (published; the first signs), tokenScope and opaque.
	mu   sync.Mutex
	keys []*Key
	// opaque are the opaque access tokens handed out, by token.
	opaque map[string]Claims
	// Introspections counts introspection requests.
	Introspections atomic.Int64
	// TokenScope is the scope the token endpoint grants when none is asked.
	tokenScope string
}

// New starts an issuer with one RS256 key, "k1".
func New() *Issuer {
	i := &Issuer{ClientID: "test-client", ClientSecret: "test-secret", tokenScope: "mcp"}
	i.keys = []*Key{newKey("k1", jose.RS256)}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/oauth-authorization-server", i.metadata)
	mux.HandleFunc("/.well-known/openid-configuration", i.metadata)
	mux.HandleFunc("/jwks", i.jwks)
	mux.HandleFunc("/token", i.token)
	mux.HandleFunc("/introspect", i.introspect)
	i.srv = httptest.NewServer(mux)
	i.URL = i.srv.URL
	return i
}

// Close stops the issuer.
func (i *Issuer) Close() { i.srv.Close() }

func newKey(kid string, alg jose.SignatureAlgorithm) *Key {
	var priv crypto.Signer
	var err error
	switch alg {
	case jose.ES256:
		priv, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case jose.EdDSA:
		_, priv, err = ed25519.GenerateKey(rand.Reader)
	default:
		priv, err = rsa.GenerateKey(rand.Reader, 2048)
	}
	if err != nil {
		panic(err)
	}
	return &Key{kid: kid, alg: alg, priv: priv}
}

// Rotate makes a new key of alg the signing key; the old ones stay
// published unless dropOld.
func (i *Issuer) Rotate(kid string, alg jose.SignatureAlgorithm, dropOld bool) {
	k := newKey(kid, alg)
	i.mu.Lock()
	defer i.mu.Unlock()
	if dropOld {
		i.keys = nil
	}
	i.keys = append([]*Key{k}, i.keys...)
}

// Unpublished returns a key of alg that the issuer does not publish, to
// sign tokens the bridge must refuse.
func Unpublished(kid string, alg jose.SignatureAlgorithm) *Key { return newKey(kid, alg) }

// Claims are a token's claims; Token fills iss, iat and, when zero, exp.
type Claims struct {
	Subject   string
	Audience  []string
	Scope     string
	ClientID  string
	Issuer    string // default: the issuer's URL
	Expiry    time.Time
	NotBefore time.Time
	NoExpiry  bool
	// IssuedAt, when set, is the token's iat (and the base of its default
	// exp) instead of now: a test's clock, so that a refreshed token need
	// not wait for the next second.
	IssuedAt time.Time
}

// Token signs c with the current signing key.
func (i *Issuer) Token(c Claims) string {
	i.mu.Lock()
	k := i.keys[0]
	i.mu.Unlock()
	return i.TokenWith(k, c)
}

// TokenWith signs c with k.
func (i *Issuer) TokenWith(k *Key, c Claims) string {
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: k.alg, Key: jose.JSONWebKey{Key: k.priv, KeyID: k.kid}}, (&jose.SignerOptions{}).WithType("at+jwt"))
	if err != nil {
		panic(err)
	}
	return sign(signer, i.claims(c))
}

// TokenHS256WithPublicKey signs c with HMAC, using the signing key's public
// key (DER) as the secret: the algorithm-confusion attack.
func (i *Issuer) TokenHS256WithPublicKey(c Claims) string {
	i.mu.Lock()
	k := i.keys[0]
	i.mu.Unlock()
	der, err := x509.MarshalPKIXPublicKey(k.priv.Public())
	if err != nil {
		panic(err)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: der}, (&jose.SignerOptions{}).WithHeader("kid", k.kid))
	if err != nil {
		panic(err)
	}
	return sign(signer, i.claims(c))
}

// TokenAlgNone is c unsigned, with "alg":"none".
func (i *Issuer) TokenAlgNone(c Claims) string {
	i.mu.Lock()
	kid := i.keys[0].kid
	i.mu.Unlock()
	head, _ := json.Marshal(map[string]string{"alg": "none", "kid": kid, "typ": "at+jwt"})
	body, _ := json.Marshal(i.claims(c))
	enc := base64.RawURLEncoding.EncodeToString
	return enc(head) + "." + enc(body) + "."
}

func sign(signer jose.Signer, claims map[string]any) string {
	raw, err := jwt.Signed(signer).Claims(claims).Serialize()
	if err != nil {
		panic(err)
	}
	return raw
}

func (i *Issuer) claims(c Claims) map[string]any {
	now := time.Now()
	jti := fmt.Sprint(now.UnixNano())
	if !c.IssuedAt.IsZero() {
		now = c.IssuedAt
	}
	m := map[string]any{"iss": i.URL, "sub": c.Subject, "iat": now.Unix(), "jti": jti}
	if c.Issuer != "" {
		m["iss"] = c.Issuer
	}
	if len(c.Audience) > 0 {
		m["aud"] = c.Audience
	}
	if c.Scope != "" {
		m["scope"] = c.Scope
	}
	if c.ClientID != "" {
		m["client_id"] = c.ClientID
	}
	if !c.NoExpiry {
		exp := c.Expiry
		if exp.IsZero() {
			exp = now.Add(time.Hour)
		}
		m["exp"] = exp.Unix()
	}
	if !c.NotBefore.IsZero() {
		m["nbf"] = c.NotBefore.Unix()
		if c.NotBefore.After(now) {
			m["iat"] = c.NotBefore.Unix()
		}
	}
	return m
}

func (i *Issuer) metadata(w http.ResponseWriter, r *http.Request) {
	if i.Down.Load() {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	writeJSON(w, map[string]any{
		"issuer":                                i.URL,
		"jwks_uri":                              i.URL + "/jwks",
		"token_endpoint":                        i.URL + "/token",
		"introspection_endpoint":                i.URL + "/introspect",
		"authorization_endpoint":                i.URL + "/authorize",
		"response_types_supported":              []string{"code"},
		"grant_types_supported":                 []string{"client_credentials", "authorization_code"},
		"token_endpoint_auth_methods_supported": []string{"client_secret_basic", "client_secret_post"},
		"code_challenge_methods_supported":      []string{"S256"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{"RS256"},
		"scopes_supported":                      []string{"mcp", "admin"},
	})
}

func (i *Issuer) jwks(w http.ResponseWriter, r *http.Request) {
	i.JWKSFetches.Add(1)
	if i.Down.Load() {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	i.mu.Lock()
	set := jose.JSONWebKeySet{}
	for _, k := range i.keys {
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: k.priv.Public(), KeyID: k.kid, Algorithm: string(k.alg), Use: "sig"})
	}
	i.mu.Unlock()
	writeJSON(w, set)
}

// token serves the client_credentials grant for the one client: the token's
// audience is the resource parameter (RFC 8707), its subject the client.
func (i *Issuer) token(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.ParseForm() != nil {
		http.Error(w, "POST a form", http.StatusBadRequest)
		return
	}
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	if subtle.ConstantTimeCompare([]byte(id), []byte(i.ClientID)) != 1 || subtle.ConstantTimeCompare([]byte(secret), []byte(i.ClientSecret)) != 1 {
		w.WriteHeader(http.StatusUnauthorized)
		writeJSON(w, map[string]string{"error": "invalid_client"})
		return
	}
	if g := r.PostForm.Get("grant_type"); g != "client_credentials" {
		w.WriteHeader(http.StatusBadRequest)
		writeJSON(w, map[string]string{"error": "unsupported_grant_type", "error_description": g})
		return
	}
	scope := r.PostForm.Get("scope")
	if scope == "" {
		i.mu.Lock()
		scope = i.tokenScope
		i.mu.Unlock()
	}
	var aud []string
	for _, res := range r.PostForm["resource"] {
		aud = append(aud, strings.TrimSpace(res))
	}
	tok := i.Token(Claims{Subject: "client:" + id, Audience: aud, Scope: scope, ClientID: id})
	writeJSON(w, map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": 3600, "scope": scope})
}

// OpaqueToken hands out an opaque access token for c, known only to the
// introspection endpoint.
func (i *Issuer) OpaqueToken(c Claims) string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	tok := "opaque-" + base64.RawURLEncoding.EncodeToString(b)
	if c.Expiry.IsZero() && !c.NoExpiry {
		c.Expiry = time.Now().Add(time.Hour)
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.opaque == nil {
		i.opaque = map[string]Claims{}
	}
	i.opaque[tok] = c
	return tok
}

// Revoke makes an opaque token inactive.
func (i *Issuer) Revoke(tok string) {
	i.mu.Lock()
	defer i.mu.Unlock()
	delete(i.opaque, tok)
}

// introspect answers RFC 7662 requests from the one client.
func (i *Issuer) introspect(w http.ResponseWriter, r *http.Request) {
	i.Introspections.Add(1)
	id, secret, ok := r.BasicAuth()
	if !ok || subtle.ConstantTimeCompare([]byte(id), []byte(i.ClientID)) != 1 || subtle.ConstantTimeCompare([]byte(secret), []byte(i.ClientSecret)) != 1 {
		w.WriteHeader(http.StatusUnauthorized)
		writeJSON(w, map[string]string{"error": "invalid_client"})
		return
	}
	if r.ParseForm() != nil {
		http.Error(w, "POST a form", http.StatusBadRequest)
		return
	}
	i.mu.Lock()
	c, ok := i.opaque[r.PostForm.Get("token")]
	i.mu.Unlock()
	if !ok || (!c.Expiry.IsZero() && time.Now().After(c.Expiry)) {
		writeJSON(w, map[string]any{"active": false})
		return
	}
	out := map[string]any{"active": true, "iss": i.URL, "sub": c.Subject, "aud": c.Audience, "scope": c.Scope, "client_id": c.ClientID, "token_type": "Bearer"}
	if !c.Expiry.IsZero() {
		out["exp"] = c.Expiry.Unix()
	}
	writeJSON(w, out)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(v)
}
