package supervisor

import (
	"strings"
	"testing"
)

// TestBatchArgProblem: an argument cmd.exe would read as more than text is
// refused for a batch file, naming the argument and what to do; ordinary
// arguments (packages, paths with spaces, flags) pass.
func TestBatchArgProblem(t *testing.T) {
	for _, args := range [][]string{
		{"-y", "@modelcontextprotocol/server-everything"},
		{`C:\Users\Ann Lee\My Files`, "--port=3000", "a,b;c", "x=y"},
		nil,
	} {
		if err := batchArgProblem("npx.cmd", args); err != nil {
			t.Errorf("%q: %v", args, err)
		}
	}
	for _, arg := range []string{"a&calc", "x|y", "%PATH%", `say "hi"`, "^", "a>b", "(x)", "!v!", "a\nb"} {
		err := batchArgProblem("npx.cmd", []string{"-y", arg})
		if err == nil || !strings.Contains(err.Error(), "argument 2") || !strings.Contains(err.Error(), "npx.cmd") || !strings.Contains(err.Error(), "command: node") {
			t.Errorf("%q: %v; want it refused, naming argument 2 and what to do", arg, err)
		}
	}
}
