package dispatch

import (
	"encoding/json"
	"strings"
)

// MCP 2026-07-28 (SEP-2243) lets a tool mirror parameters into HTTP
// headers: a property of its inputSchema annotated "x-mcp-header": "Region"
// is sent by clients as Mcp-Param-Region, and a server that reads the body
// must check that the header matches it. The bridge is that server for its
// children: it reads the annotations from the tool catalogue.

// ParamHeader is one tool parameter mirrored into a header.
type ParamHeader struct {
	// Header is the full header name (Mcp-Param-{name}).
	Header string
	// Path is the chain of properties from the arguments' root.
	Path []string
	// Type is the parameter's type: string, integer or boolean.
	Type string
}

// ToolHeaders returns the parameters tool name mirrors into headers (nil
// for none, or when the catalogue is not known yet).
func (d *Dispatcher) ToolHeaders(name string) []ParamHeader {
	d.tools.mu.Lock()
	defer d.tools.mu.Unlock()
	return d.tools.headers[name]
}

// toolHeaders reads the x-mcp-header annotations of the catalogue's tools.
// A tool whose annotations break the specification's constraints (not
// reachable through properties alone, not a string, integer or boolean,
// an invalid or repeated name) has none: clients must drop such a tool, and
// the bridge has nothing valid to check.
func toolHeaders(tools []json.RawMessage) map[string][]ParamHeader {
	var out map[string][]ParamHeader
	for _, raw := range tools {
		if !strings.Contains(string(raw), "x-mcp-header") {
			continue
		}
		var tool struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		}
		if json.Unmarshal(raw, &tool) != nil {
			continue
		}
		var schema any
		if json.Unmarshal(tool.InputSchema, &schema) != nil {
			continue
		}
		var found []ParamHeader
		seen := map[string]bool{}
		ok := collectHeaders(schema, nil, &found, seen)
		// An annotation anywhere else than properties chains makes the tool
		// invalid: one outside them still appears in the raw schema.
		if ok && strings.Count(string(tool.InputSchema), `"x-mcp-header"`) != len(found) {
			ok = false
		}
		if ok && len(found) > 0 {
			if out == nil {
				out = map[string][]ParamHeader{}
			}
			out[tool.Name] = found
		}
	}
	return out
}

// collectHeaders walks schema's properties chains; false when an
// annotation breaks the constraints.
func collectHeaders(schema any, path []string, found *[]ParamHeader, seen map[string]bool) bool {
	obj, _ := schema.(map[string]any)
	if obj == nil {
		return true
	}
	if v, has := obj["x-mcp-header"]; has {
		name, _ := v.(string)
		typ, _ := obj["type"].(string)
		if len(path) == 0 || !ValidFieldName(name) || seen[strings.ToLower(name)] || (typ != "string" && typ != "integer" && typ != "boolean") {
			return false
		}
		seen[strings.ToLower(name)] = true
		*found = append(*found, ParamHeader{Header: "Mcp-Param-" + name, Path: append([]string(nil), path...), Type: typ})
	}
	props, _ := obj["properties"].(map[string]any)
	for k, sub := range props {
		if !collectHeaders(sub, append(path, k), found, seen) {
			return false
		}
	}
	return true
}

// ValidFieldName reports whether s is an HTTP field-name token (RFC 9110
// 5.1), as x-mcp-header values must be.
func ValidFieldName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}
