//go:build unix

package tests

// Hostile clients, hard kills and long runs (issue 8's campaign), as tests
// of the project's own: each bounded in time.

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stelae-bridge/stelae-bridge/bridge"
	"github.com/stelae-bridge/stelae-bridge/config"
	"github.com/stelae-bridge/stelae-bridge/supervisor"
	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

// TestShutdownAnswers503NotSessionNotFound: once shutdown begins, requests
// get 503 with Retry-After, never a 404 that sends spec clients to
// initialize again into a dying bridge.
func TestShutdownAnswers503NotSessionNotFound(t *testing.T) {
	b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{})
	c := newClient(t, b.url("fake"))
	c.initialize()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b.bridge.Shutdown(ctx)
	for _, r := range []response{
		c.callTool("1", "echo", map[string]string{"text": "x"}),
		c.post(initBody, "Mcp-Session-Id", ""),
		c.must(http.MethodDelete, ""),
	} {
		mustTransportError(t, "a request during shutdown", r, http.StatusServiceUnavailable, "shutting down")
		if r.header.Get("Retry-After") == "" {
			t.Errorf("503 during shutdown without Retry-After")
		}
	}
}

// TestMetricsOnlyGet: /metrics answers 405 to other methods, like every
// other GET-only route.
func TestMetricsOnlyGet(t *testing.T) {
	b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{})
	for _, m := range []string{http.MethodPost, http.MethodDelete, http.MethodPut} {
		r := raw(t, b, m, "/metrics", "")
		mustTransportError(t, m+" /metrics", r, http.StatusMethodNotAllowed, "GET")
		if r.header.Get("Allow") != "GET, HEAD" {
			t.Errorf("%s /metrics: Allow %q", m, r.header.Get("Allow"))
		}
	}
	if r := raw(t, b, http.MethodHead, "/metrics", ""); r.status != http.StatusOK {
		t.Errorf("HEAD /metrics: %d", r.status)
	}
}

// TestToolFilterFailsClosedOverHTTP: the bypasses the campaign found, and
// their kin, are refused by the bridge; the child never sees a call of the
// hidden tool.
func TestToolFilterFailsClosedOverHTTP(t *testing.T) {
	b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{tools: config.ToolFilter{Deny: []string{"whoami"}}})
	c := newClient(t, b.url("fake"))
	c.initialize()
	for _, tc := range []struct {
		name, body string
		status     int
		code       int
	}{
		{"name as an array", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":["whoami"]}}`, 200, -32602},
		{"name in upper case", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"WHOAMI"}}`, 200, -32602},
		{"a second name member", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","Name":"whoami"}}`, 200, -32602},
		{"method in another case", `{"jsonrpc":"2.0","id":4,"method":"Tools/Call","params":{"name":"whoami"}}`, 200, -32601},
		{"tools/call as a notification", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"whoami"}}`, 400, -32600},
		{"a second method member", `{"jsonrpc":"2.0","id":5,"method":"tools/list","METHOD":"tools/call","params":{"name":"whoami"}}`, 400, -32700},
		{"duplicate params", `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"echo"},"params":{"name":"whoami"}}`, 400, -32700},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := c.post(tc.body)
			m := decode(t, r.body)
			if r.status != tc.status || m.Error == nil || m.Error.Code != tc.code {
				t.Errorf("status %d %s; want %d with error %d", r.status, r.body, tc.status, tc.code)
			}
		})
	}
	echoCall(t, c, "7", "allowed tools still work")
	if calls := c.stats().Calls; slices.ContainsFunc(calls, func(n string) bool { return strings.EqualFold(n, "whoami") }) {
		t.Errorf("the child received a call of the hidden tool: %v", calls)
	}
}

// TestHealthzHidesDetails: /healthz, open to anyone, shows states and
// counts, never a failed child's error text (which names paths); with auth
// on, ?verbose needs a token and then shows the details.
func TestHealthzHidesDetails(t *testing.T) {
	b := newBridge(t, map[string]string{"dead": fakemcp.ModeExitAtStart}, bridgeConfig{
		restart: supervisor.RestartPolicy{MaxRestarts: 0},
		opts:    bridge.Options{AuthTokens: []string{"tok"}},
	})
	c := newClient(t, b.url("dead"))
	if r := c.post(initBody, "Authorization", "Bearer tok"); r.status != http.StatusServiceUnavailable {
		t.Fatalf("initialize of a child that exits: %d %s", r.status, r.body)
	}
	plain := raw(t, b, http.MethodGet, "/healthz", "")
	if plain.status != http.StatusServiceUnavailable || !strings.Contains(string(plain.body), `"failed"`) {
		t.Fatalf("/healthz: %d %s", plain.status, plain.body)
	}
	for _, detail := range []string{"last_exit", "exit status", "pid", "isolation"} {
		if strings.Contains(string(plain.body), detail) {
			t.Errorf("/healthz without a token shows %q: %s", detail, plain.body)
		}
	}
	if r := raw(t, b, http.MethodGet, "/healthz?verbose", ""); r.status != http.StatusUnauthorized {
		t.Errorf("/healthz?verbose without a token: %d %s", r.status, r.body)
	}
	r := raw(t, b, http.MethodGet, "/healthz?verbose", "", "Authorization", "Bearer tok")
	if !strings.Contains(string(r.body), "exit status 3") || !strings.Contains(string(r.body), `"pid"`) {
		t.Errorf("/healthz?verbose with a token lacks the details: %d %s", r.status, r.body)
	}
}
