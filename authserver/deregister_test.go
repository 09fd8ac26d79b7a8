package authserver

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// registered registers a client from remote; its id, and the RFC 7592
// registration_client_uri and registration_access_token.
func registered(t *testing.T, srv *Server) (id, uri, token string) {
	t.Helper()
	rec := serve(srv, httptest.NewRequest(http.MethodPost, PathRegister, strings.NewReader(`{"client_name":"App","redirect_uris":["https://app.example/cb"]}`)), "192.0.2.9:4000")
	var out struct {
		ID    string `json:"client_id"`
		URI   string `json:"registration_client_uri"`
		Token string `json:"registration_access_token"`
	}
	if rec.Code != http.StatusCreated || json.Unmarshal(rec.Body.Bytes(), &out) != nil || out.URI != "https://bridge.example"+PathRegister+"/"+out.ID || len(out.Token) < 40 {
		t.Fatalf("registration: %d %s", rec.Code, rec.Body)
	}
	return out.ID, out.URI, out.Token
}

func deleteClient(srv *Server, id, auth string) int {
	req := httptest.NewRequest(http.MethodDelete, PathRegister+"/"+id, nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	return serve(srv, req, "192.0.2.9:4000").Code
}

// TestDeregister: a client deletes its own registration with its
// registration access token (RFC 7592), and only it: another client's
// token, no token, a wrong one and an unknown id are all 401, alike; the
// bystander registrations stay. A client never approved is gone; an
// approved one is revoked (its tokens end), and listed as such.
func TestDeregister(t *testing.T) {
	srv := openTest(t, Options{Resources: notesOnly})
	a, _, tokA := registered(t, srv)
	b, _, tokB := registered(t, srv)
	for _, tc := range []struct{ id, auth string }{
		{a, ""}, {a, "Bearer " + tokB}, {a, "Bearer " + tokA + "x"}, {a, "Basic " + tokA}, {"dcr_nosuchclient", "Bearer " + tokA},
	} {
		if code := deleteClient(srv, tc.id, tc.auth); code != http.StatusUnauthorized {
			t.Errorf("DELETE %s with %q: %d; want 401", tc.id, tc.auth, code)
		}
	}
	if code := deleteClient(srv, a, "Bearer "+tokA); code != http.StatusNoContent {
		t.Fatalf("DELETE with its own token: %d", code)
	}
	if _, err := srv.store.client(a); !errors.Is(err, ErrUnknownClient) {
		t.Errorf("the deleted client is still stored: %v", err)
	}
	if code := deleteClient(srv, a, "Bearer "+tokA); code != http.StatusUnauthorized {
		t.Errorf("a second DELETE: %d; want 401", code)
	}
	if c, err := srv.store.client(b); err != nil || c.Revoked {
		t.Fatalf("the bystander client: %+v %v", c, err)
	}
	// An approved client that deletes itself: revoked, its refresh
	// token refused.
	code := approve(t, srv, b, testChallenge)
	st, tok := tokenForm(t, srv, url.Values{"grant_type": {"authorization_code"}, "client_id": {b}, "code": {code}, "code_verifier": {testVerifier}})
	if st != http.StatusOK || tok["refresh_token"] == nil {
		t.Fatalf("tokens: %d %v", st, tok)
	}
	if code := deleteClient(srv, b, "Bearer "+tokB); code != http.StatusNoContent {
		t.Fatalf("DELETE of the approved client: %d", code)
	}
	if c, err := srv.store.client(b); err != nil || !c.Revoked {
		t.Errorf("the approved client after its DELETE: %+v %v; want revoked", c, err)
	}
	if st, _ := tokenForm(t, srv, url.Values{"grant_type": {"refresh_token"}, "client_id": {b}, "refresh_token": {tok["refresh_token"].(string)}}); st == http.StatusOK {
		t.Error("its refresh token still works")
	}
	if rec := serve(srv, httptest.NewRequest(http.MethodGet, PathRegister+"/"+b, nil), "192.0.2.9:4000"); rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET of a registration: %d; want 405", rec.Code)
	}
}
