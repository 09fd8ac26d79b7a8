package main

import (
	"fmt"
	"os"

	"github.com/hashicorp/go-hclog"
)

// bridgeEntries are the names the bridge keeps in its state directory.
var bridgeEntries = map[string]bool{"children": true, "oauth.db": true, adminSocket: true}

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
