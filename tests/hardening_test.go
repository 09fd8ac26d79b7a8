package tests

// Hostile clients, hard kills and long runs (issue 8's campaign), as tests
// of the project's own: each bounded in time.

import (
	"context"
	"net/http"
	"testing"
	"time"

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
	b.handler.Shutdown(ctx)
	for _, r := range []response{
		c.callTool("1", "echo", map[string]string{"text": "x"}),
		c.post(initBody, "Mcp-Session-Id", ""),
		c.do(http.MethodDelete, ""),
	} {
		ftErr(t, "a request during shutdown", r, http.StatusServiceUnavailable, "shutting down")
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
		ftErr(t, m+" /metrics", r, http.StatusMethodNotAllowed, "GET")
		if r.header.Get("Allow") != "GET, HEAD" {
			t.Errorf("%s /metrics: Allow %q", m, r.header.Get("Allow"))
		}
	}
	if r := raw(t, b, http.MethodHead, "/metrics", ""); r.status != http.StatusOK {
		t.Errorf("HEAD /metrics: %d", r.status)
	}
}
