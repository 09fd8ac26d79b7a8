package authserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

func openTest(t *testing.T, opts Options) *Server {
	t.Helper()
	opts.Passphrase = "a long enough passphrase"
	srv, err := Open(filepath.Join(t.TempDir(), "oauth.db"), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// TestCIMDRefusals: documents whose client_id is not their URL, that are
// too big, that redirect, or whose URL is not https are refused; and the
// production transport refuses loopback and private targets (SSRF).
func TestCIMDRefusals(t *testing.T) {
	var docURL string
	mux := http.NewServeMux()
	good := func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"client_id":%q,"client_name":"ok","redirect_uris":["https://app.example/cb"]}`, docURL+r.URL.Path)
	}
	mux.HandleFunc("/good.json", good)
	mux.HandleFunc("/mismatch.json", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"client_id":"https://other.example/x.json","redirect_uris":["https://app.example/cb"]}`)
	})
	mux.HandleFunc("/big.json", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"client_id":%q,"client_name":"%s","redirect_uris":["https://app.example/cb"]}`, docURL+r.URL.Path, strings.Repeat("x", cimdMaxBytes))
	})
	mux.HandleFunc("/redirect.json", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/good.json", http.StatusFound)
	})
	mux.HandleFunc("/http-redirect-uri.json", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"client_id":%q,"redirect_uris":["http://evil.example/cb"]}`, docURL+r.URL.Path)
	})
	ts := httptest.NewTLSServer(mux)
	defer ts.Close()
	docURL = ts.URL

	srv := openTest(t, Options{CIMDTransportForTests: ts.Client().Transport})
	ctx := context.Background()
	if c, err := srv.cimd.client(ctx, ts.URL+"/good.json"); err != nil || c.Name != "ok" || c.Source != SourceCIMD {
		t.Fatalf("good document: %+v %v", c, err)
	}
	for path, want := range map[string]string{
		"/mismatch.json":          "not its own URL",
		"/big.json":               "over",
		"/redirect.json":          "redirect",
		"/http-redirect-uri.json": "must use https",
		"/missing.json":           "404",
	} {
		_, err := srv.cimd.client(ctx, ts.URL+path)
		if !errors.Is(err, ErrUnknownClient) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", path, err, want)
		}
	}
	for _, id := range []string{"http://app.example/c.json", "https://app.example", "https://app.example/", "https://u:p@app.example/c.json"} {
		if _, err := srv.cimd.client(ctx, id); !errors.Is(err, ErrUnknownClient) {
			t.Errorf("client id %s: %v", id, err)
		}
	}
	// The real transport: loopback (and private) targets are refused at
	// connect time.
	prod := openTest(t, Options{})
	_, err := prod.cimd.client(ctx, ts.URL+"/good.json")
	if err == nil || !strings.Contains(err.Error(), "private, loopback or link-local") {
		t.Errorf("loopback document with the production transport: %v", err)
	}
	for _, addr := range []string{"10.0.0.1:443", "192.168.1.1:443", "169.254.169.254:443", "[::1]:443", "[fe80::1]:443", "0.0.0.0:443"} {
		if err := refusePrivate("tcp", addr, nil); err == nil {
			t.Errorf("refusePrivate(%s) allowed it", addr)
		}
	}
	if err := refusePrivate("tcp", "93.184.216.34:443", nil); err != nil {
		t.Errorf("a public address was refused: %v", err)
	}
}

func TestRedirectURIRules(t *testing.T) {
	for uri, ok := range map[string]bool{
		"https://chatgpt.com/connector/oauth/abc": true,
		"https://claude.ai/api/mcp/auth_callback": true,
		"http://localhost:33418/callback":         true,
		"http://127.0.0.1:9000/cb":                true,
		"com.example.app:/oauth":                  true,
		"http://app.example/cb":                   false,
		"https://app.example/cb#frag":             false,
		"/relative":                               false,
		"javascript:alert(1)":                     false,
	} {
		if got := checkRedirectURI(uri) == ""; got != ok {
			t.Errorf("checkRedirectURI(%q) ok=%v, want %v", uri, got, ok)
		}
	}
}

func TestLockoutBacksOff(t *testing.T) {
	var l lockout
	for i := 0; i < freeFailures; i++ {
		if d := l.locked("a"); d != 0 {
			t.Fatalf("locked after %d failures", i)
		}
		l.failed("a")
	}
	l.failed("a")
	d1 := l.locked("a")
	l.failed("a")
	d2 := l.locked("a")
	if d1 <= 0 || d2 <= d1 {
		t.Errorf("lockout %s then %s; want growing", d1, d2)
	}
	if l.locked("b") > d1 {
		t.Errorf("another address is locked longer than the guesser")
	}
	l.succeeded("a")
	if d := l.locked("a"); d != 0 {
		t.Errorf("still locked after a success: %s", d)
	}
}

// TestKeyRotation: a key older than KeyRotation is replaced when the server
// opens; the JWKS publishes the new and the previous key, so tokens signed
// before still verify.
func TestKeyRotation(t *testing.T) {
	path := filepath.Join(t.TempDir(), "oauth.db")
	first, err := Open(path, Options{Passphrase: "a long enough passphrase"})
	if err != nil {
		t.Fatal(err)
	}
	oldKID := first.keys.kid
	first.Close()
	again, err := Open(path, Options{Passphrase: "a long enough passphrase"})
	if err != nil {
		t.Fatal(err)
	}
	if again.keys.kid != oldKID || len(again.keys.keySet().Keys) != 1 {
		t.Fatalf("a fresh key was rotated: %s → %s", oldKID, again.keys.kid)
	}
	again.Close()
	rotated, err := Open(path, Options{Passphrase: "a long enough passphrase", KeyRotation: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer rotated.Close()
	set := rotated.keys.keySet()
	if rotated.keys.kid == oldKID || len(set.Keys) != 2 || set.Keys[1].KeyID != oldKID {
		t.Fatalf("after rotation: current %s, published %d keys", rotated.keys.kid, len(set.Keys))
	}
}
