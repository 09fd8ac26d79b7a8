package supervisor

import (
	"fmt"
	"strings"
)

// Batch files on Windows (.cmd, .bat: npx.cmd, a user's wrapper) run under
// cmd.exe, which reads their command line by its own rules: a character
// such as & or | outside quotes runs another command, % expands variables,
// and an argument quoted the usual way (\" inside quotes) does not stay one
// argument. Go quotes arguments for programs that parse their command
// line the usual way (exec.Command's documentation), so an argument
// holding one of those characters cannot be passed safely to a batch file:
// the bridge refuses to start such a command rather than run something the
// destinations file did not say (spawn_windows.go). Here for every
// platform, so that its test runs everywhere.

// batchUnsafe are the characters cmd.exe may read as more than text.
const batchUnsafe = "\"%!^&|<>()\r\n"

// batchArgProblem says which argument a batch file could not be given
// safely, and what to do, or nil.
func batchArgProblem(script string, args []string) error {
	for i, a := range args {
		if j := strings.IndexAny(a, batchUnsafe); j >= 0 {
			return fmt.Errorf("argument %d (%q) holds %q, which cmd.exe, running the batch file %s, would not pass on as written: run the program the batch file starts directly (for npx: 'command: node' with the path of npx-cli.js as its first argument), or drop the character", i+1, a, a[j:j+1], script)
		}
	}
	return nil
}
