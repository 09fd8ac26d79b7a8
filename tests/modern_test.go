//go:build unix

package tests

// The MCP 2026-07-28 era (no session): server/discover and calls, both eras on one child,
// -protocol-eras 2025, subscriptions/listen, sessionless requests, cache hints, MRTR rounds
// (input_required, retries, timeouts, cancellation, limits), error codes and elicitation modes.

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stelae-bridge/stelae-bridge/bridge"
	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

func TestModernRequests(t *testing.T) {
	b := fakeBridge(t, bridge.Options{})
	url := b.url("fake")

	// server/discover, with no session and no initialize, starts the child.
	r := modernCall(t, url, `"d1"`, "server/discover", "{"+modernMeta+"}")
	var disc struct {
		Result struct {
			ResultType        string                     `json:"resultType"`
			SupportedVersions []string                   `json:"supportedVersions"`
			Capabilities      json.RawMessage            `json:"capabilities"`
			Meta              map[string]json.RawMessage `json:"_meta"`
		} `json:"result"`
		ID json.RawMessage `json:"id"`
	}
	if r.status != 200 || json.Unmarshal(r.body, &disc) != nil || string(disc.ID) != `"d1"` || !slices.Contains(disc.Result.SupportedVersions, "2026-07-28") ||
		!slices.Contains(disc.Result.SupportedVersions, "2025-11-25") || !strings.Contains(string(disc.Result.Capabilities), "tools") || disc.Result.Meta["io.modelcontextprotocol/serverInfo"] == nil {
		t.Fatalf("discover: %d %s", r.status, r.body)
	}
	if r.header.Get("Mcp-Session-Id") != "" || r.header.Get("Content-Type") != "application/json" {
		t.Errorf("discover headers: %v", r.header)
	}
	// tools/call: the child gets the params without the reserved _meta keys,
	// the answer is marked complete.
	r = modernCall(t, url, "7", "tools/call", `{"name":"params","arguments":{"a":"<&>"},`+strings.Replace(modernMeta, `"_meta":{`, `"_meta":{"mine":1,`, 1)+`}`)
	res, ok := checkResult(t, "modern tools/call", r, "", "7")
	if !ok {
		t.FailNow()
	}
	var result struct {
		ResultType string `json:"resultType"`
	}
	_ = json.Unmarshal(res, &result)
	got := textOf(res)
	if result.ResultType != "complete" || strings.Contains(got, "io.modelcontextprotocol") || !strings.Contains(got, `"mine":1`) || !strings.Contains(got, `"a":"<&>"`) {
		t.Errorf("modern call: resultType %q, the child got %s", result.ResultType, got)
	}
	// Base64 sentinel in Mcp-Name.
	r = modernCall(t, url, "8", "tools/call", `{"name":"echo","arguments":{"text":"b64"},`+modernMeta+`}`, "Mcp-Name", "=?base64?"+base64.StdEncoding.EncodeToString([]byte("echo"))+"?=")
	if _, ok := checkResult(t, "base64 Mcp-Name", r, "", "8"); !ok {
		t.Errorf("base64 Mcp-Name refused")
	}

	// The validation ladder, ids preserved.
	modernError(t, "missing client info", modernCall(t, url, "1", "tools/list", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`), 400, -32602, "1")
	modernError(t, "version header mismatch", modernCall(t, url, "2", "tools/list", "{"+modernMeta+"}", "MCP-Protocol-Version", "2025-11-25"), 400, -32020, "2")
	modernError(t, "method header mismatch", modernCall(t, url, "3", "tools/list", "{"+modernMeta+"}", "Mcp-Method", "tools/call"), 400, -32020, "3")
	modernError(t, "name header mismatch", modernCall(t, url, "4", "tools/call", `{"name":"echo",`+modernMeta+`}`, "Mcp-Name", "other"), 400, -32020, "4")
	unsupported := modernCall(t, url, `"v"`, "tools/list", "{"+strings.Replace(modernMeta, "2026-07-28", "2099-01-01", 1)+"}", "MCP-Protocol-Version", "2099-01-01")
	modernError(t, "unsupported version", unsupported, 400, -32022, `"v"`)
	if !strings.Contains(string(unsupported.body), `"supported":[`) || !strings.Contains(string(unsupported.body), `"requested":"2099-01-01"`) {
		t.Errorf("-32022 without data.supported and data.requested: %s", unsupported.body)
	}
	for _, method := range []string{"initialize", "ping", "logging/setLevel", "resources/subscribe", "no/such"} {
		modernError(t, method, modernCall(t, url, "9", method, "{"+modernMeta+"}"), 404, -32601, "9")
	}
}

// TestBothErasAtOnce: 2025 sessions and modern requests on one child at
// the same time, each answer to its caller.
func TestBothErasAtOnce(t *testing.T) {
	b := fakeBridge(t, bridge.Options{MaxSessions: 8})
	url := b.url("fake")
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		c := newClient(t, url)
		c.initialize()
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				text := fmt.Sprintf("s%d-%d", w, i)
				r, err := c.do(http.MethodPost, toolCallBody(fmt.Sprint(i), "echo", map[string]string{"text": text}))
				if err != nil || r.status != 200 || !strings.Contains(string(r.body), text) {
					t.Errorf("2025 session %d call %d: %v %d %s", w, i, err, r.status, r.body)
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				text := fmt.Sprintf("m%d-%d", w, i)
				body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":%q},%s}}`, i, text, modernMeta)
				r, err := request(http.MethodPost, url, "", body, "MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "echo")
				if err != nil || r.status != 200 || !strings.Contains(string(r.body), text) || !strings.Contains(string(r.body), `"resultType":"complete"`) {
					t.Errorf("modern worker %d call %d: %v %d %s", w, i, err, r.status, r.body)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// TestProtocolEras2025: with -protocol-eras 2025 a modern probe gets what a
// legacy server answers (4xx, its id, -32601), and initialize works.
func TestProtocolEras2025(t *testing.T) {
	b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{opts: bridge.Options{ProtocolEras: "2025"}})
	modernError(t, "probe", modernCall(t, b.url("fake"), `"p"`, "server/discover", "{"+modernMeta+"}"), 404, -32601, `"p"`)
	c := newClient(t, b.url("fake"))
	c.initialize()
}

// TestModernListen: subscriptions/listen acknowledges first with the
// honoured subset, then delivers only the requested kinds, tagged with the
// subscription id.
func TestModernListen(t *testing.T) {
	b := fakeBridge(t, bridge.Options{})
	url := b.url("fake")
	body := `{"jsonrpc":"2.0","id":"sub-1","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true,"promptsListChanged":true},` + modernMeta + `}}`
	st := openSSE(t, http.MethodPost, url, "", body, "MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "subscriptions/listen")
	ack := st.event(t, 10e9)
	var a struct {
		Method string `json:"method"`
		Params struct {
			Meta          map[string]json.RawMessage `json:"_meta"`
			Notifications map[string]any             `json:"notifications"`
		} `json:"params"`
	}
	if json.Unmarshal(ack.data, &a) != nil || a.Method != "notifications/subscriptions/acknowledged" || string(a.Params.Meta["io.modelcontextprotocol/subscriptionId"]) != `"sub-1"` ||
		a.Params.Notifications["toolsListChanged"] != true || a.Params.Notifications["promptsListChanged"] != nil {
		t.Fatalf("acknowledgment: %s", ack.data)
	}
	// A 2025 session makes the child announce a tools change.
	c := newClient(t, url)
	c.initialize()
	if r := c.callTool(`1`, "list_changed", nil); r.status != 200 {
		t.Fatalf("list_changed: %d %s", r.status, r.body)
	}
	m := st.next(t, "notifications/tools/list_changed", 10e9)
	var meta struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(m.Params, &meta) != nil || string(meta.Meta["io.modelcontextprotocol/subscriptionId"]) != `"sub-1"` {
		t.Errorf("list_changed on the listen stream without its subscription id: %s", m.Params)
	}
}

// TestSessionlessRequests: a 2025-style request without Mcp-Session-Id is
// served on the destination's child (-sessionless serve, the default),
// its progress on its own POST stream; with reject it gets 400.
func TestSessionlessRequests(t *testing.T) {
	b := fakeBridge(t, bridge.Options{})
	r := mustRequest(t, http.MethodPost, b.url("fake"), "", toolCallBody(`"s1"`, "echo", map[string]string{"text": "no session"}))
	if _, ok := checkResult(t, "sessionless call", r, "", `"s1"`); !ok || !strings.Contains(string(r.body), "no session") || strings.Contains(string(r.body), "resultType") {
		t.Errorf("sessionless call: %d %s", r.status, r.body)
	}
	if r.header.Get("Mcp-Session-Id") != "" {
		t.Error("a sessionless request was given a session")
	}
	st := openSSE(t, http.MethodPost, b.url("fake"), "", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"progress","arguments":{"steps":3},"_meta":{"progressToken":"pt"}}}`)
	if p := st.next(t, "notifications/progress", 10e9); !strings.Contains(string(p.Params), `"pt"`) {
		t.Errorf("progress of a sessionless call: %s", p.Params)
	}
	rej := fakeBridge(t, bridge.Options{Sessionless: "reject"})
	if r := mustRequest(t, http.MethodPost, rej.url("fake"), "", toolCallBody(`1`, "echo", map[string]string{"text": "x"})); r.status != 400 {
		t.Errorf("-sessionless reject: %d", r.status)
	}
}

// TestSessionlessNotifications: a notification without a session (a
// 2026-07-28 client's, a stateless 2025 client's) is accepted and not
// forwarded to the shared child; where sessionless serving is off it is
// refused as before.
func TestSessionlessNotifications(t *testing.T) {
	const note = `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`
	modern := []string{"MCP-Protocol-Version", "2026-07-28"}
	for _, tc := range []struct {
		name     string
		opts     bridge.Options
		isolated bool
		headers  []string
		status   int
	}{
		{"modern", bridge.Options{}, false, modern, http.StatusAccepted},
		{"modern, sessionless reject", bridge.Options{Sessionless: "reject"}, false, modern, http.StatusAccepted},
		{"2025 stateless", bridge.Options{}, false, nil, http.StatusAccepted},
		{"2025 stateless, sessionless reject", bridge.Options{Sessionless: "reject"}, false, nil, http.StatusBadRequest},
		{"modern, eras 2025, sessionless reject", bridge.Options{ProtocolEras: "2025", Sessionless: "reject"}, false, modern, http.StatusBadRequest},
		{"isolated", bridge.Options{}, true, modern, http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{opts: tc.opts, isolated: tc.isolated})
			c := newClient(t, b.url("fake"))
			c.initialize()
			r := mustRequest(t, http.MethodPost, b.url("fake"), "", note, tc.headers...)
			if r.status != tc.status {
				t.Fatalf("status %d %s; want %d", r.status, r.body, tc.status)
			}
			if r.header.Get("Mcp-Session-Id") != "" {
				t.Errorf("a sessionless notification was given a session")
			}
			if got := c.stats().Notifications; slices.Contains(got, "notifications/roots/list_changed") {
				t.Errorf("the child got the sessionless notification: %v", got)
			}
		})
	}
}

// TestModernCacheHints: list and read results and server/discover carry the
// destination's 'cache:' hints; by default "do not reuse".
func TestModernCacheHints(t *testing.T) {
	for _, tc := range []struct {
		ttl   time.Duration
		scope string
		want  string
	}{
		{0, "", `"ttlMs":0,"cacheScope":"private"`},
		{90 * time.Second, "public", `"ttlMs":90000,"cacheScope":"public"`},
	} {
		b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{cacheTTL: tc.ttl, cacheScope: tc.scope})
		for _, method := range []string{"server/discover", "tools/list"} {
			r := modernCall(t, b.url("fake"), "1", method, "{"+modernMeta+"}")
			var res struct {
				Result map[string]json.RawMessage `json:"result"`
			}
			if r.status != 200 || json.Unmarshal(r.body, &res) != nil {
				t.Fatalf("%s: %d %s", method, r.status, r.body)
			}
			if got := `"ttlMs":` + string(res.Result["ttlMs"]) + `,"cacheScope":` + string(res.Result["cacheScope"]); got != tc.want {
				t.Errorf("%s with cache %s %q: %s; want %s", method, tc.ttl, tc.scope, got, tc.want)
			}
		}
		// A call's result is not cacheable: no hints.
		r := modernCall(t, b.url("fake"), "2", "tools/call", `{"name":"echo","arguments":{"text":"x"},`+modernMeta+`}`)
		if strings.Contains(string(r.body), "ttlMs") {
			t.Errorf("tools/call result with caching hints: %s", r.body)
		}
	}
}

// TestMRTRKeepsItsRequest: a call parked for input outlives the HTTP request
// that started it, whose body's buffer is reused by the requests that
// follow; when the retry resumes it, what the call kept of the first
// request (its progress token) is intact.
func TestMRTRKeepsItsRequest(t *testing.T) {
	b := fakeBridge(t, bridge.Options{})
	url := b.url("fake")
	const token = `"token-of-the-first-request-0123456789"`
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{}},"progressToken":` + token + `}`
	args := `"arguments":{"method":"sampling/createMessage","params":"{\"messages\":[{\"role\":\"user\",\"content\":{\"type\":\"text\",\"text\":\"hi\"}}],\"maxTokens\":5}"}`
	key, state := inputRequired(t, modernCall(t, url, `"first-request-id-0123456789"`, "tools/call", `{"name":"ask",`+args+`,`+meta+`}`))
	// Other requests, with bodies as long, take the pooled buffers.
	for i := range 20 {
		text := strings.Repeat("Z", 300)
		if r := modernCall(t, url, fmt.Sprint(100+i), "tools/call", `{"name":"echo","arguments":{"text":"`+text+`"},`+modernMeta+`}`); r.status != 200 {
			t.Fatalf("echo %d: %d %s", i, r.status, r.body)
		}
	}
	retry := fmt.Sprintf(`{"name":"ask",%s,"inputResponses":{%q:{"role":"assistant","content":{"type":"text","text":"answered"},"model":"m"}},"requestState":%q,%s}`,
		args, key, state, meta)
	s := openSSE(t, http.MethodPost, url, "", fmt.Sprintf(`{"jsonrpc":"2.0","id":"retry","method":"tools/call","params":%s}`, retry),
		"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "ask")
	p := s.next(t, "notifications/progress", 10*time.Second)
	if got := string(jsonMember(p.Params, "progressToken")); got != token {
		t.Errorf("progress after the retry carries token %s; want %s", got, token)
	}
	if ans := s.next(t, "", 10*time.Second); string(ans.ID) != `"retry"` || !strings.Contains(string(ans.Result), "answered") {
		t.Errorf("the retry's answer: id %s result %s", ans.ID, ans.Result)
	}
}

// TestModernUndeclaredInput: a child's request for input the 2026-07-28
// request did not declare. Sampling and elicitation are the call's work:
// 400/-32021 naming the capability. Roots are the client's surroundings,
// which a child may ask for of its own accord: the child gets an error and
// the call goes on to its answer.
func TestModernUndeclaredInput(t *testing.T) {
	b := fakeBridge(t, bridge.Options{})
	url := b.url("fake")
	for _, tc := range []struct {
		method, params, need string
	}{
		{"sampling/createMessage", `{\"messages\":[],\"maxTokens\":5}`, "sampling"},
		{"elicitation/create", `{\"message\":\"name?\",\"requestedSchema\":{\"type\":\"object\"}}`, "elicitation"},
		{"roots/list", ``, ""},
	} {
		t.Run(tc.method, func(t *testing.T) {
			// The call before this one ended (-32021) without the child's
			// answer: until the child answers it, its requests could be
			// that call's, and another request's would be refused.
			waitFor(t, 10*time.Second, "the child to answer the calls abandoned before", func() bool { return b.status("fake").Abandoned == 0 })
			args := fmt.Sprintf(`"arguments":{"method":%q,"params":"%s"}`, tc.method, tc.params)
			r := modernCall(t, url, "7", "tools/call", `{"name":"ask",`+args+`,`+modernMeta+`}`)
			if tc.need != "" {
				modernError(t, tc.method, r, 400, -32021, "7")
				if want := `"requiredCapabilities":{"` + tc.need + `":{}}`; !strings.Contains(string(r.body), want) {
					t.Errorf("error %s, want %s", r.body, want)
				}
				return
			}
			var res struct {
				Result struct {
					ResultType string `json:"resultType"`
					Content    []struct{ Text string }
				} `json:"result"`
			}
			if r.status != 200 || json.Unmarshal(r.body, &res) != nil || res.Result.ResultType != "complete" || len(res.Result.Content) == 0 {
				t.Fatalf("got %d %s, want the call's answer", r.status, r.body)
			}
			if txt := res.Result.Content[0].Text; !strings.Contains(txt, `"error":{`) || !strings.Contains(txt, "roots") {
				t.Errorf("the child's roots/list should have got an error naming roots; the tool says %s", txt)
			}
		})
	}
}

// TestMRTRRetryAfterTheRequestTimeout: a call parked for its client's input
// waits for the retry as long as input_wait allows, however long the
// bridge's request timeout: a person answering an elicitation may take
// longer than it. The retry then has the request timeout for the rest.
func TestMRTRRetryAfterTheRequestTimeout(t *testing.T) {
	b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{opts: bridge.Options{RequestTimeout: 500 * time.Millisecond}})
	url := b.url("fake")
	// The child is up first (a start takes longer than this request timeout).
	waitFor(t, 20*time.Second, "the child to be up", func() bool {
		return modernCall(t, url, "0", "tools/list", "{"+modernMeta+"}").status == http.StatusOK
	})
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{}}}`
	args := `"arguments":{"method":"sampling/createMessage","params":"{\"messages\":[],\"maxTokens\":5}"}`
	key, state := inputRequired(t, modernCall(t, url, "1", "tools/call", `{"name":"ask",`+args+`,`+meta+`}`))
	time.Sleep(time.Second) // the person thinks: longer than the request timeout
	retry := fmt.Sprintf(`{"name":"ask",%s,"inputResponses":{%q:{"role":"assistant","content":{"type":"text","text":"late answer"},"model":"m"}},"requestState":%q,%s}`,
		args, key, state, meta)
	r := modernCall(t, url, "2", "tools/call", retry)
	if r.status != 200 || !strings.Contains(string(r.body), "late answer") {
		t.Errorf("the retry after the request timeout: %d %s; want the call's answer", r.status, r.body)
	}
}

// TestUnretriedInputDoesNotHoldAnInteractiveDestination: on an
// interactive: true destination a 2026-07-28 call that asked for input and
// is never retried does not hold the destination: another user's call is
// answered at once (issue 21: others got 504 for the park's 2 minutes),
// and another user's call that asks gets its own input request.
func TestUnretriedInputDoesNotHoldAnInteractiveDestination(t *testing.T) {
	b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{interactive: true, opts: bridge.Options{RequestTimeout: 3 * time.Second}})
	url := b.url("fake")
	waitFor(t, 20*time.Second, "the child to be up", func() bool {
		return modernCall(t, url, "0", "tools/list", "{"+modernMeta+"}").status == http.StatusOK
	})
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{}}}`
	args := `"arguments":{"method":"sampling/createMessage","params":"{\"messages\":[],\"maxTokens\":5}"}`
	if r := modernCall(t, url, "1", "tools/call", `{"name":"ask",`+args+`,`+meta+`}`); r.status != 200 || !strings.Contains(string(r.body), "input_required") {
		t.Fatalf("first request: %d %s", r.status, r.body)
	}
	// Never retried. Another user's call:
	start := time.Now()
	r := modernCall(t, url, "2", "tools/call", `{"name":"echo","arguments":{"text":"not held"},`+modernMeta+`}`)
	if r.status != http.StatusOK || !strings.Contains(string(r.body), "not held") {
		t.Errorf("another call beside an un-retried park: %d %s after %s; want its answer", r.status, r.body, time.Since(start).Round(time.Millisecond))
	}
	// Another user's call that asks runs alone beside the park: what the
	// child asks is that call's (issue 34: refused for the whole
	// input_wait), and the parked call's own request was not given to it.
	for i := range 3 {
		key, _ := inputRequired(t, modernCall(t, url, strconv.Itoa(3+i), "tools/call", `{"name":"ask",`+args+`,`+meta+`}`))
		if key == "" {
			t.Fatalf("asking call %d beside the park: no input request", i)
		}
	}
	if n := b.status("fake").Refused["several_users"]; n != 0 {
		t.Errorf("%d requests of the child refused for several users beside a parked call", n)
	}
}

// TestUnretriedInputCancelsBeforeItRefuses: when a parked call's retry
// never comes, the child reads the call's cancellation before the error
// that answers its request, so a careful server — one that, when its
// request is answered, stops if the call was cancelled by then — stops,
// and is not taken for a child that goes on with cancelled calls. (Before,
// the error came first: the careful server finished the call and answered
// it after the bridge's ping had shown it read the cancellation, the
// bridge judged that it goes on, and from then on every abandoned call
// held new calls up to 30 s — the 2026 conformance run's two last
// scenarios timed out under load.) Also for a call ended because the
// client lacks a capability the child asks for.
func TestUnretriedInputCancelsBeforeItRefuses(t *testing.T) {
	b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{interactive: true, inputWait: 300 * time.Millisecond})
	url := b.url("fake")
	waitFor(t, 20*time.Second, "the child to be up", func() bool {
		return modernCall(t, url, "0", "tools/list", "{"+modernMeta+"}").status == http.StatusOK
	})
	stopped := func() int {
		n := 0
		for _, e := range b.journal() {
			if e.kind == "stopped" {
				n++
			}
		}
		return n
	}
	args := `"arguments":{"method":"elicitation/create","params":"{\"message\":\"name?\",\"requestedSchema\":{\"type\":\"object\"}}","careful":true,"work_ms":300}`
	withCaps := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}`
	for i, tc := range []struct {
		name, meta string
		status     int
	}{
		{"never retried", withCaps, http.StatusOK},
		{"capability missing", modernMeta, http.StatusBadRequest},
	} {
		r := modernCall(t, url, strconv.Itoa(i+1), "tools/call", `{"name":"ask",`+args+`,`+tc.meta+`}`)
		if r.status != tc.status {
			t.Fatalf("%s: %d %s", tc.name, r.status, r.body)
		}
		waitFor(t, 10*time.Second, tc.name+": the child to stop the call", func() bool { return stopped() == i+1 })
		waitFor(t, 10*time.Second, tc.name+": the abandoned call to go", func() bool { return b.status("fake").Abandoned == 0 })
		if b.status("fake").GoesOn {
			t.Fatalf("%s: the child that stopped was judged to go on with cancelled calls", tc.name)
		}
	}
}

// inputRequired reads an input_required answer asking one thing: the
// thing's key and the requestState.
func inputRequired(t *testing.T, r response) (key, state string) {
	t.Helper()
	var first struct {
		Result struct {
			ResultType    string                     `json:"resultType"`
			InputRequests map[string]json.RawMessage `json:"inputRequests"`
			RequestState  string                     `json:"requestState"`
		} `json:"result"`
	}
	if r.status != 200 || json.Unmarshal(r.body, &first) != nil || first.Result.ResultType != "input_required" || len(first.Result.InputRequests) != 1 {
		t.Fatalf("want input_required asking one thing: %d %s", r.status, r.body)
	}
	for k := range first.Result.InputRequests {
		key = k
	}
	return key, first.Result.RequestState
}

// TestMRTRRetryCapabilitiesCount: the capabilities a retry declares are the
// call's from then on: a second round asks only what the retry declared.
// (Before, the first request's were kept: a retry that no longer declared
// elicitation was asked for one anyway.)
func TestMRTRRetryCapabilitiesCount(t *testing.T) {
	b := fakeBridge(t, bridge.Options{})
	url := b.url("fake")
	both := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{},"elicitation":{}}}`
	samplingOnly := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{}}}`
	args := `"arguments":{"method":"sampling/createMessage","params":"{\"messages\":[],\"maxTokens\":5}","then":"elicitation/create","then_params":"{\"message\":\"name?\",\"requestedSchema\":{\"type\":\"object\"}}"}`
	key, state := inputRequired(t, modernCall(t, url, "1", "tools/call", `{"name":"ask",`+args+`,`+both+`}`))
	retry := fmt.Sprintf(`{"name":"ask",%s,"inputResponses":{%q:{"role":"assistant","content":{"type":"text","text":"answered"},"model":"m"}},"requestState":%q,%s}`,
		args, key, state, samplingOnly)
	r := modernCall(t, url, "2", "tools/call", retry)
	modernError(t, "the second round's elicitation", r, 400, -32021, "2")
	if !strings.Contains(string(r.body), `"requiredCapabilities":{"elicitation":{}}`) {
		t.Errorf("the retry's answer %s; want elicitation named as missing", r.body)
	}
}

// TestShutdownEndsParkedCalls: a call parked for its client's input is the
// endpoint's, and ends with it: the bridge's shutdown cancels it at the
// child (before, it was left to its input_wait timer, minutes, after the
// bridge had stopped).
func TestShutdownEndsParkedCalls(t *testing.T) {
	b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{inputWait: 5 * time.Minute})
	url := b.url("fake")
	waitFor(t, 20*time.Second, "the child to be up", func() bool {
		return modernCall(t, url, "0", "tools/list", "{"+modernMeta+"}").status == http.StatusOK
	})
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{}}}`
	args := `"arguments":{"method":"sampling/createMessage","params":"{\"messages\":[],\"maxTokens\":5}"}`
	if r := modernCall(t, url, `"parked-call"`, "tools/call", `{"name":"ask",`+args+`,`+meta+`}`); r.status != 200 || !strings.Contains(string(r.body), "input_required") {
		t.Fatalf("park: %d %s", r.status, r.body)
	}
	b.close()
	for _, e := range b.journal() {
		if e.kind == "cancelled" {
			return // its upstream id is the bridge's; the only call cancelled is the parked one
		}
	}
	t.Fatalf("the child never read the parked call's cancellation; journal: %+v", b.journal())
}

// TestMRTRRetryReadByOneScanner: a retry is read as the bridge reads every
// request — member names exactly, each once — so one whose "name" differs
// from the parked call's, hidden behind a case-variant duplicate that
// another decoder reads last, is refused (before: the digest's decoder read
// "NAME", and a retry naming echo, Mcp-Name echo, resumed the ask call).
func TestMRTRRetryReadByOneScanner(t *testing.T) {
	b := fakeBridge(t, bridge.Options{})
	url := b.url("fake")
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{}}}`
	args := `"arguments":{"method":"sampling/createMessage","params":"{\"messages\":[],\"maxTokens\":5}"}`
	r := modernCall(t, url, "1", "tools/call", `{"name":"ask",`+args+`,`+meta+`}`)
	var first struct {
		Result struct {
			InputRequests map[string]json.RawMessage `json:"inputRequests"`
			RequestState  string                     `json:"requestState"`
		} `json:"result"`
	}
	if r.status != 200 || json.Unmarshal(r.body, &first) != nil || first.Result.RequestState == "" {
		t.Fatalf("first request: %d %s", r.status, r.body)
	}
	var key string
	for k := range first.Result.InputRequests {
		key = k
	}
	retry := fmt.Sprintf(`{"name":"echo","NAME":"ask",%s,"inputResponses":{%q:{"role":"assistant","content":{"type":"text","text":"answered"},"model":"m"}},"requestState":%q,%s}`,
		args, key, first.Result.RequestState, meta)
	r = mustRequest(t, http.MethodPost, url, "", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":`+retry+`}`,
		"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "echo")
	modernError(t, "a retry naming another tool", r, http.StatusBadRequest, -32602, "2")
}

// TestParkedCallsBoundedAndCounted: the calls waiting for their clients'
// input are counted (stelae_parked_calls, and stelae_inflight_calls: each
// holds a call on the child) and one principal holds at most 64 of them;
// the next gets 503 and its child request an error (issue 21: no limit,
// and stelae_inflight_calls read 0 with 4,700 parked).
func TestParkedCallsBoundedAndCounted(t *testing.T) {
	// With tokens, the calls of one token are one user's: the child's
	// requests go to its newest call.
	b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{opts: bridge.Options{AuthTokens: []string{"tok-alice", "tok-bob"}}})
	url := b.url("fake")
	alice, bob := []string{"Authorization", "Bearer tok-alice"}, []string{"Authorization", "Bearer tok-bob"}
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{}}}`
	args := `"arguments":{"method":"sampling/createMessage","params":"{\"messages\":[],\"maxTokens\":5}"}`
	const bound = 64
	for i := range bound {
		if r := modernCall(t, url, strconv.Itoa(i+1), "tools/call", `{"name":"ask",`+args+`,`+meta+`}`, alice...); r.status != 200 || !strings.Contains(string(r.body), "input_required") {
			t.Fatalf("park %d: %d %s", i+1, r.status, r.body)
		}
	}
	m := scrapeURL(t, b.srv.URL, alice...)
	if got := m[`stelae_parked_calls{destination="fake"}`]; got != bound {
		t.Errorf("stelae_parked_calls = %v; want %d", got, bound)
	}
	if got := m[`stelae_inflight_calls{destination="fake"}`]; got < bound {
		t.Errorf("stelae_inflight_calls = %v with %d parked; want them counted", got, bound)
	}
	r := modernCall(t, url, "1000", "tools/call", `{"name":"ask",`+args+`,`+meta+`}`, alice...)
	if r.status != http.StatusServiceUnavailable || !strings.Contains(string(r.body), "waiting for its input") {
		t.Fatalf("park %d: %d %s; want 503", bound+1, r.status, r.body)
	}
	// Other work goes on.
	if r := modernCall(t, url, "1001", "tools/call", `{"name":"echo","arguments":{"text":"still served"},`+modernMeta+`}`, bob...); r.status != 200 || !strings.Contains(string(r.body), "still served") {
		t.Errorf("a call beside the parked ones: %d %s", r.status, r.body)
	}
}

// TestModernErrorCodes: the bridge's own transport errors carry, for a
// 2026-07-28 request, a code outside the sub-range that specification
// marks legacy (-32000 to -32019, "SHOULD NOT use"): the HTTP status
// itself; a 2025 request's keep -32000.
func TestModernErrorCodes(t *testing.T) {
	b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{opts: bridge.Options{RequestTimeout: 500 * time.Millisecond}})
	url := b.url("fake")
	waitFor(t, 20*time.Second, "the child to be up", func() bool {
		return modernCall(t, url, "0", "tools/list", "{"+modernMeta+"}").status == http.StatusOK
	})
	legacy := func(code int) bool { return code <= -32000 && code >= -32019 }
	for _, tc := range []struct {
		what   string
		r      response
		status int
	}{
		{"a call that times out", modernCall(t, url, "1", "tools/call", `{"name":"never","arguments":{},`+modernMeta+`}`), http.StatusGatewayTimeout},
		{"no such destination", modernCall(t, b.srv.URL+"/nope/mcp", "2", "tools/list", "{"+modernMeta+"}"), http.StatusNotFound},
		{"a body that is not JSON's type", modernCall(t, url, "3", "tools/list", "{"+modernMeta+"}", "Content-Type", "text/plain"), http.StatusUnsupportedMediaType},
	} {
		m := decode(t, tc.r.body)
		if tc.r.status != tc.status || m.Error == nil || legacy(m.Error.Code) || m.Error.Code != tc.status {
			t.Errorf("2026-07-28, %s: %d %s; want %d with code %d", tc.what, tc.r.status, tc.r.body, tc.status, tc.status)
		}
	}
	// A 2025 session's keep -32000.
	c := newClient(t, url)
	c.initialize()
	if r := c.callTool("1", "never", nil); r.status != http.StatusGatewayTimeout || decode(t, r.body).Error.Code != -32000 {
		t.Errorf("2025, a call that times out: %d %s; want 504 with -32000", r.status, r.body)
	}
}

// TestMRTRElicitationModes: a 2026-07-28 client is asked the child's
// elicitation only in a mode it declared (MCP 2025-11-25: {} is form mode
// alone), as a 2025 session is; else the call ends 400 naming the mode in
// requiredCapabilities. (Before, a URL-mode elicitation — what the
// stand-in of a user without credentials asks — was refused to every
// 2026-07-28 client, even one that declared it, and a form-mode one was
// asked of a client that declared URL mode alone.)
func TestMRTRElicitationModes(t *testing.T) {
	// interactive: the parked calls of the cases before do not make the
	// child's request of the next one unattributable.
	b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{interactive: true})
	url := b.url("fake")
	formParams := `{"message":"name?","requestedSchema":{"type":"object"}}`
	urlParams := `{"mode":"url","message":"open it","url":"https://example.invalid/page","elicitationId":"e-1"}`
	optionalURL := `{"mode":"url","message":"open it","url":"https://example.invalid/page","elicitationId":"e-2","_meta":{"stelae-bridge/optional":true}}`
	for i, tc := range []struct {
		name, params, caps string
		required           string // "" when asked, "goes on" when the call goes on without
	}{
		{"url mode, declared", urlParams, `{"url":{}}`, ""},
		{"url mode, both declared", urlParams, `{"form":{},"url":{}}`, ""},
		{"url mode, {} (form alone)", urlParams, `{}`, `{"elicitation":{"url":{}}}`},
		{"url mode, form declared", urlParams, `{"form":{}}`, `{"elicitation":{"url":{}}}`},
		{"form mode, {}", formParams, `{}`, ""},
		{"form mode, form declared", formParams, `{"form":{}}`, ""},
		{"form mode, url alone", formParams, `{"url":{}}`, `{"elicitation":{"form":{}}}`},
		{"form mode, no elicitation", formParams, ``, `{"elicitation":{}}`},
		// A request the call can do without (the stand-in's): the child
		// gets the refusal, the call goes on.
		{"optional url mode, {}", optionalURL, `{}`, "goes on"},
		{"optional url mode, no elicitation", optionalURL, ``, "goes on"},
		{"optional url mode, declared", optionalURL, `{"url":{}}`, ""},
	} {
		caps := `{}`
		if tc.caps != "" {
			caps = `{"elicitation":` + tc.caps + `}`
		}
		meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `}`
		args, _ := json.Marshal(map[string]any{"method": "elicitation/create", "params": tc.params})
		r := modernCall(t, url, strconv.Itoa(i+1), "tools/call", `{"name":"ask","arguments":`+string(args)+`,`+meta+`}`)
		var got struct {
			Result struct {
				ResultType    string `json:"resultType"`
				InputRequests map[string]struct {
					Method string          `json:"method"`
					Params json.RawMessage `json:"params"`
				} `json:"inputRequests"`
			} `json:"result"`
			Error struct {
				Code int `json:"code"`
				Data struct {
					Required json.RawMessage `json:"requiredCapabilities"`
				} `json:"data"`
			} `json:"error"`
		}
		_ = json.Unmarshal(r.body, &got)
		if tc.required == "" {
			if r.status != http.StatusOK || got.Result.ResultType != "input_required" || len(got.Result.InputRequests) != 1 {
				t.Errorf("%s: %d %s; want input_required asking the elicitation", tc.name, r.status, r.body)
				continue
			}
			for _, in := range got.Result.InputRequests {
				if in.Method != "elicitation/create" || !jsonEqual(in.Params, []byte(tc.params)) {
					t.Errorf("%s: asked %s %s; want elicitation/create %s", tc.name, in.Method, in.Params, tc.params)
				}
			}
			// The client answers: the call ends with it (and no parked
			// call holds the next case back).
			key, state := inputRequired(t, r)
			retry := fmt.Sprintf(`{"name":"ask","arguments":%s,"inputResponses":{%q:{"action":"decline"}},"requestState":%q,%s}`, args, key, state, meta)
			if r := modernCall(t, url, strconv.Itoa(100+i), "tools/call", retry); r.status != http.StatusOK || !strings.Contains(string(r.body), `decline`) {
				t.Errorf("%s: the retry: %d %s; want the child's answer with the client's", tc.name, r.status, r.body)
			}
			continue
		}
		if tc.required == "goes on" {
			if r.status != http.StatusOK || got.Result.ResultType != "complete" || !strings.Contains(string(r.body), "did not declare the elicitation") {
				t.Errorf("%s: %d %s; want the call's answer, the child told the client did not declare elicitation", tc.name, r.status, r.body)
			}
			continue
		}
		if r.status != http.StatusBadRequest || got.Error.Code != -32021 || string(got.Error.Data.Required) != tc.required {
			t.Errorf("%s: %d %s; want 400, -32021, requiredCapabilities %s", tc.name, r.status, r.body, tc.required)
		}
	}
}
