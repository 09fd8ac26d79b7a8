package profile

import (
	"encoding/json"
	"strings"

	"github.com/stelae-bridge/stelae-bridge/jsonrpc"
)

// This file merges the members' initialize results into the profile's.

// Capabilities merges the members' server capabilities (each the
// "capabilities" object of a member's initialize result), honestly: tools,
// prompts, resources, completions and logging are declared when a member
// declares them; each list declared says listChanged (the profile tells
// its own changes: a member that comes or goes); resources.subscribe when
// a member's resources say it. What only one server can mean —
// experimental, tasks, anything else — is left out.
func Capabilities(members []json.RawMessage) json.RawMessage {
	has := map[string]bool{}
	subscribe := false
	for _, c := range members {
		jsonrpc.EachMember(c, func(key string, val []byte) bool {
			if len(val) == 0 || val[0] != '{' {
				return true
			}
			switch key {
			case "tools", "prompts", "resources", "completions", "logging":
				has[key] = true
			}
			if key == "resources" && string(jsonrpc.Member(val, "subscribe")) == "true" {
				subscribe = true
			}
			return true
		})
	}
	out := map[string]any{}
	for _, k := range []string{"tools", "prompts"} {
		if has[k] {
			out[k] = map[string]bool{"listChanged": true}
		}
	}
	if has["resources"] {
		r := map[string]bool{"listChanged": true}
		if subscribe {
			r["subscribe"] = true
		}
		out["resources"] = r
	}
	for _, k := range []string{"completions", "logging"} {
		if has[k] {
			out[k] = struct{}{}
		}
	}
	b, _ := json.Marshal(out)
	return b
}

// Instructions joins the members' instructions (those that have some),
// each under a heading that names its destination and the prefix its
// tools carry, so that a model reading them knows which tools they mean.
func Instructions(members []Member, instructions []string) string {
	var b strings.Builder
	for i, m := range members {
		text := strings.TrimSpace(instructions[i])
		if text == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString("## ")
		b.WriteString(m.Destination)
		if m.Prefix != "" {
			b.WriteString(" (tools and prompts named ")
			b.WriteString(m.Prefix)
			b.WriteString(Separator)
			b.WriteString("…)")
		}
		b.WriteString("\n\n")
		b.WriteString(text)
	}
	return b.String()
}
