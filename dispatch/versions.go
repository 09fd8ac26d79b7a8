package dispatch

import "slices"

// LatestVersion is the newest protocol version the bridge speaks; its own
// handshake with a child asks for it first.
const LatestVersion = "2025-11-25"

// supportedVersions are the MCP protocol versions the bridge speaks, oldest
// first.
var supportedVersions = []string{"2024-11-05", "2025-03-26", "2025-06-18", LatestVersion}

// Versions returns the MCP protocol versions the bridge speaks, oldest first.
func Versions() []string { return slices.Clone(supportedVersions) }

// Supported reports whether v is a protocol version the bridge speaks.
func Supported(v string) bool { return slices.Contains(supportedVersions, v) }

// negotiate picks the version to answer a client that asked for asked when
// the child runs child.
func negotiate(asked, child string) string {
	if Supported(asked) && (child == "" || asked <= child) {
		return asked
	}
	return child
}
