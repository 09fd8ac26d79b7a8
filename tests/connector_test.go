//go:build unix

package tests

// The bridge's routes outside a session: a ChatGPT-style connector's probe sequence through a
// tunnel, unknown paths, /, /version and /stream, static bearer tokens, the manifest and
// /tools/list, /healthz through a crash loop, and metrics that move with traffic.

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stelae-bridge/stelae-bridge/bridge"
	"github.com/stelae-bridge/stelae-bridge/supervisor"
	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

// TestConnectorProbeSequence replays what a ChatGPT-style connector does
// through a tunnel: a public Host allowed by -allowed-hosts, no Origin, the
// default destination at the origin's root.
func TestConnectorProbeSequence(t *testing.T) {
	b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{defaultDest: "fake", opts: bridge.Options{
		CheckHost: true, AllowedHosts: []string{"mcp.example.com"},
	}})
	host := []string{"Host", "mcp.example.com"}
	post := append([]string{"Content-Type", "application/json", "Accept", "application/json, text/event-stream"}, host...)

	r := raw(t, b, http.MethodHead, "/mcp", "", host...)
	if r.status != 200 || r.header.Get("Content-Type") != "text/event-stream" || len(r.body) != 0 {
		t.Fatalf("HEAD /mcp: %d %v", r.status, r.header)
	}
	r = raw(t, b, http.MethodGet, "/mcp", "", append([]string{"Accept", "text/event-stream"}, host...)...)
	if r.status != 400 || !strings.Contains(string(r.body), "Mcp-Session-Id") {
		t.Fatalf("GET /mcp without a session: %d %s", r.status, r.body)
	}
	r = raw(t, b, http.MethodPost, "/", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"openai-mcp","version":"1.0.0"}}}`, post...)
	if r.status != 200 || r.header.Get("Mcp-Session-Id") == "" || !strings.Contains(string(r.body), `"protocolVersion":"2025-03-26"`) {
		t.Fatalf("POST / initialize: %d %v %s", r.status, r.header, r.body)
	}
	sid := r.header.Get("Mcp-Session-Id")
	withSID := append([]string{"Mcp-Session-Id", sid}, post...)
	if r = raw(t, b, http.MethodPost, "/", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, withSID...); r.status != 202 || len(r.body) != 0 {
		t.Fatalf("initialized: %d %s", r.status, r.body)
	}
	r = raw(t, b, http.MethodPost, "/", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, withSID...)
	if r.status != 200 || !strings.Contains(string(r.body), `"name":"search"`) || !strings.Contains(string(r.body), `"name":"fetch"`) {
		t.Fatalf("tools/list: %d %.300s", r.status, r.body)
	}
	r = raw(t, b, http.MethodPost, "/", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search","arguments":{"query":"stelae"}}}`, withSID...)
	if m := decode(t, r.body); r.status != 200 || string(m.ID) != "2" || !strings.Contains(string(m.Result), `About stelae`) {
		t.Fatalf("search: %d %s", r.status, r.body)
	}
	r = raw(t, b, http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"fetch","arguments":{"id":"doc-1"}}}`, withSID...)
	if m := decode(t, r.body); r.status != 200 || string(m.ID) != "3" || !strings.Contains(string(m.Result), `full text of doc-1`) {
		t.Fatalf("fetch: %d %s", r.status, r.body)
	}
	if r = raw(t, b, http.MethodDelete, "/", "", append([]string{"Mcp-Session-Id", sid}, host...)...); r.status != 204 {
		t.Fatalf("DELETE /: %d %s", r.status, r.body)
	}
	if r = raw(t, b, http.MethodPost, "/", `{"jsonrpc":"2.0","id":4,"method":"tools/list"}`, withSID...); r.status != 404 {
		t.Fatalf("after DELETE: %d", r.status)
	}
	// A Host the operator did not allow is refused.
	if r = raw(t, b, http.MethodPost, "/", initBody, "Content-Type", "application/json", "Host", "evil.example.com"); r.status != 403 {
		t.Fatalf("unknown Host: %d", r.status)
	}
}

func TestBridgeRoutes(t *testing.T) {
	b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{opts: bridge.Options{Version: "9.9.9", KeepAlive: 50 * time.Millisecond}})
	for _, path := range []string{
		"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/fake/mcp",
		"/.well-known/oauth-authorization-server", "/.well-known/oauth-authorization-server/fake/mcp",
		"/.well-known/openid-configuration", "/.well-known/openid-configuration/fake/mcp",
		"/nope", "/fake", "/fake/mcp/extra", "/.well-known/other",
	} {
		r := raw(t, b, http.MethodGet, path, "")
		if r.status != 404 || r.header.Get("Content-Type") != "application/json" {
			t.Errorf("GET %s: %d %q, want a JSON 404", path, r.status, r.header.Get("Content-Type"))
			continue
		}
		if m := decode(t, r.body); string(m.ID) != "null" || m.Error == nil || m.Error.Message == "" {
			t.Errorf("GET %s: body %s", path, r.body)
		}
	}
	// Without a default destination, /mcp and POST / say how to configure one.
	if r := raw(t, b, http.MethodPost, "/mcp", initBody, "Content-Type", "application/json"); r.status != 404 || !strings.Contains(string(r.body), "default") {
		t.Errorf("POST /mcp without a default: %d %s", r.status, r.body)
	}
	r := raw(t, b, http.MethodGet, "/", "")
	var root struct {
		Name, Version string
		Destinations  []struct{ Name, URL string }
	}
	if err := json.Unmarshal(r.body, &root); err != nil || r.status != 200 || root.Version != "9.9.9" || len(root.Destinations) != 1 || root.Destinations[0].URL != b.srv.URL+"/fake/mcp" {
		t.Errorf("GET /: %d %s (%v)", r.status, r.body, err)
	}
	r = raw(t, b, http.MethodGet, "/version", "")
	if r.status != 200 || !strings.Contains(string(r.body), `"9.9.9"`) || !strings.Contains(string(r.body), "2025-11-25") || !strings.Contains(string(r.body), `"go": "go`) {
		t.Errorf("/version: %d %s", r.status, r.body)
	}
	if r = raw(t, b, http.MethodHead, "/stream", ""); r.status != 200 || r.header.Get("Content-Type") != "text/event-stream" {
		t.Errorf("HEAD /stream: %d %v", r.status, r.header)
	}
	// GET /stream sends keepalives at once and on every interval.
	req, _ := http.NewRequest(http.MethodGet, b.srv.URL+"/stream", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	got := ""
	deadline := time.Now().Add(3 * time.Second)
	for strings.Count(got, ": keepalive") < 3 && time.Now().Before(deadline) {
		n, err := resp.Body.Read(buf)
		got += string(buf[:n])
		if err != nil {
			break
		}
	}
	resp.Body.Close()
	if strings.Count(got, ": keepalive") < 3 {
		t.Errorf("/stream sent %q", got)
	}
}

func TestBridgeAuth(t *testing.T) {
	const tokA, tokB = "tok-a-s3cret", "tok-b-s3cret"
	b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{opts: bridge.Options{AuthTokens: []string{tokA, tokB}}})
	post := []string{"Content-Type", "application/json", "Accept", "application/json"}
	for _, tc := range []struct{ name, auth string }{{"missing", ""}, {"wrong", "Bearer nope"}, {"not bearer", "Basic " + tokA}} {
		for _, path := range []string{"/fake/mcp", "/", "/tools/list", "/metrics", "/.well-known/mcp/manifest.json", "/version"} {
			h := append([]string{}, post...)
			if tc.auth != "" {
				h = append(h, "Authorization", tc.auth)
			}
			method := http.MethodGet
			if path == "/fake/mcp" {
				method = http.MethodPost
			}
			r := raw(t, b, method, path, initBody, h...)
			if r.status != 401 || !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") || decode(t, r.body).Error == nil {
				t.Errorf("%s token, %s %s: %d %v %s", tc.name, method, path, r.status, r.header, r.body)
			}
		}
	}
	if r := raw(t, b, http.MethodGet, "/healthz", ""); r.status != 200 {
		t.Errorf("/healthz must stay open: %d", r.status)
	}
	r := raw(t, b, http.MethodPost, "/fake/mcp", initBody, append(post, "Authorization", "Bearer "+tokA)...)
	if r.status != 200 {
		t.Fatalf("initialize with a good token: %d %s", r.status, r.body)
	}
	sid := r.header.Get("Mcp-Session-Id")
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	if r := raw(t, b, http.MethodPost, "/fake/mcp", list, append(post, "Mcp-Session-Id", sid, "Authorization", "Bearer "+tokA)...); r.status != 200 {
		t.Errorf("same token: %d %s", r.status, r.body)
	}
	// The session is bound to the token that created it.
	if r := raw(t, b, http.MethodPost, "/fake/mcp", list, append(post, "Mcp-Session-Id", sid, "Authorization", "Bearer "+tokB)...); r.status != 404 {
		t.Errorf("another token on that session: %d, want 404", r.status)
	}
	if strings.Contains(b.logs.String(), "s3cret") {
		t.Errorf("a token reached the logs")
	}
}

func TestBridgeManifestAndToolsList(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    bridge.Options
		headers []string
		base    func(b *testBridge) string
	}{
		{"request host", bridge.Options{}, nil, func(b *testBridge) string { return b.srv.URL }},
		{"public url", bridge.Options{PublicURL: "https://mcp.example.com/"}, nil, func(*testBridge) string { return "https://mcp.example.com" }},
		{"proxy headers trusted", bridge.Options{TrustProxyHeaders: true}, []string{"X-Forwarded-Proto", "https", "X-Forwarded-Host", "tunnel.example.net"}, func(*testBridge) string { return "https://tunnel.example.net" }},
		{"proxy headers ignored", bridge.Options{}, []string{"X-Forwarded-Proto", "https", "X-Forwarded-Host", "tunnel.example.net"}, func(b *testBridge) string { return b.srv.URL }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{opts: tc.opts})
			r := raw(t, b, http.MethodGet, "/.well-known/mcp/manifest.json", "", tc.headers...)
			var man struct {
				Servers []struct{ Name, Transport, URL, Version string }
				Tools   []struct{ Name string }
			}
			if err := json.Unmarshal(r.body, &man); err != nil || r.status != 200 || r.header.Get("Cache-Control") != "no-store" {
				t.Fatalf("manifest: %d %v %s", r.status, r.header, r.body)
			}
			if len(man.Servers) != 1 || man.Servers[0].Transport != "streamable-http" || man.Servers[0].URL != tc.base(b)+"/fake/mcp" {
				t.Fatalf("manifest servers: %+v, want url %s/fake/mcp", man.Servers, tc.base(b))
			}
		})
	}
	// Tools appear once the child has run.
	b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{})
	c := newClient(t, b.url("fake"))
	c.initialize()
	var listed struct {
		Tools []struct{ Name, Destination string }
	}
	waitFor(t, 10*time.Second, "the tool catalogue", func() bool {
		r := raw(t, b, http.MethodGet, "/tools/list", "")
		return json.Unmarshal(r.body, &listed) == nil && len(listed.Tools) > 0
	})
	found := false
	for _, tl := range listed.Tools {
		found = found || (tl.Name == "search" && tl.Destination == "fake")
	}
	if !found {
		t.Errorf("/tools/list lacks search on fake: %+v", listed.Tools)
	}
}

func TestBridgeHealthThroughCrashLoop(t *testing.T) {
	b := newBridge(t, map[string]string{"good": fakemcp.ModeServer, "dead": fakemcp.ModeExitAtStart}, bridgeConfig{
		restart: supervisor.RestartPolicy{MaxRestarts: 2, Initial: 20 * time.Millisecond},
	})
	health := func() (int, map[string]any) {
		r := raw(t, b, http.MethodGet, "/healthz?verbose", "")
		var h map[string]any
		if err := json.Unmarshal(r.body, &h); err != nil {
			t.Fatalf("/healthz: %v %s", err, r.body)
		}
		return r.status, h
	}
	if code, h := health(); code != 200 || h["status"] != "ok" {
		t.Fatalf("idle bridge: %d %v", code, h)
	}
	good := newClient(t, b.url("good"))
	good.initialize()
	if r := newClient(t, b.url("dead")).post(initBody); r.status != 503 {
		t.Fatalf("dead destination: %d", r.status)
	}
	code, h := health()
	dests := h["destinations"].(map[string]any)
	dead, gd := dests["dead"].(map[string]any), dests["good"].(map[string]any)
	if code != 200 || h["status"] != "degraded" || dead["state"] != "failed" || !strings.Contains(dead["last_exit"].(string), "exit status 3") || gd["state"] != "running" || gd["pid"].(float64) == 0 || gd["sessions"].(float64) != 1 {
		t.Fatalf("one failed destination: %d %v", code, h)
	}
	// Every destination failed: down, 503.
	b2 := newBridge(t, map[string]string{"dead": fakemcp.ModeExitAtStart}, bridgeConfig{restart: supervisor.RestartPolicy{MaxRestarts: 1, Initial: 20 * time.Millisecond}})
	newClient(t, b2.url("dead")).post(initBody)
	r := raw(t, b2, http.MethodGet, "/healthz", "")
	if r.status != 503 || !strings.Contains(string(r.body), `"down"`) {
		t.Fatalf("all failed: %d %s", r.status, r.body)
	}
}

func TestBridgeMetricsMove(t *testing.T) {
	b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{})
	before := scrape(t, b)
	c := newClient(t, b.url("fake"))
	c.initialize()
	st := c.openStream()
	c.callTool("1", "echo", map[string]string{"text": "m"})
	c.callTool("2", "list_changed", nil)
	st.next(t, "notifications/tools/list_changed", 5*time.Second)
	raw(t, b, http.MethodGet, "/fake/sse", "")
	after := scrape(t, b)
	for _, key := range []string{
		`stelae_calls_total{destination="fake",outcome="ok"}`,
		`stelae_bytes_in_total{destination="fake"}`,
		`stelae_bytes_out_total{destination="fake"}`,
		`stelae_notifications_delivered_total{destination="fake"}`,
		`stelae_legacy_route_hits_total{destination="fake"}`,
		`stelae_call_duration_seconds_count{destination="fake"}`,
	} {
		if after[key] <= before[key] {
			t.Errorf("%s did not move: %v → %v", key, before[key], after[key])
		}
	}
	for key, want := range map[string]float64{
		`stelae_sessions{destination="fake"}`:                    1,
		`stelae_child_state{destination="fake",state="running"}`: 1,
		`stelae_child_state{destination="fake",state="idle"}`:    0,
		`stelae_inflight_calls{destination="fake"}`:              0,
		`stelae_child_restarts_total{destination="fake"}`:        0,
	} {
		if got, ok := after[key]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", key, got, ok, want)
		}
	}
}
