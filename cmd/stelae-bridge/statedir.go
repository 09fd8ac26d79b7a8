package main

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/hashicorp/go-hclog"

	"github.com/stelae-bridge/stelae-bridge/session"
)

// bridgeEntries are the names the bridge keeps in its state directory.
var bridgeEntries = map[string]bool{"children": true, "oauth.db": true, "sessions.db": true, principalKeyFile: true, adminSocket: true}

// principalKeyFile is the install's principal key (session.PrincipalKey),
// in the state directory.
const principalKeyFile = "principal.key"

// The platform files (private_unix.go, private_windows.go) hold, each
// under one contract:
//
//	listenPrivate(path) (net.Listener, error)  the admin socket at path, that no one but the bridge's user can reach
//	openToOthers(st) bool                      whether the state directory st is open to other users

// prepareStateDir makes the state directory (0700) when it is missing. One
// that exists open to others (0755, as a package or a hand-made directory
// often is) is tightened to 0700 when it holds nothing but the bridge's
// state; otherwise the operator is told. What is in it is private either
// way (the database 0600, the children's records in a 0700 directory, the
// admin socket 0600), but others could see what is there and when it
// changes.
func prepareStateDir(dir string, log hclog.Logger) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("cannot create the state directory %s: %w (pass -state-dir DIR or set STELAE_STATE_DIR to a writable directory)", dir, err)
	}
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("cannot read the state directory %s: %w", dir, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("the state directory %s is not a directory (pass -state-dir DIR)", dir)
	}
	mode := st.Mode().Perm()
	if !openToOthers(st) {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err == nil {
		for _, e := range entries {
			if !bridgeEntries[e.Name()] {
				err = fmt.Errorf("it holds %q, which is not the bridge's", e.Name())
				break
			}
		}
	}
	if err == nil {
		err = os.Chmod(dir, 0o700)
	}
	if err != nil {
		log.Warn("the state directory is open to other users; left as it is", "dir", dir, "mode", fmt.Sprintf("%#o", mode), "reason", err,
			"fix", "chmod 700 the directory, or pass -state-dir a directory of the bridge's own")
		return nil
	}
	log.Warn("the state directory was open to other users: tightened to 0700", "dir", dir, "was", fmt.Sprintf("%#o", mode))
	return nil
}

// loadPrincipalKey reads the install's principal key from the state
// directory dir, creating it on the first start: 32 bytes from crypto/rand,
// mode 0600 (a key found open to others is tightened, and the operator
// told). Principals are HMACs under it, so the same token is the same
// principal across restarts, and sessions.db holds nothing a guessed token
// can be tested against without this file. Removing it ends the sessions
// sessions.db kept (their clients initialize again). The key is never
// logged.
func loadPrincipalKey(dir string, log hclog.Logger) (*session.PrincipalKey, error) {
	path := filepath.Join(dir, principalKeyFile)
	for range 2 { // read; else create, and read what is there
		key, err := os.ReadFile(path)
		if err == nil {
			k, err := session.NewPrincipalKey(key)
			if err != nil {
				return nil, fmt.Errorf("the principal key %s is %d bytes, not %d: it is damaged; remove it and the bridge makes a new one (the sessions kept in sessions.db then end: their clients initialize again)",
					path, len(key), session.PrincipalKeySize)
			}
			if st, err := os.Stat(path); err == nil && st.Mode().Perm()&0o077 != 0 {
				if err := os.Chmod(path, 0o600); err != nil {
					log.Warn("the principal key is open to other users; left as it is", "file", path, "error", err, "fix", "chmod 600 the file")
				} else {
					log.Warn("the principal key was open to other users: tightened to 0600", "file", path, "was", fmt.Sprintf("%#o", st.Mode().Perm()))
				}
			}
			return k, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("cannot read the principal key %s: %w (pass -state-dir a directory of the bridge's own)", path, err)
		}
		if err := createPrincipalKey(path); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("cannot create the principal key %s: %w (pass -state-dir a writable directory)", path, err)
		}
	}
	return nil, fmt.Errorf("the principal key %s was created but cannot be read", path)
}

// createPrincipalKey writes a new key at path whole or not at all: into a
// temporary file (0600) of the same directory, then linked to path — which
// fails with fs.ErrExist, the temporary file removed, when another bridge
// starting on the same directory made its key first (both then read that
// one).
func createPrincipalKey(path string) error {
	key := make([]byte, session.PrincipalKeySize)
	if _, err := rand.Read(key); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+principalKeyFile+"-*") // mode 0600
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(key)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Link(tmp.Name(), path)
}
