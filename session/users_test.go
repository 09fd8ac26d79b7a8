package session

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/stelae-bridge/stelae-bridge/dispatch"
	"github.com/stelae-bridge/stelae-bridge/supervisor"
)

// slowStopChild is an askingChild whose Stop waits for release: a child
// slow to stop.
type slowStopChild struct {
	*askingChild
	release chan struct{}
}

func (c *slowStopChild) Stop(ctx context.Context) error {
	select {
	case <-c.release:
	case <-ctx.Done():
	}
	return c.askingChild.Stop(ctx)
}

// TestUsersCapCountsThoseStopping: a user's endpoint let go holds its
// place until its child is gone, so at a cap of one a second user is
// refused (503, Retry-After) while the first user's child still stops,
// and admitted once it is gone; the first user's place is never taken
// while they are served.
func TestUsersCapCountsThoseStopping(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	opts := Options{Logger: hclog.New(&hclog.LoggerOptions{Output: io.Discard}), LogOutput: io.Discard, StopTimeout: time.Minute}
	forUser := func(u User) *Endpoint {
		d := dispatch.New(dispatch.Options{Name: "u", Launch: func(context.Context) (supervisor.Child, error) {
			return &slowStopChild{askingChild: newAskingChild(), release: release}, nil
		}})
		return NewEndpoint("u", d, nil, NewLimits(64<<20, 10<<20, 100), nil, opts)
	}
	ep := NewUserEndpoint("u", forUser, UserCaps{Max: 1, Idle: time.Hour}, nil, opts)
	t.Cleanup(func() {
		once.Do(func() { close(release) })
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		ep.Shutdown(ctx)
	})
	post := func(u User) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/u/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		r = r.WithContext(WithIdentity(r.Context(), Principal{1}, u))
		w := httptest.NewRecorder()
		ep.ServeHTTP(w, r)
		return w
	}
	alice, bob := User{Key: "t:alice", Name: "alice"}, User{Key: "t:bob", Name: "bob"}
	if w := post(alice); w.Code != http.StatusOK {
		t.Fatalf("alice: %d %s", w.Code, w.Body)
	}
	if w := post(bob); w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
		t.Fatalf("bob at the cap: %d %v; want 503 with Retry-After", w.Code, w.Header())
	}
	if w := post(alice); w.Code != http.StatusOK {
		t.Fatalf("alice again at the cap: %d %s (her place was taken)", w.Code, w.Body)
	}
	// alice's endpoint is let go; her child is slow to stop.
	if !ep.EndUser(alice.Key, "the test") {
		t.Fatal("EndUser: alice had no endpoint")
	}
	if w := post(bob); w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), "1 of them stopping") {
		t.Fatalf("bob while alice's child stops: %d %s; want 503 counting the one stopping", w.Code, w.Body)
	}
	once.Do(func() { close(release) })
	deadline := time.Now().Add(20 * time.Second)
	for {
		w := post(bob)
		if w.Code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("bob once alice's child is gone: %d %s", w.Code, w.Body)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
