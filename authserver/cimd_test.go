package authserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
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
	if c, err := srv.cimd.client(ctx, ts.URL+"/good.json", "192.0.2.1"); err != nil || c.Name != "ok" || c.Source != SourceCIMD {
		t.Fatalf("good document: %+v %v", c, err)
	}
	for path, want := range map[string]string{
		"/mismatch.json":          "not its own URL",
		"/big.json":               "over",
		"/redirect.json":          "redirect",
		"/http-redirect-uri.json": "must use https",
		"/missing.json":           "404",
	} {
		_, err := srv.cimd.client(ctx, ts.URL+path, "192.0.2.1")
		var fe *fetchError
		if !errors.Is(err, ErrUnknownClient) || !errors.As(err, &fe) || !strings.Contains(fe.detail.Error(), want) {
			t.Errorf("%s: %v, want %q", path, err, want)
		}
	}
	for _, id := range []string{"http://app.example/c.json", "https://app.example", "https://app.example/", "https://u:p@app.example/c.json"} {
		if _, err := srv.cimd.client(ctx, id, "192.0.2.1"); !errors.Is(err, ErrUnknownClient) {
			t.Errorf("client id %s: %v", id, err)
		}
	}
	// The real transport: loopback (and private) targets are refused
	// before dialing.
	prod := openTest(t, Options{})
	_, err := prod.cimd.client(ctx, ts.URL+"/good.json", "192.0.2.1")
	var fe *fetchError
	if !errors.As(err, &fe) || !strings.Contains(fe.detail.Error(), "special-purpose address") {
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
		"https://app.example:8443/cb":             true,
		"https://app.example:99999/cb":            false,
		"https://app.example:0/cb":                false,
		"http://127.0.0.1:65536/cb":               false,
		"http://[::1]:70000/cb":                   false,
	} {
		if got := checkRedirectURI(uri) == ""; got != ok {
			t.Errorf("checkRedirectURI(%q) ok=%v, want %v", uri, got, ok)
		}
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

// TestSpecialPurposeAddressesRefused: the guard refuses every address of the
// IANA special-purpose registries (RFC 6890 and successors) and IPv6 forms
// that embed an IPv4 address, IPv4-mapped ones unmapped first; ordinary
// public addresses pass. A table of the guard itself: nothing is dialed.
func TestSpecialPurposeAddressesRefused(t *testing.T) {
	refused := []string{
		"0.0.0.0", "0.1.2.3", "10.1.2.3", "100.64.0.1", "100.100.100.200", "100.127.255.254", "127.0.0.1", "127.9.9.9",
		"169.254.169.254", "172.16.0.1", "172.31.255.255", "192.0.0.1", "192.0.0.170", "192.0.2.1", "192.88.99.1",
		"192.168.1.1", "198.18.0.1", "198.19.255.255", "198.51.100.1", "203.0.113.1", "224.0.0.1", "239.255.255.250",
		"240.0.0.1", "255.255.255.255",
		"::", "::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:100.100.100.200", "::ffff:169.254.169.254",
		"::127.0.0.1", "::10.0.0.1", "::a9fe:a9fe", // IPv4-compatible
		"64:ff9b::a9fe:a9fe", "64:ff9b::7f00:1", "64:ff9b:1::a00:1", // NAT64
		"2002:a9fe:a9fe::1", "2002:7f00:1::1", // 6to4
		"2001::1", "2001:0:4136:e378:8000:63bf:3fff:fdd2", // Teredo, IETF protocol assignments
		"2001:db8::1", "3fff::1", "100::1", "fc00::1", "fd12:3456::1", "fe80::1", "fe80::1%eth0", "ff02::1", "ff05::2",
		"5f00::1",
	}
	for _, a := range refused {
		host := a
		if strings.Contains(a, ":") {
			host = "[" + a + "]"
		}
		if err := refusePrivate("tcp", host+":443", nil); err == nil {
			t.Errorf("%s is allowed", a)
		}
	}
	for _, a := range []string{"93.184.216.34", "8.8.8.8", "1.1.1.1", "100.63.255.255", "100.128.0.1", "198.20.0.1", "[2606:4700:4700::1111]", "[2a00:1450:4001:80b::200e]"} {
		if err := refusePrivate("tcp", a+":443", nil); err != nil {
			t.Errorf("the public address %s is refused: %v", a, err)
		}
	}
}

// TestGuardedDialerRefusesBeforeDialing: a host name is resolved and every
// address it names checked before anything is dialed; a name with any
// special-purpose address is not dialed at all, a public one is dialed by
// the address checked (no second lookup to rebind). The resolver and the
// dial are stand-ins: nothing leaves the process.
func TestGuardedDialerRefusesBeforeDialing(t *testing.T) {
	names := map[string][]string{
		"metadata.example": {"100.100.100.200"},
		"mixed.example":    {"93.184.216.34", "169.254.169.254"},
		"nat64.example":    {"64:ff9b::a9fe:a9fe"},
		"mapped.example":   {"::ffff:10.0.0.1"},
		"public.example":   {"93.184.216.34"},
	}
	var dialed []string
	g := &guardedDialer{
		lookup: func(_ context.Context, _, host string) ([]netip.Addr, error) {
			var out []netip.Addr
			for _, a := range names[host] {
				out = append(out, netip.MustParseAddr(a))
			}
			return out, nil
		},
		dial: func(_ context.Context, _, address string) (net.Conn, error) {
			dialed = append(dialed, address)
			return nil, errors.New("test: not dialing")
		},
	}
	for _, host := range []string{"metadata.example", "mixed.example", "nat64.example", "mapped.example", "100.64.0.1", "198.18.0.1", "[2002:a9fe:a9fe::1]"} {
		_, err := g.DialContext(context.Background(), "tcp", net.JoinHostPort(strings.Trim(host, "[]"), "443"))
		if !errors.Is(err, errSpecialAddress) {
			t.Errorf("%s: %v, want a refusal", host, err)
		}
	}
	if len(dialed) != 0 {
		t.Fatalf("dialed %v", dialed)
	}
	if _, err := g.DialContext(context.Background(), "tcp", "public.example:443"); err == nil || len(dialed) != 1 || dialed[0] != "93.184.216.34:443" {
		t.Errorf("a public name: %v, dialed %v", err, dialed)
	}
}

// TestDialerControlRefusesBeforeConnecting: the dialer's Control hook (run
// after the socket is made, before connect) refuses a special-purpose
// address, so even an address that got past resolution is never connected
// to. The hook under test is wrapped so that nothing connects even if it
// let an address through.
func TestDialerControlRefusesBeforeConnecting(t *testing.T) {
	for _, addr := range []string{"100.100.100.200:80", "198.18.0.1:80", "[64:ff9b::a9fe:a9fe]:80", "[::ffff:169.254.169.254]:80"} {
		var reached bool
		d := &net.Dialer{Timeout: time.Second, Control: func(network, address string, c syscall.RawConn) error {
			reached = true
			if err := refusePrivate(network, address, c); err != nil {
				return err
			}
			t.Errorf("%s passed the Control hook", address)
			return errors.New("test: not connecting")
		}}
		_, err := d.DialContext(context.Background(), "tcp", addr)
		if !reached || !errors.Is(err, errSpecialAddress) {
			t.Errorf("%s: hook reached %v, %v", addr, reached, err)
		}
	}
}
