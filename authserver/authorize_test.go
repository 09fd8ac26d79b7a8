package authserver

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// serve runs one request against srv from remote, under the base URL.
func serve(srv *Server, req *http.Request, remote string) *httptest.ResponseRecorder {
	req.RemoteAddr = remote
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, req.WithContext(WithBase(context.Background(), "https://bridge.example")))
	return rec
}

// postForm posts form to path from remote, with cookies.
func postForm(srv *Server, path, remote string, form url.Values, cookies ...*http.Cookie) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for _, c := range cookies {
		req.AddCookie(c)
	}
	return serve(srv, req, remote)
}

// registerFrom registers a client from remote; it returns the status and
// the client id.
func registerFrom(srv *Server, remote string) (int, string) {
	req := httptest.NewRequest(http.MethodPost, PathRegister, strings.NewReader(`{"client_name":"App","redirect_uris":["https://app.example/cb"]}`))
	rec := serve(srv, req, remote)
	var out struct {
		ClientID string `json:"client_id"`
	}
	_ = json.Unmarshal(rec.Body.Bytes(), &out)
	return rec.Code, out.ClientID
}

// approve approves client id's authorization request for the notes
// destination with challenge, returning the code.
func approve(t *testing.T, srv *Server, id, challenge string) string {
	t.Helper()
	q := url.Values{"response_type": {"code"}, "client_id": {id}, "redirect_uri": {"https://app.example/cb"}, "state": {"s"},
		"code_challenge": {challenge}, "code_challenge_method": {"S256"}, "resource": {"https://bridge.example/notes/mcp"}}
	form := url.Values{"query": {q.Encode()}, "csrf": {"csrf-1"}, "passphrase": {"a long enough passphrase"}, "decision": {"approve"}}
	rec := postForm(srv, PathAuthorize, "127.0.0.1:4000", form, &http.Cookie{Name: csrfCookie, Value: "csrf-1"})
	loc, _ := url.Parse(rec.Header().Get("Location"))
	if rec.Code != http.StatusFound || loc.Query().Get("code") == "" {
		t.Fatalf("approval: %d %s", rec.Code, rec.Body)
	}
	return loc.Query().Get("code")
}

// tokenForm posts to the token endpoint.
func tokenForm(t *testing.T, srv *Server, form url.Values) (int, map[string]any) {
	t.Helper()
	rec := postForm(srv, PathToken, "127.0.0.1:4000", form)
	var out map[string]any
	_ = json.Unmarshal(rec.Body.Bytes(), &out)
	return rec.Code, out
}

// TestUnapprovedClientErrorsShownOnThePage: the authorization endpoint is
// no open redirector: a self-registered client the operator never approved
// gets its errors on the page; once approved, redirected (RFC 6749
// §4.1.2.1).
func TestUnapprovedClientErrorsShownOnThePage(t *testing.T) {
	srv := openTest(t, Options{Resources: notesOnly})
	_, id := registerFrom(srv, "192.0.2.1:4000")
	bad := url.Values{"response_type": {"token"}, "client_id": {id}, "redirect_uri": {"https://app.example/cb"}, "state": {"s"}}
	rec := serve(srv, httptest.NewRequest(http.MethodGet, PathAuthorize+"?"+bad.Encode(), nil), "192.0.2.1:4000")
	if rec.Code != http.StatusBadRequest || rec.Header().Get("Location") != "" || !strings.Contains(rec.Body.String(), "response_type") {
		t.Errorf("an error for a client never approved: %d, Location %q; want 400 on the page", rec.Code, rec.Header().Get("Location"))
	}
	approve(t, srv, id, strings.Repeat("c", 43))
	rec = serve(srv, httptest.NewRequest(http.MethodGet, PathAuthorize+"?"+bad.Encode(), nil), "192.0.2.1:4000")
	if loc, _ := url.Parse(rec.Header().Get("Location")); rec.Code != http.StatusFound || loc.Query().Get("error") != "unsupported_response_type" {
		t.Errorf("an error for an approved client: %d %q, want a redirect with error=", rec.Code, rec.Header().Get("Location"))
	}
}
