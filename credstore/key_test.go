package credstore

import (
	"bytes"
	"crypto/rand"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// testKey is a Key of fresh random bytes, and the bytes.
func testKey(t testing.TB) (Key, []byte) {
	t.Helper()
	raw := make([]byte, KeySize)
	rand.Read(raw)
	k, err := newKey(bytes.Clone(raw), "test")
	if err != nil {
		t.Fatal(err)
	}
	return k, raw
}

func keyID(t *testing.T, raw []byte) string {
	t.Helper()
	k, err := newKey(bytes.Clone(raw), "test")
	if err != nil {
		t.Fatal(err)
	}
	return k.ID()
}

func TestLoadKeyCreates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "credentials.key") // its directory absent too
	k, err := LoadKey(path, "")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) != KeySize || allZero(raw) {
		t.Fatalf("created key: %d bytes, all zero %v", len(raw), allZero(raw))
	}
	if runtime.GOOS != "windows" {
		st, _ := os.Stat(path)
		if m := st.Mode().Perm(); m != 0o600 {
			t.Errorf("created key mode %#o, want 0600", m)
		}
	}
	if !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(k.ID()) || k.ID() != keyID(t, raw) {
		t.Errorf("ID %q, want 16 hex digits derived from the file", k.ID())
	}
	if k.Source() != "key file "+path {
		t.Errorf("Source %q", k.Source())
	}
	again, err := LoadKey(path, "")
	if err != nil || again.ID() != k.ID() {
		t.Fatalf("second load: %v, ID %q want %q", err, again.ID(), k.ID())
	}
}

// Bridges starting together on one directory end with one key.
func TestLoadKeyConcurrentFirstUse(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "credentials.key")
	ids := make([]string, 8)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Go(func() {
			k, err := LoadKey(path, "")
			if err != nil {
				t.Error(err)
			}
			ids[i] = k.ID()
		})
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("keys differ: %q", ids)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("left in the directory: %v (want the key alone)", ents)
	}
}

func TestLoadKeyRefuses(t *testing.T) {
	good := make([]byte, KeySize)
	rand.Read(good)
	cases := []struct {
		name    string
		content []byte
		mode    os.FileMode
		unix    bool // modes tell only on Unix
		want    []string
	}{
		{"group-readable", good, 0o640, true, []string{"open to other users", "chmod 600"}},
		{"other-readable", good, 0o604, true, []string{"open to other users", "chmod 600"}},
		{"group-writable", good, 0o620, true, []string{"open to other users", "chmod 600"}},
		{"empty", nil, 0o600, false, []string{"is 0 bytes, not 32", "restore it from a backup", "head -c 32 /dev/urandom"}},
		{"short", good[:31], 0o600, false, []string{"is 31 bytes, not 32", "restore it"}},
		{"long", append(bytes.Clone(good), 'x'), 0o600, false, []string{"longer than 32 bytes", "restore it"}},
		{"hex text", []byte(strings.Repeat("ab", 32) + "\n"), 0o600, false, []string{"longer than 32 bytes"}},
		{"all zero", make([]byte, KeySize), 0o600, false, []string{"all zero", "random"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.unix && runtime.GOOS == "windows" {
				t.Skip("file modes say nothing of access on Windows")
			}
			path := filepath.Join(t.TempDir(), "credentials.key")
			if err := os.WriteFile(path, c.content, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(path, c.mode); err != nil {
				t.Fatal(err)
			}
			k, err := LoadKey(path, "")
			if err == nil {
				t.Fatalf("loaded %v (ID %s); want it refused", k, k.ID())
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name the file", err)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(after, c.content) {
				t.Error("a refused key file was changed: the records sealed under it would be lost")
			}
		})
	}
	t.Run("directory", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "credentials.key")
		os.Mkdir(path, 0o700)
		if _, err := LoadKey(path, ""); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("error %v, want 'not a regular file'", err)
		}
	})
	t.Run("no path", func(t *testing.T) {
		if _, err := LoadKey("", ""); err == nil {
			t.Error("loaded a key from no path")
		}
	})
}

// A systemd credential (LoadCredential=) of the key file's name is the
// key; the state directory gets no key file then.
func TestLoadKeySystemdCredential(t *testing.T) {
	state := t.TempDir()
	path := filepath.Join(state, "credentials.key")
	creds := t.TempDir()
	raw := make([]byte, KeySize)
	rand.Read(raw)
	if err := os.WriteFile(filepath.Join(creds, "credentials.key"), raw, 0o400); err != nil {
		t.Fatal(err)
	}
	t.Setenv(CredentialsDirEnv, creds)

	k, err := LoadKey(path, os.Getenv(CredentialsDirEnv))
	if err != nil {
		t.Fatal(err)
	}
	if k.ID() != keyID(t, raw) {
		t.Error("the key is not the credential's")
	}
	if !strings.HasPrefix(k.Source(), "systemd credential "+creds) {
		t.Errorf("Source %q", k.Source())
	}
	if _, err := os.Stat(path); err == nil {
		t.Error("a key file was created beside a systemd credential")
	}

	t.Run("another name falls back to the key file", func(t *testing.T) {
		other := filepath.Join(t.TempDir(), "other.key")
		k2, err := LoadKey(other, os.Getenv(CredentialsDirEnv))
		if err != nil {
			t.Fatal(err)
		}
		if k2.ID() == k.ID() || k2.Source() != "key file "+other {
			t.Errorf("ID %s (credential's %s), Source %q", k2.ID(), k.ID(), k2.Source())
		}
	})
	t.Run("a damaged credential is refused, not replaced", func(t *testing.T) {
		bad := t.TempDir()
		os.WriteFile(filepath.Join(bad, "credentials.key"), raw[:16], 0o400)
		p := filepath.Join(t.TempDir(), "credentials.key")
		if _, err := LoadKey(p, bad); err == nil || !strings.Contains(err.Error(), "systemd credential") {
			t.Errorf("error %v, want the credential refused", err)
		}
		if _, err := os.Stat(p); err == nil {
			t.Error("a key file was created in place of a damaged credential")
		}
	})
}
