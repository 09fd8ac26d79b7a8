package dispatch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/stelae-bridge/stelae-bridge/jsonrpc"
	"github.com/stelae-bridge/stelae-bridge/supervisor"
	"path"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// scriptConn is an in-memory child for the tool tests: it answers initialize
// (with the capabilities in caps), tools/list (from tools, pageSize at a time,
// or rawList verbatim when set) and tools/call (naming the tool), records
// what it was sent, and can emit lines of its own.
type scriptConn struct {
	memPipe
	// stopGate, when set, holds Stop until it is closed.
	stopGate chan struct{}

	// mu guards every field below.
	mu         sync.Mutex
	caps       string
	tools      []string
	pageSize   int
	rawList    string
	listErr    string
	initParams []string
	methods    []string
	called     []string
	cursors    []string
	// sent are the messages written to the child, whole.
	sent []string
}

func newScriptConn(tools ...string) *scriptConn {
	return &scriptConn{
		memPipe: newMemPipe(),
		caps:    `{"tools":{"listChanged":true}}`,
		tools:   tools,
	}
}

// Enqueue is WriteMessage: it does not block either.
func (c *scriptConn) Enqueue(msg []byte) error { return c.WriteMessage(msg) }

func (c *scriptConn) WriteMessage(msg []byte) error {
	select {
	case <-c.exited:
		return context.Canceled
	default:
	}
	m, err := jsonrpc.Parse(msg)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.methods = append(c.methods, m.Method)
	c.sent = append(c.sent, string(msg))
	if !m.HasID() || m.Method == "" {
		return nil
	}
	var result string
	switch m.Method {
	case "initialize":
		c.initParams = append(c.initParams, string(m.Params))
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(m.Params, &p)
		result = fmt.Sprintf(`{"protocolVersion":%q,"capabilities":%s,"serverInfo":{"name":"script","version":"1"}}`, p.ProtocolVersion, c.caps)
	case "tools/list":
		var p struct {
			Cursor string `json:"cursor"`
		}
		_ = json.Unmarshal(m.Params, &p)
		c.cursors = append(c.cursors, p.Cursor)
		if c.listErr != "" {
			c.lines <- []byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"error":` + c.listErr + `}`)
			return nil
		}
		result = c.listLocked(p.Cursor)
	case "tools/call":
		var p struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(m.Params, &p)
		c.called = append(c.called, p.Name)
		result = fmt.Sprintf(`{"content":[{"type":"text","text":%q}]}`, "called "+p.Name)
	default:
		result = `{}`
	}
	c.lines <- []byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":` + result + `}`)
	return nil
}

// listLocked builds a tools/list result for cursor. c.mu must be held.
func (c *scriptConn) listLocked(cursor string) string {
	if c.rawList != "" {
		return c.rawList
	}
	start := 0
	if cursor != "" {
		start, _ = strconv.Atoi(strings.TrimPrefix(cursor, "page-"))
	}
	end := len(c.tools)
	if c.pageSize > 0 && start+c.pageSize < end {
		end = start + c.pageSize
	}
	out := `{"tools":[` + strings.Join(c.tools[start:end], ",") + `]`
	if end < len(c.tools) {
		out += fmt.Sprintf(`,"nextCursor":"page-%d"`, end)
	}
	return out + `}`
}

func (c *scriptConn) Stop(ctx context.Context) error {
	if c.stopGate != nil {
		select {
		case <-c.stopGate:
		case <-ctx.Done():
		}
	}
	c.crash()
	return nil
}
func (c *scriptConn) ExitStatus() string { return "" }
func (c *scriptConn) PID() int           { return 1 }

func (c *scriptConn) snapshot() (methods, called, initParams, cursors []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.methods...), append([]string(nil), c.called...),
		append([]string(nil), c.initParams...), append([]string(nil), c.cursors...)
}

// written are the messages written to the child.
func (c *scriptConn) written() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.sent...)
}

func (c *scriptConn) set(f func(c *scriptConn)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f(c)
}

// scriptLauncher launches the conns made by next, one per start, and keeps
// them in order.
type scriptLauncher struct {
	next func(n int) *scriptConn

	// mu guards conns.
	mu    sync.Mutex
	conns []*scriptConn
}

func (l *scriptLauncher) launch(context.Context) (supervisor.Child, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c := l.next(len(l.conns))
	l.conns = append(l.conns, c)
	return c, nil
}

func (l *scriptLauncher) started() []*scriptConn {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]*scriptConn(nil), l.conns...)
}

// recSession records what it is delivered.
type recSession struct {
	// mu guards msgs.
	mu   sync.Mutex
	msgs []string
}

func (s *recSession) SessionID() string { return "rec" }
func (s *recSession) User() any         { return s }
func (s *recSession) Deliver(msg []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.msgs = append(s.msgs, string(msg))
	return true
}
func (s *recSession) End(error) {}
func (s *recSession) got() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.msgs...)
}

// globs returns ToolAllowed for an allow (allow true) or deny list.
// globs mirrors config.ToolFilter.Allows (which dispatch's tests cannot
// import): an allow list matches exactly, a deny list in any letter case.
func globs(allow bool, patterns ...string) func(string) bool {
	return func(name string) bool {
		for _, p := range patterns {
			if ok, _ := path.Match(p, name); ok {
				return allow
			}
			if !allow {
				if ok, _ := path.Match(strings.ToUpper(p), strings.ToUpper(name)); ok || strings.EqualFold(p, name) {
					return false
				}
			}
		}
		return !allow
	}
}

// stateOf is the dispatcher's state, with stopping told apart from idle.
func stateOf(d *Dispatcher) string {
	st := d.Status()
	if st.Stopping {
		return "stopping"
	}
	return st.State
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func call(t *testing.T, d *Dispatcher, s Session, body string) []byte {
	t.Helper()
	m, err := jsonrpc.Parse([]byte(body))
	if err != nil {
		t.Fatalf("jsonrpc.Parse(%s): %v", body, err)
	}
	resp, err := d.Do(context.Background(), s, m, 5*time.Second)
	if err != nil {
		t.Fatalf("Call(%s): %v", body, err)
	}
	return resp
}

const testInit = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

func newToolDispatcher(t *testing.T, opts Options, next func(n int) *scriptConn) (*Dispatcher, *scriptLauncher) {
	t.Helper()
	l := &scriptLauncher{next: next}
	opts.Name = "tools"
	opts.Launch = l.launch
	d := New(opts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := d.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return d, l
}

func toolNames(t *testing.T, tools []json.RawMessage) []string {
	t.Helper()
	names := []string{}
	for _, tool := range tools {
		var v struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(tool, &v); err != nil {
			t.Fatalf("tool %s: %v", tool, err)
		}
		names = append(names, v.Name)
	}
	return names
}

func TestToolsListFiltered(t *testing.T) {
	// Odd spacing, escapes and extra members must survive byte for byte.
	const raw = `{"tools":[{"name":"echo","description":"e"} , {"name":"crash","x":[1,2]},{"name":"get_a","inputSchema":{"type":"object"}}], "nextCursor" : "c\u0031" ,"_meta":{"k":[1, 2]}}`
	const filtered = `{"tools":[{"name":"echo","description":"e"},{"name":"get_a","inputSchema":{"type":"object"}}], "nextCursor" : "c\u0031" ,"_meta":{"k":[1, 2]}}`
	tests := []struct {
		name    string
		allowed func(string) bool
		want    string
	}{
		{"no filter", nil, raw},
		{"deny", globs(false, "crash"), filtered},
		{"deny glob", globs(false, "cr*"), filtered},
		{"allow", globs(true, "echo", "get_*"), filtered},
		{"allow all", globs(true, "*"), raw},
		{"deny none matching", globs(false, "nothing"), raw},
		{"deny all", globs(false, "*"), `{"tools":[], "nextCursor" : "c\u0031" ,"_meta":{"k":[1, 2]}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, _ := newToolDispatcher(t, Options{ToolAllowed: tc.allowed}, func(int) *scriptConn {
				c := newScriptConn()
				c.rawList = raw
				return c
			})
			call(t, d, nil, testInit)
			for _, id := range []string{`"L1"`, `12345678901234567890123`} {
				got := call(t, d, nil, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/list","params":{"cursor":"x"}}`)
				want := `{"jsonrpc":"2.0","id":` + id + `,"result":` + tc.want + `}`
				if string(got) != want {
					t.Errorf("tools/list answer\n got %s\nwant %s", got, want)
				}
			}
		})
	}
}

func TestToolsListOddAnswersPassThrough(t *testing.T) {
	d, l := newToolDispatcher(t, Options{ToolAllowed: globs(false, "crash")}, func(int) *scriptConn { return newScriptConn() })
	call(t, d, nil, testInit)
	c := l.started()[0]
	c.set(func(c *scriptConn) { c.rawList = `{"tools":"not a list"}` })
	got := call(t, d, nil, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if want := `{"jsonrpc":"2.0","id":1,"result":{"tools":"not a list"}}`; string(got) != want {
		t.Errorf("got %s; want %s", got, want)
	}
	c.set(func(c *scriptConn) { c.listErr = `{"code":-32603,"message":"boom"}` })
	got = call(t, d, nil, `{"jsonrpc":"2.0","id":"e","method":"tools/list"}`)
	if want := `{"jsonrpc":"2.0","id":"e","error":{"code":-32603,"message":"boom"}}`; string(got) != want {
		t.Errorf("got %s; want %s", got, want)
	}
}

func TestHiddenToolCallNeverReachesTheChild(t *testing.T) {
	d, l := newToolDispatcher(t, Options{ToolAllowed: globs(false, "crash", "secret_*")}, func(int) *scriptConn { return newScriptConn() })

	// Refused even before any initialize, without starting a child.
	got := call(t, d, nil, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"crash","arguments":{}}}`)
	want := `{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"tool \"crash\" is not available on this destination"}}`
	if string(got) != want {
		t.Errorf("hidden call before initialize\n got %s\nwant %s", got, want)
	}
	if n := len(l.started()); n != 0 {
		t.Fatalf("%d children started for a hidden call; want none", n)
	}

	call(t, d, nil, testInit)
	notExact := func(found string) string {
		return `tools/call: \"name\" must be one member named exactly \"name\", not \"` + found + `\"`
	}
	notString := `tools/call needs \"params.name\", the tool's name as a string`
	hidden := []struct{ id, params, msg string }{
		{`"a"`, `{"name":"crash"}`, notAvailable("crash")},
		{`"b"`, `{"name":"secret_x","arguments":{"name":"echo"}}`, notAvailable("secret_x")},
		{`"c"`, `{"name":"cr\u0061sh"}`, notAvailable("crash")},                                                                        // escapes are decoded
		{`"d"`, `{"name":"echo","Name":"crash"}`, notExact("Name")},                                                                    // case-insensitive decoders
		{`"e"`, `{"NAME":"crash"}`, notExact("NAME")},                                                                                  // likewise
		{`"e2"`, `{"NAME":"echo"}`, notExact("NAME")},                                                                                  // even for an allowed tool
		{`"f"`, `{"name":"crash","name":"echo"}`, `tools/call: \"name\" must be one member named exactly \"name\": it is given twice`}, // duplicate keys
		{`"f2"`, `{"name":"echo","name":"echo"}`, `tools/call: \"name\" must be one member named exactly \"name\": it is given twice`},
		{`"f3"`, `{"name":"echo","n\u0061me":"crash"}`, `tools/call: \"name\" must be one member named exactly \"name\": it is given twice`}, // escaped, a duplicate
		{`"f4"`, `{"name":"echo","arguments":{},"Arguments":{"x":1}}`, `tools/call: \"arguments\" must be one member named exactly \"arguments\", not \"Arguments\"`},
		{`"g"`, `{"name":["crash"]}`, notString}, // a JS server coerces ["x"] to "x"
		{`"h"`, `{"name":42}`, notString},
		{`"i"`, `{"arguments":{}}`, notString},
		{`"j"`, `["crash"]`, `tools/call needs \"params\": an object with the tool's name (\"name\")`},
		{`1.5e3`, `{ "name" : "secret_" }`, notAvailable("secret_")},
	}
	for _, h := range hidden {
		got := call(t, d, nil, `{"jsonrpc":"2.0","id":`+h.id+`,"method":"tools/call","params":`+h.params+`}`)
		want := `{"jsonrpc":"2.0","id":` + h.id + `,"error":{"code":-32602,"message":"` + h.msg + `"}}`
		if string(got) != want {
			t.Errorf("params %s\n got %s\nwant %s", h.params, got, want)
		}
	}
	// Allowed tools reach the child.
	got = call(t, d, nil, `{"jsonrpc":"2.0","id":"ok","method":"tools/call","params":{"name":"echo","arguments":{"name":"crash"}}}`)
	if want := `{"jsonrpc":"2.0","id":"ok","result":{"content":[{"type":"text","text":"called echo"}]}}`; string(got) != want {
		t.Errorf("allowed call\n got %s\nwant %s", got, want)
	}
	if _, called, _, _ := l.started()[0].snapshot(); !reflect.DeepEqual(called, []string{"echo"}) {
		t.Errorf("the child was called for %q; want only echo", called)
	}
}

func notAvailable(tool string) string {
	return `tool \"` + tool + `\" is not available on this destination`
}

func TestToolCatalogAfterHandshake(t *testing.T) {
	tools := []string{
		`{"name":"echo","description":"fake echo","inputSchema":{"type":"object"}}`,
		`{"name":"crash","description":"fake crash","inputSchema":{"type":"object"}}`,
		`{"name":"slow", "description":"fake slow","inputSchema":{"type":"object","properties":{"ms":{"type":"number"}}}}`,
		`{"name":"secret_key","inputSchema":{}}`,
		`{"name":"whoami","annotations":{"readOnlyHint":true},"inputSchema":{}}`,
	}
	d, l := newToolDispatcher(t, Options{ToolAllowed: globs(false, "crash", "secret_*")}, func(int) *scriptConn {
		c := newScriptConn(tools...)
		c.pageSize = 2
		return c
	})
	if got, known := d.Tools(); known || len(got) != 0 {
		t.Fatalf("Tools() before any start = %d tools, known %v; want none, false", len(got), known)
	}
	call(t, d, nil, testInit)
	waitUntil(t, "the catalogue", func() bool { _, known := d.Tools(); return known })
	got, _ := d.Tools()
	want := []string{tools[0], tools[2], tools[4]}
	if len(got) != len(want) {
		t.Fatalf("Tools() = %s; want %s", got, want)
	}
	for i := range want {
		if string(got[i]) != want[i] {
			t.Errorf("tool %d = %s; want %s (byte for byte)", i, got[i], want[i])
		}
	}
	// Three pages were fetched, following nextCursor.
	if _, _, _, cursors := l.started()[0].snapshot(); !reflect.DeepEqual(cursors, []string{"", "page-2", "page-4"}) {
		t.Errorf("tools/list cursors = %q; want the three pages", cursors)
	}
	// The returned slice is the caller's.
	got[0] = json.RawMessage(`{}`)
	if again, _ := d.Tools(); string(again[0]) != tools[0] {
		t.Errorf("modifying the returned slice changed the catalogue")
	}
}

func TestToolCatalogRefreshedOnListChanged(t *testing.T) {
	d, l := newToolDispatcher(t, Options{}, func(int) *scriptConn {
		return newScriptConn(`{"name":"a"}`, `{"name":"b"}`)
	})
	s := &recSession{}
	d.Attach(s, nil)
	call(t, d, s, testInit)
	waitUntil(t, "the first catalogue", func() bool { _, known := d.Tools(); return known })
	if got, _ := d.Tools(); !reflect.DeepEqual(toolNames(t, got), []string{"a", "b"}) {
		t.Fatalf("Tools() = %s; want a, b", got)
	}
	c := l.started()[0]
	c.set(func(c *scriptConn) { c.tools = []string{`{"name":"b"}`, `{"name":"c"}`, `{"name":"d"}`} })
	const changed = `{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`
	c.emit(changed)
	waitUntil(t, "the refreshed catalogue", func() bool {
		got, _ := d.Tools()
		return reflect.DeepEqual(toolNames(t, got), []string{"b", "c", "d"})
	})
	// The notification still reaches the sessions.
	waitUntil(t, "list_changed at the session", func() bool {
		for _, m := range s.got() {
			if m == changed {
				return true
			}
		}
		return false
	})
	// A burst of notifications is folded: the reader never waits, and the
	// last state wins.
	c.set(func(c *scriptConn) { c.tools = []string{`{"name":"z"}`} })
	for i := 0; i < 50; i++ {
		c.emit(changed)
	}
	waitUntil(t, "the catalogue after a burst", func() bool {
		got, _ := d.Tools()
		return reflect.DeepEqual(toolNames(t, got), []string{"z"})
	})
	// Calls go on meanwhile.
	if got := call(t, d, s, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"z"}}`); !bytes.Contains(got, []byte("called z")) {
		t.Errorf("call after the burst: %s", got)
	}
	d.Detach(s, nil)
}

func TestToolCatalogWithoutToolsCapability(t *testing.T) {
	d, l := newToolDispatcher(t, Options{}, func(int) *scriptConn {
		c := newScriptConn(`{"name":"a"}`)
		c.caps = `{"resources":{}}`
		return c
	})
	call(t, d, nil, testInit)
	waitUntil(t, "the catalogue", func() bool { _, known := d.Tools(); return known })
	if got, _ := d.Tools(); len(got) != 0 {
		t.Errorf("Tools() = %s; want none for a child without tools", got)
	}
	if methods, _, _, _ := l.started()[0].snapshot(); strings.Contains(strings.Join(methods, " "), "tools/list") {
		t.Errorf("the bridge sent tools/list to a child without tools: %q", methods)
	}
}

func TestToolCatalogAfterRestart(t *testing.T) {
	d, l := newToolDispatcher(t, Options{
		NewBackOff: func() backoff.BackOff {
			return backoff.WithMaxRetries(backoff.NewConstantBackOff(10*time.Millisecond), 3)
		},
	}, func(n int) *scriptConn {
		return newScriptConn(fmt.Sprintf(`{"name":"tool-of-child-%d"}`, n))
	})
	call(t, d, nil, testInit)
	waitUntil(t, "the first catalogue", func() bool { _, known := d.Tools(); return known })
	l.started()[0].crash()
	waitUntil(t, "the restarted child's catalogue", func() bool {
		got, _ := d.Tools()
		return reflect.DeepEqual(toolNames(t, got), []string{"tool-of-child-1"})
	})
	// The restarted child was initialized with the bridge's own params, as
	// the first one was: no client's params ever reach the child.
	for i, c := range l.started()[:2] {
		if _, _, inits, _ := c.snapshot(); len(inits) != 1 || inits[0] != bridgeInit("unknown") {
			t.Errorf("child %d handshake params = %q; want the bridge's %s", i, inits, bridgeInit("unknown"))
		}
	}
}

func TestPrestart(t *testing.T) {
	d, l := newToolDispatcher(t, Options{BridgeVersion: "1.2.3", ToolAllowed: globs(false, "crash")}, func(int) *scriptConn {
		return newScriptConn(`{"name":"echo"}`, `{"name":"crash"}`)
	})
	d.Prestart()
	d.Prestart() // already starting: no second child
	waitUntil(t, "the prestarted child", func() bool { return d.Status().State == "running" })
	waitUntil(t, "the catalogue", func() bool { _, known := d.Tools(); return known })
	if got, _ := d.Tools(); !reflect.DeepEqual(toolNames(t, got), []string{"echo"}) {
		t.Errorf("Tools() = %s; want echo only", got)
	}
	first := l.started()[0]
	_, _, inits, _ := first.snapshot()
	wantInit := bridgeInit("1.2.3")
	if len(inits) != 1 || inits[0] != wantInit {
		t.Errorf("prestart handshake params = %q; want [%s]", inits, wantInit)
	}

	// No session has come: the child keeps running. (Nothing would tell
	// of a stop that does not come: this is a window to see one in, not a
	// wait for an event.)
	time.Sleep(30 * time.Millisecond)
	if st := d.Status().State; st != "running" || len(l.started()) != 1 {
		t.Fatalf("state %s with %d starts; want the prestarted child still running", st, len(l.started()))
	}

	// A client is answered from the cache, with the version it asked for.
	s := &recSession{}
	d.Attach(s, nil)
	got := call(t, d, s, testInit)
	if !bytes.Contains(got, []byte(`"protocolVersion":"2025-06-18"`)) || !bytes.Contains(got, []byte(`"name":"script"`)) {
		t.Errorf("client initialize answer %s; want the cached result at 2025-06-18", got)
	}
	if _, _, inits, _ := first.snapshot(); len(inits) != 1 {
		t.Errorf("the child was initialized %d times; want once", len(inits))
	}

	// Once a session has come and gone, the usual rule applies.
	d.Detach(s, nil)
	waitUntil(t, "the child to stop", func() bool { return stateOf(d) == supervisor.StateIdle })

	// A client restarts it: still with the bridge's params.
	s = &recSession{}
	call(t, d, s, strings.Replace(testInit, `"name":"t"`, `"name":"second"`, 1))
	if n := len(l.started()); n != 2 {
		t.Fatalf("%d starts; want 2", n)
	}
	if _, _, inits, _ := l.started()[1].snapshot(); len(inits) != 1 || inits[0] != wantInit {
		t.Errorf("client-started child's params = %q; want the bridge's %s", inits, wantInit)
	}
	d.Attach(s, nil)
	d.Detach(s, nil)
	waitUntil(t, "the child to stop again", func() bool { return stateOf(d) == supervisor.StateIdle })

	// Prestart again: the bridge's params again.
	d.Prestart()
	waitUntil(t, "the third child", func() bool { return d.Status().State == "running" })
	if _, _, inits, _ := l.started()[2].snapshot(); len(inits) != 1 || inits[0] != wantInit {
		t.Errorf("re-prestarted child's params = %q; want the bridge's %s", inits, wantInit)
	}
}

func TestInitializeWhileStoppingStartsAnew(t *testing.T) {
	gate := make(chan struct{})
	d, l := newToolDispatcher(t, Options{}, func(n int) *scriptConn {
		c := newScriptConn()
		if n == 0 {
			c.stopGate = gate
		}
		return c
	})
	d.Prestart()
	waitUntil(t, "the prestarted child", func() bool { return stateOf(d) == supervisor.StateRunning })
	s := &recSession{}
	d.Attach(s, nil)
	d.Detach(s, nil)
	if st := stateOf(d); st != "stopping" {
		t.Fatalf("state %s after the last session left; want stopping", st)
	}
	done := make(chan []byte)
	go func() {
		m, _ := jsonrpc.Parse([]byte(strings.Replace(testInit, `"name":"t"`, `"name":"late"`, 1)))
		resp, _ := d.Do(context.Background(), s, m, 5*time.Second)
		done <- resp
	}()
	waitUntil(t, "the call to wait for the stop", func() bool { return d.Status().Waiting == 1 })
	close(gate)
	if resp := <-done; !bytes.Contains(resp, []byte(`"result"`)) {
		t.Fatalf("initialize: %s", resp)
	}
	if n := d.Status().Waiting; n != 0 {
		t.Errorf("Status().Waiting = %d after the call was answered; want 0", n)
	}
	if _, _, inits, _ := l.started()[1].snapshot(); len(inits) != 1 || inits[0] != bridgeInit("unknown") {
		t.Errorf("the new child's params = %q; want the bridge's %s", inits, bridgeInit("unknown"))
	}
}

func TestPrestartAfterCloseDoesNothing(t *testing.T) {
	d, l := newToolDispatcher(t, Options{}, func(int) *scriptConn { return newScriptConn() })
	if err := d.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	d.Prestart()
	// Prestart decides under the supervisor's lock: a start would show at
	// once as "starting".
	if st := d.Status().State; st != supervisor.StateIdle {
		t.Errorf("state %s after Prestart on a closed dispatcher; want idle", st)
	}
	if n := len(l.started()); n != 0 {
		t.Errorf("%d children started after Close", n)
	}
}

func TestPrestartDefaultVersion(t *testing.T) {
	d := New(Options{})
	if got := string(d.handshakeParams(LatestVersion)); !strings.Contains(got, `"clientInfo":{"name":"stelae-bridge","version":"unknown"}`) || !json.Valid([]byte(got)) {
		t.Errorf("handshakeParams() = %s", got)
	}
}

// bridgeInit is the bridge's own handshake params at the newest version.
func bridgeInit(version string) string {
	return `{"protocolVersion":"2025-11-25","capabilities":{"roots":{"listChanged":true},"sampling":{},"elicitation":{"form":{},"url":{}}},"clientInfo":{"name":"stelae-bridge","version":"` + version + `"}}`
}

func FuzzToolFilter(f *testing.F) {
	for _, s := range []string{
		`{"tools":[{"name":"a"},{"name":"crash"}],"nextCursor":"x"}`,
		`{"tools":[],"tools":[{"name":"crash"}]}`,
		`{"name":"crash","Name":"a"}`,
		`{"na\u006de":"crash"}`,
		`{"tools":[{"name":"a"`,
		`{"tools":[1,"x",null,{"name":"crash"}]}`,
		`{"a\`,
		`[`,
		``,
	} {
		f.Add([]byte(s))
	}
	deny := globs(false, "crash")
	d := New(Options{ToolAllowed: deny})
	f.Fuzz(func(t *testing.T, data []byte) {
		out, changed := filterToolsResult(data, deny)
		if json.Valid(data) {
			if !json.Valid(out) {
				t.Fatalf("filtering valid %s gave invalid %s", data, out)
			}
			if !changed && !bytes.Equal(out, data) {
				t.Fatalf("unchanged result differs: %s → %s", data, out)
			}
		}
		d.screen(&jsonrpc.Message{ID: json.RawMessage("1"), Method: "tools/call", Params: data}, true)
		toolName(data)
		jsonrpc.EachElement(data, func([]byte) {})
	})
}
