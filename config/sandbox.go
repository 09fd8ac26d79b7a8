package config

import (
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Sandbox is what a destination's child may take ('sandbox:' on a
// destination, or at the top level for every destination without one):
// the kernel holds it there, where the platform can (package supervisor
// applies it, and says which restrictions it could not).
//
// This version caps memory and processes. The other restrictions issue 37
// names (files, network) are refused when a file asks for them, never read
// and ignored: a protection the operator asked for is never silently
// absent.
type Sandbox struct {
	// Memory is the most memory the child's processes may use together,
	// in bytes (0: no cap). Over it the kernel stops the child, which is
	// restarted like a crash.
	Memory int64
	// Processes is the most processes (and threads) the child and what it
	// starts may be at once (0: no cap); past it their forks fail
	// (EAGAIN).
	Processes int
	// BestEffort: a restriction this platform cannot apply is logged
	// (and shown by -check) instead of refusing to start the child.
	BestEffort bool
}

// Empty reports whether s restricts nothing.
func (s *Sandbox) Empty() bool { return s == nil || (s.Memory == 0 && s.Processes == 0) }

// String describes s for -check, logs and the console: "memory 512MiB,
// processes 64" ("none" when it restricts nothing).
func (s *Sandbox) String() string {
	if s.Empty() {
		return "none"
	}
	var parts []string
	if s.Memory > 0 {
		parts = append(parts, "memory "+FormatSize(s.Memory))
	}
	if s.Processes > 0 {
		parts = append(parts, "processes "+strconv.Itoa(s.Processes))
	}
	if s.BestEffort {
		parts = append(parts, "best effort")
	}
	return strings.Join(parts, ", ")
}

// sandboxKeys are the keys of a 'sandbox:' block; sandboxLater are the
// ones issue 37 names that this version does not enforce yet.
var (
	sandboxKeys  = []string{"memory", "processes", "best_effort"}
	sandboxLater = []string{"files", "network"}
)

// parseSandbox reads a 'sandbox:' block. An empty mapping ({}) restricts
// nothing: a destination's overrides the top-level default.
func parseSandbox(n *yaml.Node, problem func(line int, format string, args ...any)) *Sandbox {
	if n.Kind != yaml.MappingNode {
		problem(n.Line, "'sandbox' must be a mapping with %s, not %s", strings.Join(sandboxKeys, ", "), nodeText(n))
		return nil
	}
	s := &Sandbox{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch k.Value {
		case "memory":
			size, err := ParseSize(v.Value)
			if v.Kind != yaml.ScalarNode || err != nil {
				problem(v.Line, "'sandbox.memory' must be a size such as 512MiB or 2GiB (the most memory the child and what it starts may use together), not %s", nodeText(v))
				continue
			}
			if size < 8<<20 {
				problem(v.Line, "'sandbox.memory' is %s: below 8MiB no server starts (Node.js needs about 40MiB, Python about 10MiB)", FormatSize(size))
				continue
			}
			s.Memory = size
		case "processes":
			p, err := strconv.Atoi(v.Value)
			if v.Kind != yaml.ScalarNode || err != nil || p < 1 || p > 1<<22 {
				problem(v.Line, "'sandbox.processes' must be a whole number from 1 (how many processes and threads the child and what it starts may be at once; Node.js alone runs about 11 threads), not %s", nodeText(v))
				continue
			}
			s.Processes = p
		case "best_effort":
			if v.Kind != yaml.ScalarNode || (v.Value != "true" && v.Value != "false") {
				problem(v.Line, "'sandbox.best_effort' must be true (start the child with what this platform can enforce, and log what it cannot) or false, not %s", nodeText(v))
				continue
			}
			s.BestEffort = v.Value == "true"
		case "files", "network":
			problem(k.Line, "'sandbox.%s' is not enforced by this version of stelae-bridge, and a restriction the bridge cannot hold is never ignored: remove it (this version caps %s)", k.Value, "memory and processes")
		default:
			problem(k.Line, "'sandbox' has no key %q%s: it takes %s", k.Value, didYouMean(k.Value, append(slices.Clone(sandboxKeys), sandboxLater...)), strings.Join(sandboxKeys, ", "))
		}
	}
	return s
}
