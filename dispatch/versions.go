package dispatch

import (
	"slices"

	"github.com/stelae-bridge/stelae-bridge/httpx"
)

// LatestVersion is the newest protocol version the bridge speaks; its own
// handshake with a child asks for it first.
const LatestVersion = Version20251125

// The protocol versions the bridge speaks, by name where the code decides
// by them.
const (
	// Version20250326 is the version assumed when nothing names one: "if
	// the server does not receive an MCP-Protocol-Version header, and has
	// no other way to identify the version … the server SHOULD assume
	// protocol version 2025-03-26" (2025-11-25, basic/transports).
	Version20250326 = "2025-03-26"
	// Version20251125 is the first version whose streams start with a
	// priming event (an event id and retry, no data).
	Version20251125 = "2025-11-25"
)

// ModernVersion is the stateless protocol era's version: requests carry it
// in params._meta, with no session and no initialize.
const ModernVersion = httpx.ModernVersion

// supportedVersions are the MCP protocol versions the bridge speaks, oldest
// first.
var supportedVersions = []string{"2024-11-05", Version20250326, "2025-06-18", Version20251125}

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
