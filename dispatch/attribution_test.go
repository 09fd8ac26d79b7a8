package dispatch

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stelae-bridge/stelae-bridge/jsonrpc"
)

// userSession is a testSession whose user is shared with other sessions
// (one principal's sessions).
type userSession struct {
	testSession
	user string
}

func (s *userSession) User() any { return s.user }

// samplingCaps are the capabilities of a client that can be asked for
// sampling.
const samplingCaps = `{"sampling":{}}`

// childError checks that the child's next line is an error answer to its
// request id, naming why.
func childError(t *testing.T, c *wireConn, id, why string) {
	t.Helper()
	m := c.next(t)
	var resp struct {
		ID    json.RawMessage
		Error *struct {
			Code    int
			Message string
		}
	}
	if err := json.Unmarshal(m.Raw, &resp); err != nil || string(resp.ID) != id || resp.Error == nil || !strings.Contains(resp.Error.Message, why) {
		t.Fatalf("the child's request %s was answered %s; want an error saying %q", id, m.Raw, why)
	}
}

// delivered returns what s was delivered so far.
func (s *testSession) got() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]byte(nil), s.delivered...)
}

// beginTool starts a tools/call of tool name for s, its related messages
// going to s's Deliver, and returns the call and its upstream id.
func beginTool(t *testing.T, w *wired, c *wireConn, s Session, id, name string, timeout time.Duration) (*Call, string) {
	t.Helper()
	call := w.d.Begin(context.Background(), s, mustParse(t, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"`+name+`"}}`), timeout, false)
	return call, string(c.next(t).ID)
}

// TestChildRequestsFailClosed: a request the child sends reaches a user
// only when every client call in flight is that user's; with calls of two
// users in flight it is refused (the old rule sent it to the newest call's
// session: here b, whose user did not cause it), counted and not delivered;
// two sessions of one user are one user; an abandoned call still counts as
// its user's until the child answers it.
func TestChildRequestsFailClosed(t *testing.T) {
	w := newWired(t, Options{})
	a, b := &testSession{id: "a"}, &testSession{id: "b"}
	c := w.attach(t, a, samplingCaps)
	w.d.Attach(b, json.RawMessage(`{"capabilities":`+samplingCaps+`}`))

	callA, upA := beginTool(t, w, c, a, "1", "ask", 10*time.Second)
	callB, upB := beginTool(t, w, c, b, "1", "slow", 10*time.Second)
	c.emit(`{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{}}`)
	childError(t, c, `"s1"`, "more than one user")
	if got := w.d.Status().Refused[RefusedUsers]; got != 1 {
		t.Errorf("Refused[%s] = %d; want 1", RefusedUsers, got)
	}
	if len(a.got()) != 0 || len(b.got()) != 0 {
		t.Fatalf("a refused request was delivered: a %q, b %q", a.got(), b.got())
	}

	// b's call ends: a's is the only one in flight, the request is a's.
	c.emit(`{"jsonrpc":"2.0","id":` + upB + `,"result":{}}`)
	if ev := nextEvent(t, callB); !ev.Done {
		t.Fatalf("b's call: %+v", ev)
	}
	callB.Release()
	c.emit(`{"jsonrpc":"2.0","id":"s2","method":"sampling/createMessage","params":{}}`)
	waitDelivered(t, a, `"s2"`)

	// a's call is abandoned (a timeout): it counts as a's in flight until
	// the child answers it, so a request that comes while b's call runs
	// is refused rather than taken for b's.
	callA.Release() // the caller gave up
	if m := c.next(t); m.Method != "notifications/cancelled" {
		t.Fatalf("the child got %s; want the cancellation of a's call", m.Raw)
	}
	callB, upB = beginTool(t, w, c, b, "2", "slow", 10*time.Second)
	c.emit(`{"jsonrpc":"2.0","id":"s3","method":"sampling/createMessage","params":{}}`)
	childError(t, c, `"s3"`, "more than one user")
	// The child answers a's call after all: now b's is the only one.
	c.emit(`{"jsonrpc":"2.0","id":` + upA + `,"result":{}}`)
	c.emit(`{"jsonrpc":"2.0","id":"s4","method":"sampling/createMessage","params":{}}`)
	waitDelivered(t, b, `"s4"`)
	if n := len(a.got()); n != 1 {
		t.Errorf("a was delivered %d messages; want only s2", n)
	}
	c.emit(`{"jsonrpc":"2.0","id":` + upB + `,"result":{}}`)
	nextEvent(t, callB)
	callB.Release()

	// Only an abandoned call in flight: refused, for the call is gone.
	callA, _ = beginTool(t, w, c, a, "3", "ask", 10*time.Second)
	callA.Release()
	c.next(t) // its cancellation
	c.emit(`{"jsonrpc":"2.0","id":"s5","method":"sampling/createMessage","params":{}}`)
	childError(t, c, `"s5"`, "abandoned")
	if got := w.d.Status().Refused[RefusedAbandoned]; got != 1 {
		t.Errorf("Refused[%s] = %d; want 1", RefusedAbandoned, got)
	}
	// The child answers a call written after that cancellation: it has
	// read the cancellation, and the abandoned call no longer counts.
	if n := w.d.Status().Abandoned; n != 1 {
		t.Fatalf("Status.Abandoned = %d; want 1", n)
	}
	callB, upB = beginTool(t, w, c, b, "3", "echo", 10*time.Second)
	c.emit(`{"jsonrpc":"2.0","id":` + upB + `,"result":{}}`)
	nextEvent(t, callB)
	callB.Release()
	if n := w.d.Status().Abandoned; n != 0 {
		t.Errorf("Status.Abandoned = %d after the child answered a later call; want 0", n)
	}
	// What was delivered is the sessions' own: intact after the child's
	// later lines were read (the reader lends each line only until the
	// next).
	for s, want := range map[*testSession]string{a: `{"jsonrpc":"2.0","id":"s2","method":"sampling/createMessage","params":{}}`, b: `{"jsonrpc":"2.0","id":"s4","method":"sampling/createMessage","params":{}}`} {
		if got := s.got(); len(got) != 1 || string(got[0]) != want {
			t.Errorf("session %s holds %q; want only %s", s.id, got, want)
		}
	}
}

// waitDelivered waits until s has been delivered a message with id.
func waitDelivered(t *testing.T, s *testSession, id string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		for _, m := range s.got() {
			if string(jsonrpc.Member(m, "id")) == id {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("session %s was not delivered %s within 10s (got %q)", s.id, id, s.got())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestOneUsersSessionsAreOneUser: two sessions of one principal are one
// user: the request goes to the newest call's session.
func TestOneUsersSessionsAreOneUser(t *testing.T) {
	w := newWired(t, Options{})
	a := &userSession{testSession: testSession{id: "a"}, user: "alice"}
	a2 := &userSession{testSession: testSession{id: "a2"}, user: "alice"}
	params := `{"protocolVersion":"2025-06-18","capabilities":` + samplingCaps + `,"clientInfo":{"name":"t","version":"1"}}`
	w.d.Attach(a, json.RawMessage(params))
	if _, err := w.d.Do(context.Background(), a, mustParse(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":`+params+`}`), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	c := <-w.conns
	w.d.Attach(a2, json.RawMessage(params))
	call1, _ := beginTool(t, w, c, a, "1", "slow", 10*time.Second)
	call2, _ := beginTool(t, w, c, a2, "1", "ask", 10*time.Second)
	defer call1.Release()
	defer call2.Release()
	c.emit(`{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{}}`)
	waitDelivered(t, &a2.testSession, `"s1"`)
}

// TestIdleRequests: with no call in flight a request goes to the one user
// connected, and is refused while two are.
func TestIdleRequests(t *testing.T) {
	w := newWired(t, Options{})
	a, b := &testSession{id: "a"}, &testSession{id: "b"}
	c := w.attach(t, a, `{"roots":{}}`)
	c.emit(`{"jsonrpc":"2.0","id":"r1","method":"roots/list"}`)
	waitDelivered(t, a, `"r1"`)
	w.d.Attach(b, json.RawMessage(`{"capabilities":{}}`)) // b cannot even answer it
	c.emit(`{"jsonrpc":"2.0","id":"r2","method":"roots/list"}`)
	childError(t, c, `"r2"`, "(2 sessions)")
	if got := w.d.Status().Refused[RefusedNoCall]; got != 1 {
		t.Errorf("Refused[%s] = %d; want 1", RefusedNoCall, got)
	}
}

// transientCaller is a caller attached for one request (a stateless one).
type transientCaller struct{ testSession }

func (*transientCaller) Transient() bool { return true }

// TestAmbiguousLogLinesGoToNobody: a log line that comes while calls of a
// session and of a stateless request are in flight reaches neither, even
// though the session is the only one connected (the old rule gave it to
// the sole session); once only the session's call is in flight it is the
// session's.
func TestAmbiguousLogLinesGoToNobody(t *testing.T) {
	w := newWired(t, Options{})
	a, m := &testSession{id: "a"}, &transientCaller{testSession{id: "stateless"}}
	c := w.attach(t, a, `{}`)
	w.d.AttachCaller(m, true)
	callA, upA := beginTool(t, w, c, a, "1", "log", 10*time.Second)
	callM, upM := beginTool(t, w, c, m, "1", "log", 10*time.Second)
	c.emit(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"whose"}}`)
	c.emit(`{"jsonrpc":"2.0","id":` + upM + `,"result":{}}`)
	nextEvent(t, callM)
	callM.Release()
	c.emit(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"a's"}}`)
	c.emit(`{"jsonrpc":"2.0","id":` + upA + `,"result":{}}`)
	nextEvent(t, callA)
	callA.Release()
	waitFor2(t, "a's line", func() bool { return len(a.got()) == 1 })
	if got := a.got(); !strings.Contains(string(got[0]), `"a's"`) || len(m.got()) != 0 {
		t.Errorf("a got %q, the stateless caller %q; want only a's line, to a", got, m.got())
	}
	if d := w.d.Status().LogsDropped; d != 1 {
		t.Errorf("LogsDropped = %d; want 1 (the ambiguous line)", d)
	}
}

// waitFor2 polls cond until it holds or 10 s pass.
func waitFor2(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// turnsState reads the turns under their lock.
func (w *wired) turnsState() turns {
	w.d.pmu.Lock()
	defer w.d.pmu.Unlock()
	return w.d.turns
}

// askAlone is a dispatcher whose tool "ask" runs alone, an abandoned
// call counting for 200 ms, with two sessions a and b that can answer
// sampling, and its child.
func askAlone(t *testing.T) (*wired, *wireConn, *testSession, *testSession) {
	w := newWired(t, Options{InteractiveTool: func(name string) bool { return name == "ask" }})
	w.d.grace = 200 * time.Millisecond
	a, b := &testSession{id: "a"}, &testSession{id: "b"}
	c := w.attach(t, a, samplingCaps)
	w.d.Attach(b, json.RawMessage(`{"capabilities":`+samplingCaps+`}`))
	return w, c, a, b
}

// TestInteractiveToolsRunAlone: with InteractiveTool, calls of the listed
// tool run alone — after the calls in flight end, and before the calls
// that came after it start — while the other calls run together; the
// child's request during the call that runs alone is its caller's. An
// abandoned call that ran alone keeps its turn until the child answers
// it, or its grace passes.
func TestInteractiveToolsRunAlone(t *testing.T) {
	w, c, a, b := askAlone(t)

	// Two calls run together.
	echoA, upEchoA := beginTool(t, w, c, a, "1", "echo", 10*time.Second)
	echoB, upEchoB := beginTool(t, w, c, b, "1", "echo", 10*time.Second)
	// a's ask waits for them; b's next echo waits behind it.
	askDone := make(chan *Call, 1)
	go func() {
		askDone <- w.d.Begin(context.Background(), a, mustParse(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask"}}`), 10*time.Second, false)
	}()
	waitFor2(t, "the ask call to wait", func() bool { return w.turnsState().aloneWaiting == 1 })
	echo2Done := make(chan *Call, 1)
	go func() {
		echo2Done <- w.d.Begin(context.Background(), b, mustParse(t, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo"}}`), 10*time.Second, false)
	}()
	waitFor2(t, "b's second echo to wait", func() bool { return w.turnsState().waiting == 2 })
	for _, x := range []struct {
		call *Call
		up   string
	}{{echoA, upEchoA}, {echoB, upEchoB}} {
		c.emit(`{"jsonrpc":"2.0","id":` + x.up + `,"result":{}}`)
		nextEvent(t, x.call)
		x.call.Release()
	}
	askUp := c.next(t) // the ask call reaches the child
	if !strings.Contains(string(askUp.Raw), `"ask"`) {
		t.Fatalf("after the echoes the child got %s; want the ask call (b's echo waits)", askUp.Raw)
	}
	ask := <-askDone
	if st := w.turnsState(); !st.alone || st.waiting != 1 {
		t.Fatalf("turns while ask runs: %+v; want it alone and b's echo waiting", st)
	}
	c.emit(`{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{}}`)
	waitDelivered(t, a, `"s1"`)
	// The ask call is abandoned: its turn stays until its grace passes
	// (the child never answers it), then b's echo goes.
	ask.Release()
	if m := c.next(t); m.Method != "notifications/cancelled" {
		t.Fatalf("the child got %s; want the ask call's cancellation", m.Raw)
	}
	if st := w.turnsState(); !st.alone {
		t.Fatalf("the abandoned ask call gave its turn back at once: %+v", st)
	}
	if m := c.next(t); !strings.Contains(string(m.Raw), `"echo"`) {
		t.Fatalf("after the grace the child got %s; want b's echo", m.Raw)
	}
	echo2 := <-echo2Done
	echo2.Release()
	if len(b.got()) != 0 {
		t.Errorf("b was delivered %q", b.got())
	}
	_ = askUp
}

// TestUnlistedToolThatAsksIsRefused: with InteractiveTool, a tool that asks
// but is not listed runs together with other users' calls; its request is
// then refused, never taken for another user's (the middle ground is safe
// because routing still needs one user in flight, whatever runs alone).
func TestUnlistedToolThatAsksIsRefused(t *testing.T) {
	w := newWired(t, Options{InteractiveTool: func(name string) bool { return name == "ask" }})
	a, b := &testSession{id: "a"}, &testSession{id: "b"}
	c := w.attach(t, a, samplingCaps)
	w.d.Attach(b, json.RawMessage(`{"capabilities":`+samplingCaps+`}`))
	callA, _ := beginTool(t, w, c, a, "1", "asks-but-unlisted", 10*time.Second)
	callB, _ := beginTool(t, w, c, b, "1", "echo", 10*time.Second)
	defer callA.Release()
	defer callB.Release()
	c.emit(`{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{}}`)
	childError(t, c, `"s1"`, `tool "asks-but-unlisted", tool "echo"`)
	if len(a.got()) != 0 || len(b.got()) != 0 {
		t.Fatalf("a refused request was delivered: a %q, b %q", a.got(), b.got())
	}
}

// TestPingClearsAbandonedCall: right after a cancellation the bridge pings
// the child; its answer shows the child has read the cancellation, and the
// abandoned call stops counting at once.
func TestPingClearsAbandonedCall(t *testing.T) {
	w := newWired(t, Options{})
	a := &testSession{id: "a"}
	c := w.attach(t, a, samplingCaps)
	c.answerPings.Store(true)
	call, _ := beginTool(t, w, c, a, "1", "ask", 10*time.Second)
	call.Release()
	if m := c.next(t); m.Method != "notifications/cancelled" {
		t.Fatalf("the child got %s; want the cancellation", m.Raw)
	}
	waitFor2(t, "the abandoned call to stop counting", func() bool { return w.d.Status().Abandoned == 0 })
	if n := c.pings.Load(); n != 1 {
		t.Errorf("the child was pinged %d times; want once", n)
	}
}

// TestParkedCallLetsOthersRun: a call that runs alone and is parked for its
// client's input (Park) gives its turn up, so the other calls go on; what
// the child asks while both are in flight is refused; once its retry
// comes (Unpark) it goes before new calls that run alone, after the calls
// running then have ended.
func TestParkedCallLetsOthersRun(t *testing.T) {
	w, c, a, b := askAlone(t)
	ask, _ := beginTool(t, w, c, a, "1", "ask", 10*time.Second) // released below
	ask.Park()
	echo, upEcho := beginTool(t, w, c, b, "1", "echo", 10*time.Second) // goes at once
	c.emit(`{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{}}`)
	childError(t, c, `"s1"`, "more than one user")
	// Another call that runs alone waits for the parked one.
	ask2Done := make(chan *Call, 1)
	go func() {
		ask2Done <- w.d.Begin(context.Background(), b, mustParse(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask"}}`), 10*time.Second, false)
	}()
	waitFor2(t, "b's ask to wait", func() bool { return w.turnsState().aloneWaiting == 1 })
	// a's retry: Unpark waits until b's echo has ended.
	unparked := make(chan bool, 1)
	go func() { unparked <- ask.Unpark() }()
	waitFor2(t, "a's unpark to wait", func() bool { return w.turnsState().aloneWaiting == 2 })
	c.emit(`{"jsonrpc":"2.0","id":` + upEcho + `,"result":{}}`)
	nextEvent(t, echo)
	echo.Release()
	var ok bool
	select {
	case ok = <-unparked:
	case <-time.After(10 * time.Second):
		t.Fatal("Unpark did not return after the echo ended")
	}
	st := w.turnsState()
	if !ok || !st.alone || st.aloneWaiting != 1 {
		t.Fatalf("after Unpark: %v, turns %+v; want a alone again and b's ask still waiting", ok, st)
	}
	c.emit(`{"jsonrpc":"2.0","id":"s2","method":"sampling/createMessage","params":{}}`)
	waitDelivered(t, a, `"s2"`)
	ask.Release() // abandoned: keeps its turn until the grace passes
	c.next(t)     // its cancellation
	if m := c.next(t); !strings.Contains(string(m.Raw), `"ask"`) {
		t.Fatalf("the child got %s; want b's ask", m.Raw)
	}
	(<-ask2Done).Release()
}

// TestChildThatGoesOnWithCancelledCalls: a child that answers a call with
// a result after it read the call's cancellation (it answered the ping sent
// behind it) does not stop for cancellations; from then on an abandoned
// call counts until the child answers it, ping or not. An error answer is
// a stop, and changes nothing.
func TestChildThatGoesOnWithCancelledCalls(t *testing.T) {
	w := newWired(t, Options{})
	a := &testSession{id: "a"}
	c := w.attach(t, a, samplingCaps)
	c.answerPings.Store(true)
	abandon := func(id string) string {
		t.Helper()
		call, up := beginTool(t, w, c, a, id, "ask", 10*time.Second)
		call.Release()
		if m := c.next(t); m.Method != "notifications/cancelled" {
			t.Fatalf("the child got %s; want the cancellation", m.Raw)
		}
		return up
	}
	up := abandon("1")
	waitFor2(t, "the first abandoned call to settle", func() bool { return w.d.Status().Abandoned == 0 })
	c.emit(`{"jsonrpc":"2.0","id":` + up + `,"error":{"code":-32800,"message":"cancelled"}}`)
	up = abandon("2")
	waitFor2(t, "the second abandoned call to settle", func() bool { return w.d.Status().Abandoned == 0 })
	c.emit(`{"jsonrpc":"2.0","id":` + up + `,"result":{"went":"on"}}`) // it went on
	pings := c.pings.Load()
	up = abandon("3")
	waitFor2(t, "the ping after the third cancellation", func() bool { return c.pings.Load() > pings })
	// Its ping is answered, and still the call counts: the answer to a
	// marker ping of the child's, read after the ping's answer, shows the
	// reader has gone past it.
	c.emit(`{"jsonrpc":"2.0","id":"marker","method":"ping"}`)
	if m := c.next(t); string(m.ID) != `"marker"` {
		t.Fatalf("the child got %s; want the answer to its marker", m.Raw)
	}
	if n := w.d.Status().Abandoned; n != 1 {
		t.Errorf("Status.Abandoned = %d after the ping of a child that goes on; want 1", n)
	}
	c.emit(`{"jsonrpc":"2.0","id":` + up + `,"result":{}}`)
	waitFor2(t, "the third call to end with its answer", func() bool { return w.d.Status().Abandoned == 0 })
}

// TestParkedCallDoesNotHoldAnInteractiveDestination: on an interactive:
// true destination (every call runs alone) a call parked for its client's
// input does not make the others wait for its retry (issue 21: other users
// got 504 for the 2 minutes of an un-retried park).
func TestParkedCallDoesNotHoldAnInteractiveDestination(t *testing.T) {
	w := newWired(t, Options{Interactive: true})
	w.d.grace = 200 * time.Millisecond // new calls wait that long for a retry
	a, b := &testSession{id: "a"}, &testSession{id: "b"}
	c := w.attach(t, a, samplingCaps)
	w.d.Attach(b, json.RawMessage(`{"capabilities":`+samplingCaps+`}`))
	ask, _ := beginTool(t, w, c, a, "1", "ask", 10*time.Second)
	defer ask.Release()
	ask.Park()
	echo, up := beginTool(t, w, c, b, "1", "echo", 10*time.Second) // not held back
	c.emit(`{"jsonrpc":"2.0","id":` + up + `,"result":{}}`)
	if ev := nextEvent(t, echo); !ev.Done || ev.Err != nil {
		t.Fatalf("b's call beside a parked one: %+v", ev)
	}
	echo.Release()
	if !ask.Unpark() {
		t.Fatal("Unpark failed with nothing in its way")
	}
	if st := w.turnsState(); !st.alone {
		t.Errorf("after Unpark: %+v; want the parked call alone again", st)
	}
}

// TestParkedCallLeavesAloneCallsExact: a call parked for its client's
// input (an MRTR retry that never comes) is blocked on the request the
// child sent for it, so while another user's call runs alone, what the
// child asks and logs is that call's: delivered to it, not refused (issue
// 34: one un-retried park refused every other user's asking call for the
// whole input_wait). Beside a call that runs together it stays refused,
// and once the parked call is abandoned it counts again.
func TestParkedCallLeavesAloneCallsExact(t *testing.T) {
	for _, interactive := range []string{"every call", "listed tools"} {
		t.Run(interactive, func(t *testing.T) {
			opts := Options{Interactive: true, Logs: LogsAttributed}
			if interactive == "listed tools" {
				opts = Options{InteractiveTool: func(name string) bool { return name == "ask" }, Logs: LogsAttributed}
			}
			w := newWired(t, opts)
			w.d.grace = time.Millisecond // new calls wait that long for a retry
			a, b := &testSession{id: "a"}, &testSession{id: "b"}
			c := w.attach(t, a, samplingCaps)
			w.d.Attach(b, json.RawMessage(`{"capabilities":`+samplingCaps+`}`))
			parked, _ := beginTool(t, w, c, a, "1", "ask", 10*time.Second)
			defer parked.Release()
			c.emit(`{"jsonrpc":"2.0","id":"s0","method":"sampling/createMessage","params":{}}`)
			waitDelivered(t, a, `"s0"`)
			parked.Park() // its client is asked; its retry never comes
			ask, upAsk := beginTool(t, w, c, b, "1", "ask", 10*time.Second)
			c.emit(`{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{}}`)
			waitDelivered(t, b, `"s1"`)
			c.emit(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"b's"}}`)
			waitUntil(t, "b's log line at b", func() bool { return len(b.got()) == 2 })
			if got := a.got(); len(got) != 1 {
				t.Errorf("a, parked, got %q; want only its own request", got)
			}
			if st := w.d.Status(); st.Refused[RefusedUsers] != 0 || st.LogsDropped != 0 {
				t.Errorf("refused %v, logs dropped %d; want none", st.Refused, st.LogsDropped)
			}
			c.emit(`{"jsonrpc":"2.0","id":` + upAsk + `,"result":{}}`)
			nextEvent(t, ask)
			ask.Release()
		})
	}
	// Beside a call that runs together, the parked call still counts.
	w, c, a, b := askAlone(t)
	w.d.grace = time.Millisecond
	parked, _ := beginTool(t, w, c, a, "1", "ask", 10*time.Second)
	defer parked.Release()
	parked.Park()
	echo, _ := beginTool(t, w, c, b, "1", "echo", 10*time.Second)
	defer echo.Release()
	c.emit(`{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{}}`)
	childError(t, c, `"s1"`, "more than one user")
}

// TestParkedCallHoldsNewCallsForTheGrace: a call that runs alone and
// starts just after another user's call parked waits for the parked call's
// retry up to the grace, so that a retry that comes at once goes first and
// the child's requests stay exact (the conformance suite's next scenario
// had its elicitation refused behind the previous one's park).
func TestParkedCallHoldsNewCallsForTheGrace(t *testing.T) {
	w := newWired(t, Options{Interactive: true})
	w.d.grace = time.Minute
	a, b := &testSession{id: "a"}, &testSession{id: "b"}
	c := w.attach(t, a, samplingCaps)
	w.d.Attach(b, json.RawMessage(`{"capabilities":`+samplingCaps+`}`))
	ask, upAsk := beginTool(t, w, c, a, "1", "ask", 10*time.Second) // released below
	ask.Park()
	began := make(chan *Call, 1)
	go func() {
		began <- w.d.Begin(context.Background(), b, mustParse(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask"}}`), 10*time.Second, false)
	}()
	waitUntil(t, "b's call waiting behind the parked one", func() bool { return w.turnsState().waiting == 1 })
	if !ask.Unpark() {
		t.Fatal("Unpark failed")
	}
	c.emit(`{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{}}`)
	waitUntil(t, "the child's request at a", func() bool { return len(a.got()) == 1 })
	c.emit(`{"jsonrpc":"2.0","id":` + upAsk + `,"result":{}}`)
	if ev := nextEvent(t, ask); !ev.Done || ev.Err != nil {
		t.Fatalf("a's call: %+v", ev)
	}
	ask.Release()
	var second *Call
	select {
	case second = <-began:
	case <-time.After(10 * time.Second):
		t.Fatal("b's call did not begin after a's ended")
	}
	defer second.Release()
	if m := c.next(t); jsonrpc.String(jsonrpc.Member(m.Params, "name")) != "ask" || len(b.got()) != 0 {
		t.Fatalf("the child got %s", m.Raw)
	}
}

// TestAbandonedParkedCallHoldsNewCalls: a parked call that is abandoned
// (its client never retried) still holds new calls that run alone until
// the child has answered it (or read its cancellation), as an abandoned
// call that held its turn does: the conformance suite's
// next scenario had its elicitation refused while the child could still
// send for the abandoned one.
func TestAbandonedParkedCallHoldsNewCalls(t *testing.T) {
	w := newWired(t, Options{Interactive: true})
	w.d.grace = time.Minute
	a, b := &testSession{id: "a"}, &testSession{id: "b"}
	c := w.attach(t, a, samplingCaps)
	w.d.Attach(b, json.RawMessage(`{"capabilities":`+samplingCaps+`}`))
	ask, upAsk := beginTool(t, w, c, a, "1", "ask", 10*time.Second)
	ask.Park()
	ask.Release() // abandoned: its retry never came
	if m := c.next(t); m.Method != "notifications/cancelled" {
		t.Fatalf("the child got %s; want the cancellation", m.Raw)
	}
	began := make(chan *Call, 1)
	go func() {
		began <- w.d.Begin(context.Background(), b, mustParse(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask"}}`), 10*time.Second, false)
	}()
	waitUntil(t, "b's call waiting behind the abandoned parked one", func() bool { return w.turnsState().waiting == 1 })
	c.emit(`{"jsonrpc":"2.0","id":` + upAsk + `,"error":{"code":-32800,"message":"cancelled"}}`)
	var second *Call
	select {
	case second = <-began:
	case <-time.After(10 * time.Second):
		t.Fatal("b's call did not begin once the child had answered the abandoned call")
	}
	defer second.Release()
	if m := c.next(t); jsonrpc.String(jsonrpc.Member(m.Params, "name")) != "ask" {
		t.Fatalf("the child got %s; want b's call", m.Raw)
	}
	if st := w.turnsState(); st.parked != 0 || st.held(time.Now()) {
		t.Errorf("turns %+v; want no parked call left", st)
	}
}

// TestTwoParkedCallsResume: two parked calls whose retries come at once
// while another call runs take their turns back one after the other (each
// waited for the other's place among those resuming, until both timed out
// and were abandoned).
func TestTwoParkedCallsResume(t *testing.T) {
	w := newWired(t, Options{Interactive: true})
	w.d.grace = 50 * time.Millisecond // b's call waits that long behind a's park
	a, b := &testSession{id: "a"}, &testSession{id: "b"}
	c := w.attach(t, a, samplingCaps)
	w.d.Attach(b, json.RawMessage(`{"capabilities":`+samplingCaps+`}`))
	askA, upA := beginTool(t, w, c, a, "1", "ask", 10*time.Second)
	askA.Park()
	askB, upB := beginTool(t, w, c, b, "1", "ask", 10*time.Second)
	askB.Park()
	// A third call runs meanwhile: both retries come while it does.
	echo, upEcho := beginTool(t, w, c, b, "2", "echo", 10*time.Second)
	resumed := make(chan *Call, 2)
	for _, call := range []*Call{askA, askB} {
		go func() {
			if call.Unpark() {
				resumed <- call
			} else {
				resumed <- nil
			}
		}()
	}
	waitUntil(t, "both retries waiting", func() bool { return w.turnsState().aloneWaiting == 2 })
	c.emit(`{"jsonrpc":"2.0","id":` + upEcho + `,"result":{}}`)
	nextEvent(t, echo)
	echo.Release()
	for range 2 {
		var first *Call
		select {
		case first = <-resumed:
		case <-time.After(5 * time.Second):
			t.Fatal("no parked call took its turn back within 5 s")
		}
		if first == nil {
			t.Fatal("a parked call could not take its turn back")
		}
		up := upA
		if first == askB {
			up = upB
		}
		c.emit(`{"jsonrpc":"2.0","id":` + up + `,"result":{}}`)
		if ev := nextEvent(t, first); !ev.Done || ev.Err != nil {
			t.Fatalf("the resumed call: %+v", ev)
		}
		first.Release()
	}
}
