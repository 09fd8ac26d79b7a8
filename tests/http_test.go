//go:build unix

package tests

// End-to-end tests of the HTTP surface of /{destination}/mcp: sessions,
// status codes, transport errors, SSE streams, legacy routes, and the
// demultiplexing of one shared child among several sessions. Every test runs
// real child processes (the fake MCP server) behind a real HTTP server.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stelae-bridge/stelae-bridge/bridge"
)

// ---------------------------------------------------------------------------
// Helpers of these tests (the shared ones are in harness_test.go).

// uuidV4 is the canonical lower-case UUID with version 4 and the RFC 4122
// variant.
var uuidV4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// unknownSID is a well-formed UUID v4 that the bridge never handed out.
const unknownSID = "0b6f3c1e-9d2a-4c51-8e7f-2a9b4c6d8e10"

// checkEmpty checks an answer with status and no body.
func checkEmpty(t *testing.T, what string, r response, status int) {
	t.Helper()
	if r.status != status {
		t.Errorf("%s: status %d, want %d; body %s", what, r.status, status, r.body)
	}
	if len(r.body) != 0 {
		t.Errorf("%s: want an empty body, got %q", what, r.body)
	}
}

// checkSSEHeaders checks the headers of an SSE answer.
func checkSSEHeaders(t *testing.T, what string, h http.Header) {
	t.Helper()
	for name, want := range map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"} {
		if got := h.Get(name); got != want {
			t.Errorf("%s: %s %q, want %q", what, name, got, want)
		}
	}
}

// ---------------------------------------------------------------------------
// 1. initialize creates a session.

func TestHTTPInitializeCreatesSession(t *testing.T) {
	b := fakeBridge(t, bridge.Options{})
	seen := map[string]bool{}
	for _, tc := range []struct {
		name, id string
	}{
		{"number id", `17`},
		{"zero id", `0`},
		{"string id", `"init-abc"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"sampling":{}},"clientInfo":{"name":"t","version":"1"}}}`, tc.id)
			r := mustRequest(t, http.MethodPost, b.url("fake"), "", body)
			sid := r.header.Get("Mcp-Session-Id")
			if !uuidV4.MatchString(sid) {
				t.Fatalf("Mcp-Session-Id %q is not a canonical UUID v4 (version nibble 4, variant 8-b)", sid)
			}
			if seen[sid] {
				t.Fatalf("session id %s handed out twice", sid)
			}
			seen[sid] = true
			res, ok := checkResult(t, "initialize", r, sid, tc.id)
			if !ok {
				t.FailNow()
			}
			var init struct {
				ProtocolVersion string `json:"protocolVersion"`
				Capabilities    struct {
					Tools     map[string]any `json:"tools"`
					Resources map[string]any `json:"resources"`
				} `json:"capabilities"`
				ServerInfo struct{ Name, Version string } `json:"serverInfo"`
			}
			if err := json.Unmarshal(res, &init); err != nil {
				t.Fatalf("initialize result: %v: %s", err, res)
			}
			if init.ServerInfo.Name != "fakemcp" || init.ServerInfo.Version != "1.0.0" || init.ProtocolVersion != "2025-06-18" ||
				init.Capabilities.Tools["listChanged"] != true || init.Capabilities.Resources["subscribe"] != true {
				t.Fatalf("initialize result is not the child's handshake: %s", res)
			}
			// The session works.
			r = mustRequest(t, http.MethodPost, b.url("fake"), sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			checkEmpty(t, "notifications/initialized", r, http.StatusAccepted)
			r = mustRequest(t, http.MethodPost, b.url("fake"), sid, toolCallBody(`1`, "echo", map[string]string{"text": sid}))
			if res, ok := checkResult(t, "echo", r, sid, `1`); ok && textOf(res) != sid {
				t.Fatalf("echo answered %q, want %q", textOf(res), sid)
			}
		})
	}
	if n := b.bridge.SessionCount("fake"); n != 3 {
		t.Fatalf("SessionCount = %d, want 3", n)
	}
}

// ---------------------------------------------------------------------------
// 2. Session id errors.

func TestHTTPSessionIDErrors(t *testing.T) {
	// With -sessionless reject, as before: a request without a session is
	// refused (TestSessionlessRequests covers the default, serve).
	b := fakeBridge(t, bridge.Options{Sessionless: "reject"})
	c := newClient(t, b.url("fake"))
	c.initialize()
	valid := c.sid
	call := toolCallBody(`1`, "echo", map[string]string{"text": "x"})
	for _, tc := range []struct {
		name   string
		method string
		sid    string
		body   string
		status int
		code   int
		want   string
	}{
		{"POST malformed", http.MethodPost, "not-a-session", call, 400, -32000, "malformed"},
		{"POST malformed braces", http.MethodPost, "{" + valid + "}", call, 400, -32000, "malformed"},
		{"POST malformed urn", http.MethodPost, "urn:uuid:" + valid, call, 400, -32000, "malformed"},
		{"POST malformed truncated", http.MethodPost, valid[:35], call, 400, -32000, "malformed"},
		{"POST unknown", http.MethodPost, unknownSID, call, 404, -32001, "not found"},
		{"POST missing", http.MethodPost, "", call, 400, -32000, "missing"},
		{"POST missing notification", http.MethodPost, "", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, 400, -32000, "missing"},
		{"GET malformed", http.MethodGet, "nope", "", 400, -32000, "malformed"},
		{"GET unknown", http.MethodGet, unknownSID, "", 404, -32001, "not found"},
		{"GET missing", http.MethodGet, "", "", 400, -32000, "missing"},
		{"DELETE malformed", http.MethodDelete, "nope", "", 400, -32000, "malformed"},
		{"DELETE unknown", http.MethodDelete, unknownSID, "", 404, -32001, "not found"},
		{"DELETE missing", http.MethodDelete, "", "", 400, -32000, "missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := mustRequest(t, tc.method, b.url("fake"), tc.sid, tc.body)
			checkTransportError(t, tc.name, r, tc.status, tc.code, tc.want)
			if got := r.header.Get("Mcp-Session-Id"); got != "" {
				t.Errorf("error answer carries Mcp-Session-Id %q", got)
			}
		})
	}
	// The valid session is untouched by all of that.
	r := c.callTool(`2`, "echo", map[string]string{"text": "still here"})
	if res, ok := checkResult(t, "echo after errors", r, valid, `2`); ok && textOf(res) != "still here" {
		t.Fatalf("echo: %s", r.body)
	}
}

// ---------------------------------------------------------------------------
// 3. Notifications, responses, requests and child errors.

func TestHTTPPostMessageKinds(t *testing.T) {
	b := fakeBridge(t, bridge.Options{})
	c := newClient(t, b.url("fake"))
	c.initialize()
	for _, tc := range []struct {
		name string
		body string
		// status 202: empty body. status 200: id and either result text
		// (wantText), a result member (wantResult) or an error code.
		status     int
		id         string
		wantText   string
		wantResult string
		errCode    int
		errWant    string
	}{
		{name: "notification", body: `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`, status: 202},
		{name: "notification with params", body: `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`, status: 202},
		{name: "response to nothing", body: `{"jsonrpc":"2.0","id":"no-such-request","result":{}}`, status: 202},
		{name: "error response to nothing", body: `{"jsonrpc":"2.0","id":41,"error":{"code":-1,"message":"no"}}`, status: 202},
		{name: "request", body: toolCallBody(`"r-1"`, "echo", map[string]string{"text": "hi there"}), status: 200, id: `"r-1"`, wantText: "hi there"},
		{name: "ping", body: `{"jsonrpc":"2.0","id":3,"method":"ping"}`, status: 200, id: `3`, wantResult: `{}`},
		{name: "unknown method", body: `{"jsonrpc":"2.0","id":5,"method":"nope/nope"}`, status: 200, id: `5`, errCode: -32601, errWant: "nope/nope"},
		{name: "unknown tool", body: toolCallBody(`"u"`, "no_such_tool", map[string]string{}), status: 200, id: `"u"`, errCode: -32602, errWant: "unknown tool"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := c.post(tc.body)
			if r.status == http.StatusAccepted || tc.status == http.StatusAccepted {
				checkEmpty(t, tc.name, r, tc.status)
				if got := r.header.Get("Mcp-Session-Id"); got != c.sid {
					t.Errorf("Mcp-Session-Id %q, want %q", got, c.sid)
				}
				return
			}
			m, ok := checkRPC(t, tc.name, r, c.sid, tc.id)
			if !ok {
				return
			}
			switch {
			case tc.errCode != 0:
				if m.Error == nil || m.Error.Code != tc.errCode || !strings.Contains(m.Error.Message, tc.errWant) || len(m.Result) != 0 {
					t.Errorf("want child error %d mentioning %q, got %s", tc.errCode, tc.errWant, r.body)
				}
			case tc.wantResult != "":
				if m.Error != nil || string(m.Result) != tc.wantResult {
					t.Errorf("want result %s, got %s", tc.wantResult, r.body)
				}
			default:
				if m.Error != nil || textOf(m.Result) != tc.wantText {
					t.Errorf("want text %q, got %s", tc.wantText, r.body)
				}
			}
		})
	}
	// The notifications reached the child; the bridge's own
	// notifications/initialized handling is not the client's.
	st := c.stats()
	got := strings.Join(st.Notifications, ",")
	for _, want := range []string{"notifications/roots/list_changed", "notifications/message"} {
		if !strings.Contains(got, want) {
			t.Errorf("child did not receive %s; it saw %v", want, st.Notifications)
		}
	}
}

// ---------------------------------------------------------------------------
// 4. Session cap, eviction and expiry.

func TestHTTPSessionCap(t *testing.T) {
	b := fakeBridge(t, bridge.Options{MaxSessions: 2})
	c1, c2 := newClient(t, b.url("fake")), newClient(t, b.url("fake"))
	c1.initialize()
	c2.initialize()
	// Both sessions are busy: each has an open GET stream.
	st1 := c1.openStream()
	c2.openStream()
	r := mustRequest(t, http.MethodPost, b.url("fake"), "", initBody)
	checkTransportError(t, "third initialize", r, http.StatusServiceUnavailable, 0, "fake", "maximum", "busy")
	ra := r.header.Get("Retry-After")
	if n, err := strconv.Atoi(ra); err != nil || n <= 0 {
		t.Errorf("Retry-After %q, want a positive number of seconds", ra)
	}
	if sid := r.header.Get("Mcp-Session-Id"); sid != "" {
		t.Errorf("refused initialize handed out session %q", sid)
	}
	if n := b.bridge.SessionCount("fake"); n != 2 {
		t.Errorf("SessionCount = %d, want 2", n)
	}
	// The refusal is counted.
	if m := scrape(t, b); m[`stelae_initialize_refused_total{destination="fake",reason="session_cap"}`] != 1 || m[`stelae_sessions_evicted_total{destination="fake"}`] != 0 {
		t.Errorf("metrics after one refusal: refused %v, evicted %v", m[`stelae_initialize_refused_total{destination="fake",reason="session_cap"}`], m[`stelae_sessions_evicted_total{destination="fake"}`])
	}
	// The two sessions are unharmed.
	for i, c := range []*client{c1, c2} {
		r := c.callTool(`1`, "echo", map[string]string{"text": "ok"})
		if res, ok := checkResult(t, fmt.Sprintf("echo on session %d", i+1), r, c.sid, `1`); ok && textOf(res) != "ok" {
			t.Errorf("echo: %s", r.body)
		}
	}
	// Once c1's stream closes it is no longer busy: the next initialize
	// evicts it at once.
	st1.close()
	waitFor(t, 10*time.Second, "a new session once c1 is idle", func() bool {
		r := mustRequest(t, http.MethodPost, b.url("fake"), "", initBody)
		return r.status == http.StatusOK
	})
	r = c1.callTool(`2`, "echo", map[string]string{"text": "x"})
	checkTransportError(t, "POST on the evicted session", r, http.StatusNotFound, -32001, "evicted")
}

// Many clients never send DELETE (claude.ai opens a session per
// conversation, the Inspector CLI one per run): at the cap the least
// recently used session that is not busy is evicted at once, whatever its
// idle time.
func TestHTTPSessionEvictLRU(t *testing.T) {
	b := fakeBridge(t, bridge.Options{MaxSessions: 3})
	a, bb, c := newClient(t, b.url("fake")), newClient(t, b.url("fake")), newClient(t, b.url("fake"))
	a.initialize()
	bb.initialize()
	c.initialize()
	// a is used again, so bb is now the least recently used; c has a call
	// in flight, so it is busy however old its last use.
	if r := a.callTool(`1`, "echo", map[string]string{"text": "recent"}); r.status != http.StatusOK {
		t.Fatalf("echo on a: %d %s", r.status, r.body)
	}
	slow := postAsync(b.url("fake"), c.sid, toolCallBody(`7`, "slow", map[string]any{"ms": 3000, "text": "slow"}))
	waitFor(t, 10*time.Second, "c's call in flight", func() bool {
		return scrape(t, b)[`stelae_inflight_calls{destination="fake"}`] == 1
	})
	// c's call is older than a's last use, and bb is older still.
	nc := newClient(t, b.url("fake"))
	r := nc.post(initBody)
	nc.sid = r.header.Get("Mcp-Session-Id")
	if _, ok := checkResult(t, "initialize at the cap", r, nc.sid, `0`); !ok {
		t.FailNow()
	}
	r = bb.callTool(`1`, "echo", map[string]string{"text": "x"})
	checkTransportError(t, "POST on the evicted session", r, http.StatusNotFound, -32001, "not found")
	for _, cl := range []*client{a, nc} {
		r := cl.callTool(`2`, "echo", map[string]string{"text": "still here"})
		if res, ok := checkResult(t, "echo on a surviving session", r, cl.sid, `2`); ok && textOf(res) != "still here" {
			t.Errorf("echo: %s", r.body)
		}
	}
	if res, ok := checkResult(t, "the busy session's call", awaitAsync(t, "slow call", slow, 20*time.Second), c.sid, `7`); ok && textOf(res) != "slow" {
		t.Errorf("slow call: %s", res)
	}
	if n := b.bridge.SessionCount("fake"); n != 3 {
		t.Errorf("SessionCount = %d, want 3", n)
	}
	if m := scrape(t, b); m[`stelae_sessions_evicted_total{destination="fake"}`] != 1 {
		t.Errorf("stelae_sessions_evicted_total = %v, want 1", m[`stelae_sessions_evicted_total{destination="fake"}`])
	}
}

func TestHTTPSessionTTL(t *testing.T) {
	b := fakeBridge(t, bridge.Options{SessionTTL: 200 * time.Millisecond})
	c := newClient(t, b.url("fake"))
	c.initialize()
	r := c.callTool(`1`, "echo", map[string]string{"text": "alive"})
	if _, ok := checkResult(t, "echo before expiry", r, c.sid, `1`); !ok {
		t.FailNow()
	}
	// No request in between: any request would keep the session alive.
	waitFor(t, 10*time.Second, "the janitor to expire the session", func() bool { return b.bridge.SessionCount("fake") == 0 })
	r = c.callTool(`2`, "echo", map[string]string{"text": "expired?"})
	checkTransportError(t, "POST after TTL", r, http.StatusNotFound, -32001, "not found")
	r = mustRequest(t, http.MethodGet, b.url("fake"), c.sid, "")
	checkTransportError(t, "GET after TTL", r, http.StatusNotFound, -32001)
	r = mustRequest(t, http.MethodDelete, b.url("fake"), c.sid, "")
	checkTransportError(t, "DELETE after TTL", r, http.StatusNotFound, -32001)
	if n := b.bridge.SessionCount("fake"); n != 0 {
		t.Errorf("SessionCount = %d, want 0", n)
	}
}

// ---------------------------------------------------------------------------
// 5. Bad bodies.

func TestHTTPBadBodies(t *testing.T) {
	b := fakeBridge(t, bridge.Options{MaxBodyBytes: 1024})
	c := newClient(t, b.url("fake"))
	c.initialize()
	bigText := strings.Repeat("x", 2048)
	for _, tc := range []struct {
		name   string
		body   string
		ct     string
		status int
		code   int
		want   string
	}{
		{name: "malformed JSON", body: `{"jsonrpc":"2.0","id":1,`, status: 400, code: -32700},
		{name: "not an object", body: `"just a string"`, status: 400, code: -32700},
		{name: "batch", body: `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`, status: 400, want: "batching is not supported"},
		{name: "batch with leading space", body: ` [{"jsonrpc":"2.0","id":1,"method":"ping"}]`, status: 400, want: "batching is not supported"},
		{name: "too large", body: toolCallBody(`1`, "echo", map[string]string{"text": bigText}), status: 413, want: "1024"},
		{name: "text/plain", body: toolCallBody(`1`, "echo", map[string]string{"text": "x"}), ct: "text/plain", status: 415, want: "text/plain"},
		{name: "form", body: `a=b`, ct: "application/x-www-form-urlencoded", status: 415},
	} {
		for _, withSession := range []bool{true, false} {
			name := tc.name + map[bool]string{true: " with session", false: " without session"}[withSession]
			t.Run(name, func(t *testing.T) {
				sid := ""
				if withSession {
					sid = c.sid
				}
				var hdr []string
				if tc.ct != "" {
					hdr = []string{"Content-Type", tc.ct}
				}
				r := mustRequest(t, http.MethodPost, b.url("fake"), sid, tc.body, hdr...)
				checkTransportError(t, name, r, tc.status, tc.code, tc.want)
			})
		}
	}
	// Just under the limit is fine, and the session survived all of that.
	text := strings.Repeat("y", 900)
	body := toolCallBody(`"fits"`, "echo", map[string]string{"text": text})
	if len(body) > 1024 {
		t.Fatalf("test bug: body of %d bytes", len(body))
	}
	r := c.post(body)
	if res, ok := checkResult(t, "body under the limit", r, c.sid, `"fits"`); ok && textOf(res) != text {
		t.Errorf("echo lost text: %s", r.body)
	}
}

// ---------------------------------------------------------------------------
// 6. GET streams.

func TestHTTPGetStreamHeadersAtOnce(t *testing.T) {
	// Default keepalive (15 s): nothing but the headers can arrive early.
	b := fakeBridge(t, bridge.Options{})
	c := newClient(t, b.url("fake"))
	c.initialize()
	s := openSSEWith(t, sseOptions{raw: true, anyStatus: true}, http.MethodGet, b.url("fake"), c.sid, "")
	if s.resp.StatusCode != http.StatusOK {
		t.Fatalf("GET: status %d", s.resp.StatusCode)
	}
	if s.headersAfter > 2*time.Second {
		t.Errorf("GET headers took %s: they must be flushed at once", s.headersAfter)
	}
	checkSSEHeaders(t, "GET", s.resp.Header)
	if got := s.resp.Header.Get("Mcp-Session-Id"); got != c.sid {
		t.Errorf("GET Mcp-Session-Id %q, want %q", got, c.sid)
	}
	// Headers came before any event: the stream is still silent.
	select {
	case l, ok := <-s.lines:
		t.Fatalf("unexpected early stream content %q (open %v)", l, ok)
	case <-time.After(200 * time.Millisecond):
	}
}

func TestHTTPGetKeepAliveAndEventFormat(t *testing.T) {
	b := fakeBridge(t, bridge.Options{KeepAlive: 100 * time.Millisecond})
	c := newClient(t, b.url("fake"))
	c.initialize()
	s := openSSEWith(t, sseOptions{raw: true, anyStatus: true}, http.MethodGet, b.url("fake"), c.sid, "")
	if s.resp.StatusCode != http.StatusOK {
		t.Fatalf("GET: status %d", s.resp.StatusCode)
	}
	checkSSEHeaders(t, "GET", s.resp.Header)
	// Two keepalive comments within a second.
	keepalives := 0
	deadline := time.Now().Add(2 * time.Second)
	for keepalives < 2 && time.Now().Before(deadline) {
		switch l := s.line(t, 2*time.Second); l {
		case ": keepalive":
			keepalives++
		case "":
		default:
			t.Fatalf("unexpected line on an idle stream: %q", l)
		}
	}
	if keepalives < 2 {
		t.Fatalf("saw %d keepalive comments in 2 s with KeepAlive 100ms", keepalives)
	}
	// Two events: each is event: message, id: N, data: JSON, blank line;
	// ids increase.
	var lastID uint64
	for i := 0; i < 2; i++ {
		r := c.callTool(strconv.Itoa(10+i), "list_changed", nil)
		if _, ok := checkResult(t, "list_changed", r, c.sid, strconv.Itoa(10+i)); !ok {
			t.FailNow()
		}
		var ev []string
		for len(ev) < 4 {
			l := s.line(t, 3*time.Second)
			if len(ev) == 0 && (l == ": keepalive" || l == "") {
				continue
			}
			ev = append(ev, l)
		}
		if ev[0] != "event: message" || !strings.HasPrefix(ev[1], "id: ") || !strings.HasPrefix(ev[2], "data: ") || ev[3] != "" {
			t.Fatalf("event %d is not event/id/data/blank: %q", i, ev)
		}
		// Ids name their stream ("g1-7": GET stream 1, event 7) and grow.
		streamPart, seqPart, _ := strings.Cut(strings.TrimPrefix(ev[1], "id: "), "-")
		id, err := strconv.ParseUint(seqPart, 10, 64)
		if err != nil || id <= lastID || !strings.HasPrefix(streamPart, "g") {
			t.Fatalf("event id %q is not a GET-stream id with an increasing number (last %d)", ev[1], lastID)
		}
		lastID = id
		m := decode(t, []byte(strings.TrimPrefix(ev[2], "data: ")))
		if m.JSONRPC != "2.0" || m.Method != "notifications/tools/list_changed" || len(m.ID) != 0 {
			t.Fatalf("event data %q is not the list_changed notification", ev[2])
		}
	}
}

func TestHTTPGetSeveralStreamsEachReceive(t *testing.T) {
	b := fakeBridge(t, bridge.Options{})
	c := newClient(t, b.url("fake"))
	c.initialize()
	var streams []*stream
	for i := 0; i < 3; i++ {
		st := c.openStream()
		checkSSEHeaders(t, fmt.Sprintf("stream %d", i), st.resp.Header)
		streams = append(streams, st)
	}
	r := c.callTool(`1`, "list_changed", nil)
	if res, ok := checkResult(t, "list_changed", r, c.sid, `1`); !ok || textOf(res) != "sent" {
		t.Fatalf("list_changed: %s", r.body)
	}
	for i, st := range streams {
		select {
		case ev, ok := <-st.events:
			if !ok {
				t.Fatalf("stream %d closed", i)
			}
			if ev.event != "message" || ev.id == "" {
				t.Errorf("stream %d: event %q id %q, want event message with an id", i, ev.event, ev.id)
			}
			if m := decode(t, ev.data); m.Method != "notifications/tools/list_changed" {
				t.Errorf("stream %d: got %s", i, ev.data)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("stream %d: no list_changed within 5s", i)
		}
	}
	// Exactly once each.
	for _, st := range streams {
		st.none(t, "notifications/tools/list_changed", 200*time.Millisecond)
	}
}

func TestHTTPGetBuffersUntilStreamAttaches(t *testing.T) {
	b := fakeBridge(t, bridge.Options{})
	c := newClient(t, b.url("fake"))
	c.initialize()
	// No stream open: the notification goes to the session's backlog.
	r := c.callTool(`1`, "list_changed", nil)
	if res, ok := checkResult(t, "list_changed", r, c.sid, `1`); !ok || textOf(res) != "sent" {
		t.Fatalf("list_changed: %s", r.body)
	}
	// The child sent the notification before the call's answer, and the
	// bridge reads the child's output in order: it is in the backlog now.
	st := c.openStream()
	checkSSEHeaders(t, "GET", st.resp.Header)
	select {
	case ev, ok := <-st.events:
		if !ok {
			t.Fatal("stream closed")
		}
		if m := decode(t, ev.data); ev.event != "message" || ev.id == "" || m.Method != "notifications/tools/list_changed" {
			t.Fatalf("first event: event %q id %q data %s", ev.event, ev.id, ev.data)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the buffered list_changed was not delivered when the stream attached")
	}
	// The backlog is handed over once: a second stream gets nothing old.
	st2 := c.openStream()
	st2.none(t, "notifications/tools/list_changed", 200*time.Millisecond)
}

// ---------------------------------------------------------------------------
// 7. DELETE.

func TestHTTPDeleteEndsSession(t *testing.T) {
	b := fakeBridge(t, bridge.Options{})
	keep := newClient(t, b.url("fake"))
	keep.initialize()
	c := newClient(t, b.url("fake"))
	c.initialize()
	st := c.openStream()
	r := c.must(http.MethodDelete, "")
	checkEmpty(t, "DELETE", r, http.StatusNoContent)
	// The open stream ends.
	waitFor(t, 10*time.Second, "the GET stream to end after DELETE", func() bool {
		select {
		case _, ok := <-st.events:
			return !ok
		default:
			return false
		}
	})
	for _, tc := range []struct{ method, body string }{
		{http.MethodPost, toolCallBody(`1`, "echo", map[string]string{"text": "x"})},
		{http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/initialized"}`},
		{http.MethodGet, ""},
		{http.MethodDelete, ""},
	} {
		r := mustRequest(t, tc.method, b.url("fake"), c.sid, tc.body)
		checkTransportError(t, tc.method+" after DELETE", r, http.StatusNotFound, -32001, "not found")
	}
	if n := b.bridge.SessionCount("fake"); n != 1 {
		t.Errorf("SessionCount = %d, want 1", n)
	}
	// The other session is untouched.
	r = keep.callTool(`1`, "echo", map[string]string{"text": "fine"})
	if res, ok := checkResult(t, "echo on the other session", r, keep.sid, `1`); ok && textOf(res) != "fine" {
		t.Errorf("echo: %s", r.body)
	}
}

func TestHTTPDeleteCancelsInFlight(t *testing.T) {
	b := fakeBridge(t, bridge.Options{})
	other := newClient(t, b.url("fake"))
	other.initialize() // keeps the child alive after the DELETE
	c := newClient(t, b.url("fake"))
	c.initialize()
	if n := len(other.stats().Cancelled); n != 0 {
		t.Fatalf("child saw %d cancellations before the test", n)
	}
	pending := postAsync(b.url("fake"), c.sid, toolCallBody(`"never-1"`, "never", map[string]any{}))
	waitCalled(t, other, "never")
	select {
	case res := <-pending:
		t.Fatalf("tool never answered: %v %d %s", res.err, res.r.status, res.r.body)
	default:
	}
	start := time.Now()
	r := c.must(http.MethodDelete, "")
	checkEmpty(t, "DELETE", r, http.StatusNoContent)
	pr := awaitAsync(t, "the in-flight POST after DELETE", pending, 5*time.Second)
	t.Logf("in-flight POST ended %s after the DELETE began: %d %s", time.Since(start), pr.status, pr.body)
	checkTransportError(t, "in-flight POST", pr, http.StatusNotFound, 0, "session")
	var st childStats
	waitFor(t, 10*time.Second, "the child to receive notifications/cancelled", func() bool {
		st = other.stats()
		return len(st.Cancelled) > 0
	})
	if len(st.Cancelled) != 1 {
		t.Errorf("child saw %d cancellations, want 1: %s", len(st.Cancelled), st.Cancelled)
	}
	if id := string(st.Cancelled[0]); id == `"never-1"` || id == "null" {
		t.Errorf("cancellation names request %s: want the bridge's upstream id, not the client's", id)
	}
	if !strings.Contains(strings.Join(st.Notifications, ","), "notifications/cancelled") {
		t.Errorf("child notifications %v lack notifications/cancelled", st.Notifications)
	}
}

// ---------------------------------------------------------------------------
// 8. Routes.

func TestHTTPRoutes(t *testing.T) {
	b := fakeBridge(t, bridge.Options{})
	base := b.srv.URL
	for _, tc := range []struct {
		name   string
		method string
		path   string
		body   string
		status int
		want   []string
	}{
		{"legacy GET sse", http.MethodGet, "/fake/sse", "", 410, []string{"/fake/mcp"}},
		{"legacy POST message", http.MethodPost, "/fake/message", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, 410, []string{"/fake/mcp"}},
		{"legacy POST message with query", http.MethodPost, "/fake/message?sessionId=abc", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, 410, []string{"/fake/mcp"}},
		{"unknown destination POST", http.MethodPost, "/nope/mcp", initBody, 404, []string{`"nope"`, "fake"}},
		{"unknown destination GET", http.MethodGet, "/nope/mcp", "", 404, []string{`"nope"`}},
		{"unknown destination legacy", http.MethodGet, "/nope/sse", "", 404, []string{`"nope"`}},
		{"unknown route", http.MethodPost, "/fake/other", initBody, 404, []string{"/fake/mcp"}},
		// GET / describes the bridge (TestBridgeRoutes); a POST there needs a
		// default destination.
		{"root POST without a default", http.MethodPost, "/", initBody, 404, []string{"default"}},
		{"method not allowed", http.MethodPut, "/fake/mcp", "", 405, []string{"PUT"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := mustRequest(t, tc.method, base+tc.path, "", tc.body)
			checkTransportError(t, tc.name, r, tc.status, 0, tc.want...)
			if loc := r.header.Get("Location"); loc != "" {
				t.Errorf("Location %q on a %d", loc, r.status)
			}
		})
	}

	t.Run("trailing slash works for POST", func(t *testing.T) {
		url := b.url("fake") + "/"
		r := mustRequest(t, http.MethodPost, url, "", initBody)
		sid := r.header.Get("Mcp-Session-Id")
		if _, ok := checkResult(t, "initialize at /fake/mcp/", r, sid, `0`); !ok || !uuidV4.MatchString(sid) {
			t.Fatalf("initialize at /fake/mcp/: %d %q %s", r.status, sid, r.body)
		}
		r = mustRequest(t, http.MethodPost, url, sid, toolCallBody(`1`, "echo", map[string]string{"text": "slash"}))
		if res, ok := checkResult(t, "echo at /fake/mcp/", r, sid, `1`); ok && textOf(res) != "slash" {
			t.Errorf("echo: %s", r.body)
		}
	})

	for _, path := range []string{"//fake/mcp", "/fake/../fake/mcp", "/fake/./mcp", "/fake//mcp", "//fake//mcp/"} {
		t.Run("never redirects "+path, func(t *testing.T) {
			for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
				body := ""
				if method == http.MethodPost {
					body = initBody
				}
				r := mustRequest(t, method, base+path, "", body)
				if r.status >= 300 && r.status < 400 || r.header.Get("Location") != "" {
					t.Errorf("%s %s: redirect %d to %q", method, path, r.status, r.header.Get("Location"))
					continue
				}
				if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
					t.Errorf("%s %s: %d with Content-Type %q: %q", method, path, r.status, ct, r.body)
				}
				if !json.Valid(r.body) || !bytes.Contains(r.body, []byte(`"jsonrpc":"2.0"`)) {
					t.Errorf("%s %s: %d body is not JSON-RPC: %q", method, path, r.status, r.body)
				}
				if r.status >= 400 {
					checkTransportError(t, method+" "+path, r, r.status, 0)
				}
				if sid := r.header.Get("Mcp-Session-Id"); sid != "" && r.status == http.StatusOK {
					mustRequest(t, http.MethodDelete, b.url("fake"), sid, "")
				}
			}
		})
	}

	t.Run("HEAD", func(t *testing.T) {
		r := mustRequest(t, http.MethodHead, b.url("fake"), "", "")
		if r.status != http.StatusOK {
			t.Fatalf("HEAD: status %d", r.status)
		}
		checkSSEHeaders(t, "HEAD", r.header)
		if len(r.body) != 0 {
			t.Errorf("HEAD body %q", r.body)
		}
	})
	t.Run("OPTIONS", func(t *testing.T) {
		r := mustRequest(t, http.MethodOptions, b.url("fake"), "", "")
		checkEmpty(t, "OPTIONS", r, http.StatusNoContent)
		allow := r.header.Get("Allow")
		for _, m := range []string{"GET", "POST", "DELETE"} {
			if !strings.Contains(allow, m) {
				t.Errorf("Allow %q lacks %s", allow, m)
			}
		}
	})
}

// ---------------------------------------------------------------------------
// 9. Multiplexing and ids.

func TestHTTPMultiplexSameIDsAcrossSessions(t *testing.T) {
	b := fakeBridge(t, bridge.Options{})
	const n = 50
	sessions := map[string]*client{"A": newClient(t, b.url("fake")), "B": newClient(t, b.url("fake"))}
	for _, c := range sessions {
		c.initialize()
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for name, c := range sessions {
		for i := 1; i <= n; i++ {
			for _, id := range []string{strconv.Itoa(i), strconv.Quote(strconv.Itoa(i))} {
				text := fmt.Sprintf("session %s id %s", name, id)
				wg.Add(1)
				go func(sid, id, text string) {
					defer wg.Done()
					<-start
					r, err := request(http.MethodPost, b.url("fake"), sid, toolCallBody(id, "echo", map[string]string{"text": text}))
					if err != nil {
						t.Errorf("%s: %v", text, err)
						return
					}
					if res, ok := checkResult(t, text, r, sid, id); ok && textOf(res) != text {
						t.Errorf("%s: got someone else's answer %q", text, textOf(res))
					}
				}(c.sid, id, text)
			}
		}
	}
	close(start)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("concurrent calls did not all finish within 20s")
	}
}

func TestHTTPIDsByteExact(t *testing.T) {
	b := fakeBridge(t, bridge.Options{})
	c := newClient(t, b.url("fake"))
	c.initialize()
	for _, tc := range []struct{ name, id string }{
		{"integer", `1`},
		{"string one", `"1"`},
		{"zero", `0`},
		{"negative", `-1`},
		{"20 digits", `12345678901234567890`},
		{"beyond float64 precision", `9007199254740993`},
		{"min int64", `-9223372036854775808`},
		{"30 digits", `123456789012345678901234567890`},
		{"numeric string of 20 digits", `"12345678901234567890"`},
		{"empty string", `""`},
		{"escaped quotes", `"a \"quoted\" id"`},
		{"unicode escape", `"\u00e9t\u00e9"`},
		{"utf-8", `"été-☃"`},
		{"looks like an upstream id", `"42"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := "id " + tc.id
			r := c.post(toolCallBody(tc.id, "echo", map[string]string{"text": text}))
			if res, ok := checkResult(t, tc.name, r, c.sid, tc.id); ok && textOf(res) != text {
				t.Errorf("echo text %q, want %q", textOf(res), text)
			}
		})
	}
}

func TestHTTPSameIDReusedWhileInFlight(t *testing.T) {
	b := fakeBridge(t, bridge.Options{})
	c := newClient(t, b.url("fake"))
	c.initialize()
	first := postAsync(c.url, c.sid, toolCallBody(`7`, "slow", map[string]any{"ms": 300, "text": "first"}))
	waitCalled(t, c, "slow") // the first is in flight
	r := c.callTool(`7`, "echo", map[string]string{"text": "second"})
	secondAt := time.Now()
	if res, ok := checkResult(t, "second call with id 7", r, c.sid, `7`); ok && textOf(res) != "second" {
		t.Errorf("second call got %q, want %q", textOf(res), "second")
	}
	var fr asyncResult
	select {
	case fr = <-first:
	case <-time.After(5 * time.Second):
		t.Fatal("first call with id 7 never answered")
	}
	if fr.err != nil {
		t.Fatalf("first call: %v", fr.err)
	}
	if res, ok := checkResult(t, "first call with id 7", fr.r, c.sid, `7`); ok && textOf(res) != "first" {
		t.Errorf("first call got %q, want %q", textOf(res), "first")
	}
	if fr.at.Before(secondAt) {
		t.Logf("note: the slow call finished before the echo (%s earlier)", secondAt.Sub(fr.at))
	}
}

// ---------------------------------------------------------------------------
// 10. One handshake per child.

func TestHTTPInitializeOncePerChild(t *testing.T) {
	b := fakeBridge(t, bridge.Options{})
	var clients []*client
	sids := map[string]bool{}
	for i := 0; i < 5; i++ {
		c := newClient(t, b.url("fake"))
		c.initialize()
		if sids[c.sid] {
			t.Fatalf("session id %s reused", c.sid)
		}
		sids[c.sid] = true
		clients = append(clients, c)
	}
	pid := 0
	ups := map[string]bool{}
	for i, c := range clients {
		r := c.callTool(`"who"`, "whoami", nil)
		res, ok := checkResult(t, "whoami", r, c.sid, `"who"`)
		if !ok {
			t.FailNow()
		}
		var w struct {
			PID        int             `json:"pid"`
			Inits      int             `json:"inits"`
			UpstreamID json.RawMessage `json:"upstream_id"`
		}
		if err := json.Unmarshal(res, &w); err != nil {
			t.Fatalf("whoami: %v: %s", err, res)
		}
		if w.Inits != 1 {
			t.Errorf("session %d: child saw %d initialize requests, want 1", i, w.Inits)
		}
		if i == 0 {
			pid = w.PID
		} else if w.PID != pid {
			t.Errorf("session %d talks to pid %d, session 0 to %d: want one shared child", i, w.PID, pid)
		}
		if _, err := strconv.ParseUint(string(w.UpstreamID), 10, 64); err != nil || ups[string(w.UpstreamID)] {
			t.Errorf("session %d: upstream id %s is not a fresh bridge-minted number", i, w.UpstreamID)
		}
		ups[string(w.UpstreamID)] = true
	}
	if st := b.dispatchers["fake"].Status(); st.PID != pid || st.Sessions != 5 {
		t.Errorf("dispatcher status pid %d sessions %d, want pid %d sessions 5", st.PID, st.Sessions, pid)
	}
}

// ---------------------------------------------------------------------------
// 11. Progress routing.

// Clients that accept only JSON get their answer as JSON and the call's
// progress on their GET stream (TestSSEProgressOnPostStream covers clients
// that accept SSE).
func TestHTTPProgressReachesOnlyItsSession(t *testing.T) {
	b := fakeBridge(t, bridge.Options{})
	a, bb := newClient(t, b.url("fake")), newClient(t, b.url("fake"))
	a.initialize()
	bb.initialize()
	stA, stB := a.openStream(), bb.openStream()
	progressCall := func(id, token string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"progress","arguments":{"steps":3,"ms":10},"_meta":{"progressToken":%s}}}`, id, token)
	}
	callA := postAsync(a.url, a.sid, progressCall(`1`, `"tokA"`), "Accept", "application/json")
	callB := postAsync(bb.url, bb.sid, progressCall(`1`, `7`), "Accept", "application/json")
	ra := awaitAsync(t, "progress call A", callA, 10*time.Second)
	rb := awaitAsync(t, "progress call B", callB, 10*time.Second)
	if res, ok := checkResult(t, "progress call A", ra, a.sid, `1`); ok && textOf(res) != "done" {
		t.Errorf("A: %s", ra.body)
	}
	if res, ok := checkResult(t, "progress call B", rb, bb.sid, `1`); ok && textOf(res) != "done" {
		t.Errorf("B: %s", rb.body)
	}
	for _, tc := range []struct {
		name  string
		st    *stream
		token string
	}{{"A", stA, `"tokA"`}, {"B", stB, `7`}} {
		got := tc.st.collect(t, "notifications/progress", 500*time.Millisecond)
		if len(got) != 3 {
			t.Errorf("stream %s: %d progress notifications, want 3: %v", tc.name, len(got), got)
		}
		for i, m := range got {
			var p struct {
				ProgressToken json.RawMessage `json:"progressToken"`
				Progress      int             `json:"progress"`
				Total         int             `json:"total"`
			}
			if err := json.Unmarshal(m.Params, &p); err != nil {
				t.Fatalf("stream %s: progress params %s: %v", tc.name, m.Params, err)
			}
			if string(p.ProgressToken) != tc.token {
				t.Errorf("stream %s: progress with token %s, want exactly %s (another session's progress, or a rewritten token)", tc.name, p.ProgressToken, tc.token)
			}
			if p.Progress != i+1 || p.Total != 3 {
				t.Errorf("stream %s: progress %d/%d at position %d", tc.name, p.Progress, p.Total, i)
			}
		}
	}
	// A list_changed reaches every session's stream.
	r := a.callTool(`2`, "list_changed", nil)
	if _, ok := checkResult(t, "list_changed", r, a.sid, `2`); !ok {
		t.FailNow()
	}
	stA.next(t, "notifications/tools/list_changed", 5*time.Second)
	stB.next(t, "notifications/tools/list_changed", 5*time.Second)
}

// ---------------------------------------------------------------------------
// 12. Child → client requests.

// A JSON-only client gets the child's request on its GET stream
// (TestSSEChildRequestOnPostStream covers clients that accept SSE).
func TestHTTPChildRequestRoutedToCaller(t *testing.T) {
	b := fakeBridge(t, bridge.Options{})
	a, other := newClient(t, b.url("fake")), newClient(t, b.url("fake"))
	a.initialize()
	other.initialize()
	stA, stOther := a.openStream(), other.openStream()
	call := postAsync(a.url, a.sid, toolCallBody(`"s-1"`, "sample", map[string]string{"prompt": "hi"}), "Accept", "application/json")
	req := stA.next(t, "sampling/createMessage", 5*time.Second)
	if len(req.ID) == 0 || string(req.ID) == "null" {
		t.Fatalf("sampling/createMessage without an id")
	}
	var p struct {
		Messages []struct {
			Role    string `json:"role"`
			Content struct{ Type, Text string }
		} `json:"messages"`
		MaxTokens int `json:"maxTokens"`
	}
	if err := json.Unmarshal(req.Params, &p); err != nil || len(p.Messages) != 1 || p.Messages[0].Content.Text != "hi" || p.MaxTokens != 10 {
		t.Fatalf("sampling params %s (%v)", req.Params, err)
	}
	answer := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"role":"assistant","content":{"type":"text","text":"pong"},"model":"m"}}`, req.ID)
	r := a.post(answer)
	checkEmpty(t, "POST of the sampling answer", r, http.StatusAccepted)
	if got := r.header.Get("Mcp-Session-Id"); got != a.sid {
		t.Errorf("Mcp-Session-Id %q, want %q", got, a.sid)
	}
	res, ok := checkResult(t, "sample", awaitAsync(t, "sample call", call, 10*time.Second), a.sid, `"s-1"`)
	if !ok {
		t.FailNow()
	}
	var out struct {
		ChildRequestID json.RawMessage `json:"child_request_id"`
		Answer         json.RawMessage `json:"answer"`
		Error          json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(res, &out); err != nil {
		t.Fatalf("sample result: %v: %s", err, res)
	}
	if !bytes.Contains(out.Answer, []byte(`"pong"`)) || !bytes.Contains(out.Answer, []byte(`"model":"m"`)) {
		t.Errorf("the child got answer %s, want the client's pong", out.Answer)
	}
	if len(out.Error) != 0 && string(out.Error) != "null" {
		t.Errorf("the child got an error: %s", out.Error)
	}
	if string(out.ChildRequestID) != string(req.ID) {
		t.Errorf("child_request_id %s, stream showed id %s: the child's id must reach the client unchanged", out.ChildRequestID, req.ID)
	}
	stOther.none(t, "sampling/createMessage", 300*time.Millisecond)
}

// ---------------------------------------------------------------------------
// 13. resources/subscribe reference counting.

func TestHTTPSubscribeRefCount(t *testing.T) {
	b := fakeBridge(t, bridge.Options{})
	a, bb := newClient(t, b.url("fake")), newClient(t, b.url("fake"))
	a.initialize()
	bb.initialize()
	stA, stB := a.openStream(), bb.openStream()
	const uri = "test://a"
	sub := func(c *client, method, id string) {
		t.Helper()
		r := c.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":%q,"params":{"uri":%q}}`, id, method, uri))
		if res, ok := checkResult(t, method, r, c.sid, id); ok && string(res) != "{}" {
			t.Errorf("%s: result %s, want {}", method, res)
		}
	}
	count := func(want int, when string) {
		t.Helper()
		if got := a.stats().Subscribes[uri]; got != want {
			t.Errorf("%s: child subscription count for %s is %d, want %d", when, uri, got, want)
		}
	}
	sub(a, "resources/subscribe", `1`)
	count(1, "after A subscribed")
	sub(bb, "resources/subscribe", `"b1"`)
	count(1, "after B subscribed too")
	sub(a, "resources/unsubscribe", `2`)
	count(1, "after A unsubscribed")

	r := a.callTool(`3`, "notify", map[string]string{"method": "notifications/resources/updated", "uri": uri})
	if res, ok := checkResult(t, "notify", r, a.sid, `3`); ok && textOf(res) != "sent" {
		t.Errorf("notify: %s", r.body)
	}
	m := stB.next(t, "notifications/resources/updated", 5*time.Second)
	var p struct{ URI string }
	if err := json.Unmarshal(m.Params, &p); err != nil || p.URI != uri {
		t.Errorf("resources/updated params %s", m.Params)
	}
	stA.none(t, "notifications/resources/updated", 300*time.Millisecond)

	sub(bb, "resources/unsubscribe", `"b2"`)
	count(0, "after B unsubscribed")
}

// TestLargeAnswerHasContentLength: a JSON answer longer than net/http's
// buffer goes out with Content-Length, not chunked (rawConn.post reads only
// Content-Length answers).
func TestLargeAnswerHasContentLength(t *testing.T) {
	b := fakeBridge(t, bridge.Options{})
	c := newClient(t, b.url("fake"))
	c.initialize()
	rc, err := dialRaw(b.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.c.Close()
	for _, n := range []int{100, 100_000} {
		status, err := rc.post("/fake/mcp", c.sid, []byte(toolCallBody("1", "big", map[string]int{"bytes": n})))
		if err != nil || status != http.StatusOK {
			t.Errorf("a %d-byte answer: status %d, %v", n, status, err)
		}
	}
}
