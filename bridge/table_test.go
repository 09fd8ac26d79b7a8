package bridge

import (
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stelae-bridge/stelae-bridge/config"
)

// TestReloadDiff: Reload keeps the endpoint of a destination written the
// same way (its sessions and child with it), replaces a changed one, serves
// an added one and drops a removed one; what the running bridge cannot
// take is refused, and nothing changes.
func TestReloadDiff(t *testing.T) {
	b := newTestBridge(t, Options{})
	dest := func(name, command string) *config.Destination {
		return &config.Destination{Name: name, Command: command, Line: 7}
	}
	cfg := func(def string, ds ...*config.Destination) *config.Config {
		c := &config.Config{Default: def, Destinations: map[string]*config.Destination{}}
		for _, d := range ds {
			c.Names = append(c.Names, d.Name)
			c.Destinations[d.Name] = d
		}
		return c
	}
	a := b.t().endpoints["a"]

	// Written elsewhere in the file, the same: nothing changes.
	same := dest("a", "/nonexistent/never-started")
	same.Line = 42
	r, err := b.Reload(cfg("a", same))
	if err != nil || !r.Unchanged() || b.t().endpoints["a"] != a {
		t.Fatalf("the same file: %+v %v; want nothing changed and the same endpoint", r, err)
	}

	r, err = b.Reload(cfg("b", dest("a", "/nonexistent/never-started"), dest("b", "/nonexistent/other")))
	if err != nil || !reflect.DeepEqual(r.Added, []string{"b"}) || !reflect.DeepEqual(r.Kept, []string{"a"}) || !r.DefaultChanged || b.t().endpoints["a"] != a {
		t.Fatalf("b added as the default: %+v %v", r, err)
	}
	if w := serve(b, http.MethodGet, "/"); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"default": "b"`) {
		t.Errorf("GET / after the reload: %d %s", w.Code, w.Body)
	}

	// Only b's 'tools:': kept, with the new filter.
	bb := b.t().endpoints["b"]
	filtered := dest("b", "/nonexistent/other")
	filtered.Tools = config.ToolFilter{Deny: []string{"t"}}
	r, err = b.Reload(cfg("b", dest("a", "/nonexistent/never-started"), filtered))
	if err != nil || !reflect.DeepEqual(r.ToolsChanged, []string{"b"}) || len(r.Changed) > 0 || r.DefaultChanged || r.Unchanged() || b.t().endpoints["b"] != bb {
		t.Fatalf("b's tools filtered: %+v %v; want b in ToolsChanged, its endpoint kept", r, err)
	}

	r, err = b.Reload(cfg("b", dest("b", "/nonexistent/changed")))
	if err != nil || !reflect.DeepEqual(r.Removed, []string{"a"}) || !reflect.DeepEqual(r.Changed, []string{"b"}) {
		t.Fatalf("a removed, b changed: %+v %v", r, err)
	}
	if w := serve(b, http.MethodPost, "/a/mcp"); w.Code != http.StatusNotFound {
		t.Errorf("POST /a/mcp after a was removed: %d %s", w.Code, w.Body)
	}

	// OAuth on a bridge started without authentication: refused.
	before := b.t()
	withAuth := dest("b", "/nonexistent/changed")
	withAuth.Auth = &config.Auth{Issuer: "https://issuer.example"}
	if _, err := b.Reload(cfg("b", withAuth)); !errors.Is(err, ErrReloadRefused) || b.t() != before {
		t.Errorf("turning OAuth on: %v; want ErrReloadRefused and the table unchanged", err)
	}
}

// TestSessionTTLPerDestination: 'session_ttl:' sets a destination's; an
// isolated destination's default is at most config.IsolatedSessionTTL.
func TestSessionTTLPerDestination(t *testing.T) {
	b := newTestBridge(t, Options{SessionTTL: time.Hour})
	c := &config.Config{Names: []string{"a", "own", "iso", "iso-long"}, Destinations: map[string]*config.Destination{
		"a":        {Name: "a", Command: "/nonexistent/never-started"},
		"own":      {Name: "own", Command: "/nonexistent/never-started", SessionTTL: 2 * time.Minute},
		"iso":      {Name: "iso", Command: "/nonexistent/never-started", Isolation: config.IsolationSession},
		"iso-long": {Name: "iso-long", Command: "/nonexistent/never-started", Isolation: config.IsolationSession, SessionTTL: 20 * time.Minute},
	}}
	if _, err := b.Reload(c); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]time.Duration{"a": time.Hour, "own": 2 * time.Minute, "iso": config.IsolatedSessionTTL, "iso-long": 20 * time.Minute} {
		if got := b.t().endpoints[name].SessionTTL(); got != want {
			t.Errorf("%s: session TTL %s; want %s", name, got, want)
		}
	}
}

// TestProfilesTheBridgeCannotServe: a profile whose members are protected
// differently is refused at the start, saying why.
func TestProfilesTheBridgeCannotServe(t *testing.T) {
	issuer := &config.Auth{Issuer: "https://issuer.example"}
	for _, tc := range []struct {
		name string
		b    *config.Destination
		want string
	}{
		{"protected differently", &config.Destination{Name: "b", Command: "/nonexistent/x"}, `its members are protected differently ("a" by https://issuer.example and "b" open)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &config.Config{Names: []string{"a", "b"}, Destinations: map[string]*config.Destination{"a": {Name: "a", Command: "/nonexistent/x", Auth: issuer}, "b": tc.b},
				Profiles: map[string]*config.Profile{"p": {Name: "p", Destinations: []string{"a", "b"}}}, ProfileNames: []string{"p"}}
			if _, err := New(cfg, Options{}); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New: %v; want an error saying %s", err, tc.want)
			}
		})
	}
}
