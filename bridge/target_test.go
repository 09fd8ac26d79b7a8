package bridge

import "testing"

// TestParseTarget: every route of the bridge is read from a request's path
// by one grammar, which routing, auth, the resource metadata and the
// fleet's 421 share.
func TestParseTarget(t *testing.T) {
	for _, c := range []struct {
		path string
		want target
	}{
		{"", target{kind: kindRoot}},
		{"/", target{kind: kindRoot}},
		{"/mcp", target{kind: kindDefault, path: "/mcp"}},
		{"/mcp/", target{kind: kindDefault, path: "/mcp"}},
		{"/healthz", target{kind: kindOperator, path: "/healthz"}},
		{"/tools/list", target{kind: kindOperator, path: "/tools/list"}},
		{manifestPath, target{kind: kindOperator, path: manifestPath}},
		{"/notes/mcp", target{kind: kindEndpoint, path: "/notes/mcp", key: "notes", route: "mcp"}},
		{"/notes/mcp/", target{kind: kindEndpoint, path: "/notes/mcp", key: "notes", route: "mcp"}},
		{"/notes/sse", target{kind: kindEndpoint, path: "/notes/sse", key: "notes", route: "sse"}},
		{"/p/work/mcp", target{kind: kindEndpoint, path: "/p/work/mcp", key: "p/work", route: "mcp"}},
		{"/p/work/message", target{kind: kindEndpoint, path: "/p/work/message", key: "p/work", route: "message"}},
		// A destination named "console" keeps its endpoint; the console
		// its pages.
		{"/console/mcp", target{kind: kindEndpoint, path: "/console/mcp", key: "console", route: "mcp"}},
		{"/console", target{kind: kindConsole, path: "/console", key: "console"}},
		{"/console/api/state", target{kind: kindConsole, path: "/console/api/state", key: "console", route: "api/state"}},
		{"/consoles/mcp", target{kind: kindEndpoint, path: "/consoles/mcp", key: "consoles", route: "mcp"}},
		{prmPath, target{kind: kindMetadata, path: prmPath, of: ofOrigin}},
		{prmPath + "/mcp", target{kind: kindMetadata, path: prmPath + "/mcp", of: ofDefault}},
		{prmPath + "/notes/mcp", target{kind: kindMetadata, path: prmPath + "/notes/mcp", of: ofEndpoint, key: "notes", route: "mcp"}},
		{prmPath + "/p/work/mcp", target{kind: kindMetadata, path: prmPath + "/p/work/mcp", of: ofEndpoint, key: "p/work", route: "mcp"}},
		{"/.well-known/oauth-authorization-server", target{kind: kindOAuth, path: "/.well-known/oauth-authorization-server"}},
		{"/.well-known/openid-configuration/x", target{kind: kindOAuth, path: "/.well-known/openid-configuration/x"}},
		{"/oauth/token", target{kind: kindOAuth, path: "/oauth/token"}},
		// No route: the key and route are kept for the 404 and the 421.
		{"/notes", target{path: "/notes", key: "notes"}},
		{"/notes/x", target{path: "/notes/x", key: "notes", route: "x"}},
		{"/notes/mcp/x", target{path: "/notes/mcp/x", key: "notes", route: "mcp/x"}},
		{"/p/work", target{path: "/p/work", key: "p", route: "work"}},
		{"/p/work/tools", target{path: "/p/work/tools", key: "p/work", route: "tools"}},
		{"/healthz/x", target{path: "/healthz/x", key: "healthz", route: "x"}},
	} {
		if got := parseTarget(c.path); got != c.want {
			t.Errorf("parseTarget(%q) = %+v; want %+v", c.path, got, c.want)
		}
	}
}
