//go:build unix

package tests

// Children of the 2026-07-28 era (issue 38, in progress): the bridge asks
// a new child server/discover first; a dual-era child is served (in the
// 2025 dialect, for now), a 2026-only one is refused for good with what to
// do, and a 2025 child is untouched.

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// tsV2Server is tests/servers/ts-v2-stdio.mjs's destination: "reject"
// (2026-only) or "dual".
func tsV2Server(t *testing.T, mode string) string {
	t.Helper()
	everythingBin(t) // installs tests/node_modules on first use
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node here")
	}
	script, err := filepath.Abs(filepath.Join("servers", "ts-v2-stdio.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("    command: %q\n    args: [%q, %q]\n", node, script, mode)
}

// TestEraDiscovery: through the real binary, a dual-era child is served and
// /healthz?verbose says it speaks 2026-07-28 too; with 'era: 2025' the same
// child is not asked (it says 2025); a 2025 child (server-everything) is
// served as always; a 2026-only child is refused, saying why and what to do.
func TestEraDiscovery(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "destinations.yaml")
	yaml := "destinations:\n  only2026:\n" + tsV2Server(t, "reject") + "  dual:\n" + tsV2Server(t, "dual") +
		"  asked2025:\n" + tsV2Server(t, "dual") + "    era: \"2025\"\n" + fmt.Sprintf("  everything:\n    command: %q\n", everythingBin(t))
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startBinary(t, cfg)
	dual := newClient(t, p.base+"/dual/mcp")
	dual.initialize()
	if r := dual.callTool("1", "echo", map[string]any{"message": "from a dual child"}); !strings.Contains(string(r.body), "from a dual child") {
		t.Errorf("dual: %d %s", r.status, r.body)
	}
	for _, name := range []string{"asked2025", "everything"} {
		c := newClient(t, p.base+"/"+name+"/mcp")
		c.initialize()
		if r := c.callTool("1", "echo", map[string]any{"message": "from " + name}); !strings.Contains(string(r.body), "from "+name) {
			t.Errorf("%s: %d %s", name, r.status, r.body)
		}
	}
	health := verboseHealth(t, p)
	for name, want := range map[string]string{"dual": "2025 2026-07-28", "asked2025": "2025", "everything": "2025"} {
		if got := health[name].ChildSpeaks; got != want {
			t.Errorf("%s's child speaks %q; want %q", name, got, want)
		}
	}
	only := newClient(t, p.base+"/only2026/mcp")
	r, _ := only.do(http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if r.status == 200 || !strings.Contains(string(r.body), "it speaks MCP 2026-07-28 only") {
		t.Errorf("2026-only: %d %s; want it refused, saying why", r.status, r.body)
	}
}
