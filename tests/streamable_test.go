//go:build unix

package tests

// Streamable HTTP details: progress and child requests on a POST's SSE stream, keepalives that
// switch a slow call to SSE, response modes, resuming POST and GET streams with Last-Event-ID, and
// request header checks (Accept, Content-Type, protocol version, Origin, Host).

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stelae-bridge/stelae-bridge/bridge"
	"github.com/stelae-bridge/stelae-bridge/session"
	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

// initializeVersion starts a session that negotiates version v.
func initializeVersion(t *testing.T, c *client, v string) {
	t.Helper()
	r := c.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{"sampling":{}},"clientInfo":{"name":"test","version":"1"}}}`, v))
	if r.status != http.StatusOK {
		t.Fatalf("initialize %s: %d %s", v, r.status, r.body)
	}
	var res struct {
		Result struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"result"`
	}
	if err := json.Unmarshal(r.body, &res); err != nil || res.Result.ProtocolVersion != v {
		t.Fatalf("initialize asked for %s, negotiated %q (%v): %s", v, res.Result.ProtocolVersion, err, r.body)
	}
	c.sid = r.header.Get("Mcp-Session-Id")
}

func TestSSEProgressOnPostStream(t *testing.T) {
	b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{})
	c := newClient(t, b.url("fake"))
	initializeVersion(t, c, "2025-06-18")
	get := c.openStream()
	body := `{"jsonrpc":"2.0","id":"p","method":"tools/call","params":{"name":"progress","arguments":{"steps":3,"ms":10},"_meta":{"progressToken":"tok"}}}`
	r := c.post(body)
	if r.status != 200 || r.header.Get("Content-Type") != "text/event-stream" || r.header.Get("Mcp-Session-Id") != c.sid {
		t.Fatalf("progress call: %d %v", r.status, r.header)
	}
	msgs := sseMessages(t, r.body)
	if len(msgs) != 4 {
		t.Fatalf("want 3 progress notifications and the response, got %d: %s", len(msgs), r.body)
	}
	for i, m := range msgs[:3] {
		if m.Method != "notifications/progress" || !strings.Contains(string(m.Params), `"progressToken":"tok"`) || !strings.Contains(string(m.Params), fmt.Sprintf(`"progress":%d`, i+1)) {
			t.Errorf("event %d: %s %s", i, m.Method, m.Params)
		}
	}
	if last := msgs[3]; string(last.ID) != `"p"` || !strings.Contains(string(last.Result), "done") {
		t.Errorf("last event is not the response: %+v", last)
	}
	// A 2025-06-18 session gets no priming event.
	if strings.Contains(string(r.body), "retry:") {
		t.Errorf("priming event sent to a 2025-06-18 session: %q", r.body)
	}
	get.none(t, "notifications/progress", 200*time.Millisecond)

	// A fast call stays JSON in auto mode.
	r = c.callTool("2", "echo", map[string]string{"text": "x"})
	if r.header.Get("Content-Type") != "application/json" {
		t.Errorf("fast call answered as %q, want application/json", r.header.Get("Content-Type"))
	}
}

func TestSSEChildRequestOnPostStream(t *testing.T) {
	b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{})
	c := newClient(t, b.url("fake"))
	initializeVersion(t, c, "2025-11-25")
	st := openSSE(t, http.MethodPost, c.url, c.sid, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"sample","arguments":{"prompt":"hi"}}}`)
	prime := st.event(t, 5*time.Second)
	if len(prime.data) != 0 || !strings.HasPrefix(prime.id, "p") || prime.retry != "1000" {
		t.Fatalf("first event is not a priming event with retry: %+v", prime)
	}
	ev := st.event(t, 5*time.Second)
	req := decode(t, ev.data)
	if req.Method != "sampling/createMessage" {
		t.Fatalf("want the child's sampling request on the POST stream, got %s", ev.data)
	}
	if r := c.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"role":"assistant","content":{"type":"text","text":"pong"},"model":"m"}}`, req.ID)); r.status != http.StatusAccepted {
		t.Fatalf("answer: %d %s", r.status, r.body)
	}
	rest := st.rest(t, 10*time.Second)
	if len(rest) != 1 {
		t.Fatalf("want only the response after the request, got %d events", len(rest))
	}
	resp := decode(t, rest[0].data)
	if string(resp.ID) != "5" || !strings.Contains(string(resp.Result), "pong") {
		t.Fatalf("response: %s", rest[0].data)
	}
}

func TestSSEKeepaliveSwitchesSlowCall(t *testing.T) {
	b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{opts: bridge.Options{KeepAlive: 100 * time.Millisecond}})
	c := newClient(t, b.url("fake"))
	c.initialize()
	r := c.callTool("1", "slow", map[string]any{"ms": 450, "text": "late"})
	if r.header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("slow call: Content-Type %q, want an SSE stream", r.header.Get("Content-Type"))
	}
	if n := strings.Count(string(r.body), ": keepalive"); n < 2 {
		t.Errorf("want keepalive comments while the call runs, got %d: %q", n, r.body)
	}
	msgs := sseMessages(t, r.body)
	if len(msgs) != 1 || !strings.Contains(string(msgs[0].Result), "late") {
		t.Fatalf("want the response last: %q", r.body)
	}
	// A client that takes only JSON stays on JSON.
	r = c.callTool("2", "slow", map[string]any{"ms": 300, "text": "json"})
	_ = r
	r2, err := request(http.MethodPost, c.url, c.sid, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slow","arguments":{"ms":300,"text":"json"}}}`, "Accept", "application/json")
	if err != nil || r2.header.Get("Content-Type") != "application/json" || !strings.Contains(string(r2.body), "json") {
		t.Fatalf("JSON-only client: %v %q %s", err, r2.header.Get("Content-Type"), r2.body)
	}
}

func TestSSEResponseModes(t *testing.T) {
	for _, tc := range []struct {
		mode, accept, want string
	}{
		{session.ModeSSE, "application/json, text/event-stream", "text/event-stream"},
		{session.ModeSSE, "application/json", "application/json"},
		{session.ModeJSON, "application/json, text/event-stream", "application/json"},
		{session.ModeJSON, "text/event-stream", "text/event-stream"},
		{session.ModeAuto, "*/*", "application/json"},
		{session.ModeAuto, "", "application/json"},
	} {
		t.Run(tc.mode+"/"+tc.accept, func(t *testing.T) {
			b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{opts: bridge.Options{ResponseMode: tc.mode}})
			c := newClient(t, b.url("fake"))
			c.initialize()
			r := c.post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"m"}}}`, "Accept", tc.accept)
			if r.status != 200 || r.header.Get("Content-Type") != tc.want {
				t.Fatalf("status %d, Content-Type %q, want %q: %s", r.status, r.header.Get("Content-Type"), tc.want, r.body)
			}
			body := r.body
			if tc.want == "text/event-stream" {
				msgs := sseMessages(t, body)
				body, _ = json.Marshal(msgs[len(msgs)-1])
			}
			if !strings.Contains(string(body), `"text":"m"`) {
				t.Fatalf("answer %s", r.body)
			}
		})
	}
}

// TestSSEResumePostStream: the client loses the POST stream after the
// priming event; the call goes on, and GET with Last-Event-ID delivers the
// response.
func TestSSEResumePostStream(t *testing.T) {
	b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{opts: bridge.Options{ResponseMode: session.ModeSSE}})
	c := newClient(t, b.url("fake"))
	initializeVersion(t, c, "2025-11-25")
	st := openSSE(t, http.MethodPost, c.url, c.sid, `{"jsonrpc":"2.0","id":"r1","method":"tools/call","params":{"name":"slow","arguments":{"ms":600,"text":"after the drop"}}}`)
	prime := st.event(t, 5*time.Second)
	if len(prime.data) != 0 || prime.id == "" {
		t.Fatalf("want a priming event first, got %+v", prime)
	}
	st.close() // the connection drops mid-call

	resumed := openSSE(t, http.MethodGet, c.url, c.sid, "", "Last-Event-ID", prime.id)
	evs := resumed.rest(t, 10*time.Second)
	var resp *rpc
	for _, ev := range evs {
		if len(ev.data) > 0 {
			m := decode(t, ev.data)
			resp = &m
			if !strings.HasPrefix(ev.id, prime.id[:strings.IndexByte(prime.id, '-')]) {
				t.Errorf("event %s is not on the resumed stream %s", ev.id, prime.id)
			}
		}
	}
	if resp == nil || string(resp.ID) != `"r1"` || !strings.Contains(string(resp.Result), "after the drop") {
		t.Fatalf("resumed stream did not carry the response: %+v", evs)
	}
	// The response stays in the log: a second resume replays it again.
	again := openSSE(t, http.MethodGet, c.url, c.sid, "", "Last-Event-ID", prime.id)
	if evs := again.rest(t, 5*time.Second); len(evs) == 0 || !strings.Contains(string(evs[len(evs)-1].data), "after the drop") {
		t.Fatalf("second resume: %+v", evs)
	}
}

// TestSSEResumeGetStream: events sent on a GET stream after the last one the
// client saw are replayed on that stream only.
func TestSSEResumeGetStream(t *testing.T) {
	b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{})
	c := newClient(t, b.url("fake"))
	initializeVersion(t, c, "2025-11-25")
	g := openSSE(t, http.MethodGet, c.url, c.sid, "")
	prime := g.event(t, 5*time.Second)
	if len(prime.data) != 0 || !strings.HasPrefix(prime.id, "g") || prime.retry != "1000" {
		t.Fatalf("GET stream of a 2025-11-25 session must start with a priming event: %+v", prime)
	}
	for i := 0; i < 2; i++ {
		if r := c.callTool(fmt.Sprint(i), "list_changed", nil); r.status != 200 {
			t.Fatal(r.status)
		}
	}
	first := g.event(t, 5*time.Second)
	second := g.event(t, 5*time.Second)
	g.close()
	resumed := openSSE(t, http.MethodGet, c.url, c.sid, "", "Last-Event-ID", first.id)
	if p := resumed.event(t, 5*time.Second); len(p.data) != 0 {
		t.Fatalf("resumed stream must start with a priming event: %+v", p)
	}
	ev := resumed.event(t, 5*time.Second)
	if ev.id != second.id || string(ev.data) != string(second.data) {
		t.Fatalf("replayed %s %s, want %s %s", ev.id, ev.data, second.id, second.data)
	}
	// Another session's id means nothing there: a fresh stream starts.
	other := newClient(t, b.url("fake"))
	other.initialize()
	fresh := openSSE(t, http.MethodGet, other.url, other.sid, "", "Last-Event-ID", first.id)
	select {
	case ev := <-fresh.events:
		if len(ev.data) != 0 {
			t.Fatalf("another session's stream replayed %s", ev.data)
		}
	case <-time.After(300 * time.Millisecond):
	}
	if !strings.Contains(b.logs.String(), "Last-Event-ID not in the event log") {
		t.Errorf("an unknown Last-Event-ID was not logged")
	}
}

// TestSSEResumeGetStreamGetsWhatCameMeanwhile: notifications sent while a
// session had no GET stream are delivered to the stream that resumes with
// Last-Event-ID, once, in order, after the replay.
func TestSSEResumeGetStreamGetsWhatCameMeanwhile(t *testing.T) {
	b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{})
	c := newClient(t, b.url("fake"))
	initializeVersion(t, c, "2025-11-25")
	g := openSSE(t, http.MethodGet, c.url, c.sid, "")
	g.event(t, 5*time.Second) // priming
	notify := func(id string, uri string) {
		t.Helper()
		if r := c.callTool(id, "notify", map[string]string{"method": "notifications/resources/list_changed", "uri": uri}); r.status != 200 {
			t.Fatalf("notify: %d %s", r.status, r.body)
		}
	}
	notify("1", "test://before")
	last := g.event(t, 5*time.Second)
	g.close()
	waitFor(t, 10*time.Second, "the GET stream to close at the bridge", func() bool {
		return scrape(t, b)[`stelae_get_streams{destination="fake"}`] == 0
	})
	notify("2", "test://meanwhile-1")
	notify("3", "test://meanwhile-2")
	resumed := openSSE(t, http.MethodGet, c.url, c.sid, "", "Last-Event-ID", last.id)
	var got []string
	for len(got) < 2 {
		ev := resumed.event(t, 5*time.Second)
		if len(ev.data) > 0 {
			got = append(got, string(decode(t, ev.data).Params))
		}
	}
	if !strings.Contains(got[0], "meanwhile-1") || !strings.Contains(got[1], "meanwhile-2") {
		t.Fatalf("resumed stream got %q; want the two notifications sent while disconnected, in order", got)
	}
	// Once: a fresh stream does not get them again.
	fresh := openSSE(t, http.MethodGet, c.url, c.sid, "")
	quiet := time.After(300 * time.Millisecond)
	for {
		select {
		case ev := <-fresh.events:
			if len(ev.data) != 0 {
				t.Fatalf("a fresh stream got %s again", ev.data)
			}
			continue
		case <-quiet:
		}
		break
	}
}

func TestStreamableHeaders(t *testing.T) {
	b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{opts: bridge.Options{
		CheckHost: true, AllowedHosts: []string{"mcp.example.com"}, AllowedOrigins: []string{"https://app.example.com"},
	}})
	c := newClient(t, b.url("fake"))
	c.initialize()
	tool := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"h"}}}`
	for _, tc := range []struct {
		name    string
		method  string
		body    string
		headers []string
		status  int
		want    string
	}{
		{"Accept none fits", "POST", tool, []string{"Accept", "text/html"}, 406, "Accept"},
		{"Accept */*", "POST", tool, []string{"Accept", "*/*"}, 200, ""},
		{"Accept absent", "POST", tool, []string{"Accept", ""}, 200, ""},
		{"GET without SSE", "GET", "", []string{"Accept", "application/json"}, 406, "text/event-stream"},
		{"Content-Type text/plain", "POST", tool, []string{"Content-Type", "text/plain"}, 415, "application/json"},
		{"Content-Type with charset", "POST", tool, []string{"Content-Type", "application/json; charset=utf-8"}, 200, ""},
		{"version 2024-11-05", "POST", tool, []string{"MCP-Protocol-Version", "2024-11-05"}, 200, ""},
		{"version 2025-03-26", "POST", tool, []string{"MCP-Protocol-Version", "2025-03-26"}, 200, ""},
		{"version 2025-06-18", "POST", tool, []string{"MCP-Protocol-Version", "2025-06-18"}, 200, ""},
		{"version 2025-11-25", "POST", tool, []string{"MCP-Protocol-Version", "2025-11-25"}, 200, ""},
		{"version unknown", "POST", tool, []string{"MCP-Protocol-Version", "1999-01-01"}, 400, "2025-11-25"},
		{"version unknown on GET", "GET", "", []string{"MCP-Protocol-Version", "banana"}, 400, "supports"},
		{"Origin evil", "POST", tool, []string{"Origin", "http://evil.example.com"}, 403, "-allowed-origins"},
		{"Origin loopback", "POST", tool, []string{"Origin", "http://127.0.0.1:1234"}, 200, ""},
		{"Origin allowed", "POST", tool, []string{"Origin", "https://app.example.com"}, 200, ""},
		{"Host evil", "POST", tool, []string{"Host", "evil.example.com"}, 403, "-allowed-hosts"},
		{"Host allowed", "POST", tool, []string{"Host", "mcp.example.com"}, 200, ""},
		{"Host localhost", "POST", tool, []string{"Host", "localhost:9090"}, 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, c.url, strings.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if tc.method == "GET" {
				req.Header.Set("Accept", "text/event-stream")
			}
			req.Header.Set("Mcp-Session-Id", c.sid)
			for i := 0; i+1 < len(tc.headers); i += 2 {
				if tc.headers[i] == "Host" {
					req.Host = tc.headers[i+1]
				} else if tc.headers[i+1] == "" {
					req.Header.Del(tc.headers[i])
				} else {
					req.Header.Set(tc.headers[i], tc.headers[i+1])
				}
			}
			if tc.method == "GET" && tc.status == 200 {
				t.Fatal("test table: GET success not handled here")
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body strings.Builder
			bufio.NewReader(resp.Body).WriteTo(&body)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, body.String())
			}
			if tc.status >= 400 {
				m := decode(t, []byte(body.String()))
				if string(m.ID) != "null" || m.Error == nil || !strings.Contains(m.Error.Message, tc.want) {
					t.Fatalf("error body %s; want id null and a message naming %q", body.String(), tc.want)
				}
			}
		})
	}
	// initialize is never checked for the version header.
	r := newClient(t, c.url).post(initBody, "MCP-Protocol-Version", "1999-01-01")
	if r.status != 200 {
		t.Errorf("initialize with an odd version header: %d", r.status)
	}

	// CORS preflight and exposed headers.
	req, _ := http.NewRequest(http.MethodOptions, c.url, nil)
	req.Header.Set("Origin", "https://app.example.com")
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "content-type, mcp-session-id, mcp-param-region, x-other")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	h := resp.Header
	if resp.StatusCode != 204 || h.Get("Access-Control-Allow-Origin") != "https://app.example.com" {
		t.Fatalf("preflight: %d %v", resp.StatusCode, h)
	}
	for _, want := range []string{"GET", "POST", "DELETE", "OPTIONS"} {
		if !strings.Contains(h.Get("Access-Control-Allow-Methods"), want) {
			t.Errorf("Allow-Methods %q lacks %s", h.Get("Access-Control-Allow-Methods"), want)
		}
	}
	for _, want := range []string{"content-type", "accept", "authorization", "mcp-session-id", "mcp-protocol-version", "last-event-id", "mcp-method", "mcp-name", "mcp-param-region"} {
		if !strings.Contains(strings.ToLower(h.Get("Access-Control-Allow-Headers")), want) {
			t.Errorf("Allow-Headers %q lacks %s", h.Get("Access-Control-Allow-Headers"), want)
		}
	}
	if strings.Contains(h.Get("Access-Control-Allow-Headers"), "x-other") {
		t.Errorf("Allow-Headers %q allows a header the bridge does not use", h.Get("Access-Control-Allow-Headers"))
	}
	r = c.post(tool, "Origin", "https://app.example.com")
	if r.header.Get("Access-Control-Allow-Origin") != "https://app.example.com" || !strings.Contains(r.header.Get("Access-Control-Expose-Headers"), "Mcp-Session-Id") {
		t.Errorf("actual response CORS headers: %v", r.header)
	}
}
