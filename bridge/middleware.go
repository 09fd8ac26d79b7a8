package bridge

import (
	"fmt"
	"github.com/stelae-bridge/stelae-bridge/httpx"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/stelae-bridge/stelae-bridge/dispatch"
	"github.com/stelae-bridge/stelae-bridge/session"
)

// layers puts the bridge's middleware in front of its router, outermost
// first: DNS-rebinding guard, CORS, the shutdown gate (which parses the
// request's target, target.go), authentication.
func (b *Bridge) layers() http.Handler {
	return b.guard(b.cors(b.closingGate(b.auth((*router)(b)))))
}

// guard protects against DNS rebinding: a present Origin must be allowed,
// and while the bridge listens on loopback (CheckHost) the Host must be a
// loopback name or an allowed host. It answers 403 otherwise.
func (b *Bridge) guard(next http.Handler) http.Handler { return &guardLayer{b, next} }

// guardLayer is guard's handler. The layers that wrap every request are
// handler types, not closures in http.HandlerFunc: the adapter is one more
// frame on the stack of every call waiting for its answer (see
// session.post on stacks).
type guardLayer struct {
	b    *Bridge
	next http.Handler
}

func (g *guardLayer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b := g.b
	if origin := httpx.Header(r.Header, "Origin"); origin != "" && !b.originAllowed(origin) && !b.sameOrigin(r, origin) {
		refuse(w, r, "Origin %q is not allowed (DNS-rebinding protection); to serve browser clients from it, start the bridge with -allowed-origins %s", origin, origin)
		return
	}
	if b.opts.CheckHost && !b.hostAllowed(r.Host) {
		refuse(w, r, "Host %q is not allowed (DNS-rebinding protection); when the bridge is reached through a tunnel or proxy, start it with -allowed-hosts %s", r.Host, hostOnly(r.Host))
		return
	}
	g.next.ServeHTTP(w, r)
}

// refuse answers 403 with the message format makes of a and b. (Out of
// guard, whose frame is on the stack of every request; see session.post.)
func refuse(w http.ResponseWriter, r *http.Request, format, a, b string) {
	httpx.WriteErrorFor(w, r, http.StatusForbidden, codeServer, fmt.Sprintf(format, a, b))
}

func (b *Bridge) hostAllowed(hostport string) bool {
	host := hostOnly(hostport)
	if isLoopbackHost(host) {
		return true
	}
	for _, a := range b.opts.AllowedHosts {
		if a == "*" || strings.EqualFold(a, host) || strings.EqualFold(a, hostport) {
			return true
		}
	}
	return false
}

// originAllowed accepts loopback origins (pages on this machine) and the
// configured ones; "*" accepts all.
func (b *Bridge) originAllowed(origin string) bool {
	for _, a := range b.opts.AllowedOrigins {
		if a == "*" || strings.EqualFold(strings.TrimSuffix(a, "/"), origin) {
			return true
		}
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host != "" && isLoopbackHost(hostOnly(u.Host))
}

// sameOrigin reports whether origin is the bridge's own: its public URL's,
// or the request's Host (which the Host check guards): the approval page
// posting to itself through a tunnel.
func (b *Bridge) sameOrigin(r *http.Request, origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	if b.opts.PublicURL != "" {
		if p, err := url.Parse(b.opts.PublicURL); err == nil && strings.EqualFold(p.Scheme+"://"+p.Host, origin) {
			return true
		}
	}
	return b.opts.CheckHost && strings.EqualFold(u.Host, r.Host) && b.hostAllowed(r.Host)
}

// isLoopbackHost reports whether host (no port) names this machine's
// loopback interface.
func isLoopbackHost(host string) bool {
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// hostOnly strips the port from a Host header value.
func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]")
}

// corsMethods and corsHeaders are what browser clients may use.
const (
	corsMethods = "GET, POST, DELETE, OPTIONS"
	corsHeaders = "Content-Type, Accept, Authorization, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID, Mcp-Method, Mcp-Name"
)

// cors adds the CORS response headers for an allowed Origin when CORS is on
// (origins configured), and answers preflights itself. (The guard has
// already refused origins that are not allowed.)
func (b *Bridge) cors(next http.Handler) http.Handler {
	if len(b.opts.AllowedOrigins) == 0 {
		return next
	}
	c := &corsLayer{next: next}
	for _, o := range b.opts.AllowedOrigins {
		c.anyOrigin = c.anyOrigin || o == "*"
	}
	return c
}

// corsLayer is cors's handler (a type: see guardLayer; the headers are set
// in preflight, which returns before the request goes on).
type corsLayer struct {
	next      http.Handler
	anyOrigin bool
}

func (c *corsLayer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !c.preflight(w, r) {
		c.next.ServeHTTP(w, r)
	}
}

// preflight sets the CORS headers of a request with an Origin, and answers
// a preflight request itself (true).
func (c *corsLayer) preflight(w http.ResponseWriter, r *http.Request) bool {
	origin := httpx.Header(r.Header, "Origin")
	if origin == "" {
		return false
	}
	hdr := w.Header()
	if c.anyOrigin {
		hdr.Set("Access-Control-Allow-Origin", "*")
	} else {
		hdr.Set("Access-Control-Allow-Origin", origin)
		hdr.Add("Vary", "Origin")
	}
	// WWW-Authenticate: a browser client reads resource_metadata from a
	// 401's challenge to find the authorization server (MCP authorization).
	hdr.Set("Access-Control-Expose-Headers", "Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate")
	if r.Method != http.MethodOptions || r.Header.Get("Access-Control-Request-Method") == "" {
		return false
	}
	hdr.Set("Access-Control-Allow-Methods", corsMethods)
	hdr.Set("Access-Control-Allow-Headers", corsHeaders+paramHeaders(r.Header.Values("Access-Control-Request-Headers")))
	hdr.Set("Access-Control-Max-Age", "600")
	hdr.Set("Allow", session.AllowMethods)
	w.WriteHeader(http.StatusNoContent)
	return true
}

// paramHeaders are the Mcp-Param-* headers (MCP 2026-07-28 tool parameters
// mirrored into headers; their names come from each tool's schema) a
// preflight asks for, as ", a, b", so that a browser client may send them.
// Anything else it asks for is not added.
func paramHeaders(requested []string) string {
	var out strings.Builder
	for _, line := range requested {
		for _, h := range strings.Split(line, ",") {
			h = strings.TrimSpace(h)
			if len(h) > len("mcp-param-") && strings.EqualFold(h[:len("mcp-param-")], "mcp-param-") && dispatch.ValidFieldName(h) {
				out.WriteString(", ")
				out.WriteString(h)
			}
		}
	}
	return out.String()
}

// closingGate answers 503 with Retry-After to every request but /healthz
// and /readyz once shutdown (its drain included) has begun: a 404 would send spec clients to initialize
// again into a bridge that is going away. In a hand-over's drain it lets
// requests through and has each answer close its connection.
func (b *Bridge) closingGate(next targetHandler) http.Handler { return &gateLayer{b, next} }

// gateLayer is closingGate's handler (a type: see guardLayer).
type gateLayer struct {
	b    *Bridge
	next targetHandler
}

func (g *gateLayer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	tg := parseTarget(r.URL.Path)
	switch g.b.phase.Load() {
	case phaseServing:
	case phaseHandingOver:
		// The next bridge accepts this client's next connection.
		w.Header().Set("Connection", "close")
	default:
		if tg.kind != kindOperator || (tg.path != "/healthz" && tg.path != "/readyz") {
			refuseClosing(w, r)
			return
		}
	}
	g.next.serveTarget(w, r, tg)
}

// refuseClosing answers a request that came once shutdown had begun, and
// closes its connection: a client (or a proxy) retries on a new one,
// which reaches the next bridge — on a kept one it would find this one's
// 503 again.
func refuseClosing(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Connection", "close")
	w.Header().Set("Retry-After", "5")
	httpx.WriteErrorFor(w, r, http.StatusServiceUnavailable, codeServer, "the bridge is shutting down; retry when it is back")
}
