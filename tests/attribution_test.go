//go:build unix

package tests

// Attribution of a shared child's log lines, progress and requests to the call that caused them
// (dispatch/attribution.go): under load from both eras no caller gets another's; an interactive
// destination attributes everything; the 'logs:' policy for lines outside calls; modern log levels.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stelae-bridge/stelae-bridge/bridge"
	"github.com/stelae-bridge/stelae-bridge/dispatch"
	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

// attrMessages are the JSON-RPC messages of an answer: one JSON body, or
// every event of an SSE body. It never fails the test (callers are
// goroutines).
func attrMessages(r response) ([]rpc, error) {
	if !strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") {
		var m rpc
		err := json.Unmarshal(r.body, &m)
		return []rpc{m}, err
	}
	var out []rpc
	for _, line := range strings.Split(string(r.body), "\n") {
		if data, ok := strings.CutPrefix(line, "data: "); ok && strings.TrimSpace(data) != "" {
			var m rpc
			if err := json.Unmarshal([]byte(data), &m); err != nil {
				return nil, fmt.Errorf("event %q: %w", data, err)
			}
			out = append(out, m)
		}
	}
	return out, nil
}

// logData is a log message's data (the fake's tag).
func logData(m rpc) string {
	var p struct {
		Data string `json:"data"`
	}
	_ = json.Unmarshal(m.Params, &p)
	return p.Data
}

// attrCheck checks the messages a call got before its answer: every log
// line and progress notification is the call's own (tag, and the client's
// progress token). It returns the counts.
func attrCheck(msgs []rpc, tag, token string) (logs, progress int, err error) {
	for _, m := range msgs {
		switch m.Method {
		case "notifications/message":
			if logData(m) != tag {
				return logs, progress, fmt.Errorf("call %s got another's log line %s", tag, m.Params)
			}
			logs++
		case "notifications/progress":
			var p struct {
				Token   json.RawMessage `json:"progressToken"`
				Message string          `json:"message"`
			}
			_ = json.Unmarshal(m.Params, &p)
			if p.Message != tag || string(p.Token) != token {
				return logs, progress, fmt.Errorf("call %s (token %s) got another's progress %s", tag, token, m.Params)
			}
			progress++
		case "":
			if m.Error != nil || !strings.Contains(string(m.Result), "logged "+tag) {
				return logs, progress, fmt.Errorf("call %s answered %+v %s", tag, m.Error, m.Result)
			}
		}
	}
	return logs, progress, nil
}

// modernLogCall is a modern tools/call of the fake's log tool asking for
// log lines from level (none when empty) and progress.
func modernLogCall(url, id, tag, level string, lines int) (response, error) {
	meta := `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"progressToken":"p-` + tag + `"`
	if level != "" {
		meta += `,"io.modelcontextprotocol/logLevel":"` + level + `"`
	}
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"log","arguments":{"tag":%q,"count":%d,"ms":1},"_meta":{%s}}}`, id, tag, lines, meta)
	return request(http.MethodPost, url, "", body, "MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "log")
}

// attrLoad runs 4 2025 sessions (GET streams open) and 4 modern workers at
// once, each making calls calls of the fake's log tool with lines log
// lines and progress notifications each. It fails on any line or progress
// that reaches a caller it does not belong to, and returns the log lines
// the callers got (on their POST or response streams, and on the sessions'
// GET streams) and the destination's dropped count.
func attrLoad(t *testing.T, b *testBridge, calls, lines int) (got int, dropped uint64) {
	t.Helper()
	url := b.url("fake")
	var clients []*client
	var streams []*stream
	for range 4 {
		c := newClient(t, url)
		c.initialize()
		clients = append(clients, c)
		streams = append(streams, c.openStream())
	}
	var total atomic.Int64
	var wg sync.WaitGroup
	fail := func(format string, args ...any) { t.Errorf(format, args...) }
	for w := range 4 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := range calls {
				tag, token := fmt.Sprintf("s%d-%d", w, i), fmt.Sprintf(`"p-s%d-%d"`, w, i)
				body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"log","arguments":{"tag":%q,"count":%d,"ms":1},"_meta":{"progressToken":%s}}}`, i, tag, lines, token)
				r, err := clients[w].do(http.MethodPost, body)
				if err != nil || r.status != http.StatusOK {
					fail("session %d call %d: %v %d %s", w, i, err, r.status, r.body)
					return
				}
				msgs, err := attrMessages(r)
				if err != nil {
					fail("session %d call %d: %v", w, i, err)
					return
				}
				logs, _, err := attrCheck(msgs, tag, token)
				if err != nil {
					fail("2025 session %d: %v", w, err)
					return
				}
				total.Add(int64(logs))
			}
		}()
		go func() {
			defer wg.Done()
			for i := range calls {
				tag := fmt.Sprintf("m%d-%d", w, i)
				r, err := modernLogCall(url, fmt.Sprint(i), tag, "debug", lines)
				if err != nil || r.status != http.StatusOK {
					fail("modern worker %d call %d: %v %d %s", w, i, err, r.status, r.body)
					return
				}
				msgs, err := attrMessages(r)
				if err != nil {
					fail("modern worker %d call %d: %v", w, i, err)
					return
				}
				logs, _, err := attrCheck(msgs, tag, `"p-`+tag+`"`)
				if err != nil {
					fail("modern worker %d: %v", w, err)
					return
				}
				total.Add(int64(logs))
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	// What reached the GET streams came before this marker, which every
	// session gets.
	if r := clients[0].callTool("900", "notify", map[string]string{"method": "notifications/resources/list_changed"}); r.status != http.StatusOK {
		t.Fatalf("marker: %d %s", r.status, r.body)
	}
	for w, s := range streams {
		prefix := fmt.Sprintf("s%d-", w)
		for done := false; !done; {
			ev := s.event(t, 10*time.Second)
			if len(ev.data) == 0 {
				continue
			}
			m := decode(t, ev.data)
			switch m.Method {
			case "notifications/resources/list_changed":
				done = true
			case "notifications/message":
				if !strings.HasPrefix(logData(m), prefix) {
					t.Errorf("session %d's GET stream got another's log line %s", w, m.Params)
				}
				total.Add(1)
			case "notifications/progress":
				t.Errorf("session %d's GET stream got progress %s", w, m.Params)
			}
		}
	}
	return int(total.Load()), b.status("fake").LogsDropped
}

// TestLogsAndProgressStayWithTheirCaller: 4 sessions and 4 modern workers
// call a tool that logs and reports progress, at once, on one child. No
// caller gets another's lines or progress; every line the child sent was
// either received by its own caller or dropped and counted (not
// attributable to one caller).
func TestLogsAndProgressStayWithTheirCaller(t *testing.T) {
	b := fakeBridge(t, bridge.Options{MaxSessions: 8})
	const calls, lines = 15, 5
	got, dropped := attrLoad(t, b, calls, lines)
	t.Logf("%d log lines received by their callers, %d not attributable and dropped", got, dropped)
	if sent := 8 * calls * lines; got+int(dropped) != sent {
		t.Errorf("%d received + %d dropped; the child sent %d", got, dropped, sent)
	}
}

// TestInteractiveAttributesEverything: the same load on an interactive
// destination: calls are served one at a time, so every caller gets all
// of its lines and progress, and nothing is dropped.
func TestInteractiveAttributesEverything(t *testing.T) {
	b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{opts: bridge.Options{MaxSessions: 8}, interactive: true})
	const calls, lines = 6, 3
	got, dropped := attrLoad(t, b, calls, lines)
	if sent := 8 * calls * lines; got != sent || dropped != 0 {
		t.Errorf("interactive: %d lines received, %d dropped; want all %d received", got, dropped, sent)
	}
}

// TestChildRequestAttribution: on an interactive destination a request the
// child sends belongs to the call that caused it, even when another
// session's call came after that call: the later call waits its turn. (On
// a shared destination that is not interactive the request would go to
// the newest call's session, c2, and c1's call would wait in vain: this
// test fails so.)
func TestChildRequestAttribution(t *testing.T) {
	b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{interactive: true})
	c1, c2 := newClient(t, b.url("fake")), newClient(t, b.url("fake"))
	c1.initialize()
	c2.initialize()
	// c1's call asks for sampling 500 ms after it reaches the child; c2's
	// call starts meanwhile, and is the newest call when the request comes.
	done := b.whileAsking(func() response {
		r, _ := c2.do(http.MethodPost, toolCallBody("2", "slow", map[string]any{"ms": 1000, "text": "c2"}))
		return r
	})
	s := openSSE(t, http.MethodPost, c1.url, c1.sid, toolCallBody("1", "ask", map[string]any{"method": "sampling/createMessage", "ms": 500,
		"params": `{"messages":[{"role":"user","content":{"type":"text","text":"c1"}}],"maxTokens":5}`}))
	req := s.next(t, "sampling/createMessage", 10*time.Second)
	if r := c1.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"role":"assistant","content":{"type":"text","text":"from c1"},"model":"m"}}`, req.ID)); r.status != http.StatusAccepted {
		t.Fatalf("answer: %d %s", r.status, r.body)
	}
	if ans := s.next(t, "", 10*time.Second); !strings.Contains(string(ans.Result), "from c1") {
		t.Errorf("c1's call: %s", ans.Result)
	}
	if r := <-done; r.status != http.StatusOK || !strings.Contains(string(r.body), "c2") || strings.Contains(string(r.body), "sampling/createMessage") {
		t.Errorf("c2's call: %d %s", r.status, r.body)
	}
}

// TestLogPolicies: a log line that comes when no call is in flight follows
// the destination's 'logs:' policy.
func TestLogPolicies(t *testing.T) {
	for _, tc := range []struct {
		policy   string
		sessions int
		// delivered: every session's GET stream gets the line; otherwise
		// none does and it is counted as dropped.
		delivered bool
		// modern: a 2026-07-28 request came first (the bridge then keeps
		// the child for stateless requests: not a session that counts).
		modern bool
	}{
		{"", 1, true, false},
		{"", 1, true, true},
		{dispatch.LogsAttributed, 2, false, false},
		{dispatch.LogsFanout, 2, true, false},
		{dispatch.LogsDrop, 1, false, false},
	} {
		t.Run(fmt.Sprintf("%s/%d/modern=%v", tc.policy, tc.sessions, tc.modern), func(t *testing.T) {
			b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{logs: tc.policy})
			if tc.modern {
				if r := modernCall(t, b.url("fake"), "1", "tools/list", "{"+modernMeta+"}"); r.status != http.StatusOK {
					t.Fatalf("modern tools/list: %d %s", r.status, r.body)
				}
			}
			var clients []*client
			var streams []*stream
			for range tc.sessions {
				c := newClient(t, b.url("fake"))
				c.initialize()
				clients = append(clients, c)
				streams = append(streams, c.openStream())
			}
			// Answered first; the lines come when no call is in flight.
			if r := clients[0].callTool("1", "log", map[string]any{"tag": "idle", "count": 2, "ms": 1, "later": 1}); r.status != http.StatusOK {
				t.Fatalf("log: %d %s", r.status, r.body)
			}
			// Both lines have been routed before the marker is sent (a line
			// that came during the marker's call would be that call's).
			if !tc.delivered {
				waitFor(t, 10*time.Second, "2 log lines counted as dropped", func() bool { return b.status("fake").LogsDropped == 2 })
			} else {
				for _, s := range streams {
					s.next(t, "notifications/message", 10*time.Second)
					s.next(t, "notifications/message", 10*time.Second)
				}
			}
			if r := clients[0].callTool("2", "notify", map[string]string{"method": "notifications/resources/list_changed"}); r.status != http.StatusOK {
				t.Fatalf("marker: %d %s", r.status, r.body)
			}
			for i, s := range streams {
				var lines int
				for done := false; !done; {
					ev := s.event(t, 10*time.Second)
					if len(ev.data) == 0 {
						continue
					}
					switch m := decode(t, ev.data); m.Method {
					case "notifications/resources/list_changed":
						done = true
					case "notifications/message":
						lines++
					}
				}
				if lines != 0 {
					t.Errorf("session %d got %d more log lines; the child sent 2 (delivered: %v)", i, lines, tc.delivered)
				}
			}
			if tc.delivered && b.status("fake").LogsDropped != 0 {
				t.Errorf("dropped %d; want 0", b.status("fake").LogsDropped)
			}
		})
	}
}

// TestModernLogLevel: a modern request gets the child's log lines only when
// its _meta names a level, and only at that level or above.
func TestModernLogLevel(t *testing.T) {
	b := fakeBridge(t, bridge.Options{})
	url := b.url("fake")
	for _, tc := range []struct {
		asked, sent string
		want        int
	}{
		{"", "error", 0},
		{"warning", "info", 0},
		{"warning", "error", 3},
		{"debug", "debug", 3},
	} {
		tag := "lv-" + tc.asked + "-" + tc.sent
		meta := `"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"progressToken":"p-` + tag + `"`
		if tc.asked != "" {
			meta += `,"io.modelcontextprotocol/logLevel":"` + tc.asked + `"`
		}
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"log","arguments":{"tag":%q,"count":3,"ms":1,"level":%q},"_meta":{%s}}}`, tag, tc.sent, meta)
		r := mustRequest(t, http.MethodPost, url, "", body, "MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "log")
		msgs, err := attrMessages(r)
		if err != nil || r.status != http.StatusOK {
			t.Fatalf("%s: %v %d %s", tag, err, r.status, r.body)
		}
		logs, progress, err := attrCheck(msgs, tag, `"p-`+tag+`"`)
		if err != nil || logs != tc.want || progress != 3 {
			t.Errorf("asked %q, sent %q: %d log lines, %d progress (%v); want %d and 3", tc.asked, tc.sent, logs, progress, err, tc.want)
		}
	}
	// An unknown level is refused.
	r := mustRequest(t, http.MethodPost, url, "", `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"loud"}}}`,
		"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/list")
	modernError(t, "unknown log level", r, 400, -32602, "2")
	if b.status("fake").LogsDropped != 0 {
		t.Errorf("lines a request did not ask for were counted as dropped: %d", b.status("fake").LogsDropped)
	}
}
