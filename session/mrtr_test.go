package session

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/stelae-bridge/stelae-bridge/dispatch"
	"github.com/stelae-bridge/stelae-bridge/supervisor"
)

// askingChild is an in-memory child whose one tool, ask, asks its client
// a question (elicitation/create) and answers the call with the client's
// answer: the endpoint's MRTR path without a process.
type askingChild struct {
	out    chan []byte
	exited chan struct{}
	once   sync.Once
	// mu guards asked and n.
	mu    sync.Mutex
	asked map[string]json.RawMessage // the child's request id → the call's id
	n     int
}

func newAskingChild() *askingChild {
	return &askingChild{out: make(chan []byte, 64), exited: make(chan struct{}), asked: map[string]json.RawMessage{}}
}

func (c *askingChild) ReadMessage() ([]byte, error) {
	select {
	case l := <-c.out:
		return l, nil
	case <-c.exited:
		return nil, io.EOF
	}
}

func (c *askingChild) Enqueue(msg []byte) error { return c.WriteMessage(msg) }

func (c *askingChild) WriteMessage(line []byte) error {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if json.Unmarshal(line, &m) != nil {
		return nil
	}
	send := func(format string, args ...any) { c.out <- []byte(fmt.Sprintf(format, args...)) }
	switch {
	case m.Method == "initialize":
		send(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"asking","version":"1"}}}`, m.ID)
	case m.Method == "tools/list":
		send(`{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"ask","inputSchema":{"type":"object"}}]}}`, m.ID)
	case m.Method == "tools/call":
		c.mu.Lock()
		c.n++
		q := fmt.Sprintf(`"q-%d"`, c.n)
		c.asked[q] = m.ID
		c.mu.Unlock()
		send(`{"jsonrpc":"2.0","id":%s,"method":"elicitation/create","params":{"message":"name?","requestedSchema":{"type":"object"}}}`, q)
	case m.Method == "" && len(m.ID) > 0:
		c.mu.Lock()
		call, ok := c.asked[string(m.ID)]
		delete(c.asked, string(m.ID))
		c.mu.Unlock()
		if ok {
			answer, _ := json.Marshal(string(m.Result) + string(m.Error))
			send(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":%s}]}}`, call, answer)
		}
	case m.Method != "" && len(m.ID) > 0:
		send(`{"jsonrpc":"2.0","id":%s,"result":{}}`, m.ID)
	}
	return nil
}

func (c *askingChild) Stop(context.Context) error { c.once.Do(func() { close(c.exited) }); return nil }
func (c *askingChild) Exited() <-chan struct{}    { return c.exited }
func (c *askingChild) ExitStatus() string         { return "" }
func (c *askingChild) PID() int                   { return 1 }

// askingEndpoint serves an askingChild.
func askingEndpoint(t *testing.T) *Endpoint {
	t.Helper()
	d := dispatch.New(dispatch.Options{Name: "ask", Launch: func(context.Context) (supervisor.Child, error) { return newAskingChild(), nil }})
	ep := NewEndpoint("ask", d, nil, NewLimits(64<<20, 10<<20, 100), nil, Options{
		Logger: hclog.New(&hclog.LoggerOptions{Output: io.Discard}), LogOutput: io.Discard})
	t.Cleanup(func() {
		ep.Shutdown(context.Background())
		d.Close(context.Background())
	})
	return ep
}

// statelessCall posts a 2026-07-28 tools/call of ask, from principal p,
// with extra params members (inputResponses, requestState) and the client
// capabilities caps.
func statelessCall(ep *Endpoint, p Principal, id, caps, extra string) (int, map[string]json.RawMessage) {
	params := `{"name":"ask","arguments":{}` + extra + `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `}}`
	body := `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":` + params + `}`
	r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/ask/mcp", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set("MCP-Protocol-Version", "2026-07-28")
	r.Header.Set("Mcp-Method", "tools/call")
	r.Header.Set("Mcp-Name", "ask")
	r = r.WithContext(WithPrincipal(r.Context(), p))
	w := httptest.NewRecorder()
	ep.ServeHTTP(w, r)
	var out map[string]json.RawMessage
	_ = json.Unmarshal(w.Body.Bytes(), &out)
	return w.Code, out
}

// TestRequestStateLadder: a retry's requestState is checked before
// anything reaches the child — issued by this bridge and unaltered, for
// this principal, for this very request, once — and a good one resumes the
// call with the client's answer. (Run on an in-memory child: the endpoint
// alone.)
func TestRequestStateLadder(t *testing.T) {
	ep := askingEndpoint(t)
	alice, bob := Principal{1}, Principal{2}
	const caps = `{"elicitation":{}}`
	status, first := statelessCall(ep, alice, "1", caps, "")
	var res struct {
		ResultType    string                     `json:"resultType"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  string                     `json:"requestState"`
	}
	if status != 200 || json.Unmarshal(first["result"], &res) != nil || res.ResultType != "input_required" || len(res.InputRequests) != 1 {
		t.Fatalf("first request: %d %s", status, first["result"])
	}
	var key string
	for k := range res.InputRequests {
		key = k
	}
	answer := fmt.Sprintf(`,"inputResponses":{%q:{"action":"accept","content":{"name":"Ann"}}}`, key)
	state := func(s string) string { return fmt.Sprintf(`,"requestState":%q`, s) }
	body, mac, _ := strings.Cut(res.RequestState, ".")
	// Another MAC, still base64url (a flipped bit could leave the
	// alphabet, and the state would read as malformed).
	flipped := []byte(mac)
	if flipped[0] == 'A' {
		flipped[0] = 'B'
	} else {
		flipped[0] = 'A'
	}
	for _, tc := range []struct {
		name  string
		p     Principal
		extra string
		want  string
	}{
		{"malformed", alice, answer + state("not a state"), "is malformed"},
		{"altered", alice, answer + state(body+"."+string(flipped)), "was not issued by this bridge or was altered"},
		{"another principal", bob, answer + state(res.RequestState), "belongs to another client"},
	} {
		status, out := statelessCall(ep, tc.p, "2", caps, tc.extra)
		var e struct{ Message string }
		_ = json.Unmarshal(out["error"], &e)
		if status != http.StatusBadRequest || !strings.Contains(e.Message, tc.want) {
			t.Errorf("%s: %d %q; want 400 saying %q", tc.name, status, e.Message, tc.want)
		}
	}
	// The same state on a request with other arguments.
	params := `{"name":"ask","arguments":{"x":1}` + answer + state(res.RequestState) + `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}`
	r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/ask/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":`+params+`}`))
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "ask"} {
		r.Header.Set(k, v)
	}
	r = r.WithContext(WithPrincipal(r.Context(), alice))
	w := httptest.NewRecorder()
	ep.ServeHTTP(w, r)
	if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "was issued for another request") {
		t.Errorf("other arguments: %d %s; want 400 saying it was issued for another request", w.Code, w.Body)
	}

	status, done := statelessCall(ep, alice, "4", caps, answer+state(res.RequestState))
	if status != 200 || !strings.Contains(string(done["result"]), `Ann`) || !strings.Contains(string(done["result"]), `"resultType":"complete"`) {
		t.Fatalf("the good retry: %d %s %s; want the call's answer, complete", status, done["result"], done["error"])
	}
	status, again := statelessCall(ep, alice, "5", caps, answer+state(res.RequestState))
	var e struct{ Message string }
	_ = json.Unmarshal(again["error"], &e)
	if status != http.StatusBadRequest || !strings.Contains(e.Message, "was already used") {
		t.Errorf("the retry again: %d %q; want 400 saying it was already used", status, e.Message)
	}
}

// modernPost posts a 2026-07-28 request of method from principal p with
// params (a _meta with the version and caps is added) and the Mcp-Name
// header name.
func modernPost(ep *Endpoint, p Principal, id, method, params, name string) (int, map[string]json.RawMessage) {
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}}`
	if params == "{}" {
		params = "{" + meta + "}"
	} else {
		params = strings.TrimSuffix(params, "}") + "," + meta + "}"
	}
	body := `{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `","params":` + params + `}`
	r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/ask/mcp", strings.NewReader(body))
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method, "Mcp-Name": name} {
		r.Header.Set(k, v)
	}
	r = r.WithContext(WithPrincipal(r.Context(), p))
	w := httptest.NewRecorder()
	ep.ServeHTTP(w, r)
	var out map[string]json.RawMessage
	_ = json.Unmarshal(w.Body.Bytes(), &out)
	return w.Code, out
}

// errorMessage is the message of a JSON-RPC error answer ("" for none).
func errorMessage(out map[string]json.RawMessage) string {
	var e struct{ Message string }
	_ = json.Unmarshal(out["error"], &e)
	return e.Message
}

// TestMRTRReadsWhatEveryDecoderReads (issue 34): a call parks for its
// client's input bound to the name and arguments it asked for, and a retry
// resumes it by its requestState with its inputResponses — each read as
// every decoder reads it. A request or retry that names any of them twice,
// or also in another letter case, is refused before anything resumes or
// reaches the child; the parked call waits on for the retry that is
// exact, which resumes it.
func TestMRTRReadsWhatEveryDecoderReads(t *testing.T) {
	ep := askingEndpoint(t)
	alice := Principal{1}
	const caps = `{"elicitation":{}}`
	// An original whose arguments a Go child reads as the second.
	status, out := statelessCall(ep, alice, "1", caps, `,"Arguments":{"x":1}`)
	if msg := errorMessage(out); !strings.Contains(msg, `"arguments" must be one member named exactly "arguments"`) {
		t.Errorf("original with Arguments too: %d %s %s; want it refused", status, out["result"], out["error"])
	}
	status, first := statelessCall(ep, alice, "2", caps, "")
	var res struct {
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  string                     `json:"requestState"`
	}
	if status != 200 || json.Unmarshal(first["result"], &res) != nil || len(res.InputRequests) != 1 {
		t.Fatalf("first request: %d %s", status, first["result"])
	}
	var key string
	for k := range res.InputRequests {
		key = k
	}
	answer := func(name string) string {
		return fmt.Sprintf(`{%q:{"action":"accept","content":{"name":%q}}}`, key, name)
	}
	state := fmt.Sprintf(`%q`, res.RequestState)
	for _, tc := range []struct{ what, extra, want string }{
		{"requestState twice", `,"inputResponses":` + answer("Ann") + `,"requestState":"x.y","requestState":` + state, `"requestState" must be one member named exactly "requestState": it is given twice`},
		{"RequestState too", `,"inputResponses":` + answer("Ann") + `,"requestState":` + state + `,"RequestState":"x.y"`, `not "RequestState"`},
		{"InputResponses too", `,"inputResponses":` + answer("Ann") + `,"InputResponses":` + answer("Eve") + `,"requestState":` + state, `not "InputResponses"`},
		{"inputResponses twice", `,"inputResponses":` + answer("Eve") + `,"inputResponses":` + answer("Ann") + `,"requestState":` + state, `given twice`},
		{"Name too", `,"Name":"other","inputResponses":` + answer("Ann") + `,"requestState":` + state, `"name" must be one member named exactly "name", not "Name"`},
	} {
		status, out := statelessCall(ep, alice, "3", caps, tc.extra)
		if msg := errorMessage(out); status != http.StatusBadRequest || !strings.Contains(msg, tc.want) {
			t.Errorf("%s: %d %q %s; want 400 saying %q", tc.what, status, msg, out["result"], tc.want)
		}
	}
	// The parked call waited: the exact retry resumes it.
	status, done := statelessCall(ep, alice, "4", caps, `,"inputResponses":`+answer("Ann")+`,"requestState":`+state)
	if status != 200 || !strings.Contains(string(done["result"]), `Ann`) || strings.Contains(string(done["result"]), `Eve`) {
		t.Fatalf("the exact retry: %d %s %s; want the call's answer with Ann's name", status, done["result"], done["error"])
	}
}

// TestTaskMethodsReadTheirTaskExactly (issue 34): tasks/get, tasks/update
// and tasks/cancel find their task by taskId (which the Mcp-Name header
// carries for intermediaries): one that names it twice, or also in another
// letter case, is refused, saying so.
func TestTaskMethodsReadTheirTaskExactly(t *testing.T) {
	ep := askingEndpoint(t)
	for _, tc := range []struct{ method, params, want string }{
		{"tasks/get", `{"taskId":"a","TaskId":"b"}`, `not "TaskId"`},
		{"tasks/cancel", `{"taskId":"b","taskId":"a"}`, "given twice"},
		{"tasks/update", `{"taskId":"a","inputResponses":{},"InputResponses":{"k":{}}}`, `not "InputResponses"`},
	} {
		status, out := modernPost(ep, Principal{1}, "1", tc.method, tc.params, "a")
		if msg := errorMessage(out); status != http.StatusBadRequest || !strings.Contains(msg, tc.want) {
			t.Errorf("%s %s: %d %q; want 400 saying %q", tc.method, tc.params, status, msg, tc.want)
		}
	}
	// An exact one is looked up (and this one is unknown).
	status, out := modernPost(ep, Principal{1}, "2", "tasks/get", `{"taskId":"a"}`, "a")
	if msg := errorMessage(out); !strings.Contains(msg, "unknown task") {
		t.Errorf("tasks/get of an unknown task: %d %q", status, msg)
	}
}
