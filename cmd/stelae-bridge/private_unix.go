//go:build unix

package main

import (
	"net"
	"os"
	"path/filepath"
)

// Keeping the state private on Unix is a matter of modes (the contract is
// in statedir.go): listenPrivate binds the admin socket where only the
// bridge's user can reach it, and a state directory open to others shows
// in its mode.

// socketBound, when set (tests), is called with the socket's path once it
// is bound, before it is moved into place.
var socketBound func(bound string)

// listenPrivate opens a unix socket at path that no one but the bridge's
// user can connect to from its first moment: it is bound in a fresh 0700
// directory beside path, made 0600 and only then moved to path. (Bound at
// path and chmod'ed after, it had the process umask's mode meanwhile.)
func listenPrivate(path string) (net.Listener, error) {
	tmp, err := os.MkdirTemp(filepath.Dir(path), ".admin-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	bound := filepath.Join(tmp, "s")
	ln, err := net.Listen("unix", bound)
	if err != nil {
		return nil, err
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false) // stop removes path
	if socketBound != nil {
		socketBound(bound)
	}
	if err := os.Chmod(bound, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	if err := os.Rename(bound, path); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// openToOthers reports whether a directory of mode st is open to users
// other than its owner.
func openToOthers(st os.FileInfo) bool { return st.Mode().Perm()&0o077 != 0 }
