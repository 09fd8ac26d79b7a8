// Package bridge is the bridge as a whole: New builds, for every destination
// of a configuration, one supervisor and dispatcher (package dispatch, which
// owns its supervisor) and one MCP endpoint (package session), and serves
// them behind the operator's routes and middleware.
//
// It owns:
//   - serving: the HTTP/1.1 server is package h1's (the fast path for the
//     hot POST, net/http for the rest, the connection limit), joined here at
//     one seam (Serve: h1.NewServer, SetLimit; the drain and the hand-over);
//   - the path grammar (target.go): a request's path read once, by the
//     shutdown gate, into its target — an endpoint (/{destination}/mcp,
//     /p/{profile}/mcp; keys and paths are config's), the default (/mcp,
//     and MCP requests at /), an operator route, protected-resource
//     metadata, OAuth's, the console's, or none — which the auth layer,
//     the router, the resource metadata and the fleet's 421 read;
//   - the router: the endpoints, the legacy HTTP+SSE routes (410 Gone),
//     and the operator's routes (/, /healthz, /readyz, /version,
//     /metrics, /tools/list, /stream, /.well-known/mcp/manifest.json, the
//     OAuth well-knowns, /console). It never redirects;
//   - the middleware, as layers outermost first: the DNS-rebinding guard
//     (Origin and Host), CORS, the shutdown gate (503 with Retry-After),
//     authentication (static tokens, OAuth
//     access tokens of an issuer or the built-in server), which puts the
//     request's session.Principal and session.User in its context; the
//     HTTP pieces it shares with session and console (errors, headers,
//     the bearer token's parse and match) are package httpx's;
//   - profiles (profiles.go): each profile's endpoint, on a dispatcher
//     whose child is package profile's in-process server over its
//     members' dispatchers (their calls go straight there: dispatch.Fan);
//   - the children per user ('isolation: user'): the user's identity from
//     the auth layer, the static tokens and their reload (tokens.go), each
//     user's endpoint with their credentials or the stand-in (package
//     peruser's, made in table.go and standin.go), and the built-in
//     server's credentials page's seam (credentialpages.go);
//   - the fleet (fleet.go): which instance owns a destination, and the 421
//     that names the owner to a request for another's;
//   - the operator console's Backend (console.go): what package console
//     shows and the actions it takes, on the table;
//   - the bridge-wide metrics registry;
//   - ordered shutdown: stop accepting, end every session and stream, wait
//     for requests in flight, stop every child, within one deadline.
//
// It never reads or writes a JSON-RPC message itself: a request for an MCP
// endpoint passes through the layers and the router to session.Endpoint
// untouched.
//
// Data path: h1.Server (fast path, or net/http) → guard → cors → closing gate → auth → route →
// session.Endpoint → dispatch.Dispatcher → the child's stdin; and back from
// the child's stdout through dispatch to the waiting POST or the sessions'
// streams.
//
// Where new work goes: a new destinations.yaml key is read in package
// config (the model and its strict reader) and turned into options here
// (table.go: buildTable makes each destination's dispatcher and endpoint);
// a new flag's default is written once, in Defaults (bridge.go), which the
// flag table and -help read. Reload (table.go) keeps the destinations'
// endpoints, dispatchers and policies in a table behind one atomic
// pointer: it builds the next table from a *config.Config, keeping every
// destination the diff leaves unchanged, swaps it in, and retires the rest
// after their drain. The sessions' store across restarts is session's
// (Store), opened by cmd/stelae-bridge in the state directory.
package bridge
