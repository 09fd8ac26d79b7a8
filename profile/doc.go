// Package profile owns what serving several destinations as one MCP
// server ('profiles:' in destinations.yaml, served at /p/{profile}/mcp)
// needs beyond one destination: the names the members' tools and prompts
// are exposed under ('{prefix}__{name}', always within the tool-name
// grammar clients accept), the map back from an exposed name to its
// member, the collisions between members, and the tool counts past which
// known clients cut a server's list.
//
// Where it sits (see DESIGN.md, "one URL for many destinations"): between
// session, whose endpoint serves an upstream, and dispatch, whose
// dispatchers are the members' shared children. Names are this file's
// first part; the upstream that routes calls by name is the next.
package profile
