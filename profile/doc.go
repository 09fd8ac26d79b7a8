// Package profile owns what serving several destinations as one MCP
// server ('profiles:' in destinations.yaml, served at /p/{profile}/mcp)
// needs beyond one destination: the names the members' tools and prompts
// are exposed under ('{prefix}__{name}', always within the tool-name
// grammar clients accept), the map back from an exposed name to its
// member, the collisions between members, and the tool counts past which
// known clients cut a server's list.
//
// Where it sits: a profile is an endpoint and a dispatcher like a
// destination's, whose child is an MCP server in the bridge's process
// (child.go: the handshake, the merged lists, subscriptions, whatever
// the names do not route yet) on the members' dispatchers, and whose fan
// (fan.go) sends the calls routed by name straight to the member's
// dispatcher, the client attached there as itself. Names (names.go),
// merging (merge.go), routing (route.go), the merged handshake
// (initialize.go) and the health report (report.go) are the parts both
// use.
package profile
