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

	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
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
	sampledOnPostStream(t, c, "sample", "hi", "pong")

	// Two rounds, the second resumed with the child's own requestState:
	// the session answers both, and the call ends with what it sampled.
	st := openSSE(t, http.MethodPost, c.url, c.sid, `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"twostep","arguments":{"prompt":"two"}}}`)
	for _, want := range []string{"sampling/createMessage", "elicitation/create"} {
		var req rpc
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

// TestModernChildListen: list changes and resource updates of a 2026 child
// come from the one listen the bridge holds with it, and reach whoever
// asked: a 2025 session that subscribed to mem://counter hears of it on its
// GET stream and another session (a bystander) does not; both hear of the
// tools' change; a 2026 client's listen stream hears of both with its own
// subscription id, and still hears of the resource after the 2025 session
// unsubscribed, which then hears no more.
func TestModernChildListen(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "destinations.yaml")
	if err := os.WriteFile(cfg, []byte("destinations:\n  only2026:\n"+tsV2Server(t, "reject")), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startBinary(t, cfg)
	url := p.base + "/only2026/mcp"
	a, b := newClient(t, url), newClient(t, url)
	a.initialize()
	b.initialize()
	getA := openSSE(t, http.MethodGet, url, a.sid, "")
	getB := openSSE(t, http.MethodGet, url, b.sid, "")
	if r := a.post(`{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"mem://counter"}}`); r.status != 200 || !strings.Contains(string(r.body), `"result":{}`) {
		t.Fatalf("subscribe: %d %s", r.status, r.body)
	}
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"m","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	listen := openSSE(t, http.MethodPost, url, "", `{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true,"resourceSubscriptions":["mem://counter"]},`+meta+`}}`,
		"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "subscriptions/listen")
	if ack := listen.next(t, "notifications/subscriptions/acknowledged", 10*time.Second); !strings.Contains(string(ack.Params), "mem://counter") {
		t.Fatalf("acknowledgment %s", ack.Params)
	}
	bump := func() {
		t.Helper()
		if r := b.callTool("3", "bump", map[string]any{}); !strings.Contains(string(r.body), "counter") {
			t.Fatalf("bump: %d %s", r.status, r.body)
		}
	}
	bump()
	if m := getA.next(t, "notifications/resources/updated", 10*time.Second); !strings.Contains(string(m.Params), "mem://counter") || strings.Contains(string(m.Params), "subscriptionId") {
		t.Errorf("a's update %s: want the uri, without the bridge's subscription id", m.Params)
	}
	if m := listen.next(t, "notifications/resources/updated", 10*time.Second); !strings.Contains(string(m.Params), `"io.modelcontextprotocol/subscriptionId":"L"`) {
		t.Errorf("the listen's update %s: want its own subscription id", m.Params)
	}
	getB.none(t, "notifications/resources/updated", 300*time.Millisecond)
	if r := b.callTool("4", "addtool", map[string]any{"name": "added"}); !strings.Contains(string(r.body), "added added") {
		t.Fatalf("addtool: %d %s", r.status, r.body)
	}
	for _, st := range []*stream{getA, getB, listen} {
		st.next(t, "notifications/tools/list_changed", 10*time.Second)
	}
	waitFor(t, 10*time.Second, "the new tool in tools/list", func() bool {
		return strings.Contains(string(a.post(`{"jsonrpc":"2.0","id":5,"method":"tools/list"}`).body), `"name":"added"`)
	})
	if r := a.post(`{"jsonrpc":"2.0","id":6,"method":"resources/unsubscribe","params":{"uri":"mem://counter"}}`); r.status != 200 {
		t.Fatalf("unsubscribe: %d %s", r.status, r.body)
	}
	bump()
	listen.next(t, "notifications/resources/updated", 10*time.Second)
	getA.none(t, "notifications/resources/updated", 300*time.Millisecond)
}

// TestModernChildSessionless: a 2025 request without a session cannot be
// asked anything: a 2026 child reads no client capability in its envelope,
// and refuses a call that needs one (-32021, naming it); its other calls
// are served.
func TestModernChildSessionless(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "destinations.yaml")
	if err := os.WriteFile(cfg, []byte("destinations:\n  only2026:\n"+tsV2Server(t, "reject")), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startBinary(t, cfg)
	url := p.base + "/only2026/mcp"
	if r := mustRequest(t, http.MethodPost, url, "", toolCallBody(`1`, "echo", map[string]string{"message": "no session"})); !strings.Contains(string(r.body), "no session") {
		t.Fatalf("sessionless echo: %d %s", r.status, r.body)
	}
	r := mustRequest(t, http.MethodPost, url, "", toolCallBody(`2`, "sample", map[string]string{"prompt": "p"}), "Accept", "application/json, text/event-stream")
	if m := decode(t, r.body); m.Error == nil || m.Error.Code != -32021 || !strings.Contains(string(r.body), `"requiredCapabilities":{"sampling"`) {
		t.Fatalf("sessionless sample: %d %s; want an error saying why", r.status, r.body)
	}
}

// TestModernChildServedAsOthers: a 2026 child is served as a 2025 one is:
// its tool filter hides a tool and refuses its call without the child; in a
// profile beside a 2025 child its asking tool reaches a 2025 session's
// POST stream through the profile; a call in flight when it exits is
// answered at once and the next call finds it restarted (and spoken to in
// 2026-07-28 again); a call past the request timeout is answered 504-style
// and cancelled at the child, which says so.
func TestModernChildServedAsOthers(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "destinations.yaml")
	yaml := "destinations:\n  only2026:\n" + tsV2Server(t, "reject") + "    tools: {deny: [confirm]}\n" +
		fmt.Sprintf("  everything:\n    command: %q\n", everythingBin(t)) +
		"profiles:\n  both: {destinations: [only2026, everything]}\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startBinary(t, cfg, "-request-timeout", "2s")
	url := p.base + "/only2026/mcp"
	c := newClient(t, url)
	c.initialize()

	// The tool filter.
	if r := c.post(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`); strings.Contains(string(r.body), `"confirm"`) || !strings.Contains(string(r.body), `"sample"`) {
		t.Errorf("tools/list: %s; want confirm hidden", r.body)
	}
	if r := c.callTool("2", "confirm", map[string]any{"what": "x"}); !strings.Contains(string(r.body), `"error"`) {
		t.Errorf("a hidden tool's call: %d %s; want it refused", r.status, r.body)
	}

	// The profile: its asking tool through the fan, to a 2025 session.
	pc := newClient(t, p.base+"/p/both/mcp")
	pc.initialize()
	sampledOnPostStream(t, pc, "only2026__sample", "fan", "via fan")
	if r := pc.callTool("4", "everything__echo", map[string]any{"message": "2025 member"}); !strings.Contains(string(r.body), "2025 member") {
		t.Errorf("the 2025 member: %d %s", r.status, r.body)
	}
	// A 2026-07-28 client through the profile: input_required as it is,
	// its sealed requestState resuming the member's call.
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"m","version":"1"},"io.modelcontextprotocol/clientCapabilities":{"sampling":{},"elicitation":{}}}`
	r := modernCall(t, pc.url, "40", "tools/call", `{"name":"only2026__twostep","arguments":{"prompt":"p"},`+meta+`}`)
	var ir struct {
		ResultType   string `json:"resultType"`
		RequestState string `json:"requestState"`
	}
	if err := json.Unmarshal(decode(t, r.body).Result, &ir); err != nil || ir.ResultType != "input_required" || ir.RequestState == "" {
		t.Fatalf("a 2026 call through the profile: %d %s", r.status, r.body)
	}
	r = modernCall(t, pc.url, "41", "tools/call", `{"name":"only2026__twostep","arguments":{"prompt":"p"},"inputResponses":{"s":{"role":"assistant","content":{"type":"text","text":"profiled"},"model":"m"}},"requestState":"`+ir.RequestState+`",`+meta+`}`)
	if !strings.Contains(string(r.body), "Keep profiled?") {
		t.Errorf("its retry through the profile: %d %s", r.status, r.body)
	}

	// A call past the request timeout: cancelled at the child.
	if r := c.callTool("5", "hang", map[string]any{}); r.status != http.StatusGatewayTimeout {
		t.Errorf("hang: %d %s; want the request timeout's 504", r.status, r.body)
	}
	waitFor(t, 10*time.Second, "the child to say the hung call was cancelled", func() bool { return strings.Contains(p.logs.String(), "hang: cancelled") })

	// The child exits with a call in flight.
	pid := destPID(t, p, "only2026")
	if r := c.callTool("6", "exit", map[string]any{}); r.status != http.StatusServiceUnavailable || !strings.Contains(string(r.body), "exit status 3") {
		t.Errorf("exit: %d %s; want 503 for the call in flight, saying the child exited", r.status, r.body)
	}
	waitFor(t, 20*time.Second, "a call on the restarted child", func() bool {
		r := c.callTool("7", "echo", map[string]any{"message": "again"})
		return strings.Contains(string(r.body), "again")
	})
	if got := verboseHealth(t, p)["only2026"]; got.PID == pid || got.ChildSpeaks != "2026-07-28" {
		t.Errorf("after the restart: pid %d (was %d), speaks %q", got.PID, pid, got.ChildSpeaks)
	}
}

// TestCheckProbe: -check -probe starts each shared destination once and
// says which protocol its child speaks and how many tools it lists; one
// that does not start is a warning, not a failure; no child is left.
func TestCheckProbe(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "destinations.yaml")
	yaml := "destinations:\n  only2026:\n" + tsV2Server(t, "reject") + fmt.Sprintf("  everything:\n    command: %q\n", everythingBin(t)) +
		"  broken:\n    command: /bin/false\n    start_timeout: 5s\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bridgeBinary(t), "-check", "-probe", "-config", cfg).CombinedOutput()
	for _, want := range []string{"destination only2026: its child speaks MCP 2026-07-28; 9 tool(s)", "destination everything: its child speaks MCP 2025", `destination "broken" did not start`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("-check -probe: %v\n%s\nwant %q", err, out, want)
		}
	}
	if err != nil {
		t.Errorf("-check -probe failed: %v\n%s", err, out)
	}
	// Without -probe nothing is started, and nothing is said of it.
	out, err = exec.Command(bridgeBinary(t), "-check", "-config", cfg).CombinedOutput()
	if err != nil || strings.Contains(string(out), "speaks") {
		t.Errorf("-check: %v\n%s", err, out)
	}
}

// TestModernChildGoSDK: a stdio server built on the go-sdk, which serves
// both eras, is spoken to in 2026-07-28: a 2025 session's call of its
// sampling tool becomes the session's sampling request, whose answer the
// server gets back by MRTR; a 2026-07-28 request gets input_required.
func TestModernChildGoSDK(t *testing.T) {
	p := startBinary(t, fakeDestinations(t, map[string]string{"gosdk": fakemcp.ModeGoSDK}))
	url := p.base + "/gosdk/mcp"
	c := newClient(t, url)
	c.initialize()
	if r := c.callTool("1", "echo", map[string]any{"message": "go"}); !strings.Contains(string(r.body), `"text":"go"`) {
		t.Fatalf("echo: %d %s\n%s", r.status, r.body, p.logs.String())
	}
	if speaks := verboseHealth(t, p)["gosdk"].ChildSpeaks; speaks != "2026-07-28" {
		t.Errorf("the go-sdk child is spoken to in %q", speaks)
	}
	sampledOnPostStream(t, c, "sample", "gopher", "from go")
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"m","version":"1"},"io.modelcontextprotocol/clientCapabilities":{"sampling":{}}}`
	r := modernCall(t, url, "3", "tools/call", `{"name":"sample","arguments":{"prompt":"p"},`+meta+`}`)
	if !strings.Contains(string(r.body), `"resultType":"input_required"`) {
		t.Fatalf("a 2026-07-28 call: %d %s", r.status, r.body)
	}
	r = modernCall(t, url, "4", "tools/call", `{"name":"sample","arguments":{"prompt":"p"},"inputResponses":{"s":{"role":"assistant","content":{"type":"text","text":"again"},"model":"m"}},`+meta+`}`)
	if !strings.Contains(string(r.body), "sampled: again") {
		t.Fatalf("its retry: %d %s", r.status, r.body)
	}
}

// sampledOnPostStream calls tool (a sampling tool of a 2026 child) with
// prompt in c's 2025 session on a POST stream: the child's sampling
// request must come on that stream carrying the prompt; answered with
// answer, the call must end with "sampled: " and it.
func sampledOnPostStream(t *testing.T, c *client, tool, prompt, answer string) {
	t.Helper()
	st := openSSE(t, http.MethodPost, c.url, c.sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":%q,"arguments":{"prompt":%q}}}`, tool, prompt))
	var req rpc
	for req.Method == "" {
		if ev := st.event(t, 10*time.Second); len(ev.data) > 0 {
			req = decode(t, ev.data)
		}
	}
	if req.Method != "sampling/createMessage" || !strings.Contains(string(req.Params), prompt) {
		t.Fatalf("%s: want the child's sampling request on the POST stream, got %+v", tool, req)
	}
	if r := c.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"role":"assistant","content":{"type":"text","text":%q},"model":"m"}}`, req.ID, answer)); r.status != http.StatusAccepted {
		t.Fatalf("%s: the answer: %d %s", tool, r.status, r.body)
	}
	if rest := st.rest(t, 10*time.Second); len(rest) != 1 || !strings.Contains(string(rest[0].data), "sampled: "+answer) {
		t.Fatalf("%s: want the call's answer with the sampled text, got %d events: %+v", tool, len(rest), rest)
	}
}
