//go:build unix

package tests

// stelae-bridge doctor (issue 40) through Debian's nginx and HAProxy with TLS from a test CA, in
// front of a bridge with the built-in authorization server: configured right, every check
// passes; each misconfiguration produces its one named line.

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

// testTLS is a CA and a certificate it signed for 127.0.0.1 and
// localhost, as PEM files.
type testTLS struct{ ca, cert, key string }

func newTestTLS(t *testing.T) testTLS {
	t.Helper()
	dir := t.TempDir()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "stelae doctor test CA"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(90 * 24 * time.Hour), IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	out := testTLS{ca: filepath.Join(dir, "ca.pem"), cert: filepath.Join(dir, "cert.pem"), key: filepath.Join(dir, "key.pem")}
	for path, block := range map[string]*pem.Block{out.ca: {Type: "CERTIFICATE", Bytes: caDER}, out.cert: {Type: "CERTIFICATE", Bytes: der}, out.key: {Type: "EC PRIVATE KEY", Bytes: keyDER}} {
		if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// HAProxy takes the certificate and its key in one file.
	cert, _ := os.ReadFile(out.cert)
	k, _ := os.ReadFile(out.key)
	if err := os.WriteFile(out.cert+".both", append(cert, k...), 0o600); err != nil {
		t.Fatal(err)
	}
	return out
}

// doctorBridge starts a bridge with the built-in authorization server
// (a passphrase) and a static token for the doctor, whose public URL is
// publicURL, with a destination of 150 tools beside the usual one.
func doctorBridge(t *testing.T, publicURL string, flags ...string) *binaryProc {
	t.Helper()
	return doctorBridgeIn(t, t.TempDir(), publicURL, flags...)
}

// doctorBridgeIn is doctorBridge with its files (and state, dir/state) in
// dir.
func doctorBridgeIn(t *testing.T, dir, publicURL string, flags ...string) *binaryProc {
	t.Helper()
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte("doctor-token-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := doctorConfig(t, dir)
	cmd := exec.Command(bridgeBinary(t), append([]string{"-config", cfg, "-listen", "127.0.0.1:0", "-state-dir", filepath.Join(dir, "state"),
		"-public-url", publicURL, "-auth-tokens-file", tokens}, flags...)...)
	cmd.Env = append(os.Environ(), "STELAE_OAUTH_PASSPHRASE=a long passphrase for the doctor's test")
	return runBinary(t, cmd)
}

// proxyRun runs a proxy until the test (or stop) ends it, and waits for
// it to answer on addr.
func proxyRun(t *testing.T, cmd *exec.Cmd, what, addr string) (stop func()) {
	t.Helper()
	logs := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // nginx's workers outlive a killed master
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("%s:\n%s", what, logs)
		}
	})
	waitFor(t, 20*time.Second, what+" to listen", func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return stop
}

// nginxConf is an nginx configuration of a TLS server on addr in front of
// bridge, with the settings a stream needs; edit changes it.
func nginxConf(addr, bridge string, tls testTLS, edit func(string) string) string {
	conf := `worker_processes 1;
error_log stderr warn;
pid nginx.pid;
events { worker_connections 256; }
http {
    access_log off;
    client_body_temp_path tmp/body; proxy_temp_path tmp/proxy; fastcgi_temp_path tmp/fastcgi; uwsgi_temp_path tmp/uwsgi; scgi_temp_path tmp/scgi;
    server {
        listen ` + addr + ` ssl;
        ssl_certificate ` + tls.cert + `;
        ssl_certificate_key ` + tls.key + `;
        client_max_body_size 10m;
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_set_header Host $http_host;
        proxy_buffering off;
        proxy_read_timeout 1h;
        # EXTRA
        location / { proxy_pass http://` + bridge + `; }
    }
}
`
	if edit != nil {
		conf = edit(conf)
	}
	return conf
}

// extra adds location blocks (or settings) to an nginx configuration.
func extra(s string) func(string) string {
	return func(conf string) string { return strings.Replace(conf, "# EXTRA", s, 1) }
}

// TestDoctorBehindNginx: the doctor through nginx with TLS, configured
// right (every check passes but the port, which only claude.ai minds),
// and once per misconfiguration, each its one failed line.
func TestDoctorBehindNginx(t *testing.T) {
	bin := nginxBinary(t)
	tls := newTestTLS(t)
	addr := freeAddr(t)
	public := "https://" + addr
	home := t.TempDir()
	b := doctorBridgeIn(t, home, public)
	bridge := strings.TrimPrefix(b.base, "http://")
	// slow: a bridge whose keepalive (45 s) is longer than the proxy's
	// read timeout (30 s); elsewhere: one whose -public-url is another.
	slow := doctorBridge(t, public, "-keepalive", "45s")
	elsewhere := doctorBridge(t, "https://"+freeAddr(t))
	nginx := func(conf string) func() {
		prefix := t.TempDir()
		if err := os.MkdirAll(filepath.Join(prefix, "tmp"), 0o755); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(prefix, "nginx.conf")
		if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
		return proxyRun(t, exec.Command(bin, "-p", prefix+"/", "-c", path, "-g", "daemon off;"), "nginx", addr)
	}
	doctor := func(path string, flags ...string) (int, doctorReport) {
		// -offline: the bridge must not fetch claude.ai's document here
		// (tests dial loopback only).
		return runDoctor(t, public+path, append([]string{"-ca", tls.ca, "-token", "doctor-token-1", "-keepalive-wait", "5s", "-offline"}, flags...)...)
	}
	noCIMD := fmt.Sprintf(`location = /.well-known/oauth-authorization-server { default_type application/json; return 200 '{"issuer":"%[1]s","authorization_endpoint":"%[1]s/oauth/authorize","token_endpoint":"%[1]s/oauth/token","token_endpoint_auth_methods_supported":["client_secret_basic"]}'; }`, public)
	for _, tc := range []struct {
		name   string
		bridge string
		edit   func(string) string
		path   string
		flags  []string
		failed string // the one check that fails ("" for none)
	}{
		{name: "right", bridge: bridge},
		// The bridge's own X-Accel-Buffering: no keeps nginx from
		// buffering its streams even with proxy_buffering on.
		{name: "proxy_buffering on (the bridge's header wins)", bridge: bridge, edit: func(c string) string { return strings.Replace(c, "proxy_buffering off;", "proxy_buffering on;", 1) }},
		{name: "proxy_buffering on, the bridge's header ignored", bridge: bridge, failed: "stream",
			edit: func(c string) string {
				return strings.Replace(c, "proxy_buffering off;", "proxy_buffering on; proxy_ignore_headers X-Accel-Buffering;", 1)
			}},
		{name: "/.well-known/ not forwarded", bridge: bridge, edit: extra("location /.well-known/ { return 404; }"), failed: "resource-metadata"},
		{name: "/oauth/ not forwarded", bridge: bridge, edit: extra("location /oauth/ { return 404; }"), failed: "oauth-paths"},
		{name: "a 30 s read timeout", bridge: strings.TrimPrefix(slow.base, "http://"), edit: func(c string) string {
			return strings.Replace(c, "proxy_read_timeout 1h;", "proxy_read_timeout 30s;", 1)
		},
			flags: []string{"-hold", "40s"}, failed: "hold"},
		{name: "a Host the bridge refuses", bridge: bridge, edit: func(c string) string {
			return strings.Replace(c, "proxy_set_header Host $http_host;", "proxy_set_header Host mcp.elsewhere.example;", 1)
		}, failed: "initialize"},
		{name: "a -public-url that differs", bridge: strings.TrimPrefix(elsewhere.base, "http://"), failed: "resource-metadata"},
		{name: "an authorization server without the CIMD flags", bridge: bridge, edit: extra(noCIMD), failed: "cimd"},
		{name: "a profile of 150 tools", bridge: bridge, path: "/many/mcp", failed: "tools"},
		// A client document the bridge's address guard does not let it
		// fetch (a loopback URL: nothing is dialed): not checked, and
		// said why; the run passes.
		{name: "a client document the bridge may not fetch", bridge: bridge, flags: []string{"-cimd-client", "https://127.0.0.1:9/client.json", "-cimd-redirect", "http://127.0.0.1/cb", "-offline=false"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stop := nginx(nginxConf(addr, tc.bridge, tls, tc.edit))
			defer stop()
			path := tc.path
			if path == "" {
				path = "/fake/mcp"
			}
			code, rep := doctor(path, tc.flags...)
			checkDoctorRun(t, code, rep, tc.failed)
			if tc.name == "right" {
				defer func() {
					// The doctor's test client was deleted: the bridge
					// lists no client (and no session is left).
					out, err := exec.Command(bridgeBinary(t), "auth", "clients", "-state-dir", filepath.Join(home, "state")).CombinedOutput()
					if err != nil || strings.Contains(string(out), "doctor") || strings.Contains(string(out), "dcr_") {
						t.Errorf("the clients after the doctor (%v):\n%s", err, out)
					}
				}()
				// For a person: the checks, then how to add the connector
				// to each client, with the URL and its OAuth sign-in.
				out, err := exec.Command(bridgeBinary(t), "doctor", "-ca", tls.ca, "-token", "doctor-token-1", "-keepalive-wait", "5s", "-offline", public+path).Output()
				text := string(out)
				for _, w := range []string{"PASS tls", "passed.", "Add custom connector", "Developer mode", "claude mcp add --transport http fake " + public + "/fake/mcp", `"mcpServers": {"fake"`} {
					if err != nil || !strings.Contains(text, w) {
						t.Errorf("the doctor's text (%v) lacks %q:\n%s", err, w, text)
					}
				}
			}
			if st := rep.statuses(); len(tc.flags) > 0 && tc.flags[0] == "-cimd-client" && st["cimd-fetch"] != "skip" {
				t.Errorf("the fetch the guard refuses: %s; want skip", st["cimd-fetch"])
			}
			if tc.failed == "" {
				st := rep.statuses()
				for _, c := range []string{"tls", "initialize", "session", "tools", "discover", "stream", "cors", "resource-metadata", "issuer-metadata", "cimd", "oauth-paths", "registration"} {
					if st[c] != "pass" {
						t.Errorf("check %s: %s; want pass (%+v)", c, st[c], rep)
					}
				}
			}
			if t.Failed() || testing.Verbose() {
				for _, r := range rep.Results {
					t.Logf("%-4s %-17s %s", r.Status, r.Check, r.Found)
				}
			}
		})
	}
}

// TestDoctorBehindHAProxy: the doctor through HAProxy with TLS, configured
// right, and once per misconfiguration that HAProxy can have (it does not
// buffer streams), each its one failed line.
func TestDoctorBehindHAProxy(t *testing.T) {
	bin := haproxyBinary(t)
	tls := newTestTLS(t)
	addr := freeAddr(t)
	public := "https://" + addr
	b := doctorBridge(t, public)
	bridge := strings.TrimPrefix(b.base, "http://")
	slow := strings.TrimPrefix(doctorBridge(t, public, "-keepalive", "45s").base, "http://")
	elsewhere := strings.TrimPrefix(doctorBridge(t, "https://"+freeAddr(t)).base, "http://")
	noCIMD := fmt.Sprintf(`http-request return status 200 content-type application/json string '{"issuer":"%[1]s","authorization_endpoint":"%[1]s/oauth/authorize","token_endpoint":"%[1]s/oauth/token","token_endpoint_auth_methods_supported":["client_secret_basic"]}' if { path /.well-known/oauth-authorization-server }`, public)
	for _, tc := range []struct{ name, rule, bridge, timeout, path, failed string }{
		{name: "right"},
		{name: "/.well-known/ not forwarded", rule: "http-request return status 404 if { path_beg /.well-known/ }", failed: "resource-metadata"},
		{name: "/oauth/ not forwarded", rule: "http-request return status 404 if { path_beg /oauth/ }", failed: "oauth-paths"},
		{name: "a 30 s timeout (tunnel: it governs a stream once its answer began)", bridge: slow, timeout: "30s", failed: "hold"},
		{name: "a Host the bridge refuses", rule: "http-request set-header Host mcp.elsewhere.example", failed: "initialize"},
		{name: "a -public-url that differs", bridge: elsewhere, failed: "resource-metadata"},
		{name: "an authorization server without the CIMD flags", rule: noCIMD, failed: "cimd"},
		{name: "a profile of 150 tools", path: "/many/mcp", failed: "tools"},
	} {
		if tc.bridge == "" {
			tc.bridge = bridge
		}
		if tc.timeout == "" {
			tc.timeout = "1h"
		}
		if tc.path == "" {
			tc.path = "/fake/mcp"
		}
		t.Run(tc.name, func(t *testing.T) {
			conf := `global
    log stderr format raw local0 warning
defaults
    mode http
    log global
    timeout connect 5s
    timeout client 1h
    timeout server ` + tc.timeout + `
    timeout tunnel ` + tc.timeout + `
frontend mcp
    bind ` + addr + ` ssl crt ` + tls.cert + `.both
    ` + tc.rule + `
    default_backend bridge
backend bridge
    server b1 ` + tc.bridge + `
`
			path := filepath.Join(t.TempDir(), "haproxy.cfg")
			if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
				t.Fatal(err)
			}
			stop := proxyRun(t, exec.Command(bin, "-f", path, "-db"), "haproxy", addr)
			defer stop()
			flags := []string{"-ca", tls.ca, "-token", "doctor-token-1", "-keepalive-wait", "5s", "-offline"}
			if tc.failed == "hold" {
				flags = append(flags, "-hold", "40s")
			}
			code, rep := runDoctor(t, public+tc.path, flags...)
			checkDoctorRun(t, code, rep, tc.failed)
			if t.Failed() {
				for _, r := range rep.Results {
					t.Logf("%-4s %-17s %s", r.Status, r.Check, r.Found)
				}
			}
		})
	}
}

// doctorConfig writes dir/destinations.yaml: "fake" (fakemcp's server)
// and "many" (the same, listing 150 tools more).
func doctorConfig(t *testing.T, dir string) string {
	t.Helper()
	command, args, env := fakemcp.Command(fakemcp.ModeServer)
	var b strings.Builder
	b.WriteString("destinations:\n")
	for _, d := range []struct{ name, extra string }{{"fake", ""}, {"many", "150"}} {
		fmt.Fprintf(&b, "  %s:\n    command: %q\n    args: [%q]\n    env:\n", d.name, command, args[0])
		for k, v := range env {
			fmt.Fprintf(&b, "      %s: %q\n", k, v)
		}
		if d.extra != "" {
			fmt.Fprintf(&b, "      %s: %q\n", fakemcp.EnvExtraTools, d.extra)
		}
	}
	cfg := filepath.Join(dir, "destinations.yaml")
	if err := os.WriteFile(cfg, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// checkDoctorRun: no check failed (failed ""), or exactly the one named.
func checkDoctorRun(t *testing.T, code int, rep doctorReport, failed string) {
	t.Helper()
	f := rep.failed()
	switch {
	case failed == "" && (code != 0 || len(f) != 0):
		t.Errorf("exit %d, failed %q; want every check to pass", code, f)
	case failed != "" && (code != 1 || len(f) != 1 || !strings.HasPrefix(f[0], failed+": ")):
		t.Errorf("exit %d, failed %q; want the one line of %q", code, f, failed)
	}
}
