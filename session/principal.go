package session

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"net/http"
	"sync"
)

// Principal identifies who a request is from, as the bridge's auth layer
// established it (PrincipalKey: a keyed hash of a bearer token, or of the
// identity an OAuth token vouches for); zero when auth is off. A session is
// bound to the principal that created it: another principal using its id
// is told it does not exist (404).
type Principal [32]byte

// Short names p for the operator (the console, /healthz?verbose): the
// first four bytes of its hash, or "anonymous" for the zero principal. It
// reveals nothing of the token.
func (p Principal) Short() string {
	if p == (Principal{}) {
		return "anonymous"
	}
	return "u:" + hex.EncodeToString(p[:4])
}

// PrincipalKeySize is the length of a principal key.
const PrincipalKeySize = 32

// PrincipalKey makes principals: HMAC-SHA256 under the install's key (32
// random bytes, principal.key in the state directory), so that what the
// bridge keeps or shows of a principal — the owners in sessions.db, the
// first bytes in the console and /healthz — lets no one test a guessed
// token offline without the key (issue 34: principals were the unsalted
// SHA-256 of tokens). The same token is the same principal on every start
// of one install, and another on any other install. The key is never
// logged, and never reaches a child (it travels in bridge.Options, not in
// the environment children start from).
type PrincipalKey struct {
	key []byte
	// macs are HMACs under key, ready to Reset and reuse (a principal is
	// made for every authenticated request).
	macs sync.Pool
}

// NewPrincipalKey is the PrincipalKey of key (PrincipalKeySize bytes).
func NewPrincipalKey(key []byte) (*PrincipalKey, error) {
	if len(key) != PrincipalKeySize {
		return nil, errors.New("a principal key is 32 bytes")
	}
	k := &PrincipalKey{key: append([]byte(nil), key...)}
	k.macs.New = func() any { return hmac.New(sha256.New, k.key) }
	return k, nil
}

// RandomPrincipalKey is a key of this process alone, for a bridge without
// a state directory's key. Its principals change with every start; that
// costs nothing where no session outlives the process (no Store), but the
// sessions a Store kept are restored with owners no request matches, so
// their clients get 404 and initialize again.
func RandomPrincipalKey() *PrincipalKey {
	key := make([]byte, PrincipalKeySize)
	if _, err := rand.Read(key); err != nil {
		panic(err) // crypto/rand does not fail (Go 1.24)
	}
	k, _ := NewPrincipalKey(key)
	return k
}

// Token is the principal of a static bearer token.
func (k *PrincipalKey) Token(token string) Principal { return k.of("token", token) }

// Identity is the principal of an identity an authorization server vouches
// for: digest is oauth.Claims.Principal (issuer, subject and client).
func (k *PrincipalKey) Identity(digest [32]byte) Principal { return k.of("oauth", string(digest[:])) }

// UserKey is the key of the person an authorization server vouches for
// (issuer and subject: one person across their clients and token
// refreshes), for User.Key: keyed like a principal, so it reveals neither.
func (k *PrincipalKey) UserKey(issuer, subject string) string {
	p := k.of("user", issuer+"\x00"+subject)
	return "o:" + hex.EncodeToString(p[:12])
}

// ID names the key without revealing it (16 hex digits): sessions.db
// records which key its owners were made with (BoltStore.UsePrincipalKey).
func (k *PrincipalKey) ID() string {
	p := k.of("key-id", "")
	return hex.EncodeToString(p[:8])
}

func (k *PrincipalKey) of(kind, v string) Principal {
	m := k.macs.Get().(hash.Hash)
	m.Reset()
	m.Write([]byte(kind))
	m.Write([]byte{0})
	m.Write([]byte(v))
	var p Principal
	m.Sum(p[:0])
	k.macs.Put(m)
	return p
}

type principalCtxKey struct{}

// identity is what the auth layer established of a request, carried in
// its context as one value (one allocation per request).
type identity struct {
	p Principal
	u User
}

// WithPrincipal returns ctx carrying p (and no user).
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalCtxKey{}, &identity{p: p})
}

// WithIdentity returns ctx carrying principal p and user u.
func WithIdentity(ctx context.Context, p Principal, u User) context.Context {
	return context.WithValue(ctx, principalCtxKey{}, &identity{p: p, u: u})
}

// PrincipalFrom is the principal r carries (zero for none).
func PrincipalFrom(r *http.Request) Principal {
	if id, _ := r.Context().Value(principalCtxKey{}).(*identity); id != nil {
		return id.p
	}
	return Principal{}
}

// UserFrom is the user r carries (zero for none: auth off, or a request
// the auth layer let in without a credential).
func UserFrom(r *http.Request) User {
	if id, _ := r.Context().Value(principalCtxKey{}).(*identity); id != nil {
		return id.u
	}
	return User{}
}
