package dispatch

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stelae-bridge/stelae-bridge/jsonrpc"
)

// TestChildTaskCall: a call the child runs as a task of its own (MCP
// 2025-11-25) waits for the task's result, which is its answer under the
// client's id; abandoned, it cancels the child's task with tasks/cancel,
// not notifications/cancelled.
func TestChildTaskCall(t *testing.T) {
	w := newWired(t, Options{})
	s := &testSession{id: "a"}
	c := w.attach(t, s, `{}`)
	m := mustParse(t, `{"jsonrpc":"2.0","id":"client-1","method":"tools/call","params":{"name":"research","arguments":{},"task":{"ttl":60000}}}`)
	// The caller waits on the call (Next) meanwhile, as callers do.
	wait := func(call *Call) <-chan Event {
		ch := make(chan Event, 1)
		go func() { ch <- call.Next(time.After(10 * time.Second)) }()
		return ch
	}
	call := w.d.BeginChildTask(context.Background(), s, m, 10*time.Second)
	done := wait(call)
	got := c.next(t)
	if got.Method != "tools/call" || !strings.Contains(string(got.Params), `"task":{"ttl":60000}`) {
		t.Fatalf("the child got %s", got.Raw)
	}
	c.emit(`{"jsonrpc":"2.0","id":` + string(got.ID) + `,"result":{"task":{"taskId":"t-9","status":"working","createdAt":"2025-11-25T10:00:00Z","ttl":60000}}}`)
	res := c.next(t)
	if res.Method != "tasks/result" || string(res.Params) != `{"taskId":"t-9"}` {
		t.Fatalf("after the CreateTaskResult the child got %s; want tasks/result for t-9", res.Raw)
	}
	c.emit(`{"jsonrpc":"2.0","id":` + string(res.ID) + `,"result":{"content":[{"type":"text","text":"report"}]}}`)
	ev := <-done
	call.Release()
	if want := `{"jsonrpc":"2.0","id":"client-1","result":{"content":[{"type":"text","text":"report"}]}}`; !ev.Done || string(ev.Answer) != want {
		t.Fatalf("answer %+v; want %s", ev, want)
	}

	// A child that answers at once (no task) is answered as usual.
	call = w.d.BeginChildTask(context.Background(), s, m, 10*time.Second)
	got = c.next(t)
	c.emit(`{"jsonrpc":"2.0","id":` + string(got.ID) + `,"result":{"content":[]}}`)
	if ev := nextEvent(t, call); !ev.Done || !strings.Contains(string(ev.Answer), `"content":[]`) {
		t.Fatalf("immediate answer: %+v", ev)
	}
	call.Release()

	// Abandoned while the task runs: tasks/cancel for it.
	ctx, cancel := context.WithCancel(context.Background())
	call = w.d.BeginChildTask(ctx, s, m, 10*time.Second)
	done = wait(call)
	got = c.next(t)
	c.emit(`{"jsonrpc":"2.0","id":` + string(got.ID) + `,"result":{"task":{"taskId":"t-10","status":"working"}}}`)
	if res := c.next(t); res.Method != "tasks/result" {
		t.Fatalf("the child got %s; want tasks/result", res.Raw)
	}
	cancel()
	if ev := <-done; !ev.Done || ev.Err == nil {
		t.Fatalf("cancelled call: %+v", ev)
	}
	call.Release()
	if sent := c.next(t); sent.Method != "tasks/cancel" || jsonrpc.String(jsonrpc.Member(sent.Params, "taskId")) != "t-10" {
		t.Fatalf("after the cancel the child got %s; want tasks/cancel for t-10", sent.Raw)
	}
	select {
	case line := <-c.got:
		t.Errorf("the child got %s too; a task is cancelled with tasks/cancel only", line)
	case <-time.After(100 * time.Millisecond):
	}
}
