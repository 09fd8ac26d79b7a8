// Package supervisor owns the destinations.yaml model and the child processes
// it describes: spawning, pipes, stderr logging, the restart policy and the
// stop escalation.
package supervisor

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// Config is the parsed destinations.yaml.
type Config struct {
	// Destinations by name; the name is also the URL path segment.
	Destinations map[string]*Destination
	// Names lists the destination names in file order.
	Names []string
	// Default names the destination served when a request names none;
	// empty when the file sets no 'default:'.
	Default string
}

// Destination is one configured stdio MCP server.
type Destination struct {
	Name    string
	Command string
	Args    []string
	// Env holds extra environment variables for the child, already expanded.
	Env map[string]string
	// Cwd is the child's working directory; empty means the bridge's.
	Cwd string
	// Prestart starts the child when the bridge starts instead of on the
	// first initialize.
	Prestart bool
	// Tools hides some of the child's tools from clients; the zero value
	// hides none.
	Tools ToolFilter
	// Line is where the destination is declared in the file.
	Line int
}

// ToolFilter selects the tools of a destination that clients may see and
// call. At most one of Allow and Deny is set; both hold path.Match globs
// that were validated when the file was parsed ('*' does not match '/').
type ToolFilter struct {
	// Allow, when set, lists the only tools shown.
	Allow []string
	// Deny, when set, lists the tools hidden.
	Deny []string
}

// Empty reports whether the filter hides nothing (no 'tools:' key, or an
// empty deny list); callers can then skip filtering altogether.
func (f ToolFilter) Empty() bool { return f.Allow == nil && len(f.Deny) == 0 }

// Allows reports whether the tool called name passes the filter: every tool
// when the filter is empty, only the matching ones with an allow list, all but
// the matching ones with a deny list.
func (f ToolFilter) Allows(name string) bool {
	if f.Allow != nil {
		return matchAny(f.Allow, name)
	}
	return !matchAny(f.Deny, name)
}

func matchAny(globs []string, name string) bool {
	for _, g := range globs {
		if ok, _ := path.Match(g, name); ok {
			return true
		}
	}
	return false
}

// fileDestination is the YAML shape of one destination.
type fileDestination struct {
	Command  string            `yaml:"command"`
	Args     []string          `yaml:"args"`
	Env      map[string]string `yaml:"env"`
	Cwd      string            `yaml:"cwd"`
	Prestart bool              `yaml:"prestart"`
	// Tools is checked by parseTools.
	Tools yaml.Node `yaml:"tools"`
}

// destinationKeys are the keys a destination may have, in the order the
// messages list them.
var destinationKeys = []string{"command", "args", "env", "cwd", "prestart", "tools"}

// ConfigError lists every problem found in a configuration file.
type ConfigError struct {
	File     string
	Problems []string
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d problem(s) in the configuration:", e.File, len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p)
	}
	return b.String()
}

// LoadConfig reads and validates a destinations file. Variables written as
// ${VAR} are expanded from lookup (os.LookupEnv when nil).
func LoadConfig(path string, lookup func(string) (string, bool)) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read the destinations file: %w (pass -config FILE to name another)", err)
	}
	return ParseConfig(path, data, lookup)
}

// validName is the set of destination names that are safe URL path segments
// and cannot be confused with the bridge's own routes.
var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// reservedNames cannot be destinations because the bridge serves them itself.
var reservedNames = map[string]bool{"mcp": true, "sse": true, "message": true, "healthz": true, "metrics": true, "version": true, "tools": true, "stream": true, ".well-known": true}

// ParseConfig parses and validates the contents of a destinations file; name
// is used in messages only.
func ParseConfig(name string, data []byte, lookup func(string) (string, bool)) (*Config, error) {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	cerr := &ConfigError{File: name}
	problem := func(line int, format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		if line > 0 {
			msg = fmt.Sprintf("line %d: %s", line, msg)
		}
		cerr.Problems = append(cerr.Problems, msg)
	}

	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			problem(0, "the file is empty; declare at least one destination under 'destinations:'")
			return nil, cerr
		}
		problem(0, "%s", strings.TrimPrefix(err.Error(), "yaml: "))
		return nil, cerr
	}
	doc := &root
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		doc = doc.Content[0]
	}
	if doc.Kind != yaml.MappingNode {
		problem(doc.Line, "the top level must be a mapping with a 'destinations:' key")
		return nil, cerr
	}

	cfg := &Config{Destinations: map[string]*Destination{}}
	var dests, def *yaml.Node
	for i := 0; i+1 < len(doc.Content); i += 2 {
		k, v := doc.Content[i], doc.Content[i+1]
		switch k.Value {
		case "destinations":
			dests = v
		case "default":
			def = v
		default:
			problem(k.Line, "unknown key %q at the top level (known: destinations, default)", k.Value)
		}
	}
	if dests == nil || dests.Kind != yaml.MappingNode || len(dests.Content) == 0 {
		line := doc.Line
		if dests != nil {
			line = dests.Line
		}
		problem(line, "'destinations' must be a mapping of at least one name to {%s}", strings.Join(destinationKeys, ", "))
		return nil, cerr
	}

	for i := 0; i+1 < len(dests.Content); i += 2 {
		k, v := dests.Content[i], dests.Content[i+1]
		name := k.Value
		switch {
		case !validName.MatchString(name):
			problem(k.Line, "destination name %q is not a safe URL path segment (use letters, digits, '.', '_' or '-', starting with a letter or digit, at most 64 characters)", name)
		case reservedNames[strings.ToLower(name)]:
			problem(k.Line, "destination name %q is reserved by the bridge; choose another", name)
		case cfg.Destinations[name] != nil:
			problem(k.Line, "destination %q is declared twice (first at line %d)", name, cfg.Destinations[name].Line)
			continue
		}
		var fd fileDestination
		if err := decodeStrict(v, &fd); err != nil {
			for _, p := range err {
				problem(0, "destination %q: %s", name, p)
			}
			continue
		}
		d := &Destination{Name: name, Line: k.Line, Env: map[string]string{}}
		expand := func(field, s string) string {
			out, missing := expandVars(s, lookup)
			for _, m := range missing {
				problem(v.Line, "destination %q: %s uses ${%s}, which is not set in the environment; export it or remove the reference", name, field, m)
			}
			return out
		}
		d.Command = expand("command", strings.TrimSpace(fd.Command))
		if d.Command == "" {
			problem(v.Line, "destination %q has no command; set 'command:' to the program that speaks MCP on stdio", name)
		}
		for j, a := range fd.Args {
			d.Args = append(d.Args, expand(fmt.Sprintf("args[%d]", j), a))
		}
		envKeys := make([]string, 0, len(fd.Env))
		for key := range fd.Env {
			envKeys = append(envKeys, key)
		}
		sort.Strings(envKeys)
		for _, key := range envKeys {
			if key == "" || strings.ContainsAny(key, "=\x00") {
				problem(v.Line, "destination %q: environment variable name %q is invalid", name, key)
				continue
			}
			d.Env[key] = expand("env."+key, fd.Env[key])
		}
		d.Prestart = fd.Prestart
		if fd.Tools.Kind != 0 {
			f, probs := parseTools(&fd.Tools)
			for _, p := range probs {
				problem(0, "destination %q: %s", name, p)
			}
			d.Tools = f
		}
		d.Cwd = expand("cwd", fd.Cwd)
		if d.Cwd != "" {
			if st, err := os.Stat(d.Cwd); err != nil || !st.IsDir() {
				problem(v.Line, "destination %q: cwd %q is not a directory", name, d.Cwd)
			}
		}
		if cfg.Destinations[name] == nil {
			cfg.Destinations[name] = d
			cfg.Names = append(cfg.Names, name)
		}
	}
	if def != nil {
		declared := map[string]bool{}
		for i := 0; i+1 < len(dests.Content); i += 2 {
			declared[dests.Content[i].Value] = true
		}
		switch {
		case def.Kind != yaml.ScalarNode || def.Tag == "!!null" || def.Value == "":
			problem(def.Line, "'default' must name one of the destinations (%s)", strings.Join(cfg.Names, ", "))
		case !declared[def.Value]:
			problem(def.Line, "'default' is %q, which names no destination (declared: %s)", def.Value, strings.Join(cfg.Names, ", "))
		default:
			cfg.Default = def.Value
		}
	}
	if len(cerr.Problems) > 0 {
		return nil, cerr
	}
	return cfg, nil
}

// parseTools reads a destination's 'tools:' mapping: exactly one of 'allow:'
// and 'deny:', each a list of path.Match globs. Every problem carries its
// line number.
func parseTools(node *yaml.Node) (ToolFilter, []string) {
	var f ToolFilter
	if node.Kind != yaml.MappingNode || len(node.Content) == 0 {
		return f, []string{fmt.Sprintf("line %d: 'tools' must be a mapping with either 'allow:' or 'deny:', a list of tool name globs", node.Line)}
	}
	var problems []string
	var allow, deny *yaml.Node
	for i := 0; i+1 < len(node.Content); i += 2 {
		k, v := node.Content[i], node.Content[i+1]
		switch k.Value {
		case "allow", "deny":
			if (k.Value == "allow" && allow != nil) || (k.Value == "deny" && deny != nil) {
				problems = append(problems, fmt.Sprintf("line %d: 'tools.%s' is given twice", k.Line, k.Value))
				continue
			}
			if k.Value == "allow" {
				allow = v
			} else {
				deny = v
			}
		default:
			problems = append(problems, fmt.Sprintf("line %d: unknown key %q under 'tools' (known: allow, deny)", k.Line, k.Value))
		}
	}
	if allow != nil && deny != nil {
		problems = append(problems, fmt.Sprintf("line %d: 'tools' has both 'allow:' and 'deny:'; use one (allow lists the only tools shown, deny the tools hidden)", node.Line))
	}
	if len(problems) > 0 {
		return f, problems
	}
	key, list := "allow", allow
	if deny != nil {
		key, list = "deny", deny
	}
	if list.Kind != yaml.SequenceNode {
		return f, []string{fmt.Sprintf("line %d: 'tools.%s' must be a list of tool name globs", list.Line, key)}
	}
	globs := make([]string, 0, len(list.Content))
	for _, g := range list.Content {
		if g.Kind != yaml.ScalarNode || g.Tag == "!!null" {
			problems = append(problems, fmt.Sprintf("line %d: 'tools.%s' entries must be tool name globs (strings)", g.Line, key))
			continue
		}
		if g.Value == "" {
			problems = append(problems, fmt.Sprintf("line %d: 'tools.%s' has an empty glob", g.Line, key))
			continue
		}
		if _, err := path.Match(g.Value, ""); err != nil {
			problems = append(problems, fmt.Sprintf("line %d: 'tools.%s' glob %q is invalid (path.Match syntax: * ? [a-z] \\x)", g.Line, key, g.Value))
			continue
		}
		globs = append(globs, g.Value)
	}
	if key == "allow" && len(list.Content) == 0 {
		problems = append(problems, fmt.Sprintf("line %d: 'tools.allow' is empty, which would hide every tool; write 'deny: [\"*\"]' to do that on purpose, or remove 'tools:'", list.Line))
	}
	if len(problems) > 0 {
		return ToolFilter{}, problems
	}
	if key == "allow" {
		f.Allow = globs
	} else {
		f.Deny = globs
	}
	return f, nil
}

// decodeStrict decodes node into out, rejecting unknown keys. It returns every
// problem found, each with its line number.
func decodeStrict(node *yaml.Node, out *fileDestination) []string {
	if node.Kind != yaml.MappingNode {
		return []string{fmt.Sprintf("line %d: must be a mapping with at least 'command:'", node.Line)}
	}
	var problems []string
	for i := 0; i+1 < len(node.Content); i += 2 {
		k := node.Content[i]
		if !slices.Contains(destinationKeys, k.Value) {
			problems = append(problems, fmt.Sprintf("line %d: unknown key %q (known: %s)", k.Line, k.Value, strings.Join(destinationKeys, ", ")))
		}
	}
	if len(problems) > 0 {
		return problems
	}
	if err := node.Decode(out); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			return te.Errors
		}
		return []string{fmt.Sprintf("line %d: %v", node.Line, err)}
	}
	return nil
}

var varRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// expandVars replaces ${VAR} references with values from lookup and reports
// the names that are not set. A bare $VAR is left alone so shell snippets in
// args keep working.
func expandVars(s string, lookup func(string) (string, bool)) (string, []string) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var missing []string
	out := varRef.ReplaceAllStringFunc(s, func(ref string) string {
		name := ref[2 : len(ref)-1]
		v, ok := lookup(name)
		if !ok {
			missing = append(missing, name)
		}
		return v
	})
	return out, missing
}
