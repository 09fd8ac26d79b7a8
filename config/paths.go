package config

import "strings"

// The names the bridge knows destinations and profiles by, and the paths
// clients reach them at: written here once. A destination's key is its
// name; a profile's is "p/" and its name (keys of the bridge's tables,
// labels of metrics and logs, the fleet's ownership); a destination is
// served at /{name}/mcp, a profile at /p/{name}/mcp.

// ProfileSegment is a profile path's first segment (/p/{name}/mcp), and
// profilePrefix starts a profile's key.
const (
	ProfileSegment = "p"
	profilePrefix  = ProfileSegment + "/"
)

// ProfileKey is profile name's key.
func ProfileKey(name string) string { return profilePrefix + name }

// ProfileName is the profile's name of key, ok false when key is a
// destination's.
func ProfileName(key string) (name string, ok bool) { return strings.CutPrefix(key, profilePrefix) }

// IsProfileKey reports whether key is a profile's.
func IsProfileKey(key string) bool { return strings.HasPrefix(key, profilePrefix) }

// KeyPath is the path of the MCP endpoint of key, a destination's or a
// profile's: /{name}/mcp or /p/{name}/mcp.
func KeyPath(key string) string { return "/" + key + "/mcp" }

// ProfilePath is profile name's MCP endpoint path, /p/{name}/mcp.
func ProfilePath(name string) string { return KeyPath(ProfileKey(name)) }

// SplitKeyPath cuts path (without a trailing slash) into the key it
// starts with and what follows: /{name}/{route} is a destination's,
// /p/{name}/{route} a profile's (route may hold more segments; "" when
// nothing follows the key). KeyPath's inverse for route "mcp".
func SplitKeyPath(path string) (key, route string) {
	seg, rest, ok := strings.Cut(strings.TrimPrefix(path, "/"), "/")
	if !ok {
		return seg, ""
	}
	if seg == ProfileSegment {
		if name, tail, nested := strings.Cut(rest, "/"); nested {
			return ProfileKey(name), tail
		}
	}
	return seg, rest
}

// EndpointRoute reports whether route (what follows a key, SplitKeyPath)
// is one a destination or profile answers: mcp, and the legacy HTTP+SSE
// transport's sse and message (410 Gone). A path with one is the
// endpoint's whatever else would claim its prefix (a destination may be
// named "console").
func EndpointRoute(route string) bool {
	return route == "mcp" || route == "sse" || route == "message"
}
