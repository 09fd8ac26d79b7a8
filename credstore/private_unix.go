//go:build unix

package credstore

import "os"

// openToOthers reports whether a file of st is open to users other than
// its owner (any group or other permission bit).
func openToOthers(st os.FileInfo) bool { return st.Mode().Perm()&0o077 != 0 }
