package bridge

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stelae-bridge/stelae-bridge/config"
	"github.com/stelae-bridge/stelae-bridge/oauth"
)

// newTestBridge serves one destination "a" whose child is never started
// (no test here posts initialize).
func newTestBridge(t *testing.T, opts Options) *Bridge {
	t.Helper()
	cfg := &config.Config{Names: []string{"a"}, Default: "a", Destinations: map[string]*config.Destination{
		"a": {Name: "a", Command: "/nonexistent/never-started"},
	}}
	b, err := New(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := b.Shutdown(ctx); err != nil {
			t.Error(err)
		}
	})
	return b
}

func serve(b *Bridge, method, target string, headers ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, target, nil)
	r.Host = "127.0.0.1:8080"
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i] == "Host" {
			r.Host = headers[i+1]
			continue
		}
		r.Header.Set(headers[i], headers[i+1])
	}
	w := httptest.NewRecorder()
	b.ServeHTTP(w, r)
	return w
}

func TestRoutes(t *testing.T) {
	b := newTestBridge(t, Options{CheckHost: true, AllowedHosts: []string{"mcp.example.com"}, AllowedOrigins: []string{"https://app.example.com"}})
	for _, tc := range []struct {
		name, method, target string
		headers              []string
		status               int
		body                 string // a part of the body
		header               [2]string
	}{
		{"unknown destination", "POST", "/nope/mcp", nil, 404, `no destination named \"nope\"; configured destinations: a`, [2]string{}},
		{"deeper path", "POST", "/a/mcp/more", nil, 404, "/{destination}/mcp", [2]string{}},
		{"no such profile, none configured", "POST", "/p/x/mcp", nil, 404, `no profile named \"x\"; configured profiles: none (declare them under 'profiles:'`, [2]string{}},
		{"other route of a destination", "GET", "/a/x", nil, 404, `no route for /a/x; the MCP endpoint of \"a\" is /a/mcp`, [2]string{}},
		{"unclean path is not redirected", "GET", "/a//mcp", nil, 404, "no route", [2]string{}},
		{"legacy sse", "GET", "/a/sse", nil, 410, "Streamable HTTP at /a/mcp", [2]string{}},
		{"legacy message", "POST", "/a/message", nil, 410, "type \\\"http\\\"", [2]string{}},
		{"oauth well-known", "GET", "/.well-known/oauth-protected-resource/a/mcp", nil, 404, "does not use OAuth", [2]string{}},
		{"openid well-known", "GET", "/.well-known/openid-configuration", nil, 404, "does not use OAuth", [2]string{}},
		{"healthz", "GET", "/healthz", nil, 200, `"status": "ok"`, [2]string{}},
		{"version", "GET", "/version", nil, 200, `"2026-07-28"`, [2]string{}},
		{"version is GET only", "POST", "/version", nil, 405, "GET only", [2]string{"Allow", "GET, HEAD"}},
		{"root describes", "GET", "/", nil, 200, `"url": "http://127.0.0.1:8080/a/mcp"`, [2]string{}},
		{"manifest", "GET", "/.well-known/mcp/manifest.json", nil, 200, `"transport": "streamable-http"`, [2]string{}},
		{"tools list before any child", "GET", "/tools/list", nil, 200, `"tools": []`, [2]string{}},
		{"mcp endpoint without a session", "GET", "/a/mcp", []string{"Accept", "text/event-stream"}, 400, "Mcp-Session-Id", [2]string{}},
		{"default endpoint", "DELETE", "/mcp", nil, 400, "Mcp-Session-Id", [2]string{}},
		{"bad origin", "GET", "/healthz", []string{"Origin", "https://evil.example"}, 403, "-allowed-origins", [2]string{}},
		{"bad host", "GET", "/version", []string{"Host", "evil.example"}, 403, "-allowed-hosts evil.example", [2]string{}},
		{"allowed host", "GET", "/version", []string{"Host", "mcp.example.com"}, 200, "stelae-bridge", [2]string{}},
		{"cors preflight", "OPTIONS", "/a/mcp", []string{"Origin", "https://app.example.com", "Access-Control-Request-Method", "POST"}, 204, "", [2]string{"Access-Control-Allow-Origin", "https://app.example.com"}},
		{"cors on answers", "GET", "/version", []string{"Origin", "https://app.example.com"}, 200, "", [2]string{"Access-Control-Expose-Headers", "Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := serve(b, tc.method, tc.target, tc.headers...)
			if w.Code != tc.status || !strings.Contains(w.Body.String(), tc.body) {
				t.Errorf("%s %s: %d %s; want %d with %q", tc.method, tc.target, w.Code, w.Body, tc.status, tc.body)
			}
			if tc.header[0] != "" && w.Header().Get(tc.header[0]) != tc.header[1] {
				t.Errorf("%s: %q, want %q", tc.header[0], w.Header().Get(tc.header[0]), tc.header[1])
			}
			if loc := w.Header().Get("Location"); loc != "" {
				t.Errorf("redirected to %s", loc)
			}
		})
	}
	// The legacy hits above are counted.
	w := serve(b, "GET", "/metrics")
	if !strings.Contains(w.Body.String(), `stelae_legacy_route_hits_total{destination="a"} 2`) {
		t.Errorf("metrics lack the legacy hits:\n%s", grep(w.Body.String(), "legacy"))
	}
	for _, series := range []string{`stelae_child_state{destination="a",state="idle"} 1`, `stelae_sessions{destination="a"} 0`, "stelae_request_body_bytes 0", `stelae_initialize_refused_total{destination="a",reason="session_cap"} 0`, "go_goroutines", "process_resident_memory_bytes"} {
		if !strings.Contains(w.Body.String(), series) {
			t.Errorf("metrics lack %s", series)
		}
	}
}

func grep(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func TestAuthLayer(t *testing.T) {
	b := newTestBridge(t, Options{AuthTokens: []string{"tok-1", "tok-2"}})
	for _, tc := range []struct {
		name, target, auth string
		status             int
	}{
		{"no token", "/version", "", 401},
		{"wrong token", "/version", "Bearer nope", 401},
		{"wrong scheme", "/version", "Basic tok-1", 401},
		{"token", "/version", "Bearer tok-2", 200},
		{"scheme in any case", "/version", "bearer tok-1", 200},
		{"healthz stays open", "/healthz", "", 200},
		{"healthz details need the token", "/healthz?verbose", "", 401},
		{"healthz details", "/healthz?verbose", "Bearer tok-1", 200},
		{"oauth well-known stays open", "/.well-known/oauth-authorization-server", "", 404},
		{"metrics", "/metrics", "", 401},
		{"mcp", "/a/mcp", "", 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h []string
			if tc.auth != "" {
				h = []string{"Authorization", tc.auth}
			}
			w := serve(b, "GET", tc.target, h...)
			if w.Code != tc.status {
				t.Errorf("%s: %d %s, want %d", tc.target, w.Code, w.Body, tc.status)
			}
			if w.Code == 401 && w.Header().Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
		})
	}
}

// TestAuthRefusalsCounted: every request the auth layer refuses is counted
// by destination and reason (stelae_auth_refused_total), none it lets in.
func TestAuthRefusalsCounted(t *testing.T) {
	b := newTestBridge(t, Options{AuthTokens: []string{"tok-1"}})
	serve(b, "GET", "/version")                                       // missing, operator's route
	serve(b, "GET", "/version", "Authorization", "Bearer nope")       // wrong_token
	serve(b, "POST", "/a/mcp", "Authorization", "Bearer nope")        // wrong_token, a
	serve(b, "POST", "/a/mcp", "Authorization", "Bearer nope-again")  // wrong_token, a
	serve(b, "GET", "/version", "Authorization", "Bearer tok-1")      // let in
	w := serve(b, "GET", "/metrics", "Authorization", "Bearer tok-1") // let in
	for _, want := range []string{
		`stelae_auth_refused_total{destination="",reason="missing"} 1`,
		`stelae_auth_refused_total{destination="",reason="wrong_token"} 1`,
		`stelae_auth_refused_total{destination="a",reason="wrong_token"} 2`,
	} {
		if !strings.Contains(w.Body.String(), want) {
			t.Errorf("/metrics lacks %s:\n%s", want, grep(w.Body.String(), "stelae_auth_refused"))
		}
	}
}

func TestShutdownGate(t *testing.T) {
	b := newTestBridge(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	w := serve(b, "POST", "/a/mcp")
	if w.Code != 503 || w.Header().Get("Retry-After") == "" {
		t.Errorf("after shutdown: %d (Retry-After %q), want 503 with Retry-After", w.Code, w.Header().Get("Retry-After"))
	}
	// And its connection closes: a client or proxy that retries (HAProxy
	// in front of a fleet) must do it on a new connection, which reaches
	// the next bridge, not on this one, which answers 503 again.
	if got := w.Header().Get("Connection"); got != "close" {
		t.Errorf("after shutdown: Connection %q, want close", got)
	}
	if w := serve(b, "GET", "/healthz"); w.Code != 200 {
		t.Errorf("healthz after shutdown: %d", w.Code)
	}
	// The keepalive stream ends at once after shutdown.
	r := httptest.NewRequest("GET", "/stream", nil)
	r.Host = "127.0.0.1"
	b2 := newTestBridge(t, Options{KeepAlive: time.Hour})
	done := make(chan struct{})
	pr, pw := io.Pipe()
	go func() {
		defer close(done)
		b2.ServeHTTP(&pipeWriter{ResponseRecorder: httptest.NewRecorder(), w: pw}, r)
	}()
	buf := make([]byte, 64)
	if n, err := pr.Read(buf); err != nil || !strings.Contains(string(buf[:n]), "keepalive") {
		t.Fatalf("stream: %q %v", buf[:n], err)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	if err := b2.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("/stream still open 10s after shutdown")
	}
}

// pipeWriter is a ResponseRecorder whose body goes to a pipe, so a test can
// read a stream as it is written.
type pipeWriter struct {
	*httptest.ResponseRecorder
	w *io.PipeWriter
}

func (p *pipeWriter) Write(b []byte) (int, error) { return p.w.Write(b) }
func (p *pipeWriter) Flush()                      {}

func TestNewRefusesAnEmptyConfig(t *testing.T) {
	if _, err := New(&config.Config{}, Options{}); err == nil {
		t.Fatal("New accepted a configuration with no destination")
	}
}

func TestRefusalReasons(t *testing.T) {
	for err, want := range map[error]string{
		nil: "missing",
		fmt.Errorf("%w: expired", oauth.ErrInvalidToken):     "invalid",
		fmt.Errorf("%w: need x", oauth.ErrInsufficientScope): "insufficient_scope",
		oauth.ErrForbidden: "forbidden",
		fmt.Errorf("%w: timeout", oauth.ErrUnavailable): "unavailable",
	} {
		if got := refusal(err); got != want {
			t.Errorf("refusal(%v) = %q; want %q", err, got, want)
		}
	}
}
