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
	"regexp"
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
	// Line is where the destination is declared in the file.
	Line int
}

// fileDestination is the YAML shape of one destination.
type fileDestination struct {
	Command string            `yaml:"command"`
	Args    []string          `yaml:"args"`
	Env     map[string]string `yaml:"env"`
	Cwd     string            `yaml:"cwd"`
}

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
	var dests *yaml.Node
	for i := 0; i+1 < len(doc.Content); i += 2 {
		k, v := doc.Content[i], doc.Content[i+1]
		switch k.Value {
		case "destinations":
			dests = v
		default:
			problem(k.Line, "unknown key %q at the top level (known: destinations)", k.Value)
		}
	}
	if dests == nil || dests.Kind != yaml.MappingNode || len(dests.Content) == 0 {
		line := doc.Line
		if dests != nil {
			line = dests.Line
		}
		problem(line, "'destinations' must be a mapping of at least one name to {command, args, env, cwd}")
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
	if len(cerr.Problems) > 0 {
		return nil, cerr
	}
	return cfg, nil
}

// decodeStrict decodes node into out, rejecting unknown keys. It returns every
// problem found, each with its line number.
func decodeStrict(node *yaml.Node, out *fileDestination) []string {
	if node.Kind != yaml.MappingNode {
		return []string{fmt.Sprintf("line %d: must be a mapping with at least 'command:'", node.Line)}
	}
	var problems []string
	known := map[string]bool{"command": true, "args": true, "env": true, "cwd": true}
	for i := 0; i+1 < len(node.Content); i += 2 {
		k := node.Content[i]
		if !known[k.Value] {
			problems = append(problems, fmt.Sprintf("line %d: unknown key %q (known: command, args, env, cwd)", k.Line, k.Value))
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
