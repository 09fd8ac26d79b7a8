package main

import (
	"net"
	"os"
)

// Keeping the state private on Windows is a matter of access control lists
// (the contract is in statedir.go): a directory made in the user's
// %LocalAppData% inherits its list, which lets in only the user, the
// system and administrators; file modes say nothing of it.

// listenPrivate binds the admin socket (an AF_UNIX socket, Windows 10 1803
// and later) at path, whose access the state directory's list decides.
func listenPrivate(path string) (net.Listener, error) {
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false) // stop removes path
	return ln, nil
}

// openToOthers cannot be told from a mode on Windows: the directory's
// access list decides (see above).
func openToOthers(os.FileInfo) bool { return false }
