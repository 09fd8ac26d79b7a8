package session

import (
	"errors"
	"testing"
	"time"
)

// TestRemoveOneLeavesTheOthers: every path that ends or removes one session
// — the operator's EndSession (by id prefix), remove, expiry, eviction at
// the cap — leaves every other session where it was: still registered,
// still found by its id. (EndSession once searched with the shutdown's
// takeAll and dropped every session of the destination.)
func TestRemoveOneLeavesTheOthers(t *testing.T) {
	ep := askingEndpoint(t)
	alice, bob := Principal{1}, Principal{2}
	ep.reg.max = 5
	var all []*Session
	for _, owner := range []Principal{alice, alice, bob, bob, alice} {
		s, evicted, err := ep.reg.create(ep, owner)
		if err != nil || evicted != nil {
			t.Fatalf("create: %v, evicted %v", err, evicted)
		}
		all = append(all, s)
	}
	gone := map[*Session]bool{}
	left := func(what string) {
		t.Helper()
		if n := ep.reg.count(); n != len(all)-len(gone) {
			t.Errorf("%s: %d sessions registered; want %d", what, n, len(all)-len(gone))
		}
		for i, s := range all {
			if got := ep.reg.get(s.id); (got == s) == gone[s] {
				t.Errorf("%s: session %d registered %v; want %v", what, i, got == s, !gone[s])
			}
		}
	}

	// The operator ends one session by its shown prefix.
	if err := ep.EndSession(all[0].id[:8]); err != nil {
		t.Fatalf("EndSession: %v", err)
	}
	gone[all[0]] = true
	left("EndSession")
	if err := ep.EndSession(all[0].id[:8]); !errors.Is(err, ErrNoSuchSession) {
		t.Errorf("EndSession of an ended session: %v; want ErrNoSuchSession", err)
	}
	left("EndSession again")
	if err := ep.EndSession("short"); !errors.Is(err, ErrNoSuchSession) {
		t.Errorf("EndSession with a short prefix: %v", err)
	}
	left("EndSession with a short prefix")
	// find by prefix leaves everything in place.
	if s, err := ep.reg.find(all[2].id[:8]); err != nil || s != all[2] {
		t.Errorf("find: %v %v", s, err)
	}
	left("find")

	// remove.
	ep.reg.remove(all[1])
	gone[all[1]] = true
	left("remove")

	// Expiry: only the idle one goes.
	all[2].touchAt(time.Now().Add(-time.Hour))
	expired := ep.reg.expired(30 * time.Minute)
	if len(expired) != 1 || expired[0] != all[2] {
		t.Errorf("expired %v; want only the idle session", expired)
	}
	gone[all[2]] = true
	left("expiry")

	// Eviction at the cap: one of the creating owner's own, nobody else's.
	ep.reg.max = ep.reg.count()
	all[4].touchAt(time.Now().Add(-time.Minute))
	s, evicted, err := ep.reg.create(ep, alice)
	if err != nil || evicted != all[4] {
		t.Fatalf("create at the cap: evicted %v, %v; want alice's idle session", evicted, err)
	}
	gone[all[4]] = true
	all = append(all, s)
	left("eviction")
}
