//go:build unix

package tests

// The real binary with default:, prestart: and a tools: allow-list, and bearer tokens from a file:
// the prestarted child's tools are listed, /mcp is the default, hidden tools cannot be called.

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

// TestBinaryOperatorConfig runs the real binary with `default:`, `prestart:`
// and a `tools:` allow-list in destinations.yaml and bearer tokens from a
// file: the prestarted child's filtered tools are listed before any client
// came, /mcp is the default destination, hidden tools cannot be called.
func TestBinaryOperatorConfig(t *testing.T) {
	command, args, env := fakemcp.Command(fakemcp.ModeServer)
	dir := t.TempDir()
	config := filepath.Join(dir, "destinations.yaml")
	yaml := fmt.Sprintf("default: notes\ndestinations:\n  notes:\n    command: %s\n    args: [%s]\n    prestart: true\n    tools:\n      allow: [\"search\", \"fetch\"]\n    env:\n      %s: %s\n",
		strconv.Quote(command), strconv.Quote(args[0]), fakemcp.EnvMode, strconv.Quote(env[fakemcp.EnvMode]))
	if err := os.WriteFile(config, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	tokens := filepath.Join(dir, "tokens.txt")
	if err := os.WriteFile(tokens, []byte("# operators\ntoken-one\n\ntoken-two\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startBinary(t, config, "-auth-tokens-file", tokens)
	// The default destination's URL is printed with the others at start.
	waitFor(t, 10*time.Second, "the default URL on stdout", func() bool {
		return strings.Contains(p.logs.String(), "default (notes): "+p.base+"/mcp\n")
	})
	get := func(path, token string) (int, []byte) {
		req, _ := http.NewRequest(http.MethodGet, p.base+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	if code, _ := get("/tools/list", ""); code != 401 {
		t.Fatalf("/tools/list without a token: %d", code)
	}
	var listed struct {
		Tools []struct{ Name, Destination string }
	}
	waitFor(t, 10*time.Second, "the prestarted child's tools", func() bool {
		_, b := get("/tools/list", "token-two")
		return json.Unmarshal(b, &listed) == nil && len(listed.Tools) > 0
	})
	var names []string
	for _, tl := range listed.Tools {
		names = append(names, tl.Name+"@"+tl.Destination)
	}
	if strings.Join(names, ",") != "search@notes,fetch@notes" {
		t.Fatalf("filtered catalogue: %v", names)
	}
	c := newClient(t, p.base+"/mcp")
	auth := []string{"Authorization", "Bearer token-one"}
	r := c.post(initBody, auth...)
	if r.status != 200 {
		t.Fatalf("initialize at /mcp: %d %s", r.status, r.body)
	}
	c.sid = r.header.Get("Mcp-Session-Id")
	r = c.post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"crash","arguments":{}}}`, auth...)
	if m := decode(t, r.body); r.status != 200 || m.Error == nil || !strings.Contains(m.Error.Message, "crash") {
		t.Fatalf("hidden tool: %d %s", r.status, r.body)
	}
	r = c.post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search","arguments":{"query":"q"}}}`, auth...)
	if r.status != 200 || !strings.Contains(string(r.body), "About q") {
		t.Fatalf("search after the hidden call (the child must be alive): %d %s", r.status, r.body)
	}
	if code, b := get("/healthz", ""); code != 200 || !strings.Contains(string(b), `"running"`) {
		t.Fatalf("/healthz: %d %s", code, b)
	}
	if strings.Contains(p.logs.String(), "token-one") || strings.Contains(p.logs.String(), "token-two") {
		t.Fatalf("a token reached the logs")
	}
}
