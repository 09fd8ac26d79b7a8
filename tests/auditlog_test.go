//go:build unix

package tests

// The audit log with -audit-log-bodies: secrets planted in requests, answers and the child's stderr
// never reach the log, what else was logged does, and every logged field is capped.

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stelae-bridge/stelae-bridge/bridge"
	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

// TestAuditLogKeepsSecretsOut plants the campaign's secrets in requests, in
// answers (the echo tool returns its text) and in the child's stderr, with
// -audit-log-bodies on: none reaches the logs, the rest of what was logged
// does, and every logged field is capped.
func TestAuditLogKeepsSecretsOut(t *testing.T) {
	b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{opts: bridge.Options{AuditBodies: true}})
	c := newClient(t, b.url("fake"))
	c.initialize()
	secrets := map[string]any{
		"GITHUB_PAT":   "secret-pat-0001",
		"privateKey":   "secret-pk-0002",
		"ssh_key":      "secret-ssh-0003",
		"passphrase":   "secret-phrase-0004",
		"pwd":          "secret-pwd-0005",
		"pin":          9184,
		"otp":          "secret-otp-0007",
		"session_id":   "secret-sess-0008",
		"db":           "postgres://app:secret-dbpass-0009@db:5432/app",
		"link":         "https://api.example.com/x?access_token=secret-query-0010&page=2",
		"note":         "call with eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhIn0.c2VjcmV0LWp3dC0wMDEx now",
		"cmd":          "curl -H 'Authorization: Bearer secret-bearer-0012xx' https://x",
		"list":         []any{map[string]any{"api_key": "secret-arr-0013"}},
		"headers":      []any{map[string]any{"name": "X-Api-Key", "value": "secret-hdr-0014"}, "Cookie: sid=secret-cookie-0015"},
		"innocent":     "a visible value",
		"gh":           "token ghp_secretabcdefghijklmnopqrstuvwxyz0016 here",
		"aws":          "AKIASECRETKEY0000017",
		"clientSecret": "secret-client-0018",
	}
	args, _ := json.Marshal(secrets)
	// In a request (params) and, through echo, in a response.
	resultOK(t, "echo", c.callTool(`1`, "echo", map[string]string{"text": string(args)}))
	resultOK(t, "whoami with secret arguments", c.post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"whoami","arguments":`+string(args)+`}}`))
	// In the child's stderr.
	resultOK(t, "stderr", c.callTool(`3`, "stderr", map[string]string{"text": "connecting to postgres://app:secret-stderr-0019@db/app with token=secret-stderr-0020\n-----BEGIN PRIVATE KEY-----\nsecret-pem-0021\n-----END PRIVATE KEY-----\nready"}))
	// A 1 MiB method name.
	c.post(`{"jsonrpc":"2.0","id":4,"method":"` + strings.Repeat("m", 1<<20) + `"}`)
	waitFor(t, 10*time.Second, "the child's stderr in the log", func() bool { return strings.Contains(b.logs.String(), "ready") })
	logs := b.logs.String()
	for _, leak := range []string{"secret-pat-0001", "secret-pk-0002", "secret-ssh-0003", "secret-phrase-0004", "secret-pwd-0005", "9184",
		"secret-otp-0007", "secret-sess-0008", "secret-dbpass-0009", "secret-query-0010", "c2VjcmV0LWp3dC0wMDEx", "secret-bearer-0012xx",
		"secret-arr-0013", "secret-hdr-0014", "secret-cookie-0015", "ghp_secretabcdefghijklmnopqrstuvwxyz0016", "AKIASECRETKEY0000017",
		"secret-client-0018", "secret-stderr-0019", "secret-stderr-0020", "secret-pem-0021"} {
		if strings.Contains(logs, leak) {
			t.Errorf("the log shows %q", leak)
		}
	}
	for _, want := range []string{"a visible value", "[REDACTED]", "connecting to postgres://app:", "ready"} {
		if !strings.Contains(logs, want) {
			t.Errorf("the log lacks %q", want)
		}
	}
	for _, line := range strings.Split(logs, "\n") {
		if len(line) > 200<<10 {
			t.Errorf("a log line of %d bytes: %.120s…", len(line), line)
		}
	}
}
