//go:build unix

package tests

// What the bridge routes or filters on is what the child reads (issue 34): in front of the
// conformance fixture (Go's encoding/json: any letter case, last duplicate wins), deny lists and
// Mcp-Param-* headers hold against requests a lenient decoder reads otherwise.

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/stelae-bridge/stelae-bridge/bridge"
	"github.com/stelae-bridge/stelae-bridge/config"
	"github.com/stelae-bridge/stelae-bridge/supervisor"
	"github.com/stelae-bridge/stelae-bridge/tests/conformancefixture"
)

// routedBridge serves the conformance fixture as destination "conf" with
// 'tools: {deny: [test_error_handling]}', and the profile "p" of it with
// 'resources: {deny: [test://static-binary]}'.
func routedBridge(t *testing.T) (dest, profile string) {
	t.Helper()
	logs := &syncBuffer{}
	log := hclog.New(&hclog.LoggerOptions{Name: "test", Level: hclog.Debug, Output: logs})
	reaper, err := supervisor.ReaperCommand()
	if err != nil {
		t.Fatal(err)
	}
	opts := bridge.Options{
		Restart:        supervisor.RestartPolicy{MaxRestarts: 3, Initial: 50 * time.Millisecond, StableAfter: time.Minute},
		StopGrace:      500 * time.Millisecond,
		RequestTimeout: 10 * time.Second,
		Logger:         log, LogOutput: logs, Reaper: reaper,
	}
	command, args, env := conformancefixture.Command()
	conf := &config.Config{
		Destinations: map[string]*config.Destination{"conf": {Name: "conf", Command: command, Args: args, Env: env,
			Tools: config.ToolFilter{Deny: []string{"test_error_handling"}}}},
		Names: []string{"conf"},
		Profiles: map[string]*config.Profile{"p": {Name: "p", Destinations: []string{"conf"},
			Resources: config.ToolFilter{Deny: []string{"test://static-binary"}}}},
		ProfileNames: []string{"p"},
	}
	br, err := bridge.New(conf, opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := listenRetry("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := startServer(br, ln, log.Named("http"))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := br.Shutdown(ctx); err != nil {
			t.Errorf("the bridge did not stop: %v", err)
		}
		srv.Close()
		if t.Failed() {
			t.Logf("bridge logs:\n%s", logs.String())
		}
	})
	return srv.URL + "/conf/mcp", srv.URL + "/p/p/mcp"
}

// refusedAsInvalid checks a 200 JSON-RPC error -32602 that does not carry
// what was hidden.
func refusedAsInvalid(t *testing.T, what string, r response, hidden ...string) {
	t.Helper()
	if r.status != http.StatusOK {
		t.Errorf("%s: status %d: %s", what, r.status, r.body)
		return
	}
	m := decode(t, r.body)
	if m.Error == nil || m.Error.Code != -32602 {
		t.Errorf("%s: answered %s; want the JSON-RPC error -32602", what, r.body)
	}
	for _, h := range hidden {
		if strings.Contains(string(r.body), h) {
			t.Errorf("%s: the answer carries %q, which the operator hid: %s", what, h, r.body)
		}
	}
}

// TestRoutedValuesAreWhatTheChildReads: a profile's resources deny list
// and a destination's tools deny list hold against requests whose uri or
// name a lenient decoder reads otherwise than the bridge routes or filters
// on — a case variant ("URI", "Name", "\u0055RI"), the same member twice
// (decoders keep the first or the last), a progress token in another
// spelling — which are refused; and a bystander's ordinary calls on the
// same profile and destination, made meanwhile, are answered as ever.
func TestRoutedValuesAreWhatTheChildReads(t *testing.T) {
	dest, profile := routedBridge(t)
	attackerP, bystanderP := newClient(t, profile), newClient(t, profile)
	attackerD, bystanderD := newClient(t, dest), newClient(t, dest)
	for _, c := range []*client{attackerP, bystanderP, attackerD, bystanderD} {
		c.initialize()
	}
	const text = "This is a simple text response for testing."
	// The bystander's calls, over and over while the attacker's come.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	bystanderErrs := make(chan error, 8)
	var bystanderCalls int
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 10000; i++ {
			for _, c := range []struct {
				c          *client
				body, want string
			}{
				{bystanderP, `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"test://static-text"}}`, "This is the content of the static text resource."},
				{bystanderP, toolCallBody("2", "conf__test_simple_text", map[string]any{}), text},
				{bystanderD, toolCallBody("3", "test_simple_text", map[string]any{}), text},
			} {
				r, err := c.c.do(http.MethodPost, c.body)
				switch {
				case err != nil:
					bystanderErrs <- err
					return
				case r.status != http.StatusOK || !strings.Contains(string(r.body), c.want) || strings.Contains(string(r.body), `"error"`):
					bystanderErrs <- fmt.Errorf("%s: %d %s", c.body, r.status, r.body)
					return
				}
			}
			bystanderCalls++
			select {
			case <-stop:
				return
			default:
			}
		}
	}()

	// The deny lists as such.
	refusedAsInvalid(t, "read of the hidden resource", attackerP.post(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"test://static-binary"}}`), "image/png")
	refusedAsInvalid(t, "call of the hidden tool", attackerD.post(toolCallBody("1", "test_error_handling", map[string]any{})), "isError")

	const rd = `{"jsonrpc":"2.0","id":%d,"method":"%s","params":%s}`
	for i, tc := range []struct{ method, params string }{
		{"resources/read", `{"uri":"test://static-text","URI":"test://static-binary"}`}, // issue 34 as filed
		{"resources/read", `{"URI":"test://static-binary"}`},
		{"resources/read", `{"uri":"test://static-binary","uri":"test://static-text"}`},
		{"resources/read", `{"uri":"test://static-text","\u0055RI":"test://static-binary"}`},
		{"resources/read", `{"uri":"test://static-text","Uri":"test://static-binary","_meta":{"progressToken":1}}`},
		{"resources/subscribe", `{"uri":"test://static-text","URI":"test://static-binary"}`},
		{"completion/complete", `{"ref":{"type":"ref/resource","uri":"test://static-text","URI":"test://static-binary"},"argument":{"name":"id","value":"1"}}`},
		{"completion/complete", `{"ref":{"type":"ref/resource","uri":"test://static-text"},"Ref":{"type":"ref/resource","uri":"test://static-binary"},"argument":{"name":"id","value":"1"}}`},
	} {
		r := attackerP.post(fmt.Sprintf(rd, 10+i, tc.method, tc.params))
		refusedAsInvalid(t, "profile "+tc.method+" "+tc.params, r, "image/png", "static-binary resource")
	}
	for i, params := range []string{
		`{"name":"test_simple_text","Name":"test_error_handling"}`,
		`{"name":"test_simple_text","NAME":"test_error_handling","arguments":{}}`,
		`{"name":"test_simple_text","name":"test_error_handling"}`,
		`{"name":"test_error_handling","name":"test_simple_text"}`,
		`{"name":"test_simple_text","n\u0061me":"test_error_handling"}`,
		`{"name":"test_simple_text","arguments":{},"Arguments":{"x":1}}`,
		`{"name":"test_simple_text","_meta":{"progressToken":"mine","ProgressToken":2}}`,
		`{"name":"test_simple_text","_meta":{"progressToken":"mine"},"_Meta":{"progressToken":2}}`,
	} {
		r := attackerD.post(fmt.Sprintf(rd, 30+i, "tools/call", params))
		refusedAsInvalid(t, "destination tools/call "+params, r, "isError")
	}
	// Through the profile, the member's own tool filter holds too.
	refusedAsInvalid(t, "profile tools/call, Name too",
		attackerP.post(`{"jsonrpc":"2.0","id":50,"method":"tools/call","params":{"name":"conf__test_simple_text","Name":"test_error_handling"}}`), "isError")
	// A resource read in an escaped but exact name is every decoder's "uri".
	if res := resultOK(t, "escaped uri", attackerP.post(`{"jsonrpc":"2.0","id":51,"method":"resources/read","params":{"\u0075ri":"test://static-text"}}`)); !strings.Contains(string(res), "static text resource") {
		t.Errorf("escaped uri: %s", res)
	}
	// The attacker's session is refused calls, not ended.
	if res := resultOK(t, "attacker's ordinary call", attackerD.callTool("60", "test_simple_text", map[string]any{})); !strings.Contains(string(res), text) {
		t.Errorf("attacker's ordinary call: %s", res)
	}

	close(stop)
	wg.Wait()
	close(bystanderErrs)
	for err := range bystanderErrs {
		t.Errorf("bystander: %v", err)
	}
	if bystanderCalls == 0 {
		t.Error("the bystander made no call while the attacker's were refused")
	}
}

// TestParamHeaderIsWhatTheChildReads: a tool parameter mirrored into an
// Mcp-Param-* header (SEP-2243; the fixture's test_custom_header mirrors
// region into Mcp-Param-Region) is checked against the arguments so that
// an intermediary routing on the header routes on what the tool acts on:
// arguments whose region a Go child reads otherwise than the bridge
// checked are refused; an exact request is served. (The fixture reads
// arguments as a map, case-sensitively: the defect itself shows in
// session's TestParamHeadersMismatch; this is the refusal through HTTP.)
func TestParamHeaderIsWhatTheChildReads(t *testing.T) {
	dest, _ := routedBridge(t)
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	post := func(id int, args, region string) response {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"test_custom_header","arguments":%s,%s}}`, id, args, meta)
		return mustRequest(t, http.MethodPost, dest, "", body, "MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call",
			"Mcp-Name", "test_custom_header", "Mcp-Param-Region", region)
	}
	// The bridge knows which parameters the tool mirrors once it has
	// its tool list: a header that differs is refused from then on.
	waitFor(t, 10*time.Second, "the bridge to check Mcp-Param-Region", func() bool {
		return post(1, `{"region":"eu"}`, "zz").status == http.StatusBadRequest
	})
	for i, args := range []string{
		`{"region":"eu","Region":"us"}`,
		`{"Region":"us","region":"eu"}`,
		`{"region":"us","region":"eu"}`,
		`{"region":"eu","REGION":"us","query":"q"}`,
	} {
		r := post(10+i, args, "eu")
		if r.status != http.StatusBadRequest || strings.Contains(string(r.body), "region us") {
			t.Errorf("arguments %s with Mcp-Param-Region eu: %d %s; want 400", args, r.status, r.body)
		}
	}
	if r := post(20, `{"region":"eu","query":"q"}`, "eu"); r.status != http.StatusOK || !strings.Contains(string(r.body), "region eu") {
		t.Errorf("an exact request: %d %s; want the tool's answer for eu", r.status, r.body)
	}
}
