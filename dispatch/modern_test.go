package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stelae-bridge/stelae-bridge/jsonrpc"
	"github.com/stelae-bridge/stelae-bridge/tests/linear"
)

// The 2026-07-28 dialect to a child that speaks it (modern.go), on the
// wire fake: what the child reads, and a 2025 session's calls translated,
// each with a bystander whose own call must stay untouched.

// modernWired is a dispatcher whose children speak 2026-07-28 only, with
// sessions a and b attached (a declares sampling and elicitation, b
// sampling), and the child.
func modernWired(t *testing.T, opts Options) (*wired, *testSession, *testSession, *wireConn) {
	t.Helper()
	w := newWired(t, opts)
	w.modern.Store(true)
	a, b := &testSession{id: "a"}, &testSession{id: "b"}
	c := w.attach(t, a, `{"sampling":{},"elicitation":{}}`)
	w.d.Attach(b, []byte(`{"protocolVersion":"2025-06-18","capabilities":{"sampling":{}},"clientInfo":{"name":"bee","version":"2"}}`))
	if !w.d.SpeaksModern() {
		t.Fatal("the child answered server/discover for 2026-07-28, yet is not spoken to in it")
	}
	return w, a, b, c
}

// inputRequired is the child's input_required answer to upstream id up,
// asking key by sampling, with requestState state ("" for none).
func inputRequiredAnswer(up []byte, key, state string) string {
	st := ""
	if state != "" {
		st = `,"requestState":"` + state + `"`
	}
	return `{"jsonrpc":"2.0","id":` + string(up) + `,"result":{"resultType":"input_required","inputRequests":{"` + key + `":{"method":"sampling/createMessage","params":{"messages":[],"maxTokens":5}}}` + st + `}}`
}

// TestModernEnvelope: a 2026 child reads, in every request, the envelope of
// the session the bridge read at its initialize — never members a client
// wrote under io.modelcontextprotocol/*, nor a 2025 client's
// requestState/inputResponses — and the progress token is the upstream id.
// There is no initialize: the session's was answered from server/discover.
func TestModernEnvelope(t *testing.T) {
	w, a, b, c := modernWired(t, Options{})
	for _, tc := range []struct {
		s      *testSession
		params string
		info   string
	}{
		{a, `{"name":"x","_meta":{"progressToken":"tok","io.modelcontextprotocol/clientCapabilities":{"roots":{}},"io.modelcontextprotocol/clientInfo":{"name":"forged"},"k":1},"requestState":"stolen","inputResponses":{"s":{}}}`, `"name":"t"`},
		{b, `{"name":"y"}`, `"name":"bee"`},
		{a, `{"name":"z","_m\u0065ta":{"io.modelcontextprotocol/protocolVersion":"2024-11-05"}}`, `"name":"t"`},
	} {
		call := w.d.Begin(context.Background(), tc.s, mustParse(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":`+tc.params+`}`), 10*time.Second, false)
		got := c.next(t)
		meta := jsonrpc.Member(got.Params, "_meta")
		if string(jsonrpc.Member(meta, "io.modelcontextprotocol/protocolVersion")) != `"2026-07-28"` ||
			!strings.Contains(string(jsonrpc.Member(meta, "io.modelcontextprotocol/clientInfo")), tc.info) {
			t.Errorf("the child got %s; want the envelope of session %s", got.Params, tc.s.id)
		}
		if strings.Contains(string(got.Params), "forged") || strings.Contains(string(got.Params), "stolen") || strings.Contains(string(got.Params), "inputResponses") || strings.Contains(string(got.Params), "2024-11-05") {
			t.Errorf("the child got what the client wrote in the bridge's place: %s", got.Params)
		}
		if tc.s == a && strings.Contains(tc.params, "tok") {
			if tok := jsonrpc.Member(meta, "progressToken"); string(tok) != string(got.ID) || string(jsonrpc.Member(meta, "k")) != "1" {
				t.Errorf("_meta %s: want the upstream id as token and the client's own members kept", meta)
			}
		}
		c.emit(`{"jsonrpc":"2.0","id":` + string(got.ID) + `,"result":{"content":[]}}`)
		if ev := nextEvent(t, call); !ev.Done || ev.Err != nil {
			t.Errorf("answer %+v", ev)
		}
		call.Release()
	}
	// logging/setLevel is the bridge's for a 2026 child: the level goes in
	// the session's envelope, and b's stays without one.
	if ans, err := w.d.Do(context.Background(), a, mustParse(t, `{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"warning"}}`), 10*time.Second); err != nil || !strings.Contains(string(ans), `"result":{}`) {
		t.Fatalf("setLevel: %s %v", ans, err)
	}
	for _, s := range []*testSession{a, b} {
		call := w.d.Begin(context.Background(), s, mustParse(t, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`), 10*time.Second, false)
		got := c.next(t)
		level := string(jsonrpc.Member(jsonrpc.Member(got.Params, "_meta"), "io.modelcontextprotocol/logLevel"))
		if (s == a) != (level == `"warning"`) {
			t.Errorf("session %s's request carries log level %q", s.id, level)
		}
		c.emit(`{"jsonrpc":"2.0","id":` + string(got.ID) + `,"result":{"tools":[]}}`)
		nextEvent(t, call)
		call.Release()
	}
}

// pump is the caller of call: it takes each of its events (so that the
// call goes on, as a session's drive does) and releases it at its end.
func pump(call *Call) <-chan Event {
	ch := make(chan Event, 16)
	go func() {
		defer close(ch)
		for {
			ev := call.Next(nil)
			ch <- ev
			if ev.Done {
				call.Release()
				return
			}
		}
	}()
	return ch
}

// recv is the next event pump took, within a deadline.
func recv(t *testing.T, ch <-chan Event) Event {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("the call had ended already")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("the call had no event within 10s")
		return Event{}
	}
}

// TestModernTranslation: a's call answered input_required becomes a's own
// sampling request, under an id the bridge minted; b answering it is
// dropped; a's answer goes back to the child as the retry (the answers,
// the child's requestState, a fresh upstream id and token), and a's call
// ends with the child's final answer under a's id. b's call, in flight all
// along, gets its own answer.
func TestModernTranslation(t *testing.T) {
	w, a, b, c := modernWired(t, Options{})
	evA := pump(w.d.Begin(context.Background(), a, mustParse(t, `{"jsonrpc":"2.0","id":"a-1","method":"tools/call","params":{"name":"ask","_meta":{"progressToken":"pa"}}}`), 10*time.Second, true))
	first := c.next(t)
	evB := pump(w.d.Begin(context.Background(), b, mustParse(t, `{"jsonrpc":"2.0","id":"a-1","method":"tools/call","params":{"name":"plain"}}`), 10*time.Second, true))
	gotB := c.next(t)
	c.emit(inputRequiredAnswer(first.ID, "q", "state-1"))
	ev := recv(t, evA)
	req, err := jsonrpc.Parse(ev.Related)
	if err != nil || req.Method != "sampling/createMessage" || !strings.HasPrefix(jsonrpc.String(req.ID), inputIDPrefix) {
		t.Fatalf("a's call: %+v (%s); want the child's sampling request under an id of the bridge's", ev, ev.Related)
	}
	// b answers a's request: dropped; a's call still waits.
	if err := w.d.Respond(b, mustParse(t, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":{"role":"assistant","content":{"type":"text","text":"b's"},"model":"m"}}`)); err != nil {
		t.Fatal(err)
	}
	if err := w.d.Respond(a, mustParse(t, `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":{"role":"assistant","content":{"type":"text","text":"a's"},"model":"m"}}`)); err != nil {
		t.Fatal(err)
	}
	retry := c.next(t)
	if string(retry.ID) == string(first.ID) || retry.Method != "tools/call" {
		t.Fatalf("retry %s: want a new upstream id", retry.Raw)
	}
	if ir := string(jsonrpc.Member(retry.Params, "inputResponses")); !strings.Contains(ir, `"q":`) || !strings.Contains(ir, "a's") || strings.Contains(ir, "b's") {
		t.Errorf("retry's inputResponses %s; want a's answer under q", ir)
	}
	if st := string(jsonrpc.Member(retry.Params, "requestState")); st != `"state-1"` {
		t.Errorf("retry's requestState %s", st)
	}
	if tok := jsonrpc.Member(jsonrpc.Member(retry.Params, "_meta"), "progressToken"); string(tok) != string(retry.ID) {
		t.Errorf("retry's progress token %s; want its upstream id %s", tok, retry.ID)
	}
	c.emit(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":` + string(retry.ID) + `,"progress":1}}`)
	if ev := recv(t, evA); !strings.Contains(string(ev.Related), `"progressToken":"pa"`) {
		t.Errorf("a's progress on the retry: %s", ev.Related)
	}
	c.emit(`{"jsonrpc":"2.0","id":` + string(retry.ID) + `,"result":{"content":[{"type":"text","text":"done a"}],"resultType":"complete"}}`)
	if ev := recv(t, evA); !ev.Done || !strings.Contains(string(ev.Answer), `"id":"a-1"`) || !strings.Contains(string(ev.Answer), "done a") {
		t.Errorf("a's answer %+v %s", ev, ev.Answer)
	}
	c.emit(`{"jsonrpc":"2.0","id":` + string(gotB.ID) + `,"result":{"content":[{"type":"text","text":"done b"}]}}`)
	if ev := recv(t, evB); !ev.Done || !strings.Contains(string(ev.Answer), "done b") {
		t.Errorf("b's answer %+v %s", ev, ev.Answer)
	}
	if n := len(b.got()); n != 0 {
		t.Errorf("b was delivered %d messages of a's call", n)
	}
	w.d.pmu.Lock()
	left := len(w.d.inputs)
	w.d.pmu.Unlock()
	if left != 0 {
		t.Errorf("%d input requests still recorded after the call ended", left)
	}
}

// TestModernTranslationEnds: a call waiting for its session's input ends by
// its session's cancellation, its timeout, its session's end and its
// child's exit, each with its own error; the child is sent no cancellation
// of a request it already answered; a late answer reaches nobody; and b's
// call waiting beside it goes on to its answer each time.
func TestModernTranslationEnds(t *testing.T) {
	for _, how := range []string{"cancelled", "timeout", "detached", "exited", "undeclared", "rounds"} {
		t.Run(how, func(t *testing.T) {
			w, a, b, c := modernWired(t, Options{})
			timeout := 10 * time.Second
			if how == "timeout" {
				timeout = 300 * time.Millisecond
			}
			caps := a
			if how == "undeclared" {
				caps = b // b declared sampling only
			}
			evA := pump(w.d.Begin(context.Background(), caps, mustParse(t, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"ask"}}`), timeout, true))
			upA := c.next(t).ID
			bystander := a
			if caps == a {
				bystander = b
			}
			evB := pump(w.d.Begin(context.Background(), bystander, mustParse(t, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"ask"}}`), 10*time.Second, true))
			upB := c.next(t).ID
			c.emit(inputRequiredAnswer(upB, "k", "sb"))
			reqB := recv(t, evB)
			if how == "undeclared" {
				c.emit(`{"jsonrpc":"2.0","id":` + string(upA) + `,"result":{"resultType":"input_required","inputRequests":{"e":{"method":"elicitation/create","params":{"message":"?","requestedSchema":{}}}}}}`)
			} else {
				c.emit(inputRequiredAnswer(upA, "k", "sa"))
			}
			var reqA Event
			if how != "undeclared" {
				reqA = recv(t, evA)
			}
			var ev Event
			switch how {
			case "cancelled":
				if err := w.d.Notify(a, mustParse(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`)); err != nil {
					t.Fatal(err)
				}
				ev = recv(t, evA)
				if !ev.Done || !strings.Contains(string(ev.Answer), "cancelled") {
					t.Errorf("cancelled: %+v %s", ev, ev.Answer)
				}
			case "timeout":
				ev = recv(t, evA)
				if !errors.Is(ev.Err, ErrTimeout) {
					t.Errorf("timeout: %+v", ev)
				}
			case "detached":
				w.d.Detach(a, nil)
				ev = recv(t, evA)
				if !errors.Is(ev.Err, ErrCanceled) {
					t.Errorf("detached: %+v", ev)
				}
			case "exited":
				c.crash()
				ev = recv(t, evA)
				if !errors.Is(ev.Err, ErrChildExited) {
					t.Errorf("exited: %+v", ev)
				}
			case "undeclared":
				ev = recv(t, evA)
				if !ev.Done || !strings.Contains(string(ev.Answer), "elicitation") || !strings.Contains(string(ev.Answer), "did not declare") {
					t.Errorf("undeclared: %+v %s", ev, ev.Answer)
				}
			case "rounds":
				for i := 0; ; i++ {
					id := jsonrpc.Member(reqA.Related, "id")
					if err := w.d.Respond(a, mustParse(t, `{"jsonrpc":"2.0","id":`+string(id)+`,"result":{"role":"assistant","content":{"type":"text","text":"x"},"model":"m"}}`)); err != nil {
						t.Fatal(err)
					}
					retry := c.next(t)
					c.emit(inputRequiredAnswer(retry.ID, "k", "again"))
					reqA = recv(t, evA)
					if reqA.Done {
						if i+2 != maxInputRounds+1 || !strings.Contains(string(reqA.Answer), "gave up") {
							t.Errorf("ended after %d rounds: %s", i+2, reqA.Answer)
						}
						break
					}
				}
			}
			if how == "exited" {
				if ev := recv(t, evB); !errors.Is(ev.Err, ErrChildExited) {
					t.Errorf("b's call on the exited child: %+v", ev)
				}
				return
			}
			if how != "undeclared" && how != "rounds" {
				// A late answer to a's request reaches nobody.
				_ = w.d.Respond(a, mustParse(t, `{"jsonrpc":"2.0","id":`+string(jsonrpc.Member(reqA.Related, "id"))+`,"result":{"role":"assistant","content":{"type":"text","text":"late"},"model":"m"}}`))
			}
			// b's call goes on: its answer, its retry, its end.
			if err := w.d.Respond(bystander, mustParse(t, `{"jsonrpc":"2.0","id":`+string(jsonrpc.Member(reqB.Related, "id"))+`,"result":{"role":"assistant","content":{"type":"text","text":"bee"},"model":"m"}}`)); err != nil {
				t.Fatal(err)
			}
			retry := c.next(t)
			if retry.Method != "tools/call" || !strings.Contains(string(retry.Params), "bee") || strings.Contains(string(retry.Params), "late") {
				t.Fatalf("after a's call ended the child got %s; want b's retry (and nothing of a's)", retry.Raw)
			}
			c.emit(`{"jsonrpc":"2.0","id":` + string(retry.ID) + `,"result":{"content":[{"type":"text","text":"b done"}]}}`)
			if ev := recv(t, evB); !ev.Done || !strings.Contains(string(ev.Answer), "b done") {
				t.Errorf("b's answer %+v", ev)
			}
			select {
			case extra := <-c.got:
				t.Errorf("the child was sent %s after the calls ended", extra)
			default:
			}
			w.d.pmu.Lock()
			left, pending, abandoned := len(w.d.inputs), len(w.d.pending), len(w.d.abandoned)
			w.d.pmu.Unlock()
			if left != 0 || pending != 0 || abandoned != 0 {
				t.Errorf("left behind: %d input requests, %d pending calls, %d abandoned", left, pending, abandoned)
			}
		})
	}
}

// FuzzWithEnvelope: whatever params a client sends that the screen admits,
// a 2026 child reads the bridge's envelope — by Go's lenient decoder (any
// case, the last duplicate) and by an exact one — and, from a 2025 client,
// no requestState or inputResponses; the params stay valid JSON, and every
// other member the client sent is still there.
func FuzzWithEnvelope(f *testing.F) {
	for _, s := range []string{
		`{"name":"x"}`, `{}`, ` { } `, `{"_meta":{}}`, `{"_meta":null}`, `{"_meta":{"progressToken":1,"k":[1,{"a":"b"}]}}`,
		`{"name":"x","_meta":{"io.modelcontextprotocol/clientCapabilities":{"roots":{}}},"requestState":"s","inputResponses":{"a":{}}}`,
		`{"_m\u0065ta":{"io.modelcontextprotocol/logLevel":"debug"},"requestStat\u0065":"s"}`,
		`{"a":"\"_meta\":{}","b":"}"}`,
	} {
		f.Add(s, false)
		f.Add(s, true)
	}
	env := modernEnvelope([]byte(`{"name":"bridge-read","version":"1"}`), []byte(`{"elicitation":{}}`), "")
	f.Fuzz(func(t *testing.T, params string, keep bool) {
		m, err := jsonrpc.Parse([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":` + params + `}`))
		if err != nil || len(m.Params) == 0 || m.Params[0] != '{' {
			return
		}
		if _, code, _ := (&Dispatcher{}).screen(m, true); code != 0 {
			return // refused before any child
		}
		out := withEnvelope(m.Params, env, keep)
		var lenient struct {
			Meta struct {
				Caps json.RawMessage `json:"io.modelcontextprotocol/clientCapabilities"`
				Info json.RawMessage `json:"io.modelcontextprotocol/clientInfo"`
			} `json:"_meta"`
			RequestState   json.RawMessage `json:"requestState"`
			InputResponses json.RawMessage `json:"inputResponses"`
		}
		if err := json.Unmarshal(out, &lenient); err != nil {
			t.Fatalf("%s → %s: %v", params, out, err)
		}
		var exact map[string]json.RawMessage
		_ = json.Unmarshal(out, &exact)
		var meta map[string]json.RawMessage
		_ = json.Unmarshal(exact["_meta"], &meta)
		if string(lenient.Meta.Caps) != `{"elicitation":{}}` || string(meta["io.modelcontextprotocol/clientCapabilities"]) != `{"elicitation":{}}` ||
			!strings.Contains(string(lenient.Meta.Info), "bridge-read") {
			t.Fatalf("%s → %s: the child reads capabilities %s / %s", params, out, lenient.Meta.Caps, meta["io.modelcontextprotocol/clientCapabilities"])
		}
		if !keep && (lenient.RequestState != nil || lenient.InputResponses != nil) {
			t.Fatalf("%s → %s: a 2025 client's MRTR members reach the child", params, out)
		}
		var in map[string]json.RawMessage
		_ = json.Unmarshal(m.Params, &in)
		for k := range in {
			if _, ok := exact[k]; !ok && k != "requestState" && k != "inputResponses" {
				t.Fatalf("%s → %s: member %q lost", params, out, k)
			}
		}
	})
}

// TestWithEnvelopeLinear: the envelope is written in time linear in the
// params (tests/linear): many members, many _meta members, long escaped
// keys and values.
func TestWithEnvelopeLinear(t *testing.T) {
	env := modernEnvelope(nil, nil, "")
	for name, make := range map[string]func(n int) []byte{
		"members": func(n int) []byte {
			return []byte(`{` + strings.Repeat(`"k":1,`, n/6) + `"name":"x"}`)
		},
		"meta members": func(n int) []byte {
			return []byte(`{"_meta":{` + strings.Repeat(`"io.modelcontextprotocol/x":1,`, n/30) + `"a":1}}`)
		},
		"escaped keys": func(n int) []byte {
			return []byte(`{"` + strings.Repeat(`\u0061`, n/6) + `":1,"_meta":{"` + strings.Repeat(`\n`, n/2) + `":2}}`)
		},
	} {
		t.Run(name, func(t *testing.T) {
			linear.Check(t, t.Name(), func(b []byte) { withEnvelope(b, env, false) }, make, 4<<10)
		})
	}
}

// TestModernLogs: a 2026 child's log line goes to the one user whose call
// in flight asked for lines at its level — a bystander's call without a
// level is no candidate — and is dropped (counted) when none asked, or
// when two users did.
func TestModernLogs(t *testing.T) {
	w, a, b, c := modernWired(t, Options{})
	if _, err := w.d.Do(context.Background(), a, mustParse(t, `{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"warning"}}`), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	evA := pump(w.d.Begin(context.Background(), a, mustParse(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x"}}`), 10*time.Second, true))
	upA := c.next(t).ID
	evB := pump(w.d.Begin(context.Background(), b, mustParse(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x"}}`), 10*time.Second, true))
	upB := c.next(t).ID
	logLine := func(level, data string) {
		c.emit(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"` + level + `","data":"` + data + `"}}`)
	}
	logLine("error", "for a")
	if ev := recv(t, evA); !strings.Contains(string(ev.Related), "for a") {
		t.Fatalf("a's call got %+v; want the log line", ev)
	}
	dropped := w.d.Status().LogsDropped
	logLine("info", "below a's level")
	waitForCond(t, "the line below a's level dropped", func() bool { return w.d.Status().LogsDropped == dropped+1 })
	// b asks for lines too: the next one could be either's.
	if _, err := w.d.Do(context.Background(), b, mustParse(t, `{"jsonrpc":"2.0","id":3,"method":"logging/setLevel","params":{"level":"debug"}}`), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	logLine("error", "either's")
	waitForCond(t, "the line either's dropped", func() bool { return w.d.Status().LogsDropped == dropped+2 })
	for _, x := range []struct {
		ch <-chan Event
		up []byte
	}{{evA, upA}, {evB, upB}} {
		c.emit(`{"jsonrpc":"2.0","id":` + string(x.up) + `,"result":{"content":[]}}`)
		if ev := recv(t, x.ch); !ev.Done {
			t.Errorf("got %s (%+v) before the answer; want nothing more", ev.Related, ev)
		}
	}
}

// waitForCond waits for cond, within a deadline.
func waitForCond(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10s", what)
		}
	}
}

// TestModernListenFollowsSubscriptions: the one listen a 2026 child gets
// names the resources some session subscribed to, reference-counted: a
// second subscriber, or one of two leaving, changes nothing; the last
// leaving (by unsubscribing, or by its session's end) closes the listen;
// the child is sent no resources/subscribe or unsubscribe.
func TestModernListenFollowsSubscriptions(t *testing.T) {
	w, a, b, c := modernWired(t, Options{})
	sub := func(s *testSession, method, uri string) {
		t.Helper()
		ans, err := w.d.Do(context.Background(), s, mustParse(t, `{"jsonrpc":"2.0","id":9,"method":"`+method+`","params":{"uri":"`+uri+`"}}`), 10*time.Second)
		if err != nil || !strings.Contains(string(ans), `"result":{}`) {
			t.Fatalf("%s %s: %s %v", method, uri, ans, err)
		}
	}
	none := func(what string) {
		t.Helper()
		select {
		case got := <-c.got:
			t.Fatalf("%s: the child was sent %s", what, got)
		default:
		}
	}
	sub(a, "resources/subscribe", "res://x")
	first := c.next(t)
	if first.Method != "subscriptions/listen" || !strings.Contains(string(first.Params), `"resourceSubscriptions":["res://x"]`) ||
		string(jsonrpc.Member(jsonrpc.Member(first.Params, "_meta"), "io.modelcontextprotocol/protocolVersion")) != `"2026-07-28"` {
		t.Fatalf("first subscriber: the child got %s", first.Raw)
	}
	sub(b, "resources/subscribe", "res://x")
	w.d.Detach(a, nil)
	none("a second subscriber, then one of two leaving")
	sub(b, "resources/subscribe", "res://y")
	second := c.next(t)
	if second.Method != "subscriptions/listen" || !strings.Contains(string(second.Params), `["res://x","res://y"]`) {
		t.Fatalf("a second uri: the child got %s", second.Raw)
	}
	if cancel := c.next(t); cancel.Method != "notifications/cancelled" || string(jsonrpc.Member(cancel.Params, "requestId")) != string(first.ID) {
		t.Fatalf("the first listen's end: %s", cancel.Raw)
	}
	sub(b, "resources/unsubscribe", "res://x")
	third := c.next(t)
	if third.Method != "subscriptions/listen" || strings.Contains(string(third.Params), "res://x") {
		t.Fatalf("res://x's last subscriber left: the child got %s", third.Raw)
	}
	if cancel := c.next(t); cancel.Method != "notifications/cancelled" || string(jsonrpc.Member(cancel.Params, "requestId")) != string(second.ID) {
		t.Fatalf("the second listen's end: %s", cancel.Raw)
	}
	w.d.Detach(b, nil)
	if cancel := c.next(t); cancel.Method != "notifications/cancelled" || string(jsonrpc.Member(cancel.Params, "requestId")) != string(third.ID) {
		t.Fatalf("the last subscriber's session ended: %s", cancel.Raw)
	}
	none("after the last subscriber")
}
