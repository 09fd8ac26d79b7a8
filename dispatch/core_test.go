package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/stelae-bridge/stelae-bridge/jsonrpc"
	"github.com/stelae-bridge/stelae-bridge/supervisor"
)

// wireConn is an in-memory child that answers the bridge's handshake itself
// and hands every other line it is sent to the test, byte for byte, on got.
// The test answers with emit; crash makes it exit.
type wireConn struct {
	memPipe
	got chan []byte
	// failWrites makes every write fail, as to a child that is exiting;
	// failed counts the writes that did.
	failWrites atomic.Bool
	failed     atomic.Int32
	// answerPings answers the bridge's pings at once; by default they
	// are dropped, as by a child busy with its work (pings counts them).
	answerPings atomic.Bool
	pings       atomic.Int32
	// modern: it speaks MCP 2026-07-28 only (modern_test.go).
	modern atomic.Bool
}

func newWireConn() *wireConn {
	return &wireConn{memPipe: newMemPipe(), got: make(chan []byte, 64)}
}

// Enqueue is WriteMessage: it does not block either.
func (c *wireConn) Enqueue(msg []byte) error { return c.WriteMessage(msg) }

func (c *wireConn) WriteMessage(msg []byte) error {
	if c.dead() || c.failWrites.Load() {
		c.failed.Add(1)
		return errors.New("child stdin is closed")
	}
	m, err := jsonrpc.Parse(msg)
	if err != nil {
		return err
	}
	switch m.Method {
	case "initialize":
		if c.modern.Load() {
			c.lines <- []byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"error":{"code":-32022,"message":"Unsupported protocol version"}}`)
			return nil
		}
		c.lines <- []byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"wire","version":"1"}}}`)
		return nil
	case "notifications/initialized":
		return nil
	case "server/discover":
		if c.modern.Load() {
			c.lines <- []byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"supportedVersions":["2026-07-28"],"capabilities":{},"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"wire26","version":"1"}}}}`)
			return nil
		}
		// As a 2025 child answers a method it does not know.
		c.lines <- []byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"error":{"code":-32601,"message":"Method not found"}}`)
		return nil
	case "ping":
		c.pings.Add(1)
		if c.answerPings.Load() {
			c.lines <- []byte(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{}}`)
		}
		return nil
	}
	c.got <- append([]byte(nil), msg...)
	return nil
}

func (c *wireConn) Stop(context.Context) error { c.crash(); return nil }
func (c *wireConn) ExitStatus() string {
	if c.dead() {
		return "exit status 1"
	}
	return ""
}
func (c *wireConn) PID() int { return 4242 }

// sent is a line the child was sent, parsed.
type sent struct {
	*jsonrpc.Message
	Raw []byte
}

// next is the next line the child was sent, within a deadline.
func (c *wireConn) next(t *testing.T) sent {
	t.Helper()
	select {
	case line := <-c.got:
		m, err := jsonrpc.Parse(line)
		if err != nil {
			t.Fatalf("the child was sent an invalid line %s: %v", line, err)
		}
		return sent{m, line}
	case <-time.After(10 * time.Second):
		t.Fatal("the child was sent nothing within 10s")
		return sent{}
	}
}

// testSession is a Session that records what it is delivered.
type testSession struct {
	id string
	// mu guards delivered and ended.
	mu        sync.Mutex
	delivered [][]byte
	ended     error
}

func (s *testSession) SessionID() string { return s.id }
func (s *testSession) User() any         { return s }
func (s *testSession) Deliver(msg []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delivered = append(s.delivered, msg)
	return true
}
func (s *testSession) End(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ended = err
}

// wired is a dispatcher over wireConns: conns receives each child it
// launches.
type wired struct {
	d        *Dispatcher
	conns    chan *wireConn
	launches atomic.Int32
	// modern makes the children it launches speak 2026-07-28 only.
	modern atomic.Bool
}

func newWired(t *testing.T, opts Options) *wired {
	w := &wired{conns: make(chan *wireConn, 8)}
	opts.Name = "wire"
	opts.Launch = func(context.Context) (supervisor.Child, error) {
		w.launches.Add(1)
		c := newWireConn()
		c.modern.Store(w.modern.Load())
		w.conns <- c
		return c, nil
	}
	w.d = New(opts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := w.d.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return w
}

// attach makes s a session of the dispatcher, initialized with caps, and
// returns the child serving it.
func (w *wired) attach(t *testing.T, s *testSession, caps string) *wireConn {
	t.Helper()
	params := `{"protocolVersion":"2025-06-18","capabilities":` + caps + `,"clientInfo":{"name":"t","version":"1"}}`
	w.d.Attach(s, json.RawMessage(params))
	if _, err := w.d.Do(context.Background(), s, mustParse(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":`+params+`}`), 10*time.Second); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	select {
	case c := <-w.conns:
		return c
	default:
		t.Fatal("initialize launched no child")
		return nil
	}
}

func mustParse(t *testing.T, s string) *jsonrpc.Message {
	t.Helper()
	m, err := jsonrpc.Parse([]byte(s))
	if err != nil {
		t.Fatalf("parse %s: %v", s, err)
	}
	return m
}

// nextEvent waits for a call's next event within a deadline.
func nextEvent(t *testing.T, call *Call) Event {
	t.Helper()
	tick := time.NewTimer(10 * time.Second)
	defer tick.Stop()
	ev := call.Next(tick.C)
	if ev.Tick {
		t.Fatal("the call had no event within 10s")
	}
	return ev
}

// TestParamsReachTheChildByteForByte: a client's params reach the child
// exactly as sent — key order, <>&, unicode escapes, big and odd numbers,
// whitespace — except the progress token, which is the upstream id; the
// child's result comes back byte for byte too, under the client's id.
func TestParamsReachTheChildByteForByte(t *testing.T) {
	w := newWired(t, Options{})
	s := &testSession{id: "a"}
	c := w.attach(t, s, `{}`)
	for _, params := range []string{
		`{"z":1,"a":{"<b>":"x&y","u":"\u00e9\ud83d\ude00\u2028"},"big":123456789012345678901234567890,"f":1.50E+300,"neg":-0.0,"_meta":{"k":[true,null],"progressToken":"tok-<1>"},"arguments":{"name":"</script>"}}`,
		`{ "_meta" : { "progressToken" : 98765432109876543210 } , "name" : "écho" , "arguments" : { "b" : 2 , "a" : 1 } }`,
		`{"name":"echo","arguments":{"text":"\"quoted\" \\ \/ \b\f\n\r\t"},"_meta":{"progressToken":"p"}}`,
		`{"name":"no-token","arguments":{"html":"<a href=\"x\">&amp;</a>","n":1e-7}}`,
	} {
		m := mustParse(t, `{"jsonrpc":"2.0","id":"c-1","method":"tools/call","params":`+params+`}`)
		call := w.d.Begin(context.Background(), s, m, 10*time.Second, true)
		got := c.next(t)
		token := jsonrpc.Member(jsonrpc.Member(params2(params), "_meta"), "progressToken")
		want := params
		if token != nil {
			want = strings.Replace(params, string(token), string(got.ID), 1)
		}
		if string(got.Params) != want {
			t.Errorf("the child got params\n%s\nwant (the client's, byte for byte, token %s → %s)\n%s", got.Params, token, got.ID, want)
		}
		if got.Method != "tools/call" {
			t.Errorf("method %q", got.Method)
		}
		result := `{"content":[{"type":"text","text":"<&>\u00e9"}],"n":12345678901234567890123}`
		c.emit(`{"jsonrpc":"2.0","id":` + string(got.ID) + `,"result":` + result + `}`)
		ev := nextEvent(t, call)
		call.Release()
		if !ev.Done || ev.Err != nil {
			t.Fatalf("event %+v", ev)
		}
		if want := `{"jsonrpc":"2.0","id":"c-1","result":` + result + `}`; string(ev.Answer) != want {
			t.Errorf("answer\n%s\nwant\n%s", ev.Answer, want)
		}
	}
}

func params2(s string) json.RawMessage { return json.RawMessage(s) }

// TestIDsRestoredByteForByte: calls answered out of order each get their
// own response under the id the client sent, byte for byte, even when two
// sessions use the same id.
func TestIDsRestoredByteForByte(t *testing.T) {
	w := newWired(t, Options{})
	a, b := &testSession{id: "a"}, &testSession{id: "b"}
	c := w.attach(t, a, `{}`)
	w.attach2(t, b)
	ids := []string{`"x"`, `"\u00e9"`, `12345678901234567890`, `-7`, `0`, `"  "`, `1.5e3`}
	type inflight struct {
		call *Call
		id   string
		up   json.RawMessage
	}
	var calls []inflight
	for _, sess := range []*testSession{a, b} {
		for _, id := range ids {
			call := w.d.Begin(context.Background(), sess, mustParse(t, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"`+sess.id+`"}}`), 10*time.Second, false)
			calls = append(calls, inflight{call, sess.id + id, c.next(t).ID})
		}
	}
	seen := map[string]bool{}
	for _, in := range calls {
		if seen[string(in.up)] {
			t.Fatalf("upstream id %s used twice", in.up)
		}
		seen[string(in.up)] = true
	}
	for i := len(calls) - 1; i >= 0; i-- {
		c.emit(`{"jsonrpc":"2.0","id":` + string(calls[i].up) + `,"result":{"for":"` + strconv.Itoa(i) + `"}}`)
	}
	for i, in := range calls {
		ev := nextEvent(t, in.call)
		in.call.Release()
		id := in.id[1:]
		if want := `{"jsonrpc":"2.0","id":` + id + `,"result":{"for":"` + strconv.Itoa(i) + `"}}`; string(ev.Answer) != want {
			t.Errorf("call %s: %s, want %s", in.id, ev.Answer, want)
		}
	}
}

// attach2 attaches another session to the running child.
func (w *wired) attach2(t *testing.T, s *testSession) {
	t.Helper()
	params := `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`
	w.d.Attach(s, json.RawMessage(params))
	if _, err := w.d.Do(context.Background(), s, mustParse(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":`+params+`}`), 10*time.Second); err != nil {
		t.Fatalf("initialize: %v", err)
	}
}

// TestCancelMapping: a client's cancellation names its own id; the child
// is told the upstream id, the call ends with -32800, and another
// session's call with the same id goes on. A call that times out is
// cancelled at the child too.
func TestCancelMapping(t *testing.T) {
	w := newWired(t, Options{})
	a, b := &testSession{id: "a"}, &testSession{id: "b"}
	c := w.attach(t, a, `{}`)
	w.attach2(t, b)
	callA := w.d.Begin(context.Background(), a, mustParse(t, `{"jsonrpc":"2.0","id":"same","method":"tools/call","params":{"name":"slow"}}`), 10*time.Second, false)
	upA := c.next(t).ID
	callB := w.d.Begin(context.Background(), b, mustParse(t, `{"jsonrpc":"2.0","id":"same","method":"tools/call","params":{"name":"slow"}}`), 10*time.Second, false)
	upB := c.next(t).ID

	if err := w.d.Notify(a, mustParse(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"same","reason":"user <stop>"}}`)); err != nil {
		t.Fatal(err)
	}
	cancel := c.next(t)
	if cancel.Method != "notifications/cancelled" || string(cancel.Params) != `{"requestId":`+string(upA)+`,"reason":"user <stop>"}` {
		t.Errorf("the child got %s; want a cancellation of %s with the client's reason", cancel.Raw, upA)
	}
	ev := nextEvent(t, callA)
	callA.Release()
	var resp struct {
		ID    json.RawMessage
		Error struct{ Code int }
	}
	if err := json.Unmarshal(ev.Answer, &resp); err != nil || string(resp.ID) != `"same"` || resp.Error.Code != jsonrpc.CodeRequestCancelled {
		t.Errorf("cancelled call answered %s (%v); want -32800 under id \"same\"", ev.Answer, ev.Err)
	}
	// B's call was not touched.
	c.emit(`{"jsonrpc":"2.0","id":` + string(upB) + `,"result":{"b":1}}`)
	if ev := nextEvent(t, callB); string(ev.Answer) != `{"jsonrpc":"2.0","id":"same","result":{"b":1}}` {
		t.Errorf("session b's call: %s %v", ev.Answer, ev.Err)
	}
	callB.Release()

	// A timeout cancels at the child.
	call := w.d.Begin(context.Background(), a, mustParse(t, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{}}`), 50*time.Millisecond, false)
	up := c.next(t).ID
	if ev := nextEvent(t, call); !errors.Is(ev.Err, ErrTimeout) {
		t.Errorf("timed-out call ended with %v, want ErrTimeout", ev.Err)
	}
	call.Release()
	if m := c.next(t); m.Method != "notifications/cancelled" || string(jsonrpc.Member(m.Params, "requestId")) != string(up) {
		t.Errorf("after a timeout the child got %s; want a cancellation of %s", m.Raw, up)
	}
	// A late answer to the cancelled call goes nowhere (and breaks nothing).
	c.emit(`{"jsonrpc":"2.0","id":` + string(up) + `,"result":{}}`)
}

// TestChildRequestRouting: a request the child sends while a call is in
// flight goes to that call's caller (the newest call's session), keeps the
// child's id, and the client's answer reaches the child; progress comes
// back under the client's token; with no call in flight and two sessions
// able to answer, the child gets an error at once.
func TestChildRequestRouting(t *testing.T) {
	w := newWired(t, Options{})
	a, b := &testSession{id: "a"}, &testSession{id: "b"}
	c := w.attach(t, a, `{"sampling":{}}`)
	params := `{"protocolVersion":"2025-06-18","capabilities":{"sampling":{}},"clientInfo":{"name":"t","version":"1"}}`
	w.d.Attach(b, json.RawMessage(params))

	call := w.d.Begin(context.Background(), a, mustParse(t, `{"jsonrpc":"2.0","id":"q","method":"tools/call","params":{"_meta":{"progressToken":{"odd":"token"}}}}`), 10*time.Second, true)
	up := c.next(t).ID
	c.emit(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":` + string(up) + `,"progress":1}}`)
	if ev := nextEvent(t, call); string(ev.Related) != `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":{"odd":"token"},"progress":1}}` {
		t.Errorf("progress reached the caller as %s", ev.Related)
	}
	c.emit(`{"jsonrpc":"2.0","id":"srv-1","method":"sampling/createMessage","params":{"messages":[]}}`)
	ev := nextEvent(t, call)
	if !strings.Contains(string(ev.Related), `"id":"srv-1"`) || !strings.Contains(string(ev.Related), "sampling/createMessage") {
		t.Fatalf("the child's request reached the caller as %s", ev.Related)
	}
	// Only a's answer is taken.
	if err := w.d.Respond(b, mustParse(t, `{"jsonrpc":"2.0","id":"srv-1","result":{"from":"b"}}`)); err != nil {
		t.Fatal(err)
	}
	if err := w.d.Respond(a, mustParse(t, `{"jsonrpc":"2.0","id":"srv-1","result":{"from":"a"}}`)); err != nil {
		t.Fatal(err)
	}
	if m := c.next(t); string(m.Raw) != `{"jsonrpc":"2.0","id":"srv-1","result":{"from":"a"}}` {
		t.Errorf("the child got %s; want a's answer under its own id", m.Raw)
	}
	c.emit(`{"jsonrpc":"2.0","id":` + string(up) + `,"result":{}}`)
	if ev := nextEvent(t, call); !ev.Done {
		t.Errorf("call did not end: %+v", ev)
	}
	call.Release()

	// No call in flight, two sessions with sampling: nobody can be chosen.
	c.emit(`{"jsonrpc":"2.0","id":77,"method":"sampling/createMessage","params":{}}`)
	m := c.next(t)
	var resp struct {
		ID    json.RawMessage
		Error *struct{ Code int }
	}
	if err := json.Unmarshal(m.Raw, &resp); err != nil || string(resp.ID) != "77" || resp.Error == nil || resp.Error.Code != jsonrpc.CodeInternalError {
		t.Errorf("an unattributable request was answered %s; want an error under id 77", m.Raw)
	}
	// The child's ping is answered by the bridge.
	c.emit(`{"jsonrpc":"2.0","id":"p","method":"ping"}`)
	if m := c.next(t); string(m.Raw) != `{"jsonrpc":"2.0","id":"p","result":{}}` {
		t.Errorf("ping answered %s", m.Raw)
	}
}

// TestStateMachine walks a destination through its states, observed with
// Status: idle → running (first session) → restarting after a crash →
// running again (sessions kept) → failed when restarts run out → idle
// after the last session leaves.
func TestStateMachine(t *testing.T) {
	w := newWired(t, Options{
		NewBackOff: func() backoff.BackOff {
			return backoff.WithMaxRetries(backoff.NewConstantBackOff(20*time.Millisecond), 1)
		},
		StableAfter: time.Hour,
	})
	waitState := func(want string) Status {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			st := w.d.Status()
			if st.State == want {
				return st
			}
			if time.Now().After(deadline) {
				t.Fatalf("state %s, want %s", st.State, want)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	if st := w.d.Status(); st.State != supervisor.StateIdle || st.PID != 0 {
		t.Fatalf("before any session: %+v", st)
	}
	s := &testSession{id: "a"}
	c := w.attach(t, s, `{}`)
	if st := waitState(supervisor.StateRunning); st.PID != 4242 || st.Sessions != 1 || st.RestartsTotal != 0 {
		t.Errorf("running: %+v", st)
	}
	c.crash()
	var c2 *wireConn
	select {
	case c2 = <-w.conns:
	case <-time.After(10 * time.Second):
		t.Fatal("no restart within 10s")
	}
	if st := waitState(supervisor.StateRunning); st.RestartsTotal != 1 || st.Sessions != 1 {
		t.Errorf("after a restart: %+v", st)
	}
	// The session goes on with the new child.
	call := w.d.Begin(context.Background(), s, mustParse(t, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`), 10*time.Second, false)
	up := c2.next(t).ID
	c2.emit(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"tools":[]}}`, up))
	if ev := nextEvent(t, call); ev.Err != nil {
		t.Errorf("call after restart: %v", ev.Err)
	}
	call.Release()
	// Restarts are used up (one allowed): the next crash fails the
	// destination and ends its sessions.
	c2.crash()
	st := waitState(supervisor.StateFailed)
	if st.LastExit == "" {
		t.Errorf("failed without a last exit: %+v", st)
	}
	deadline := time.Now().Add(10 * time.Second)
	for s.endedErr() == nil {
		if time.Now().After(deadline) {
			t.Fatal("the session was not ended when its destination failed")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n := w.launches.Load(); n != 2 {
		t.Errorf("%d launches, want 2 (first start and one restart)", n)
	}
	w.d.Detach(s, nil)
	if st := w.d.Status(); st.Sessions != 0 {
		t.Errorf("after detach: %+v", st)
	}
}

func (s *testSession) endedErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ended
}

// TestFailureEndsOnlyTheSessionsBeforeIt: a client told its destination
// failed may initialize again at once; the failure's ending of sessions,
// which runs after the state turns failed, must not end the new session.
func TestFailureEndsOnlyTheSessionsBeforeIt(t *testing.T) {
	d := New(Options{Name: "dead",
		Launch:     func(context.Context) (supervisor.Child, error) { return nil, errors.New("no such program") },
		NewBackOff: func() backoff.BackOff { return backoff.WithMaxRetries(backoff.NewConstantBackOff(time.Millisecond), 0) },
	})
	t.Cleanup(func() { _ = d.Close(context.Background()) })
	before := &testSession{id: "before"}
	d.Attach(before, json.RawMessage(`{}`))
	if _, err := d.Do(context.Background(), before, mustParse(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`), 10*time.Second); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("initialize of a destination that cannot start: %v", err)
	}
	if st := d.Status(); st.State != supervisor.StateFailed {
		t.Fatalf("state %s, want failed", st.State)
	}
	deadline := time.Now().Add(10 * time.Second)
	for before.endedErr() == nil {
		if time.Now().After(deadline) {
			t.Fatal("the session that saw the failure was not ended")
		}
		time.Sleep(time.Millisecond)
	}
	// A session that attaches after the failure, as the failure's own
	// ending of sessions would run late, survives it.
	after := &testSession{id: "after"}
	d.Attach(after, json.RawMessage(`{}`))
	d.endAll(d.sup.Failures(), errors.New("late"))
	if err := after.endedErr(); err != nil {
		t.Fatalf("a session that came after the failure was ended by it: %v", err)
	}
	if st := d.Status(); st.Sessions != 1 {
		t.Errorf("%d sessions attached, want 1", st.Sessions)
	}
}

// TestWriteToAnExitingChildGoesToTheNext: a request whose write fails
// because the child is exiting (its crash not yet seen) never reached it;
// it goes to the restarted child instead of failing.
func TestWriteToAnExitingChildGoesToTheNext(t *testing.T) {
	w := newWired(t, Options{NewBackOff: func() backoff.BackOff { return backoff.NewConstantBackOff(time.Millisecond) }})
	s := &testSession{id: "a"}
	c := w.attach(t, s, `{}`)
	c.failWrites.Store(true)
	// The exit the supervisor sees after the failed write.
	go func() {
		for deadline := time.Now().Add(10 * time.Second); c.failed.Load() == 0 && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		c.crash()
	}()
	call := w.d.Begin(context.Background(), s, mustParse(t, `{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"echo"}}`), 10*time.Second, false)
	defer call.Release()
	var next *wireConn
	select {
	case next = <-w.conns:
	case <-time.After(10 * time.Second):
		t.Fatal("no restart")
	}
	got := next.next(t)
	if got.Method != "tools/call" {
		t.Fatalf("the restarted child got %s", got.Raw)
	}
	next.emit(`{"jsonrpc":"2.0","id":` + string(got.ID) + `,"result":{"ok":true}}`)
	if ev := nextEvent(t, call); ev.Err != nil || string(ev.Answer) != `{"jsonrpc":"2.0","id":"x","result":{"ok":true}}` {
		t.Fatalf("call: %s %v", ev.Answer, ev.Err)
	}
}

// TestOperatorRestart: the console's restart stops the running child and
// starts a fresh one at once (a new launch, the session served by it
// after its handshake, no restart counted as a crash); a failed
// destination starts anew.
func TestOperatorRestart(t *testing.T) {
	w := newWired(t, Options{NewBackOff: func() backoff.BackOff { return backoff.WithMaxRetries(backoff.NewConstantBackOff(time.Millisecond), 0) }})
	s := &testSession{id: "a"}
	c := w.attach(t, s, `{}`)
	if started, err := w.d.Restart(); err != nil || !started {
		t.Fatalf("Restart: %v, %v", started, err)
	}
	var c2 *wireConn
	select {
	case c2 = <-w.conns:
	case <-time.After(10 * time.Second):
		t.Fatal("Restart launched no new child within 10s")
	}
	if !c.dead() {
		t.Error("the old child was not stopped")
	}
	call := w.d.Begin(context.Background(), s, mustParse(t, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`), 10*time.Second, false)
	up := c2.next(t).ID
	c2.emit(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"tools":[]}}`, up))
	if ev := nextEvent(t, call); ev.Err != nil {
		t.Errorf("call after the restart: %v", ev.Err)
	}
	call.Release()
	if st := w.d.Status(); st.State != supervisor.StateRunning || st.RestartsTotal != 0 || s.endedErr() != nil {
		t.Errorf("after the operator's restart: %+v (session ended: %v)", st, s.endedErr())
	}
	// A crash with no restarts left fails the destination; Restart
	// starts it again.
	c2.crash()
	deadline := time.Now().Add(10 * time.Second)
	for w.d.Status().State != supervisor.StateFailed {
		if time.Now().After(deadline) {
			t.Fatalf("state %s, want failed", w.d.Status().State)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if st := w.d.Status(); st.Failed == "" {
		t.Errorf("a failed destination says no reason: %+v", st)
	}
	if started, err := w.d.Restart(); err != nil || !started {
		t.Fatalf("Restart of a failed destination: %v, %v", started, err)
	}
	select {
	case <-w.conns:
	case <-time.After(10 * time.Second):
		t.Fatal("Restart of a failed destination launched nothing")
	}
	for w.d.Status().State != supervisor.StateRunning {
		if time.Now().After(deadline.Add(10 * time.Second)) {
			t.Fatalf("state %s after Restart, want running", w.d.Status().State)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
