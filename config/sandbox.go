package config

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Sandbox is what a destination's child may take ('sandbox:' on a
// destination, or at the top level for every destination without one):
// the kernel holds it there, where the platform can (package supervisor
// applies it, and says which restrictions it could not).
type Sandbox struct {
	// Memory is the most memory the child's processes may use together,
	// in bytes (0: no cap). Over it the kernel stops the child, which is
	// restarted like a crash.
	Memory int64
	// Processes is the most processes (and threads) the child and what it
	// starts may be at once (0: no cap); past it their forks fail
	// (EAGAIN).
	Processes int
	// Preset names the runtime whose own files the child may use without
	// listing them ('preset:', SandboxPresets): "npx", "uvx" or "binary";
	// empty for none. A preset restricts files as 'files:' does.
	Preset string
	// Files are the paths the child may read and write ('files:'); nil
	// when files are not restricted. The command, its installation and the
	// system's runtime files stay readable and executable without being
	// listed (package supervisor).
	Files *SandboxFiles
	// Network is what the child may connect to ('network:'): "" (not
	// restricted: 'all'), NetworkNone, NetworkLoopback or NetworkList
	// (only the addresses in Allow).
	Network string
	// Allow are the host:port addresses of 'network: [...]', as written.
	Allow []string
	// BestEffort: a restriction this platform cannot apply is logged
	// (and shown by -check) instead of refusing to start the child.
	BestEffort bool
}

// SandboxFiles are a sandbox's 'files: {read, write}': absolute paths,
// "~" or "~/..." (the home directory of the user the bridge runs as), or
// RootsPath (each of the destination's roots). A path grants everything
// beneath it.
type SandboxFiles struct {
	Read  []string
	Write []string
}

// RootsPath in 'files:' stands for each of the destination's 'roots:'.
const RootsPath = "${roots}"

// The values of 'network:' besides a list and 'all'.
const (
	NetworkNone     = "none"
	NetworkLoopback = "loopback"
	NetworkList     = "list"
)

// SandboxPresets are the presets 'preset:' takes.
var SandboxPresets = []string{"npx", "uvx", "binary"}

// Empty reports whether s restricts nothing.
func (s *Sandbox) Empty() bool {
	return s == nil || (s.Memory == 0 && s.Processes == 0 && s.Files == nil && s.Network == "")
}

// String describes s for -check, logs and the console: "files (preset
// npx) read [/srv] write [${roots}], network none, memory 512MiB,
// processes 64" ("none" when it restricts nothing).
func (s *Sandbox) String() string {
	if s.Empty() {
		return "none"
	}
	var parts []string
	if s.Files != nil {
		f := "files"
		if s.Preset != "" {
			f += " (preset " + s.Preset + ")"
		}
		if len(s.Files.Read) > 0 {
			f += " read [" + strings.Join(s.Files.Read, " ") + "]"
		}
		if len(s.Files.Write) > 0 {
			f += " write [" + strings.Join(s.Files.Write, " ") + "]"
		}
		parts = append(parts, f)
	}
	switch s.Network {
	case NetworkList:
		parts = append(parts, "network ["+strings.Join(s.Allow, " ")+"]")
	case NetworkNone, NetworkLoopback:
		parts = append(parts, "network "+s.Network)
	}
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

// sandboxKeys are the keys of a 'sandbox:' block.
var sandboxKeys = []string{"preset", "files", "network", "memory", "processes", "best_effort"}

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
		case "preset":
			if v.Kind != yaml.ScalarNode || !slices.Contains(SandboxPresets, v.Value) {
				problem(v.Line, "'sandbox.preset' must be one of %s (the runtime whose own files the child may use: Node's npx, Python's uvx, or a static binary), not %s", strings.Join(SandboxPresets, ", "), nodeText(v))
				continue
			}
			s.Preset = v.Value
		case "files":
			s.Files = parseSandboxFiles(v, problem)
		case "network":
			parseSandboxNetwork(s, v, problem)
		default:
			problem(k.Line, "'sandbox' has no key %q%s: it takes %s", k.Value, didYouMean(k.Value, sandboxKeys), strings.Join(sandboxKeys, ", "))
		}
	}
	if s.Preset != "" && s.Files == nil {
		s.Files = &SandboxFiles{}
	}
	return s
}

// parseSandboxFiles reads 'files: {read: [...], write: [...]}'.
func parseSandboxFiles(n *yaml.Node, problem func(line int, format string, args ...any)) *SandboxFiles {
	const shape = "'sandbox.files' must be a mapping with 'read:' and 'write:' lists of paths (absolute, ~/..., or ${roots} for the destination's roots)"
	if n.Kind != yaml.MappingNode {
		problem(n.Line, "%s, not %s", shape, nodeText(n))
		return &SandboxFiles{}
	}
	f := &SandboxFiles{Read: []string{}, Write: []string{}}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		var into *[]string
		switch k.Value {
		case "read":
			into = &f.Read
		case "write":
			into = &f.Write
		default:
			problem(k.Line, "'sandbox.files' has no key %q: it takes read and write", k.Value)
			continue
		}
		if v.Kind != yaml.SequenceNode {
			problem(v.Line, "'sandbox.files.%s' must be a list of paths, not %s", k.Value, nodeText(v))
			continue
		}
		for _, e := range v.Content {
			if e.Kind != yaml.ScalarNode || !sandboxPathOK(e.Value) {
				problem(e.Line, "'sandbox.files.%s' has %s: each entry is an absolute path, ~ or ~/... (the bridge's user's home), or ${roots} (the destination's roots)", k.Value, nodeText(e))
				continue
			}
			*into = append(*into, e.Value)
		}
	}
	return f
}

// sandboxPathOK reports whether p is a path 'files:' takes.
func sandboxPathOK(p string) bool {
	switch {
	case p == RootsPath, p == "~":
		return true
	case strings.HasPrefix(p, "~/"):
		return !strings.Contains(p, "${")
	default:
		return strings.HasPrefix(p, "/") && !strings.Contains(p, "${") || len(p) > 2 && p[1] == ':' && (p[2] == '\\' || p[2] == '/')
	}
}

// parseSandboxNetwork reads 'network:': none, loopback, all, or a list of
// host:port.
func parseSandboxNetwork(s *Sandbox, n *yaml.Node, problem func(line int, format string, args ...any)) {
	const shape = "'sandbox.network' must be none (no network), loopback (this machine's loopback only), all (not restricted) or a list of host:port the child may reach"
	switch n.Kind {
	case yaml.ScalarNode:
		switch n.Value {
		case NetworkNone, NetworkLoopback:
			s.Network = n.Value
		case "all":
			s.Network = ""
		default:
			problem(n.Line, "%s, not %s", shape, nodeText(n))
		}
	case yaml.SequenceNode:
		s.Network, s.Allow = NetworkList, []string{}
		for _, e := range n.Content {
			if e.Kind != yaml.ScalarNode {
				problem(e.Line, "%s; %s is not host:port", shape, nodeText(e))
				continue
			}
			if err := CheckHostPort(e.Value); err != nil {
				problem(e.Line, "'sandbox.network' has %q: %v", e.Value, err)
				continue
			}
			s.Allow = append(s.Allow, e.Value)
		}
	default:
		problem(n.Line, "%s, not %s", shape, nodeText(n))
	}
}

// CheckHostPort checks an address of 'network: [...]': host:port, with the
// host an IP address (IPv6 in brackets), localhost or a DNS name, and a
// port from 1 to 65535.
func CheckHostPort(a string) error {
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		return fmt.Errorf("not host:port (write [::1]:8080 for an IPv6 address): %w", err)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("the port %q is not a number from 1 to 65535", port)
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return nil
	}
	if host == "" || len(host) > 253 {
		return errors.New("no host")
	}
	for _, label := range strings.Split(host, ".") {
		if label == "" || len(label) > 63 || strings.Trim(label, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-") != "" {
			return fmt.Errorf("the host %q is neither an IP address nor a DNS name", host)
		}
	}
	return nil
}
