package dispatch

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"
)

// TestRelatedQueue: a caller that follows its call gets the first
// relatedQueue of its related messages in order, even when it reads them
// only after the end; the ones past the queue go to its session (the GET
// stream); and a pooled call carries none of them to its next use.
func TestRelatedQueue(t *testing.T) {
	w := newWired(t, Options{})
	a := &testSession{id: "a"}
	c := w.attach(t, a, `{}`)
	const extra = 6
	progress := func(up string, i int) string {
		return `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":` + up + `,"progress":` + strconv.Itoa(i) + `}}`
	}
	for round := range 2 {
		call := w.d.Begin(context.Background(), a, mustParse(t, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"progressToken":"p"}}}`), 10*time.Second, true)
		up := string(c.next(t).ID)
		for i := 1; i <= relatedQueue+extra; i++ {
			c.emit(progress(up, i))
		}
		c.emit(`{"jsonrpc":"2.0","id":` + up + `,"result":{}}`)
		// The ones past the queue reach the session: by then the queue is
		// full.
		waitUntil(t, "the messages past the queue at the session", func() bool {
			a.mu.Lock()
			defer a.mu.Unlock()
			return len(a.delivered) == (round+1)*extra
		})
		for i := 1; i <= relatedQueue; i++ {
			ev := nextEvent(t, call)
			want := fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":%d}}`, i)
			if string(ev.Related) != want {
				t.Fatalf("round %d: event %d is %+v; want %s", round, i, ev, want)
			}
		}
		if ev := nextEvent(t, call); !ev.Done || ev.Err != nil {
			t.Fatalf("round %d: after the queue: %+v; want the end", round, ev)
		}
		a.mu.Lock()
		for j, msg := range a.delivered[round*extra:] {
			want := fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":%d}}`, relatedQueue+1+j)
			if string(msg) != want {
				t.Errorf("round %d: the session got %s; want %s", round, msg, want)
			}
		}
		a.mu.Unlock()
		call.Release()
	}
	// A caller that gives up with messages still queued leaves none to
	// the call's next use.
	call := w.d.Begin(context.Background(), a, mustParse(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"_meta":{"progressToken":"q"}}}`), 10*time.Second, true)
	up := string(c.next(t).ID)
	c.emit(progress(up, 1))
	waitUntil(t, "the progress queued for the caller", func() bool {
		w.d.pmu.Lock()
		defer w.d.pmu.Unlock()
		return len(call.related) == 1
	})
	call.Release()
	if m := c.next(t); m.Method != "notifications/cancelled" {
		t.Fatalf("the child got %s; want the abandoned call's cancellation", m.Raw)
	}
	if len(call.related) != 0 || len(call.relatedReady) != 0 {
		t.Fatalf("a released call keeps %d related messages (token %d)", len(call.related), len(call.relatedReady))
	}
	next := w.d.Begin(context.Background(), a, mustParse(t, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{}}`), 10*time.Second, true)
	up = string(c.next(t).ID)
	c.emit(`{"jsonrpc":"2.0","id":` + up + `,"result":{"n":3}}`)
	if ev := nextEvent(t, next); !ev.Done || string(ev.Answer) != `{"jsonrpc":"2.0","id":3,"result":{"n":3}}` {
		t.Fatalf("the next call's first event is %+v; want its own end", ev)
	}
	next.Release()
}
