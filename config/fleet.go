package config

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// A fleet: one destinations file for several bridges ('instances:'), each
// serving its part. A destination's child is per-process state (its
// sessions, listen streams, MRTR continuations), so each destination has
// exactly one owner, found by its path; a destination isolated per
// session may be served by several (its children are per session anyway;
// the balancer keeps each session on one by Mcp-Session-Id), and so may one
// isolated per user (the balancer keeps each user on one by the hash of
// their Authorization header). A profile is served by the instances that
// serve all its members.

// Instance is one bridge of the fleet.
type Instance struct {
	Name string
	// URL is where the fleet's balancer or the operator reaches it
	// (optional; named in misdirected answers and -check).
	URL string
	// Serves are the destinations it runs, in file order.
	Serves []string
	Line   int
}

// instanceKeys are the keys of one instance.
var instanceKeys = []string{"serves", "url"}

// parseInstances reads 'instances:' once the destinations and profiles
// are known.
func parseInstances(node *yaml.Node, cfg *Config, problem func(int, string, ...any)) {
	if node.Kind != yaml.MappingNode || len(node.Content) == 0 {
		problem(node.Line, "'instances' must be a mapping of instance names to {serves: [destinations], url: …}")
		return
	}
	cfg.Instances = map[string]*Instance{}
	for i := 0; i+1 < len(node.Content); i += 2 {
		k, v := node.Content[i], node.Content[i+1]
		name := k.Value
		switch {
		case !validName.MatchString(name):
			problem(k.Line, "instance name %q must use letters, digits, '.', '_' or '-', starting with a letter or digit, at most 64 characters", name)
			continue
		case cfg.Instances[name] != nil:
			problem(k.Line, "instance %q is declared twice (first at line %d)", name, cfg.Instances[name].Line)
			continue
		case v.Kind != yaml.MappingNode:
			problem(v.Line, "instance %q must be a mapping with 'serves:' (the destinations it runs) and optional 'url:'", name)
			continue
		}
		in := &Instance{Name: name, Line: k.Line}
		for j := 0; j+1 < len(v.Content); j += 2 {
			ik, iv := v.Content[j], v.Content[j+1]
			switch ik.Value {
			case "url":
				u, err := url.Parse(iv.Value)
				if iv.Kind != yaml.ScalarNode || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					problem(iv.Line, "instance %q: 'url' must be an http(s) URL such as http://10.0.0.2:9090", name)
					continue
				}
				in.URL = strings.TrimSuffix(iv.Value, "/")
			case "serves":
				if iv.Kind != yaml.SequenceNode || len(iv.Content) == 0 {
					problem(iv.Line, "instance %q: 'serves' must list the destinations it runs (declared: %s)", name, strings.Join(cfg.Names, ", "))
					continue
				}
				for _, m := range iv.Content {
					switch {
					case m.Kind != yaml.ScalarNode || cfg.Destinations[m.Value] == nil:
						problem(m.Line, "instance %q: %q names no destination%s (declared: %s)", name, m.Value, didYouMean(m.Value, cfg.Names), strings.Join(cfg.Names, ", "))
					case slices.Contains(in.Serves, m.Value):
						problem(m.Line, "instance %q: %q is listed twice", name, m.Value)
					default:
						in.Serves = append(in.Serves, m.Value)
					}
				}
			default:
				problem(ik.Line, "instance %q: unknown key %q%s (known: %s)", name, ik.Value, didYouMean(ik.Value, instanceKeys), strings.Join(instanceKeys, ", "))
			}
		}
		cfg.Instances[name] = in
		cfg.InstanceNames = append(cfg.InstanceNames, name)
	}
	// Every destination has its owner; a shared one exactly one.
	for _, d := range cfg.Names {
		owners := cfg.Owners(d)
		switch {
		case len(owners) == 0:
			problem(node.Line, "no instance serves destination %q: add it to one instance's 'serves' (a request for it would find no bridge)", d)
		case len(owners) > 1 && cfg.Destinations[d].Isolation != IsolationSession && cfg.Destinations[d].Isolation != IsolationUser:
			problem(cfg.Instances[owners[1]].Line, "destination %q is served by instances %s: a shared child must have one owner (two would each start a child, and a session made on one is unknown to the other: 404s behind the balancer); serve it on one, or give it 'isolation: session' (route by Mcp-Session-Id) or 'isolation: user' (route by the user's credential)", d, strings.Join(owners, " and "))
		}
	}
	// The built-in authorization server's state is a file of one
	// bridge's: the destinations that use it must share their instance.
	var builtin []string
	holders := map[string]bool{}
	for _, d := range cfg.Names {
		if a := cfg.Destinations[d].Auth; a != nil && a.Builtin() {
			builtin = append(builtin, d)
			for _, o := range cfg.Owners(d) {
				holders[o] = true
			}
		}
	}
	if len(holders) > 1 {
		problem(node.Line, "the destinations that use the built-in authorization server (%s) are served by more than one instance: its state (clients, keys, tokens) is one bridge's file, so each instance would run its own; serve them on one instance (route /oauth/ and /.well-known/oauth-* to it), or use an external issuer for the fleet", strings.Join(builtin, ", "))
	}
	for _, p := range cfg.ProfileNames {
		if len(cfg.ProfileOwners(p)) == 0 {
			var where []string
			for _, m := range cfg.Profiles[p].Destinations {
				where = append(where, m+" on "+strings.Join(cfg.Owners(m), "/"))
			}
			problem(cfg.Profiles[p].Line, "profile %q combines destinations that no one instance serves together (%s): serve them on one instance", p, strings.Join(where, ", "))
		}
	}
}

// Owners are the instances that serve destination d, in file order (none
// without 'instances:').
func (c *Config) Owners(d string) []string {
	var out []string
	for _, n := range c.InstanceNames {
		if slices.Contains(c.Instances[n].Serves, d) {
			out = append(out, n)
		}
	}
	return out
}

// ProfileOwners are the instances that serve every member of profile p.
func (c *Config) ProfileOwners(p string) []string {
	var out []string
	for _, n := range c.InstanceNames {
		all := true
		for _, m := range c.Profiles[p].Destinations {
			all = all && slices.Contains(c.Instances[n].Serves, m)
		}
		if all {
			out = append(out, n)
		}
	}
	return out
}

// Elsewhere is where a destination or profile this instance does not
// serve is served: its owners' names (their URLs are in Instances).
type Elsewhere struct {
	Instances []string
}

// ForInstance returns the configuration instance name serves: only its
// destinations and the profiles of them, the default only when it serves
// it, and Away saying who serves the rest. A file without 'instances:'
// has no instances to choose from (an error naming none is returned for
// any name).
func (c *Config) ForInstance(name string) (*Config, error) {
	in := c.Instances[name]
	if in == nil {
		if len(c.InstanceNames) == 0 {
			return nil, fmt.Errorf("-instance %s: the destinations file declares no 'instances:'", name)
		}
		return nil, fmt.Errorf("-instance %s: the destinations file declares no instance %q%s (declared: %s)", name, name, didYouMean(name, c.InstanceNames), strings.Join(c.InstanceNames, ", "))
	}
	out := *c
	out.Instance = name
	out.Destinations, out.Names = map[string]*Destination{}, nil
	out.Profiles, out.ProfileNames = nil, nil
	out.Away = map[string]Elsewhere{}
	where := func(owners []string) Elsewhere { return Elsewhere{Instances: owners} }
	for _, d := range c.Names {
		if slices.Contains(in.Serves, d) {
			out.Destinations[d] = c.Destinations[d]
			out.Names = append(out.Names, d)
		} else {
			out.Away[d] = where(c.Owners(d))
		}
	}
	for _, p := range c.ProfileNames {
		if owners := c.ProfileOwners(p); slices.Contains(owners, name) {
			if out.Profiles == nil {
				out.Profiles = map[string]*Profile{}
			}
			out.Profiles[p] = c.Profiles[p]
			out.ProfileNames = append(out.ProfileNames, p)
		} else {
			out.Away[ProfileKey(p)] = where(owners)
		}
	}
	if c.Default != "" {
		key := c.Default
		if c.DefaultProfile {
			key = ProfileKey(key)
		}
		if _, away := out.Away[key]; away {
			out.Default, out.DefaultProfile = "", false
			out.AwayDefault = key
		}
	}
	return &out, nil
}
