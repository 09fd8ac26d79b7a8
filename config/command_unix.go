//go:build unix

package config

import (
	"fmt"
	"os"
)

// platformCommands: a command with a slash is a path; a program is a file
// with an execute bit.
var platformCommands = commandRules{separators: "/", runnable: execBit}

func execBit(_ string, st os.FileInfo) error {
	if st.Mode()&0o111 == 0 {
		return fmt.Errorf("is not executable (chmod +x it)")
	}
	return nil
}
