//go:build unix

package tests

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stelae-bridge/stelae-bridge/bridge"
	"github.com/stelae-bridge/stelae-bridge/config"
	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

// 'isolation: user' (issue 35): a child per authenticated user.

// userBridge serves "fake" with a child per user, to the named tokens
// alice, bob and carol, at most maxUsers of them at once.
func userBridge(t *testing.T, maxUsers int, idle time.Duration) *testBridge {
	t.Helper()
	tokens := []string{"tok-alice", "tok-bob", "tok-carol"}
	names := map[string]string{"tok-alice": "alice", "tok-bob": "bob", "tok-carol": "carol"}
	return newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{
		opts:      bridge.Options{AuthTokens: tokens, TokenNames: names},
		isolation: config.IsolationUser, maxUsers: maxUsers, userIdle: idle,
	})
}

// modernWhoami is a 2026-07-28 whoami with token: its child's pid.
func modernWhoami(t *testing.T, url, token string) (int, response) {
	t.Helper()
	r := modernCall(t, url, `"w"`, "tools/call", `{"name":"whoami","arguments":{},`+modernMeta+`}`, "Authorization", "Bearer "+token)
	var w childWho
	if r.status != http.StatusOK || jsonUnmarshal(jsonMember(decode(t, r.body).Result, "structuredContent"), &w) != nil && jsonUnmarshal(decode(t, r.body).Result, &w) != nil {
		return 0, r
	}
	return w.PID, r
}

// TestUserIsolation: each user's 2025 sessions and 2026-07-28 requests
// share one child of their own (one pid); another user's child is
// another; at the cap a new user is refused with 503 and Retry-After while
// the users who have children go on untouched (never evicted for the
// newcomer); once a user's child has been idle its place is free again.
func TestUserIsolation(t *testing.T) {
	b := userBridge(t, 2, 300*time.Millisecond)
	url := b.url("fake")
	session := func(token string) *client {
		c := authedClient(t, url, token)
		c.initialize()
		return c
	}
	a1, a2 := session("tok-alice"), session("tok-alice")
	pidA := whoamiCall(t, a1).PID
	if p := whoamiCall(t, a2).PID; p != pidA {
		t.Fatalf("alice's two sessions: pids %d and %d; want one child", pidA, p)
	}
	if p, r := modernWhoami(t, url, "tok-alice"); p != pidA {
		t.Fatalf("alice's 2026-07-28 request: pid %d (%d %s); want her child's %d", p, r.status, r.body, pidA)
	}
	bob := session("tok-bob")
	pidB := whoamiCall(t, bob).PID
	if pidB == pidA {
		t.Fatalf("bob shares alice's child (pid %d)", pidA)
	}
	// A third user at the cap of two: refused, the others untouched.
	r := authedClient(t, url, "tok-carol").post(initBody)
	if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" || !strings.Contains(string(r.body), "max_users") {
		t.Fatalf("a third user at the cap: %d %v %s; want 503 with Retry-After naming max_users", r.status, r.header, r.body)
	}
	for _, c := range []*client{a1, a2, bob} {
		want := pidA
		if c == bob {
			want = pidB
		}
		if p := whoamiCall(t, c).PID; p != want {
			t.Errorf("a user's session is served by pid %d after the refusal; want %d", p, want)
		}
	}
	// alice leaves: once her child is idle, her place is free.
	deleteSession(t, a1)
	deleteSession(t, a2)
	waitFor(t, 20*time.Second, "alice's child to stop", func() bool { return !alive(pidA) })
	var carol *client
	waitFor(t, 20*time.Second, "carol admitted in alice's place", func() bool {
		c := authedClient(t, url, "tok-carol")
		r := c.post(initBody)
		if r.status != http.StatusOK {
			return false
		}
		c.sid = r.header.Get("Mcp-Session-Id")
		carol = c
		return true
	})
	if p := whoamiCall(t, carol).PID; p == pidA || p == pidB {
		t.Errorf("carol is served by pid %d, another user's", p)
	}
	if p := whoamiCall(t, bob).PID; p != pidB {
		t.Errorf("bob's child changed: %d, was %d", p, pidB)
	}
	// A session id is its user's: another user using it gets 404.
	stolen := &client{t: t, url: url, sid: bob.sid, http: authedClient(t, url, "tok-carol").http}
	if r := stolen.callTool(`"s"`, "whoami", nil); r.status != http.StatusNotFound {
		t.Errorf("carol using bob's session id: %d %s; want 404", r.status, fmt.Sprint(string(r.body)))
	}
}
