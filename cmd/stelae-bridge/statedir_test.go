//go:build unix

package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/stelae-bridge/stelae-bridge/authserver"
)

// TestStateDirTightened: a state directory that exists open to others
// (0755) is tightened to 0700 when it holds only the bridge's state, and
// left (with a warning) when it holds anything else (issue 21: neither
// tightened nor warned about).
func TestStateDirTightened(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files []string
		want  os.FileMode
	}{
		{"empty", nil, 0o700},
		{"the bridge's own", []string{"oauth.db"}, 0o700},
		{"someone else's too", []string{"oauth.db", "notes.txt"}, 0o755},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "state")
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, 0o755); err != nil { // whatever the umask
				t.Fatal(err)
			}
			for _, f := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, f), nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if err := prepareStateDir(dir, hclog.NewNullLogger()); err != nil {
				t.Fatal(err)
			}
			st, err := os.Stat(dir)
			if err != nil {
				t.Fatal(err)
			}
			if got := st.Mode().Perm(); got != tc.want {
				t.Errorf("mode %#o; want %#o", got, tc.want)
			}
		})
	}
}

// TestAdminSocketNeverOpen: under an umask that grants everyone
// everything, the admin socket is at its path only once it is 0600 — it is
// bound out of sight (before: bound at its path with mode 0777 until the
// chmod that followed).
func TestAdminSocketNeverOpen(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil { // a state directory left open
		t.Fatal(err)
	}
	path := filepath.Join(dir, adminSocket)
	var seen []string
	socketBound = func(bound string) {
		if st, err := os.Stat(bound); err == nil && st.Mode().Perm()&0o077 != 0 {
			// What others could reach at this moment: the socket's own
			// mode, and whether its directory lets them in.
			dirSt, _ := os.Stat(filepath.Dir(bound))
			if dirSt.Mode().Perm()&0o077 != 0 {
				seen = append(seen, bound+" "+st.Mode().Perm().String())
			}
		}
	}
	defer func() { socketBound = nil }()
	as, err := authserver.Open(filepath.Join(dir, "oauth.db"), authserver.Options{Passphrase: "a long enough passphrase"})
	if err != nil {
		t.Fatal(err)
	}
	defer as.Close()
	stop, err := serveAdmin(as, path, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if len(seen) > 0 {
		t.Errorf("the socket was reachable by others once bound: %v", seen)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Mode().Perm(); got != 0o600 {
		t.Errorf("admin socket mode %#o; want 0600", got)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("the state directory holds %d entries; want oauth.db and the socket", len(entries))
	}
}
