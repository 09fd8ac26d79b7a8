package oauth

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/stelae-bridge/stelae-bridge/config"
	"github.com/stelae-bridge/stelae-bridge/tests/testissuer"
)

const resource = "https://mcp.example.com/notes/mcp"

func newPolicy(t *testing.T, iss *testissuer.Issuer, auth config.Auth, opts IssuerOptions) *Policy {
	t.Helper()
	auth.Issuer = iss.URL
	return &Policy{Verifier: NewRemoteIssuer(iss.URL, opts), Auth: &auth}
}

func TestValidationMatrix(t *testing.T) {
	iss := testissuer.New()
	defer iss.Close()
	p := newPolicy(t, iss, config.Auth{Scopes: []string{"mcp"}, Audiences: []string{"api://extra"}, AllowSubjects: []string{"user-*"}}, IssuerOptions{Skew: 30 * time.Second})
	good := testissuer.Claims{Subject: "user-1", Audience: []string{resource}, Scope: "mcp other", ClientID: "chatgpt"}
	with := func(f func(*testissuer.Claims)) testissuer.Claims {
		c := good
		f(&c)
		return c
	}
	other := testissuer.New()
	defer other.Close()
	for _, tc := range []struct {
		name  string
		token string
		want  error  // nil: accepted
		words string // in the error
	}{
		{"valid", iss.Token(good), nil, ""},
		{"trailing slash on the audience", iss.Token(with(func(c *testissuer.Claims) { c.Audience = []string{resource + "/"} })), nil, ""},
		{"extra audience", iss.Token(with(func(c *testissuer.Claims) { c.Audience = []string{"api://extra"} })), nil, ""},
		{"within the skew", iss.Token(with(func(c *testissuer.Claims) { c.Expiry = time.Now().Add(-10 * time.Second) })), nil, ""},
		{"malformed", "not.a.jwt", ErrInvalidToken, "not a JWT"},
		{"garbage", "ey", ErrInvalidToken, "not a JWT"},
		{"alg none", iss.TokenAlgNone(good), ErrInvalidToken, "not a JWT"},
		{"HS256 with the public key", iss.TokenHS256WithPublicKey(good), ErrInvalidToken, "not a JWT"},
		{"bad signature", tamper(iss.Token(good)), ErrInvalidToken, "signature"},
		{"unpublished key", iss.TokenWith(testissuer.Unpublished("k1", jose.RS256), good), ErrInvalidToken, "signature"},
		{"unknown kid", iss.TokenWith(testissuer.Unpublished("nope", jose.RS256), good), ErrInvalidToken, "kid \"nope\""},
		{"another issuer's token", other.Token(good), ErrInvalidToken, ""},
		{"wrong iss claim", iss.Token(with(func(c *testissuer.Claims) { c.Issuer = "https://evil.example" })), ErrInvalidToken, "issued by"},
		{"expired", iss.Token(with(func(c *testissuer.Claims) { c.Expiry = time.Now().Add(-time.Hour) })), ErrInvalidToken, "expired"},
		{"not yet valid", iss.Token(with(func(c *testissuer.Claims) { c.NotBefore = time.Now().Add(time.Hour) })), ErrInvalidToken, "not valid yet"},
		{"no exp", iss.Token(with(func(c *testissuer.Claims) { c.NoExpiry = true })), ErrInvalidToken, "no expiry"},
		{"wrong audience", iss.Token(with(func(c *testissuer.Claims) { c.Audience = []string{"https://mcp.example.com/files/mcp"} })), ErrInvalidToken, "files/mcp"},
		{"no audience", iss.Token(with(func(c *testissuer.Claims) { c.Audience = nil })), ErrInvalidToken, "no audience"},
		{"missing scope", iss.Token(with(func(c *testissuer.Claims) { c.Scope = "other" })), ErrInsufficientScope, "scope mcp"},
		{"subject not allowed", iss.Token(with(func(c *testissuer.Claims) { c.Subject = "admin" })), ErrForbidden, "admin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := p.Check(context.Background(), tc.token, []string{resource})
			if tc.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if c.Subject == "" || c.ClientID != "chatgpt" || c.Issuer != iss.URL {
					t.Errorf("claims %+v", c)
				}
				return
			}
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.words) {
				t.Fatalf("error %v; want %v mentioning %q", err, tc.want, tc.words)
			}
			if strings.Contains(err.Error(), tc.token) {
				t.Error("the error repeats the token")
			}
		})
	}
}

// tamper flips a byte of the signature.
func tamper(tok string) string {
	b := []byte(tok)
	i := len(b) - 5
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	return string(b)
}

func TestAlgorithms(t *testing.T) {
	for _, alg := range []jose.SignatureAlgorithm{jose.RS256, jose.PS256, jose.ES256, jose.EdDSA} {
		t.Run(string(alg), func(t *testing.T) {
			iss := testissuer.New()
			defer iss.Close()
			iss.Rotate("k-"+string(alg), alg, true)
			p := newPolicy(t, iss, config.Auth{}, IssuerOptions{})
			if _, err := p.Check(context.Background(), iss.Token(testissuer.Claims{Subject: "s", Audience: []string{resource}}), []string{resource}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestKeyRotationAndRefetchLimit(t *testing.T) {
	iss := testissuer.New()
	defer iss.Close()
	p := newPolicy(t, iss, config.Auth{}, IssuerOptions{MinRefresh: time.Hour})
	claims := testissuer.Claims{Subject: "s", Audience: []string{resource}}
	check := func(tok string) error {
		_, err := p.Check(context.Background(), tok, []string{resource})
		return err
	}
	if err := check(iss.Token(claims)); err != nil {
		t.Fatal(err)
	}
	if n := iss.JWKSFetches.Load(); n != 1 {
		t.Fatalf("%d key fetches, want 1", n)
	}
	// The issuer rotates: a token signed with the new key makes the bridge
	// fetch the keys once more, and it is accepted.
	iss.Rotate("k2", jose.ES256, false)
	if err := check(iss.Token(claims)); err != nil {
		t.Fatalf("token of the rotated key: %v", err)
	}
	if n := iss.JWKSFetches.Load(); n != 2 {
		t.Fatalf("%d key fetches after rotation, want 2", n)
	}
	// A flood of unknown kids does not hammer the issuer (MinRefresh).
	for i := 0; i < 50; i++ {
		if err := check(iss.TokenWith(testissuer.Unpublished("flood", jose.RS256), claims)); !errors.Is(err, ErrInvalidToken) {
			t.Fatalf("unknown kid: %v", err)
		}
	}
	if n := iss.JWKSFetches.Load(); n != 2 {
		t.Fatalf("%d key fetches after 50 unknown kids within MinRefresh, want still 2", n)
	}
}

func TestIssuerDown(t *testing.T) {
	iss := testissuer.New()
	defer iss.Close()
	iss.Down.Store(true)
	p := newPolicy(t, iss, config.Auth{}, IssuerOptions{MinRefresh: time.Hour})
	tok := iss.Token(testissuer.Claims{Subject: "s", Audience: []string{resource}})
	for i := 0; i < 20; i++ {
		_, err := p.Check(context.Background(), tok, []string{resource})
		if !errors.Is(err, ErrUnavailable) || Status(err) != 503 || !strings.Contains(err.Error(), iss.URL) {
			t.Fatalf("issuer down: %v (status %d)", err, Status(err))
		}
	}
	if n := iss.JWKSFetches.Load(); n != 0 {
		t.Errorf("%d key fetches while the metadata is down, want 0", n)
	}
	// Keys fetched before keep working while the issuer is down.
	iss2 := testissuer.New()
	defer iss2.Close()
	p2 := newPolicy(t, iss2, config.Auth{}, IssuerOptions{KeysTTL: time.Millisecond, MinRefresh: time.Hour})
	tok2 := iss2.Token(testissuer.Claims{Subject: "s", Audience: []string{resource}})
	if _, err := p2.Check(context.Background(), tok2, []string{resource}); err != nil {
		t.Fatal(err)
	}
	iss2.Down.Store(true)
	time.Sleep(2 * time.Millisecond) // the keys are stale now (KeysTTL 1 ms)
	if _, err := p2.Check(context.Background(), tok2, []string{resource}); err != nil {
		t.Fatalf("stale keys not used while the issuer is down: %v", err)
	}
}

func TestIssuerMismatch(t *testing.T) {
	iss := testissuer.New()
	defer iss.Close()
	// Configured with a trailing slash the metadata does not have.
	p := &Policy{Verifier: NewRemoteIssuer(iss.URL+"/", IssuerOptions{}), Auth: &config.Auth{}}
	_, err := p.Check(context.Background(), iss.Token(testissuer.Claims{Subject: "s", Audience: []string{resource}}), []string{resource})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "must match exactly") {
		t.Fatalf("issuer mismatch: %v", err)
	}
}

func TestChallenge(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{nil, `Bearer resource_metadata="https://h/.well-known/oauth-protected-resource/a/mcp", scope="mcp files"`},
		{errors.Join(ErrInvalidToken, errors.New(`bad "x"`)), `error="invalid_token", error_description="invalid access token` + "\n" + `bad 'x'"`},
		{ErrInsufficientScope, `error="insufficient_scope"`},
	} {
		got := Challenge("https://h/.well-known/oauth-protected-resource/a/mcp", []string{"mcp", "files"}, tc.err)
		want := strings.ReplaceAll(tc.want, "\n", "?")
		if !strings.Contains(got, want) {
			t.Errorf("Challenge(%v) = %s; want %s", tc.err, got, want)
		}
	}
	if c := Challenge("u", nil, ErrForbidden); strings.Contains(c, "error=") || strings.Contains(c, "scope=") {
		t.Errorf("forbidden challenge %s", c)
	}
}

func TestPrincipal(t *testing.T) {
	a := Claims{Issuer: "i", Subject: "s", ClientID: "c"}
	b := a
	b.Expiry = time.Now() // a refreshed token
	if a.Principal() != b.Principal() {
		t.Error("a refreshed token must keep the principal")
	}
	for _, o := range []Claims{{Issuer: "i2", Subject: "s", ClientID: "c"}, {Issuer: "i", Subject: "s2", ClientID: "c"}, {Issuer: "i", Subject: "s", ClientID: "c2"}, {Issuer: "i", Subject: "s\x00c"}} {
		if o.Principal() == a.Principal() {
			t.Errorf("%+v has a's principal", o)
		}
	}
}

// TestVerifiedTokensAreRemembered: a token is checked once, then served
// from the cache until it expires; the cache never outlives the token.
func TestVerifiedTokensAreRemembered(t *testing.T) {
	iss := testissuer.New()
	defer iss.Close()
	r := NewRemoteIssuer(iss.URL, IssuerOptions{Skew: time.Millisecond})
	tok := iss.Token(testissuer.Claims{Subject: "s", Audience: []string{resource}, Expiry: time.Now().Add(2 * time.Second)})
	c1, err := r.Verify(context.Background(), tok)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := r.Verify(context.Background(), tok)
	if err != nil || c2 != c1 {
		t.Fatalf("second check: %v (same claims: %v)", err, c2 == c1)
	}
	// Expired (JWT exp has second precision): refused, not served from the
	// cache.
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := r.Verify(context.Background(), tok)
		if errors.Is(err, ErrInvalidToken) && strings.Contains(err.Error(), "expired") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("token still accepted 10s after it expired: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func BenchmarkVerify(b *testing.B) {
	iss := testissuer.New()
	defer iss.Close()
	p := &Policy{Verifier: NewRemoteIssuer(iss.URL, IssuerOptions{}), Auth: &config.Auth{Scopes: []string{"mcp"}}}
	tok := iss.Token(testissuer.Claims{Subject: "s", Audience: []string{resource}, Scope: "mcp"})
	res := []string{resource}
	if _, err := p.Check(context.Background(), tok, res); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := p.Check(context.Background(), tok, res); err != nil {
			b.Fatal(err)
		}
	}
}

func TestIntrospection(t *testing.T) {
	iss := testissuer.New()
	defer iss.Close()
	auth := &config.Auth{Issuer: iss.URL, Scopes: []string{"mcp"}}
	p := &Policy{Verifier: NewRemoteIssuer(iss.URL, IssuerOptions{IntrospectionClientID: iss.ClientID, IntrospectionSecret: iss.ClientSecret}), Auth: auth}
	good := testissuer.Claims{Subject: "alice", Audience: []string{resource}, Scope: "mcp", ClientID: "app"}
	tok := iss.OpaqueToken(good)
	c, err := p.Check(context.Background(), tok, []string{resource})
	if err != nil || c.Subject != "alice" || c.ClientID != "app" {
		t.Fatalf("active opaque token: %+v %v", c, err)
	}
	// Remembered: no second introspection.
	if _, err := p.Check(context.Background(), tok, []string{resource}); err != nil || iss.Introspections.Load() != 1 {
		t.Fatalf("second check: %v, %d introspections", err, iss.Introspections.Load())
	}
	for name, tc := range map[string]struct {
		tok  string
		want error
	}{
		"unknown":        {"opaque-nope", ErrInvalidToken},
		"wrong audience": {iss.OpaqueToken(testissuer.Claims{Subject: "a", Audience: []string{"https://elsewhere/mcp"}, Scope: "mcp"}), ErrInvalidToken},
		"expired":        {iss.OpaqueToken(testissuer.Claims{Subject: "a", Audience: []string{resource}, Scope: "mcp", Expiry: time.Now().Add(-time.Hour)}), ErrInvalidToken},
		"missing scope":  {iss.OpaqueToken(testissuer.Claims{Subject: "a", Audience: []string{resource}}), ErrInsufficientScope},
	} {
		if _, err := p.Check(context.Background(), tc.tok, []string{resource}); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
	// Wrong credentials are the operator's problem: 503, not the client's.
	bad := &Policy{Verifier: NewRemoteIssuer(iss.URL, IssuerOptions{IntrospectionClientID: iss.ClientID, IntrospectionSecret: "wrong"}), Auth: auth}
	if _, err := bad.Check(context.Background(), iss.OpaqueToken(good), []string{resource}); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "introspection credentials") {
		t.Errorf("wrong introspection secret: %v", err)
	}
	// Without credentials an opaque token is refused, saying why.
	plain := &Policy{Verifier: NewRemoteIssuer(iss.URL, IssuerOptions{}), Auth: auth}
	if _, err := plain.Check(context.Background(), iss.OpaqueToken(good), []string{resource}); !errors.Is(err, ErrInvalidToken) {
		t.Errorf("opaque token without introspection: %v", err)
	}
}
