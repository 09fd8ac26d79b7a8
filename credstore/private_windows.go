package credstore

import "os"

// openToOthers cannot be told from a mode on Windows, where a file's
// access list decides (a file made in the user's %LocalAppData% inherits
// one that lets in only the user, the system and administrators).
func openToOthers(os.FileInfo) bool { return false }
