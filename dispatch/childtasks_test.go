package dispatch

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stelae-bridge/stelae-bridge/jsonrpc"
)

// TestChildTasksStayWithTheirUser: a task the child runs for one user's
// call (MCP 2025-11-25, a tools/call with "task") is that user's: another
// user's tasks/get, tasks/result and tasks/cancel naming it are answered as
// for an unknown task without reaching the child, their tasks/list does not
// show it, and its status notifications go only to the session that made
// it. (On a shared child any client read another's task result by id.)
func TestChildTasksStayWithTheirUser(t *testing.T) {
	w := newWired(t, Options{})
	a, b := &testSession{id: "a"}, &testSession{id: "b"}
	c := w.attach(t, a, `{}`)
	w.d.Attach(b, json.RawMessage(`{"capabilities":{}}`))
	begin := func(s *testSession, body string) *Call {
		return w.d.Begin(context.Background(), s, mustParse(t, body), 10*time.Second, false)
	}
	answer := func(call *Call) string {
		t.Helper()
		ev := nextEvent(t, call)
		call.Release()
		if ev.Err != nil {
			t.Fatalf("call: %v", ev.Err)
		}
		return string(ev.Answer)
	}
	// a's call becomes the child's task T1.
	call := begin(a, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","arguments":{},"task":{"ttl":60000}}}`)
	up := c.next(t).ID
	c.emit(`{"jsonrpc":"2.0","id":` + string(up) + `,"result":{"task":{"taskId":"T1","status":"working","ttl":60000}}}`)
	if got := answer(call); !strings.Contains(got, `"T1"`) {
		t.Fatalf("a's task: %s", got)
	}
	// b cannot reach it; nothing is sent to the child.
	for _, m := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
		got := answer(begin(b, `{"jsonrpc":"2.0","id":2,"method":"`+m+`","params":{"taskId":"T1"}}`))
		if !strings.Contains(got, "unknown task") || !strings.Contains(got, `-32602`) {
			t.Errorf("b's %s of a's task: %s; want unknown task", m, got)
		}
	}
	// A case variant or a second taskId is refused, not read otherwise.
	got := answer(begin(a, `{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"taskId":"T1","TaskId":"T2"}}`))
	if !strings.Contains(got, `-32602`) {
		t.Errorf("tasks/get with two taskIds: %s", got)
	}
	select {
	case line := <-c.got:
		t.Fatalf("the child was sent %s", line)
	default:
	}
	// a can.
	call = begin(a, `{"jsonrpc":"2.0","id":4,"method":"tasks/get","params":{"taskId":"T1"}}`)
	up = c.next(t).ID
	c.emit(`{"jsonrpc":"2.0","id":` + string(up) + `,"result":{"taskId":"T1","status":"working"}}`)
	if got := answer(call); !strings.Contains(got, `"working"`) {
		t.Errorf("a's tasks/get: %s", got)
	}
	// tasks/list: each sees only its own.
	list := func(s *testSession) string {
		call := begin(s, `{"jsonrpc":"2.0","id":5,"method":"tasks/list","params":{}}`)
		up := c.next(t).ID
		c.emit(`{"jsonrpc":"2.0","id":` + string(up) + `,"result":{"tasks":[{"taskId":"T1","status":"working"},{"taskId":"T9","status":"completed"}],"nextCursor":"c"}}`)
		return answer(call)
	}
	if got := list(b); strings.Contains(got, "T1") || strings.Contains(got, "T9") || !strings.Contains(got, `"tasks":[]`) || !strings.Contains(got, `"nextCursor":"c"`) {
		t.Errorf("b's tasks/list: %s; want no task, the cursor kept", got)
	}
	if got := list(a); !strings.Contains(got, "T1") || strings.Contains(got, "T9") {
		t.Errorf("a's tasks/list: %s; want T1 only", got)
	}
	// Status notifications go to a only.
	c.emit(`{"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"taskId":"T1","status":"completed","statusMessage":"a's report is ready"}}`)
	c.emit(`{"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"taskId":"T9","status":"completed"}}`)
	waitFor2(t, "a's status notification", func() bool { return len(a.got()) == 1 })
	c.emit(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`) // a marker every session gets
	waitFor2(t, "the marker at b", func() bool { return len(b.got()) == 1 })
	if got := b.got(); strings.Contains(string(got[0]), "tasks/status") {
		t.Errorf("b got a's task status: %s", got[0])
	}
	if m := jsonrpc.String(jsonrpc.Member(a.got()[0], "method")); m != "notifications/tasks/status" {
		t.Errorf("a got %s", a.got()[0])
	}
	// The child's exit ends its tasks: forgotten.
	c.crash()
	waitFor2(t, "the tasks forgotten", func() bool { _, ok := w.d.tasks.owner("T1", time.Now()); return !ok })
}
