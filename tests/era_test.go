//go:build unix

package tests

// Children of the 2026-07-28 era (issue 38): the bridge asks a new child
// server/discover first and speaks 2026-07-28 to a child that answers it
// (dual-era or 2026-only); a 2025 child is untouched; 'era:' forces
// either.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

// TestEraDiscovery: through the real binary, a dual-era child and a
// 2026-only one are served and /healthz?verbose says they are spoken to in
// 2026-07-28; with 'era: 2025' the dual child is not asked (it says 2025);
// a 2025 child (server-everything) is served as always; 'era: 2026' on it
// fails its start, saying why and what to do; 'era: 2025' on the 2026-only
// child names the fix.
func TestEraDiscovery(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "destinations.yaml")
	yaml := "destinations:\n  only2026:\n" + tsV2Server(t, "reject") + "  dual:\n" + tsV2Server(t, "dual") +
		"  asked2025:\n" + tsV2Server(t, "dual") + "    era: \"2025\"\n" + fmt.Sprintf("  everything:\n    command: %q\n", everythingBin(t)) +
		fmt.Sprintf("  forced:\n    command: %q\n    era: \"2026\"\n", everythingBin(t)) +
		"  only2026as2025:\n" + tsV2Server(t, "reject") + "    era: \"2025\"\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startBinary(t, cfg)
	dual := newClient(t, p.base+"/dual/mcp")
	dual.initialize()
	if r := dual.callTool("1", "echo", map[string]any{"message": "from a dual child"}); !strings.Contains(string(r.body), "from a dual child") {
		t.Errorf("dual: %d %s", r.status, r.body)
	}
	for _, name := range []string{"asked2025", "everything", "only2026"} {
		c := newClient(t, p.base+"/"+name+"/mcp")
		c.initialize()
		if r := c.callTool("1", "echo", map[string]any{"message": "from " + name}); !strings.Contains(string(r.body), "from "+name) {
			t.Errorf("%s: %d %s", name, r.status, r.body)
		}
	}
	health := verboseHealth(t, p)
	for name, want := range map[string]string{"dual": "2026-07-28", "only2026": "2026-07-28", "asked2025": "2025", "everything": "2025"} {
		if got := health[name].ChildSpeaks; got != want {
			t.Errorf("%s's child speaks %q; want %q", name, got, want)
		}
	}
	for name, want := range map[string]string{"forced": "did not answer server/discover for MCP 2026-07-28", "only2026as2025": "set era to auto"} {
		c := newClient(t, p.base+"/"+name+"/mcp")
		r, _ := c.do(http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
		if r.status == 200 || !strings.Contains(string(r.body), want) {
			t.Errorf("%s: %d %s; want it refused, saying %q", name, r.status, r.body, want)
		}
	}
}

// TestModernChild: a child that speaks MCP 2026-07-28 only is spoken to in
// it. A 2025 session's calls reach it with the session's envelope; its
// input_required answers become the session's own sampling and elicitation
// requests on the call's POST stream, whose answers go back as the retry.
// A 2026-07-28 client gets input_required as it is, its requestState
// sealed to it: another client's retry with it is refused, its own is
// answered.
func TestModernChild(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "destinations.yaml")
	yaml := "destinations:\n  only2026:\n" + tsV2Server(t, "reject")
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startBinary(t, cfg)
	url := p.base + "/only2026/mcp"
	c := newClient(t, url)
	r := c.post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"sampling":{},"elicitation":{}},"clientInfo":{"name":"t","version":"1"}}}`)
	c.sid = r.header.Get("Mcp-Session-Id")
	if r.status != 200 || c.sid == "" {
		t.Fatalf("initialize: %d %s\n%s", r.status, r.body, p.logs.String())
	}
	if r := c.callTool("1", "echo", map[string]any{"message": "plain"}); !strings.Contains(string(r.body), "plain") {
		t.Fatalf("echo: %d %s", r.status, r.body)
	}
	st := openSSE(t, http.MethodPost, c.url, c.sid, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"sample","arguments":{"prompt":"hi"}}}`)
	var req rpc
	for req.Method == "" {
		ev := st.event(t, 10*time.Second)
		if len(ev.data) > 0 {
			req = decode(t, ev.data)
		}
	}
	if req.Method != "sampling/createMessage" || !strings.Contains(string(req.Params), "hi") {
		t.Fatalf("want the child's sampling request on the POST stream, got %+v", req)
	}
	if r := c.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"role":"assistant","content":{"type":"text","text":"pong"},"model":"m"}}`, req.ID)); r.status != http.StatusAccepted {
		t.Fatalf("answer: %d %s", r.status, r.body)
	}
	rest := st.rest(t, 10*time.Second)
	if len(rest) != 1 || !strings.Contains(string(rest[0].data), "sampled: pong") {
		t.Fatalf("want the call's answer with the sampled text, got %d events: %+v", len(rest), rest)
	}

	// Two rounds, the second resumed with the child's own requestState:
	// the session answers both, and the call ends with what it sampled.
	st = openSSE(t, http.MethodPost, c.url, c.sid, `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"twostep","arguments":{"prompt":"two"}}}`)
	for _, want := range []string{"sampling/createMessage", "elicitation/create"} {
		req = rpc{}
		for req.Method == "" {
			if ev := st.event(t, 10*time.Second); len(ev.data) > 0 {
				req = decode(t, ev.data)
			}
		}
		if req.Method != want {
			t.Fatalf("want %s on the POST stream, got %+v", want, req)
		}
		answer := `{"role":"assistant","content":{"type":"text","text":"first"},"model":"m"}`
		if want == "elicitation/create" {
			answer = `{"action":"accept","content":{"ok":true}}`
		}
		if r := c.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, req.ID, answer)); r.status != http.StatusAccepted {
			t.Fatalf("answer: %d %s", r.status, r.body)
		}
	}
	if rest := st.rest(t, 10*time.Second); len(rest) != 1 || !strings.Contains(string(rest[0].data), "twostep: first then accept") {
		t.Fatalf("want the two-step call's answer, got %+v", rest)
	}

	// A 2026-07-28 client gets input_required as it is, with the child's
	// requestState sealed to it; the retry resumes the child's call.
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"m","version":"1"},"io.modelcontextprotocol/clientCapabilities":{"sampling":{},"elicitation":{}}}`
	r = modernCall(t, url, "7", "tools/call", `{"name":"twostep","arguments":{"prompt":"modern"},`+meta+`}`)
	res := decode(t, r.body).Result
	var ir struct {
		ResultType    string                     `json:"resultType"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  string                     `json:"requestState"`
	}
	if err := json.Unmarshal(res, &ir); err != nil || ir.ResultType != "input_required" || ir.InputRequests["s"] == nil || ir.RequestState == "" || ir.RequestState == "step1" {
		t.Fatalf("modern twostep: %d %s; want input_required with a sealed requestState", r.status, r.body)
	}
	sampled := `"inputResponses":{"s":{"role":"assistant","content":{"type":"text","text":"second"},"model":"m"}}`
	tampered := ir.RequestState[:len(ir.RequestState)-2] + "AA"
	modernError(t, "a tampered requestState", modernCall(t, url, "8", "tools/call", `{"name":"twostep","arguments":{"prompt":"modern"},`+sampled+`,"requestState":"`+tampered+`",`+meta+`}`), http.StatusBadRequest, -32602, "8")
	modernError(t, "a requestState for other arguments", modernCall(t, url, "8", "tools/call", `{"name":"twostep","arguments":{"prompt":"other"},`+sampled+`,"requestState":"`+ir.RequestState+`",`+meta+`}`), http.StatusBadRequest, -32602, "8")
	r = modernCall(t, url, "9", "tools/call", `{"name":"twostep","arguments":{"prompt":"modern"},`+sampled+`,"requestState":"`+ir.RequestState+`",`+meta+`}`)
	ir.RequestState = ""
	if err := json.Unmarshal(decode(t, r.body).Result, &ir); err != nil || ir.ResultType != "input_required" || ir.InputRequests["c"] == nil || !strings.Contains(string(ir.InputRequests["c"]), "Keep second?") {
		t.Fatalf("modern twostep, round 2: %d %s", r.status, r.body)
	}
	r = modernCall(t, url, "10", "tools/call", `{"name":"twostep","arguments":{"prompt":"modern"},"inputResponses":{"c":{"action":"decline"}},"requestState":"`+ir.RequestState+`",`+meta+`}`)
	if !strings.Contains(string(r.body), "twostep: second then decline") || !strings.Contains(string(r.body), `"resultType":"complete"`) {
		t.Fatalf("modern twostep, round 3: %d %s", r.status, r.body)
	}
	// MRTR without requestState: the answers alone resume it.
	r = modernCall(t, url, "11", "tools/call", `{"name":"sample","arguments":{"prompt":"p"},"inputResponses":{"sample":{"role":"assistant","content":{"type":"text","text":"ahead"},"model":"m"}},`+meta+`}`)
	if !strings.Contains(string(r.body), "sampled: ahead") {
		t.Fatalf("modern sample with its answer: %d %s", r.status, r.body)
	}
}
