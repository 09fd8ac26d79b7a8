package config

import (
	"errors"
	"os"
	"strings"
)

// Windows's ways of naming programs (command_windows.go), here for every
// platform so that their tests run everywhere: a command with a slash, a
// backslash or a drive's colon is a path; a program is a file with one of
// the extensions of PATHEXT, and a name without one is found with each of
// them in turn (npx is npx.cmd).
var windowsCommands = commandRules{separators: `/\:`, exts: pathExt, runnable: hasPathExt}

// hasPathExt: Windows runs a file by its extension.
func hasPathExt(p string, _ os.FileInfo) error {
	if (commandRules{exts: pathExt}).hasExt(p) {
		return nil
	}
	return errNotProgram
}

// errNotProgram is a file Windows would not run: its extension is not one
// of PATHEXT's.
var errNotProgram = errors.New("is not a program (its extension is not one of PATHEXT's: .exe, .cmd, .bat, …)")

// pathExt is the extensions of PATHEXT (lower case), or Windows's default.
func pathExt() []string {
	var exts []string
	for _, e := range strings.Split(strings.ToLower(os.Getenv("PATHEXT")), ";") {
		if strings.HasPrefix(e, ".") {
			exts = append(exts, e)
		}
	}
	if len(exts) == 0 {
		exts = []string{".com", ".exe", ".bat", ".cmd"}
	}
	return exts
}
