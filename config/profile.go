package config

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// Profile is one entry of 'profiles:': destinations served together at one
// URL (/p/{name}/mcp), their tools and prompts named '{prefix}__{name}'
// (Destination.ToolPrefix), their resources by their own URIs.
type Profile struct {
	Name string
	// Line is where the profile is declared.
	Line int
	// Destinations are the members, in the order written (which also
	// settles a collision of exposed names: the first member keeps it).
	Destinations []string
	// Tools, Prompts and Resources hide some of what the members offer,
	// by exposed name (a tool's or prompt's prefixed name, a resource's
	// URI); the zero value hides none.
	Tools, Prompts, Resources ToolFilter
}

// profileKeys are the keys of a profile, in the order messages list them.
var profileKeys = []string{"destinations", "tools", "prompts", "resources"}

// validPrefix is what a destination's 'prefix:' may be: letters, digits,
// '_' and '-' (the alphabet of exposed tool names), at most 40, so that a
// prefixed name has room; empty exposes the names as they are.
var validPrefix = regexp.MustCompile(`^[A-Za-z0-9_-]{0,40}$`)

// ToolPrefix is what the destination's tool and prompt names are prefixed
// with in a profile ('{prefix}__{name}'): its 'prefix:' when set (empty:
// no prefix), else its name.
func (d *Destination) ToolPrefix() string {
	if d.Prefix != nil {
		return *d.Prefix
	}
	return d.Name
}

// parsePrefix reads a destination's 'prefix:'.
func parsePrefix(n *yaml.Node) (*string, string) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return nil, fmt.Sprintf("line %d: 'prefix' must be a string: what the destination's tool and prompt names start with in a profile ('{prefix}__{name}'; \"\" for none)", n.Line)
	}
	if !validPrefix.MatchString(n.Value) {
		return nil, fmt.Sprintf("line %d: 'prefix' %q may hold only letters, digits, '_' and '-', at most 40 (tool names in MCP clients are limited to those)", n.Line, n.Value)
	}
	p := n.Value
	return &p, ""
}

// parseProfiles reads 'profiles:' once the destinations are known.
func parseProfiles(node *yaml.Node, cfg *Config, problem func(int, string, ...any)) {
	if node.Kind != yaml.MappingNode || len(node.Content) == 0 {
		problem(node.Line, "'profiles' must be a mapping of profile names to {%s}", strings.Join(profileKeys, ", "))
		return
	}
	cfg.Profiles = map[string]*Profile{}
	for i := 0; i+1 < len(node.Content); i += 2 {
		k, v := node.Content[i], node.Content[i+1]
		name := k.Value
		switch {
		case !validName.MatchString(name):
			problem(k.Line, "profile name %q is not a safe URL path segment (use letters, digits, '.', '_' or '-', starting with a letter or digit, at most 64 characters)", name)
			continue
		case cfg.Profiles[name] != nil:
			problem(k.Line, "profile %q is declared twice (first at line %d)", name, cfg.Profiles[name].Line)
			continue
		}
		if p := parseProfile(name, k.Line, v, cfg, problem); p != nil {
			cfg.Profiles[name] = p
			cfg.ProfileNames = append(cfg.ProfileNames, name)
		}
	}
}

// parseProfile reads one profile; nil when it has a problem.
func parseProfile(name string, line int, v *yaml.Node, cfg *Config, problem func(int, string, ...any)) *Profile {
	bad := false
	say := func(l int, format string, args ...any) {
		bad = true
		problem(l, "profile %q: %s", name, fmt.Sprintf(format, args...))
	}
	if v.Kind != yaml.MappingNode {
		say(v.Line, "must be a mapping with 'destinations:' (a list of the destinations it combines) and optional %s", strings.Join(profileKeys[1:], ", "))
		return nil
	}
	p := &Profile{Name: name, Line: line}
	var members *yaml.Node
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := v.Content[i], v.Content[i+1]
		switch k.Value {
		case "destinations":
			members = val
		case "tools", "prompts", "resources":
			noun := map[string]string{"tools": "tool", "prompts": "prompt", "resources": "resource URI"}[k.Value]
			f, probs := parseFilter(val, k.Value, noun)
			for _, pr := range probs {
				say(0, "%s", pr)
			}
			switch k.Value {
			case "tools":
				p.Tools = f
			case "prompts":
				p.Prompts = f
			default:
				p.Resources = f
			}
		default:
			say(k.Line, "unknown key %q%s (known: %s)", k.Value, didYouMean(k.Value, profileKeys), strings.Join(profileKeys, ", "))
		}
	}
	if members == nil || members.Kind != yaml.SequenceNode || len(members.Content) == 0 {
		l := v.Line
		if members != nil {
			l = members.Line
		}
		say(l, "'destinations' must list the destinations it combines (declared: %s)", strings.Join(cfg.Names, ", "))
		return nil
	}
	for _, m := range members.Content {
		switch {
		case m.Kind != yaml.ScalarNode || m.Tag == "!!null" || m.Value == "":
			say(m.Line, "'destinations' entries must be destination names")
		case cfg.Destinations[m.Value] == nil:
			say(m.Line, "%q names no destination%s (declared: %s)", m.Value, didYouMean(m.Value, cfg.Names), strings.Join(cfg.Names, ", "))
		case slices.Contains(p.Destinations, m.Value):
			say(m.Line, "%q is listed twice", m.Value)
		default:
			p.Destinations = append(p.Destinations, m.Value)
		}
	}
	if bad {
		return nil
	}
	seen := map[string]string{}
	for _, m := range p.Destinations {
		prefix := cfg.Destinations[m].ToolPrefix()
		if other, ok := seen[prefix]; ok {
			cfg.Warnings = append(cfg.Warnings, fmt.Sprintf("line %d: warning: profile %q: %q and %q share the prefix %q, so their tools and prompts of one name collide (%q's are shown); give one of them a 'prefix:'", line, name, other, m, prefix, other))
			continue
		}
		seen[prefix] = m
	}
	return p
}
