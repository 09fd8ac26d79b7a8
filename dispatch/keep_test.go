package dispatch

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stelae-bridge/stelae-bridge/jsonrpc"
)

// TestKeepWhileTheAnswerIsOnItsWay: a caller keeps its call past its
// request (Call.Keep, then the request's bytes are reused) just after the
// child answered: the reader has taken the call and builds its answer from
// the client's id, still the request's bytes. Keep must wait for that
// answer before the bytes go, and the answer must carry the client's id.
// Keep once copied only a call still pending, so the reader read the id
// while the next POST reused the buffer (the race detector saw it in the
// torture test; an answer that starts the child's task then asked for its
// result under the overwritten id: a wrong id in the client's answer,
// without -race too).
func TestKeepWhileTheAnswerIsOnItsWay(t *testing.T) {
	for _, childTask := range []bool{false, true} {
		t.Run(map[bool]string{false: "answer", true: "child task"}[childTask], func(t *testing.T) {
			w := newWired(t, Options{})
			s := &testSession{id: "a"}
			c := w.attach(t, s, `{}`)
			// The request's bytes, as a POST's pooled body holds them.
			body := []byte(`{"jsonrpc":"2.0","id":"client-7","method":"tools/call","params":{"name":"slow","arguments":{}}}`)
			if childTask {
				body = []byte(`{"jsonrpc":"2.0","id":"client-7","method":"tools/call","params":{"name":"slow","arguments":{},"task":{"ttl":60000}}}`)
			}
			m, err := jsonrpc.Parse(body)
			if err != nil {
				t.Fatal(err)
			}
			var call *Call
			if childTask {
				call = w.d.BeginChildTask(context.Background(), s, m, 10*time.Second)
			} else {
				call = w.d.Begin(context.Background(), s, m, 10*time.Second, true)
			}
			defer call.Release()
			up := c.next(t).ID
			if childTask {
				c.emit(`{"jsonrpc":"2.0","id":` + string(up) + `,"result":{"task":{"taskId":"T1","status":"working","ttl":60000}}}`)
			} else {
				c.emit(`{"jsonrpc":"2.0","id":` + string(up) + `,"result":{"content":[{"type":"text","text":"done"}]}}`)
			}
			// The reader has built the answer and handed it over: the call
			// is no longer pending, and its caller has not taken the end.
			waitFor2(t, "the answer handed to the call", func() bool { return len(call.reply) == 1 })
			call.Keep()
			// The POST ends: its body's buffer goes to the next one.
			copy(body, bytes.Repeat([]byte{'x'}, len(body)))
			if childTask {
				got := c.next(t)
				if got.Method != "tasks/result" {
					t.Fatalf("the child was sent %s; want tasks/result", got.Raw)
				}
				c.emit(`{"jsonrpc":"2.0","id":` + string(got.ID) + `,"result":{"content":[{"type":"text","text":"done"}]}}`)
			}
			ev := nextEvent(t, call)
			if !ev.Done || ev.Err != nil {
				t.Fatalf("the call's end: %+v", ev)
			}
			if !strings.Contains(string(ev.Answer), `"id":"client-7"`) {
				t.Errorf("the answer %s; want it under the client's id \"client-7\"", ev.Answer)
			}
		})
	}
}
