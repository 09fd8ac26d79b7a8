package session

import (
	"context"
	"io"
	"os"
	"path/filepath"
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
