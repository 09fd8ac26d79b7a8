package authserver

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestAccessTokensEndWithTheirFamily: RFC 9700 §4.14.2 — when a refresh
// token is reused (or revoked, RFC 7009) its family is revoked, and the
// access tokens issued from it are refused at once, as a revoked client's.
func TestAccessTokensEndWithTheirFamily(t *testing.T) {
	srv := openTest(t, Options{Resources: notesOnly, Clients: []Client{{ID: "app", RedirectURIs: []string{"https://app.example/cb"}}}})
	verifier := strings.Repeat("v", 43)
	sum := sha256.Sum256([]byte(verifier))
	grant := func() (string, string) {
		code := approve(t, srv, "app", base64.RawURLEncoding.EncodeToString(sum[:]))
		status, out := tokenForm(t, srv, url.Values{"grant_type": {"authorization_code"}, "client_id": {"app"}, "code": {code}, "code_verifier": {verifier}})
		if status != http.StatusOK {
			t.Fatalf("code exchange: %d %v", status, out)
		}
		return out["access_token"].(string), out["refresh_token"].(string)
	}
	ctx := WithBase(context.Background(), "https://bridge.example")
	v := srv.Verifier()

	// Reuse: the refresh token stolen and used twice.
	_, rt1 := grant()
	status, out := tokenForm(t, srv, url.Values{"grant_type": {"refresh_token"}, "client_id": {"app"}, "refresh_token": {rt1}})
	if status != http.StatusOK {
		t.Fatalf("refresh: %d %v", status, out)
	}
	at2 := out["access_token"].(string)
	if _, err := v.Verify(ctx, at2); err != nil {
		t.Fatalf("a fresh access token: %v", err)
	}
	if status, _ := tokenForm(t, srv, url.Values{"grant_type": {"refresh_token"}, "client_id": {"app"}, "refresh_token": {rt1}}); status != http.StatusBadRequest {
		t.Fatalf("reuse: %d", status)
	}
	if _, err := v.Verify(ctx, at2); err == nil {
		t.Errorf("an access token of a family revoked for reuse is still accepted")
	}

	// RFC 7009 revocation of the refresh token.
	at, rt := grant()
	other, _ := grant()
	postForm(srv, PathRevoke, "127.0.0.1:4000", url.Values{"token": {rt}})
	if _, err := v.Verify(ctx, at); err == nil {
		t.Errorf("an access token whose refresh token was revoked is still accepted")
	}
	if _, err := v.Verify(ctx, other); err != nil {
		t.Errorf("another grant's access token: %v", err)
	}
}
