package session

import (
	"context"
	"crypto/sha256"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"

	"github.com/stelae-bridge/stelae-bridge/dispatch"
	"github.com/stelae-bridge/stelae-bridge/supervisor"
)

// TestStoreRestore: an endpoint takes back from its Store the sessions
// that have not expired, the most recent first up to the cap, and forgets
// the rest; a session ended for good leaves the Store, one the shutdown
// ends stays, with its last use.
func TestStoreRestore(t *testing.T) {
	// Not t.TempDir: under Wine a file bbolt has mapped cannot be removed
	// by the test's cleanup ("Invalid function"); the directory is left to
	// the system's temporary files there.
	dir, err := os.MkdirTemp("", "stelae-store-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	st, err := OpenStore(filepath.Join(dir, "sessions.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := OpenStore(st.db.Path()); err == nil {
		t.Fatal("a second OpenStore of the same file succeeded")
	}
	now := time.Now()
	rec := func(age time.Duration) StoredSession {
		return StoredSession{ID: uuid.NewString(), Owner: Principal{1}, Version: "2025-06-18", InitParams: []byte(`{"capabilities":{"sampling":{}}}`), LastUsed: now.Add(-age)}
	}
	recent, older, oldest, expired := rec(time.Minute), rec(2*time.Minute), rec(3*time.Minute), rec(2*time.Hour)
	if err := st.Save("d", []StoredSession{older, expired, recent, oldest}); err != nil {
		t.Fatal(err)
	}
	d := dispatch.New(dispatch.Options{Name: "d", Launch: func(context.Context) (supervisor.Child, error) { return newAskingChild(), nil }})
	defer d.Close(context.Background())
	ep := NewEndpoint("d", d, nil, NewLimits(64<<20, 10<<20, 100), nil, Options{MaxSessions: 2, SessionTTL: time.Hour, Store: st,
		Logger: hclog.New(&hclog.LoggerOptions{Output: io.Discard}), LogOutput: io.Discard})
	ep.Restore()
	if ep.reg.get(recent.ID) == nil || ep.reg.get(older.ID) == nil || ep.SessionCount() != 2 {
		t.Fatalf("restored %d sessions; want the two most recent", ep.SessionCount())
	}
	if s := ep.reg.get(recent.ID); s.owner != recent.Owner || s.protocolVersion() != recent.Version {
		t.Errorf("restored session: owner %v version %q", s.owner, s.protocolVersion())
	}
	left, _ := st.Load("d")
	if len(left) != 2 {
		t.Errorf("the Store keeps %d sessions; want the two taken back (the expired and the one past the cap forgotten)", len(left))
	}
	// Deleted: gone from the Store; the shutdown: kept — and ended in
	// this bridge like every other session.
	ep.endSession(ep.reg.get(older.ID), errDeleted)
	kept := ep.reg.get(recent.ID)
	ep.Shutdown(context.Background())
	if kept.ctx.Err() == nil || ep.SessionCount() != 0 {
		t.Errorf("the shutdown left the kept session live in this bridge (%d sessions)", ep.SessionCount())
	}
	left, _ = st.Load("d")
	if len(left) != 1 || left[0].ID != recent.ID {
		t.Errorf("after a DELETE and the shutdown the Store keeps %v; want the recent session only", left)
	}
}

// TestStoreDropsUnkeyedOwners: the upgrade to keyed principals (issue 34).
// A sessions file written before (owners: the unsalted SHA-256 of a token,
// no owner_key) or under a key since removed has owners no request can
// match any more: UsePrincipalKey deletes those sessions (the bridge logs
// how many; their clients get 404 and initialize again), keeps the ones
// made with the key and those without an owner, and Save records the key
// with every session.
func TestStoreDropsUnkeyedOwners(t *testing.T) {
	dir, err := os.MkdirTemp("", "stelae-store-test") // see TestStoreRestore
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	path := filepath.Join(dir, "sessions.db")
	key, oldKey := RandomPrincipalKey(), RandomPrincipalKey()
	now := time.Now()
	rec := func(owner Principal) StoredSession {
		return StoredSession{ID: uuid.NewString(), Owner: owner, Version: "2025-06-18", InitParams: []byte(`{}`), LastUsed: now.Add(-time.Minute)}
	}
	legacy, anonymous := rec(sha256.Sum256([]byte("tok"))), rec(Principal{})
	removedKey, keyed := rec(oldKey.Token("tok")), rec(key.Token("tok"))

	// The file as the bridge before keyed principals wrote it, then one
	// session under a key that is gone.
	st, err := OpenStore(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Save("d", []StoredSession{legacy, anonymous}); err != nil {
		t.Fatal(err)
	}
	st.ownerKey = oldKey.ID() // as a bridge with the removed key wrote it
	if err := st.Save("e", []StoredSession{removedKey}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	// This start: the legacy and the removed key's sessions go.
	if st, err = OpenStore(path); err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	n, err := st.UsePrincipalKey(key.ID())
	if err != nil || n != 2 {
		t.Fatalf("UsePrincipalKey deleted %d sessions (%v); want 2, the legacy owner's and the removed key's", n, err)
	}
	if err := st.Save("d", []StoredSession{keyed}); err != nil {
		t.Fatal(err)
	}
	left, _ := st.Load("d")
	gone, _ := st.Load("e")
	ids := map[string]string{}
	for _, r := range left {
		ids[r.ID] = r.OwnerKey
	}
	if _, ok := ids[legacy.ID]; ok || len(gone) != 0 || len(ids) != 2 {
		t.Errorf("the store keeps %v in d and %d in e; want the anonymous and the keyed session", ids, len(gone))
	}
	if ids[keyed.ID] != key.ID() {
		t.Errorf("a session saved now records owner key %q; want %q", ids[keyed.ID], key.ID())
	}
	d := dispatch.New(dispatch.Options{Name: "d", Launch: func(context.Context) (supervisor.Child, error) { return newAskingChild(), nil }})
	defer d.Close(context.Background())
	ep := NewEndpoint("d", d, nil, NewLimits(64<<20, 10<<20, 100), nil, Options{MaxSessions: 8, SessionTTL: time.Hour, Store: st,
		Logger: hclog.New(&hclog.LoggerOptions{Output: io.Discard}), LogOutput: io.Discard})
	ep.Restore()
	defer ep.Shutdown(context.Background())
	if ep.reg.get(keyed.ID) == nil || ep.reg.get(anonymous.ID) == nil || ep.SessionCount() != 2 {
		t.Errorf("restored %d sessions; want the keyed and the anonymous one", ep.SessionCount())
	}
}

// TestPrincipalKey: one key makes one principal of a token, every time and
// from any goroutine; another key or another token another; the kinds of
// input (a static token, an OAuth identity) never meet.
func TestPrincipalKey(t *testing.T) {
	k, other := RandomPrincipalKey(), RandomPrincipalKey()
	if _, err := NewPrincipalKey(make([]byte, 16)); err == nil {
		t.Error("a 16-byte principal key was taken")
	}
	p := k.Token("tok")
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 100 {
				if k.Token("tok") != p {
					t.Error("a token's principal changed")
					return
				}
			}
		})
	}
	wg.Wait()
	digest := sha256.Sum256([]byte("iss\x00sub\x00client"))
	for name, q := range map[string]Principal{"another key": other.Token("tok"), "another token": k.Token("tok2"), "the unsalted hash": sha256.Sum256([]byte("tok")),
		"an identity": k.Identity(digest), "zero": {}} {
		if q == p {
			t.Errorf("%s makes the same principal", name)
		}
	}
	if k.Identity(digest) == Principal(digest) || len(k.ID()) != 16 || k.ID() == other.ID() {
		t.Errorf("identity keyed %v, IDs %q %q", k.Identity(digest) != Principal(digest), k.ID(), other.ID())
	}
}
