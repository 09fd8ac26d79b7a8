package bridge

import (
	"net/http"
	"strings"

	"github.com/stelae-bridge/stelae-bridge/config"
	"github.com/stelae-bridge/stelae-bridge/console"
)

// A request's target is what its path names: the bridge's routes in one
// grammar, parsed once per request by the shutdown gate and handed inward
// (targetHandler) to the auth layer, the router, the resource metadata
// and the fleet's 421. The endpoints' part of it — keys, "p/", the
// routes a key answers — is config's (paths.go).

// target is a parsed request path.
type target struct {
	kind targetKind
	// path is the request's path without its trailing slash.
	path string
	// key and route: for kindEndpoint and kindOther, the key the path
	// starts with (a destination's name, or a profile's key, whether or
	// not one exists) and what follows it (config.SplitKeyPath); for
	// kindMetadata with of == ofEndpoint, those of the endpoint whose
	// metadata it is.
	key, route string
	// of is what a kindMetadata document describes.
	of metadataOf
}

// targetKind is the kind of route a path names.
type targetKind uint8

const (
	kindOther    targetKind = iota // no route: 404, or a key's 421
	kindRoot                       // /: the description, or the default's MCP requests
	kindDefault                    // /mcp: the default destination or profile
	kindEndpoint                   // /{key}/mcp, and the legacy sse and message
	kindOperator                   // /healthz, /readyz, /version, /metrics, …
	kindMetadata                   // RFC 9728 protected-resource metadata
	kindOAuth                      // OAuth's discovery documents and /oauth/*
	kindConsole                    // the operator console
)

// metadataOf is what protected-resource metadata describes: the origin
// (the bare document), the default endpoint (/mcp) or one endpoint.
type metadataOf uint8

const (
	ofOrigin metadataOf = iota
	ofDefault
	ofEndpoint
)

// ReservedNames are the path segments the bridge's own routes take (the
// ones below, /mcp, the endpoints' routes, the well-known documents and
// OAuth's): no destination may be named so, in any letter case.
// config.Load takes them. ("console" is not one: a destination so named
// keeps its endpoint routes, parseTarget.)
var ReservedNames = []string{"mcp", "sse", "message", "healthz", "readyz", "metrics", "version", "tools", "stream", ".well-known", "oauth"}

// operatorRoutes are the bridge's own routes, by exact path.
var operatorRoutes = map[string]bool{
	"/healthz": true, "/readyz": true, "/version": true, "/metrics": true,
	"/tools/list": true, "/stream": true, manifestPath: true,
}

// manifestPath is the bridge's MCP manifest.
const manifestPath = "/.well-known/mcp/manifest.json"

// parseTarget parses a request's URL path.
func parseTarget(urlPath string) target {
	p := strings.TrimSuffix(urlPath, "/")
	tg := target{path: p}
	switch {
	case p == "":
		tg.kind = kindRoot
	case p == "/mcp":
		tg.kind = kindDefault
	case operatorRoutes[p]:
		tg.kind = kindOperator
	case strings.HasPrefix(p, prmPath):
		tg.kind = kindMetadata
		switch inner := p[len(prmPath):]; inner {
		case "":
			tg.of = ofOrigin
		case "/mcp":
			tg.of = ofDefault
		default:
			tg.of = ofEndpoint
			tg.key, tg.route = config.SplitKeyPath(inner)
		}
	case isOAuthWellKnown(p), strings.HasPrefix(p, "/oauth/"):
		tg.kind = kindOAuth
	default:
		tg.key, tg.route = config.SplitKeyPath(p)
		switch {
		case config.EndpointRoute(tg.route):
			tg.kind = kindEndpoint // a destination named "console" included
		case console.Serves(p):
			tg.kind = kindConsole
		}
	}
	return tg
}

// targetHandler serves a request whose target was parsed: the layers
// inside the shutdown gate, and the router. The target is passed by
// value: a pointer given to an interface's method would escape to the
// heap on every request.
type targetHandler interface {
	serveTarget(w http.ResponseWriter, r *http.Request, tg target)
}
