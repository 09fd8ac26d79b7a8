package bridge

import (
	"slices"
	"testing"

	"github.com/stelae-bridge/stelae-bridge/config"
	"github.com/stelae-bridge/stelae-bridge/oauth"
)

// TestBuiltinTokensOpenTheirEndpoint: every resource the built-in server
// issues a token for opens the endpoints of the destination it names. A
// client that starts discovery at the origin reads the bare metadata
// (resource: the base URL, the default destination's policy) and gets a
// token for the base; /mcp and /{default}/mcp refused it, so the client
// went through the login again and again.
func TestBuiltinTokensOpenTheirEndpoint(t *testing.T) {
	const base = "https://bridge.example"
	builtin := &config.Auth{Issuer: config.IssuerBuiltin}
	b := &Bridge{}
	tab := &table{cfg: &config.Config{Default: "notes", Auth: builtin}, names: []string{"notes", "other"},
		policies: map[string]*oauth.Policy{"notes": {Auth: builtin}, "other": {Auth: builtin}}}
	tab.topPolicy = tab.policies["notes"]
	b.cur.Store(tab)
	for _, resource := range []string{base, base + "/mcp", base + "/notes/mcp", base + "/other/mcp"} {
		dest, ok := b.builtinResource(base, resource)
		if !ok {
			continue
		}
		opens := []guarded{{dest: dest, route: "dest"}}
		if dest == tab.cfg.Default {
			opens = append(opens, guarded{dest: dest, route: "default"}, guarded{dest: dest, route: "root"})
		}
		for _, g := range opens {
			if !slices.Contains(b.resources(base, g), resource) {
				t.Errorf("a token for %s (issued for %q) is refused at route %s of %q: it accepts %v", resource, dest, g.route, g.dest, b.resources(base, g))
			}
		}
	}
	// And a token for one destination does not open another.
	if slices.Contains(b.resources(base, guarded{dest: "other", route: "dest"}), base) {
		t.Errorf("a token for the base (the default destination's) opens /other/mcp")
	}
}
