package profile

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// This file is the profile's names: how a member's tool or prompt is named
// in the profile, and the map back.

// MaxName is the longest exposed name: clients take tool names of
// ^[a-zA-Z0-9_-]{1,64}$ (OpenAI's and Anthropic's APIs among them).
const MaxName = 64

// Separator joins a member's prefix and its own name.
const Separator = "__"

// hashLen is the length of the short hash that ends a name Expose had to
// change: '_' and six hex digits.
const hashLen = 7

// Valid reports whether name is within the exposed-name grammar,
// ^[a-zA-Z0-9_-]{1,64}$.
func Valid(name string) bool {
	if len(name) == 0 || len(name) > MaxName {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !nameByte(name[i]) {
			return false
		}
	}
	return true
}

func nameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// Expose is the name a member's tool or prompt called name has in a
// profile: prefix + "__" + name (name alone when prefix is empty). When
// that is not Valid — a character outside the grammar (a '.', a '/', a
// space, anything not ASCII), or longer than MaxName — each such byte
// becomes '_', the result is cut to leave room, and '_' and six hex digits
// of the SHA-256 of the joined name end it: deterministic (the same name
// always exposes the same way, across restarts and instances), and two
// names that clean up alike still differ (up to a collision of the hash,
// which Names reports like any other).
func Expose(prefix, name string) string {
	joined := name
	if prefix != "" {
		joined = prefix + Separator + name
	}
	if Valid(joined) {
		return joined
	}
	clean := []byte(joined)
	for i, c := range clean {
		if !nameByte(c) {
			clean[i] = '_'
		}
	}
	if len(clean) > MaxName-hashLen {
		clean = clean[:MaxName-hashLen]
	}
	return string(clean) + "_" + shortHash(joined)
}

// shortHash is six hex digits of the SHA-256 of s.
func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:3])
}

// Member is one member's names of one kind (tools or prompts), in the
// order it lists them.
type Member struct {
	// Destination is the member's name; Prefix what its names start
	// with (config.Destination.ToolPrefix).
	Destination, Prefix string
	Names               []string
}

// Origin is where an exposed name leads: the member and its own name.
type Origin struct {
	Destination, Name string
}

// Collision is an exposed name two members' names both became: the
// first member (in the profile's order) keeps it, the other's is hidden.
type Collision struct {
	Exposed      string
	Kept, Hidden Origin
}

func (c Collision) String() string {
	return fmt.Sprintf("%q is both %s's %q and %s's %q: %s's is hidden (give one of them a 'prefix:')",
		c.Exposed, c.Kept.Destination, c.Kept.Name, c.Hidden.Destination, c.Hidden.Name, c.Hidden.Destination)
}

// Names is the map of one kind of a profile's names.
type Names struct {
	// Exposed lists the exposed names, members in order, each member's
	// in its own order.
	Exposed []string
	// origin maps an exposed name back.
	origin map[string]Origin
	// Collisions are the names that met, in the order found.
	Collisions []Collision
}

// NewNames exposes the members' names (members in the profile's order).
func NewNames(members []Member) *Names {
	n := &Names{origin: map[string]Origin{}}
	for _, m := range members {
		for _, name := range m.Names {
			e := Expose(m.Prefix, name)
			o := Origin{Destination: m.Destination, Name: name}
			if kept, taken := n.origin[e]; taken {
				if kept != o { // a member listing a name twice is not a collision
					n.Collisions = append(n.Collisions, Collision{Exposed: e, Kept: kept, Hidden: o})
				}
				continue
			}
			n.origin[e] = o
			n.Exposed = append(n.Exposed, e)
		}
	}
	return n
}

// Origin is where exposed leads; false for a name the profile does not
// expose.
func (n *Names) Origin(exposed string) (Origin, bool) {
	o, ok := n.origin[exposed]
	return o, ok
}

// Client tool limits: the most tools each of these takes from one server
// (or one request); a profile past one is cut, or refused, there.
var toolLimits = []struct {
	n   int
	who string
}{
	{40, "Cursor uses at most 40 tools"},
	{128, "OpenAI's API takes at most 128 tools per request"},
	{256, "Claude cuts a connector at 256 tools"},
}

// ToolCountWarnings says which known clients cut a list of n tools.
func ToolCountWarnings(n int) []string {
	var out []string
	for _, l := range toolLimits {
		if n > l.n {
			out = append(out, fmt.Sprintf("%d tools: %s", n, l.who))
		}
	}
	return out
}
