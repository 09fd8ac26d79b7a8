//go:build unix

package tests

// docs/clients.md's check of the path under 'issuer: builtin': /healthz answers without a token;
// /stream is refused without an operator credential and sends its keepalive with one.

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestClientsDocStreamCheck: docs/clients.md's check of the path (step 5
// of "Use it from ChatGPT"), under 'issuer: builtin' as that page sets
// the bridge up: /healthz answers without a token; /stream is an operator
// route — 401 without a credential (it shows only that the tunnel reaches
// the bridge), and with an operator token its keepalive arrives. (The
// step said to curl /stream bare, which cannot work there: an open,
// never-ending stream behind a public tunnel would be anyone's to hold.)
func TestClientsDocStreamCheck(t *testing.T) {
	b, _ := consoleBridge(t) // issuer: builtin, and an operator token
	if r := mustRequest(t, http.MethodGet, b.srv.URL+"/healthz", "", ""); r.status != http.StatusOK {
		t.Errorf("/healthz without a token: %d %s", r.status, r.body)
	}
	if r := mustRequest(t, http.MethodGet, b.srv.URL+"/stream", "", ""); r.status != http.StatusUnauthorized {
		t.Errorf("/stream without a token: %d %s, want 401", r.status, r.body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, b.srv.URL+"/stream", nil)
	req.Header.Set("Authorization", "Bearer "+consoleToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("/stream with the operator token: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	buf := make([]byte, 64)
	got := ""
	for !strings.Contains(got, ": keepalive") {
		n, err := resp.Body.Read(buf)
		got += string(buf[:n])
		if err != nil {
			t.Fatalf("/stream with the operator token sent %q, then %v", got, err)
		}
	}
}
