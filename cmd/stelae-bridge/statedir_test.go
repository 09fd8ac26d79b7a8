//go:build unix

package main

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"sync"
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
		{"all the bridge's own", []string{"oauth.db", "sessions.db", "principal.key", "children"}, 0o700},
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

// TestPrincipalKeyFile: the install's principal key is made on the first
// start (32 bytes, 0600) and read on the next, so a token's principal is
// the same across restarts and another on another install; bridges
// starting together on one directory share one key; a damaged key is an
// error that says what to do; a key left open to others is tightened.
func TestPrincipalKeyFile(t *testing.T) {
	log := hclog.NewNullLogger()
	dir, other := t.TempDir(), t.TempDir()
	k1, err := loadPrincipalKey(dir, log)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, principalKeyFile)
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 || st.Size() != 32 {
		t.Fatalf("the key file: %v, %v", st, err)
	}
	k2, err := loadPrincipalKey(dir, log) // a restart
	if err != nil {
		t.Fatal(err)
	}
	k3, err := loadPrincipalKey(other, log) // another install
	if err != nil {
		t.Fatal(err)
	}
	if k1.Token("tok") != k2.Token("tok") || k1.ID() != k2.ID() {
		t.Error("one install's principal of a token changed across a restart")
	}
	if k1.Token("tok") == k3.Token("tok") || k1.ID() == k3.ID() {
		t.Error("two installs make the same principal of a token")
	}
	if k1.Token("tok") == sha256.Sum256([]byte("tok")) || k1.Token("tok") == k1.Token("tok2") {
		t.Error("the principal is the token's unsalted SHA-256, or names two tokens")
	}

	// Bridges starting together on a new directory: one key, no leftovers.
	fresh := t.TempDir()
	ids := make(chan string, 8)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			k, err := loadPrincipalKey(fresh, log)
			if err != nil {
				t.Error(err)
				ids <- ""
				return
			}
			ids <- k.ID()
		})
	}
	wg.Wait()
	close(ids)
	first := ""
	for id := range ids {
		if first == "" {
			first = id
		}
		if id != first {
			t.Errorf("bridges starting together made different keys: %s and %s", first, id)
		}
	}
	if entries, _ := os.ReadDir(fresh); len(entries) != 1 {
		t.Errorf("the state directory holds %d entries; want principal.key alone", len(entries))
	}

	// Open to others: tightened, same key.
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if k, err := loadPrincipalKey(dir, log); err != nil || k.ID() != k1.ID() {
		t.Fatalf("reading a key open to others: %v", err)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("a key open to others left %v", st.Mode().Perm())
	}

	// Damaged: refused, naming the file and what to do.
	if err := os.WriteFile(path, []byte("short"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadPrincipalKey(dir, log); err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "remove it") {
		t.Errorf("a damaged key: %v", err)
	}
}
