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

// TestRestoredSessionsKeepTheirAge: a session taken back after a restart
// is as old as its initialize, not as the restart (the console and
// /healthz?verbose showed it younger than its idle time); a record from
// an older file, without its creation, is shown at least as old as its
// last use; the next save keeps the creation time.
func TestRestoredSessionsKeepTheirAge(t *testing.T) {
	dir, err := os.MkdirTemp("", "stelae-store-test") // see TestStoreRestore
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	st, err := OpenStore(filepath.Join(dir, "sessions.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now()
	kept := StoredSession{ID: uuid.NewString(), Version: "2025-06-18", InitParams: []byte(`{}`), LastUsed: now.Add(-time.Minute), Created: now.Add(-3 * time.Hour)}
	legacy := StoredSession{ID: uuid.NewString(), Version: "2025-06-18", InitParams: []byte(`{}`), LastUsed: now.Add(-20 * time.Minute)}
	if err := st.Save("d", []StoredSession{kept, legacy}); err != nil {
		t.Fatal(err)
	}
	d := dispatch.New(dispatch.Options{Name: "d", Launch: func(context.Context) (supervisor.Child, error) { return newAskingChild(), nil }})
	defer d.Close(context.Background())
	ep := NewEndpoint("d", d, nil, NewLimits(64<<20, 10<<20, 100), nil, Options{MaxSessions: 8, SessionTTL: time.Hour, Store: st,
		Logger: hclog.New(&hclog.LoggerOptions{Output: io.Discard}), LogOutput: io.Discard})
	ep.Restore()
	defer ep.Shutdown(context.Background())
	infos := map[string]SessionInfo{}
	for _, info := range ep.Sessions() {
		infos[info.ID] = info
	}
	if k := infos[kept.ID[:8]]; k.AgeS < (3*time.Hour).Seconds() || k.AgeS < k.IdleS {
		t.Errorf("a session initialized 3 h ago, used 1 min ago, after a restart: age %.0f s, idle %.0f s", k.AgeS, k.IdleS)
	}
	if l := infos[legacy.ID[:8]]; l.AgeS < l.IdleS {
		t.Errorf("a session of an older file: age %.0f s < idle %.0f s", l.AgeS, l.IdleS)
	}
	if r := ep.reg.get(kept.ID).record(); !r.Created.Equal(kept.Created) {
		t.Errorf("the next save writes creation %v, want %v", r.Created, kept.Created)
	}
}
