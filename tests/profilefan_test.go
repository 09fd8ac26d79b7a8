//go:build unix

package tests

// A profile's fan (profile/fan.go), which sends a call straight to its member's dispatcher:
// members' requests reach the one user whose call caused them under ids that do not collide,
// answers go back to the member that asked, broadcasts arrive once, cancellations reach the member,
// and the views it attaches leave with their sessions.

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

// fanBridge serves alpha and beta (fake servers) and the profile "both"
// of them, at /p/both/mcp.
func fanBridge(t *testing.T) (*testBridge, string) {
	t.Helper()
	b := newBridge(t, map[string]string{"alpha": fakemcp.ModeServer, "beta": fakemcp.ModeServer}, bridgeConfig{profiles: map[string][]string{"both": {"alpha", "beta"}}})
	return b, b.srv.URL + "/p/both/mcp"
}

// samplingRequest reads the sampling request on a call's stream.
func samplingRequest(t *testing.T, st *stream, what string) rpc {
	t.Helper()
	req := st.next(t, "sampling/createMessage", 10*time.Second)
	if req.ID == nil {
		t.Fatalf("%s: a sampling request without an id", what)
	}
	return req
}

// answerSampling answers the request id with text, as c.
func answerSampling(t *testing.T, c *client, id []byte, text string) {
	t.Helper()
	if r := c.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"role":"assistant","content":{"type":"text","text":%q},"model":"m"}}`, id, text)); r.status != http.StatusAccepted {
		t.Fatalf("answering %s: %d %s", id, r.status, r.body)
	}
}

// TestProfileFanAnswersReachTheirMember: one session calls a tool of each
// member at once, and both members' children ask it for sampling with
// the same id ("fake-1": each child counts from 1). Each request reaches
// the session under an id of its own, and each answer the member that
// asked: crossed, each tool would end with the other's text; passed on
// under the members' own ids, the second answer would find no request.
func TestProfileFanAnswersReachTheirMember(t *testing.T) {
	_, url := fanBridge(t)
	c := newClient(t, url)
	c.initialize()
	c.post(`{"jsonrpc":"2.0","id":"l","method":"tools/list"}`) // the routes
	sample := func(id, tool string) *stream {
		return openSSE(t, http.MethodPost, url, c.sid, toolCallBody(id, tool, map[string]string{"prompt": tool}))
	}
	sa, sb := sample(`"a"`, "alpha__sample"), sample(`"b"`, "beta__sample")
	ra, rb := samplingRequest(t, sa, "alpha"), samplingRequest(t, sb, "beta")
	if string(ra.ID) == string(rb.ID) {
		t.Fatalf("the session got both members' requests under one id, %s", ra.ID)
	}
	// Beta's first, then alpha's.
	answerSampling(t, c, rb.ID, "for beta")
	answerSampling(t, c, ra.ID, "for alpha")
	for _, tc := range []struct {
		st        *stream
		want, not string
	}{{sa, "for alpha", "for beta"}, {sb, "for beta", "for alpha"}} {
		end := tc.st.next(t, "", 10*time.Second)
		if !strings.Contains(string(end.Result), tc.want) || strings.Contains(string(end.Result), tc.not) {
			t.Errorf("the call that wants %q ended with %s %v", tc.want, end.Result, end.Error)
		}
	}
	// The same on the session's GET stream: a request that comes while
	// the call's stream is gone (a call whose POST did not follow it)
	// goes there, under the fan's id too.
	if !strings.HasPrefix(string(ra.ID), `"f`) || !strings.HasPrefix(string(rb.ID), `"f`) {
		t.Errorf("the members' requests came under ids %s and %s; want the fan's own", ra.ID, rb.ID)
	}
}

// TestProfileFanAttributesAmongUsers: a member's request belongs to the
// user whose call is in flight at that member. When another user's call
// came after it (the newest call at the member), the member's child asks
// while two users' calls are in flight: it is refused, and the other
// user never sees it. (A fan whose sessions were one user to the member
// — the profile's — would give it to the newest call's session, the
// other user's: this test fails so.) Alone, the user gets it.
func TestProfileFanAttributesAmongUsers(t *testing.T) {
	b, url := fanBridge(t)
	c1, c2 := newClient(t, url), newClient(t, url)
	c1.initialize()
	c2.initialize()
	c1.post(`{"jsonrpc":"2.0","id":"l","method":"tools/list"}`)
	done := b.whileAsking(func() response {
		r, _ := c2.do(http.MethodPost, toolCallBody("2", "alpha__slow", map[string]any{"ms": 1500, "text": "c2"}))
		return r
	})
	// c1's call asks for sampling 500 ms after it reaches alpha's child;
	// c2's starts meanwhile, and is the newest call when the request comes.
	r := c1.callTool("1", "alpha__ask", map[string]any{"method": "sampling/createMessage", "ms": 500,
		"params": `{"messages":[{"role":"user","content":{"type":"text","text":"c1"}}],"maxTokens":5}`})
	if r.status != http.StatusOK || !strings.Contains(string(r.body), "more than one user") {
		t.Errorf("c1's call, asking while c2's was in flight: %d %s; want the child's request refused (several users)", r.status, r.body)
	}
	if r := <-done; r.status != http.StatusOK || !strings.Contains(string(r.body), "c2") || strings.Contains(string(r.body), "sampling/createMessage") {
		t.Errorf("c2's call: %d %s", r.status, r.body)
	}
	if n := b.dispatchers["alpha"].Status().Refused["several_users"]; n != 1 {
		t.Errorf("alpha refused %d requests for several users; want 1", n)
	}
	// Alone, c1 is asked on its call's stream.
	st := openSSE(t, http.MethodPost, url, c1.sid, toolCallBody("3", "alpha__sample", map[string]string{"prompt": "alone"}))
	answerSampling(t, c1, samplingRequest(t, st, "c1 alone").ID, "for c1")
	if end := st.next(t, "", 10*time.Second); !strings.Contains(string(end.Result), "for c1") {
		t.Errorf("c1's call alone: %s %v", end.Result, end.Error)
	}
}

// TestProfileFanLeavesNoSessionBehind: the sessions the fan attaches to
// the members for the profile's clients — 2025 sessions and 2026-07-28
// requests, each calling both members, many at once — leave when those
// end: each member is left with the profile's child as its one session,
// where a view left behind would hold it (and its child) for good.
func TestProfileFanLeavesNoSessionBehind(t *testing.T) {
	b, url := fanBridge(t)
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%2 == 1 {
				for _, tool := range []string{"alpha__echo", "beta__echo", "alpha__echo"} {
					if r := modernCall(t, url, `"m"`, "tools/call", `{"name":"`+tool+`","arguments":{"text":"m"},`+modernMeta+`}`); r.status != http.StatusOK {
						t.Errorf("a 2026-07-28 call of %s: %d %s", tool, r.status, r.body)
					}
				}
				return
			}
			c := newClient(t, url)
			c.initialize()
			c.post(`{"jsonrpc":"2.0","id":"l","method":"tools/list"}`)
			for _, tool := range []string{"alpha__echo", "beta__echo", "beta__echo"} {
				resultOK(t, tool, c.callTool(`"e"`, tool, map[string]string{"text": "s"}))
			}
			c.must(http.MethodDelete, "")
		}()
	}
	wg.Wait()
	// The profile's child stays (the 2026-07-28 requests keep it for the
	// next ones), attached to each member as one session of its own: the
	// members keep that one, and none of the fan's.
	for _, dest := range []string{"alpha", "beta"} {
		d := b.dispatchers[dest]
		waitFor(t, 15*time.Second, dest+" with the profile's child as its one session", func() bool { return d.Status().Sessions == 1 })
	}
}

// TestProfileFanBroadcastsOnce: what a member sends every session reaches
// a client of the profile once — through the profile's child, which is a
// session of the member too — though the client is attached to the member
// through the fan as well (its view skips the broadcasts; else it would
// get each twice).
func TestProfileFanBroadcastsOnce(t *testing.T) {
	_, url := fanBridge(t)
	c := newClient(t, url)
	c.initialize()
	c.post(`{"jsonrpc":"2.0","id":"l","method":"tools/list"}`)
	get := c.openStream()
	defer get.close()
	resultOK(t, "alpha__echo", c.callTool(`"e"`, "alpha__echo", map[string]string{"text": "a view now"}))
	resultOK(t, "alpha__notify", c.callTool(`"n"`, "alpha__notify", map[string]string{"method": "notifications/stelae/custom"}))
	get.next(t, "notifications/stelae/custom", 10*time.Second)
	get.none(t, "notifications/stelae/custom", time.Second)
}

// TestProfileFanCancellation: a client's notifications/cancelled for a
// call the fan sent to a member ends the call at once and reaches the
// member's child (the profile's dispatcher has no such call: it passes
// the cancellation on to the member's).
func TestProfileFanCancellation(t *testing.T) {
	b, url := fanBridge(t)
	c := newClient(t, url)
	c.initialize()
	c.post(`{"jsonrpc":"2.0","id":"l","method":"tools/list"}`)
	direct := newClient(t, b.url("alpha"))
	direct.initialize()
	before := len(direct.stats().Cancelled)
	done := make(chan response, 1)
	go func() {
		r, _ := c.do(http.MethodPost, toolCallBody(`"never"`, "alpha__never", nil))
		done <- r
	}()
	waitCalled(t, direct, "never")
	if r := c.post(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"never","reason":"changed my mind"}}`); r.status != http.StatusAccepted {
		t.Fatalf("cancel: %d %s", r.status, r.body)
	}
	select {
	case r := <-done:
		if !strings.Contains(string(r.body), "cancelled") {
			t.Errorf("the cancelled call ended with %d %s", r.status, r.body)
		}
	case <-time.After(5 * time.Second): // the request timeout is 10 s
		t.Fatal("the cancelled call did not end")
	}
	waitFor(t, 10*time.Second, "alpha's child to see the cancellation", func() bool { return len(direct.stats().Cancelled) > before })
}
