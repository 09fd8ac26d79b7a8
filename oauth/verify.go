package oauth

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Errors of token validation; the bridge maps them to what it answers.
var (
	// ErrInvalidToken: the token is malformed, not signed by the issuer,
	// expired, or not for this resource (401, error="invalid_token").
	ErrInvalidToken = errors.New("invalid access token")
	// ErrInsufficientScope: the token lacks a required scope (403,
	// error="insufficient_scope").
	ErrInsufficientScope = errors.New("insufficient scope")
	// ErrForbidden: a valid token whose subject this destination does not
	// allow (403).
	ErrForbidden = errors.New("subject not allowed")
	// ErrUnavailable: the issuer's metadata or keys cannot be fetched, so
	// no token can be validated now (503, not 401: the client's token may
	// be fine).
	ErrUnavailable = errors.New("the authorization server cannot be reached")
)

// Algorithms are the signature algorithms accepted: never "none", never
// HMAC (a public key must not double as a shared secret).
var Algorithms = []jose.SignatureAlgorithm{jose.RS256, jose.PS256, jose.ES256, jose.EdDSA}

// Claims are what the bridge uses of a valid access token.
type Claims struct {
	Issuer   string
	Subject  string
	ClientID string
	Audience []string
	Scopes   []string
	Expiry   time.Time
	// Session is the token's sid claim, when it has one: the grant it was
	// issued under (the built-in server's refresh-token family).
	Session string
	// principal is Principal, computed once.
	principal *[32]byte
}

// Principal identifies who the token speaks for: issuer, subject and
// client, hashed. A refreshed token has the same principal, so a session
// survives it. It is an identity, not yet what the bridge keeps: the auth
// layer keys it with the install's key (session.PrincipalKey.Identity)
// before it names a session's owner, so that sessions.db and the console
// hold nothing a guessed issuer, subject and client can be tested against.
func (c *Claims) Principal() [32]byte {
	if c.principal != nil {
		return *c.principal
	}
	return sha256.Sum256([]byte(c.Issuer + "\x00" + c.Subject + "\x00" + c.ClientID))
}

// Verifier checks an access token's signature, issuer and lifetime. The
// remote issuer implements it; so can an issuer whose keys the bridge
// holds itself. Audience, scopes and subjects are the Policy's.
type Verifier interface {
	// Issuer is the issuer URL (for the protected-resource metadata).
	Issuer() string
	// Verify returns the token's claims, or an error wrapping
	// ErrInvalidToken or ErrUnavailable.
	Verify(ctx context.Context, raw string) (*Claims, error)
}

// IssuerFor is v's issuer URL for requests under base: a Verifier whose
// issuer is the bridge itself (IssuerFor(base string) string) is named by
// the bridge's URL; any other by Issuer.
func IssuerFor(v Verifier, base string) string {
	if b, ok := v.(interface{ IssuerFor(string) string }); ok {
		return b.IssuerFor(base)
	}
	return v.Issuer()
}

// extraClaims are the claims go-jose's jwt.Claims lacks.
type extraClaims struct {
	Scope    string          `json:"scope"`
	Scp      json.RawMessage `json:"scp"`
	ClientID string          `json:"client_id"`
	Azp      string          `json:"azp"`
	Sid      string          `json:"sid"`
}

// verifyWith checks raw against keys (fetching more through refetch when the
// token names an unknown key) and the claims against issuer and skew.
func verifyWith(raw, issuer string, skew time.Duration, keys *jose.JSONWebKeySet, refetch func() (*jose.JSONWebKeySet, bool)) (*Claims, error) {
	tok, err := jwt.ParseSigned(raw, Algorithms)
	if err != nil {
		return nil, fmt.Errorf("%w: not a JWT signed with RS256, PS256, ES256 or EdDSA (%v)", ErrInvalidToken, err)
	}
	if len(tok.Headers) != 1 {
		return nil, fmt.Errorf("%w: want exactly one signature", ErrInvalidToken)
	}
	h := tok.Headers[0]
	var std jwt.Claims
	var extra extraClaims
	verified := func(ks *jose.JSONWebKeySet) (bool, bool) {
		found := false
		for _, k := range candidates(ks, h.KeyID, h.Algorithm) {
			found = true
			if tok.Claims(k.Key, &std, &extra) == nil {
				return true, true
			}
		}
		return false, found
	}
	ok, found := verified(keys)
	if !ok && !found && refetch != nil {
		// A key the bridge has not seen: the issuer may have rotated.
		if fresh, fetched := refetch(); fetched {
			ok, found = verified(fresh)
		}
	}
	switch {
	case !ok && !found:
		return nil, fmt.Errorf("%w: signed with a key the issuer does not publish (kid %q, alg %s)", ErrInvalidToken, h.KeyID, h.Algorithm)
	case !ok:
		return nil, fmt.Errorf("%w: the signature does not verify with the issuer's key", ErrInvalidToken)
	}
	if err := std.ValidateWithLeeway(jwt.Expected{Issuer: issuer}, skew); err != nil {
		why := err.Error()
		switch {
		case errors.Is(err, jwt.ErrExpired):
			why = "it has expired"
		case errors.Is(err, jwt.ErrNotValidYet), errors.Is(err, jwt.ErrIssuedInTheFuture):
			why = "it is not valid yet"
		case errors.Is(err, jwt.ErrInvalidIssuer):
			why = fmt.Sprintf("it was issued by %q, not %q", std.Issuer, issuer)
		}
		return nil, fmt.Errorf("%w: %s", ErrInvalidToken, why)
	}
	if std.Expiry == nil {
		return nil, fmt.Errorf("%w: it has no expiry (exp)", ErrInvalidToken)
	}
	c := &Claims{Issuer: std.Issuer, Subject: std.Subject, Audience: std.Audience, Expiry: std.Expiry.Time(), ClientID: extra.ClientID, Session: extra.Sid}
	if c.ClientID == "" {
		c.ClientID = extra.Azp
	}
	c.Scopes = strings.Fields(extra.Scope)
	if len(extra.Scp) > 0 {
		var list []string
		if json.Unmarshal(extra.Scp, &list) != nil {
			var one string
			_ = json.Unmarshal(extra.Scp, &one)
			list = strings.Fields(one)
		}
		c.Scopes = append(c.Scopes, list...)
	}
	p := c.Principal()
	c.principal = &p
	return c, nil
}

// candidates are the public signing keys of ks that may have signed a token
// with header kid and alg: by kid when there is one, else every key of that
// algorithm's type. Symmetric and private keys are never used.
func candidates(ks *jose.JSONWebKeySet, kid, alg string) []jose.JSONWebKey {
	if ks == nil {
		return nil
	}
	var out []jose.JSONWebKey
	for _, k := range ks.Keys {
		if !k.IsPublic() || !k.Valid() || (k.Use != "" && k.Use != "sig") {
			continue
		}
		if kid != "" && k.KeyID != kid {
			continue
		}
		if k.Algorithm != "" && k.Algorithm != alg {
			continue
		}
		out = append(out, k)
	}
	return out
}

// Verify checks raw against the issuer's published keys. A token verified
// before is not checked again until it expires (or for 5 minutes at most).
func (r *RemoteIssuer) Verify(ctx context.Context, raw string) (*Claims, error) {
	now := time.Now()
	if c := r.verified.Get(raw, now); c != nil {
		return c, nil
	}
	var c *Claims
	if !looksLikeJWT(raw) && r.opts.IntrospectionClientID != "" {
		var err error
		if c, err = r.introspect(ctx, raw); err != nil {
			return nil, err
		}
	} else {
		keys, err := r.keySet(ctx)
		if err != nil {
			return nil, err
		}
		if c, err = verifyWith(raw, r.issuer, r.opts.Skew, keys, func() (*jose.JSONWebKeySet, bool) { return r.refreshForKey(ctx) }); err != nil {
			return nil, err
		}
	}
	r.verified.Put(raw, c, r.opts.Skew, now)
	return c, nil
}

// VerifyJWT checks raw against keys and the claims against issuer and skew,
// as a remote issuer's tokens are checked: for an issuer whose keys the
// bridge holds itself.
func VerifyJWT(raw, issuer string, skew time.Duration, keys *jose.JSONWebKeySet) (*Claims, error) {
	return verifyWith(raw, issuer, skew, keys, nil)
}
