package bridge

import (
	"encoding/json"
	"fmt"
	"github.com/stelae-bridge/stelae-bridge/config"
	"github.com/stelae-bridge/stelae-bridge/httpx"
	"net/http"
	"runtime"
	"strings"
	"time"

	"github.com/stelae-bridge/stelae-bridge/authserver"
	"github.com/stelae-bridge/stelae-bridge/dispatch"
	"github.com/stelae-bridge/stelae-bridge/jsonrpc"
	"github.com/stelae-bridge/stelae-bridge/session"
	"github.com/stelae-bridge/stelae-bridge/supervisor"
)

// codeServer is the JSON-RPC code of the bridge's own transport errors.
const codeServer = jsonrpc.CodeServerError

// router is the bridge as the innermost handler: its route. (A method
// value in an http.HandlerFunc would add two frames to every request's
// stack; see guardLayer.)
type router Bridge

func (rt *router) serveTarget(w http.ResponseWriter, r *http.Request, tg target) {
	(*Bridge)(rt).route(w, r, tg)
}

// route is the bridge's router, over the request's parsed target
// (target.go). It is hand-written, not a ServeMux: no path ever redirects
// (a redirected POST loses its body in many clients), and anything that
// is not a known route answers 404 naming the ones that are.
func (b *Bridge) route(w http.ResponseWriter, r *http.Request, tg target) {
	switch tg.kind {
	case kindEndpoint:
		// The common case, /{destination}/mcp, runs its handler from
		// this frame: the route's helpers return before it (a call
		// waiting for its answer keeps every frame above it, see
		// session.post).
		if ep := b.endpoint(w, r, tg); ep != nil {
			ep.ServeHTTP(w, r)
		}
	case kindDefault:
		if ep := b.defaultEndpoint(w, r); ep != nil {
			ep.ServeHTTP(w, r)
		}
	case kindRoot:
		b.serveRoot(w, r)
	case kindOperator:
		b.serveOperator(w, r, tg.path)
	case kindMetadata:
		b.serveResourceMetadata(w, r, tg)
	case kindOAuth:
		b.serveOAuth(w, r)
	case kindConsole:
		b.serveConsole(w, r)
	default:
		b.noRoute(w, r, tg)
	}
}

// serveOperator serves the bridge's own routes (operatorRoutes).
func (b *Bridge) serveOperator(w http.ResponseWriter, r *http.Request, path string) {
	switch path {
	case "/healthz":
		b.serveHealth(w, r)
	case "/readyz":
		b.serveReady(w, r)
	case "/version":
		b.serveVersion(w, r)
	case "/metrics":
		if onlyGet(w, r) {
			b.metricsHandler.ServeHTTP(w, r)
		}
	case "/tools/list":
		b.serveToolsList(w, r)
	case "/stream":
		b.serveKeepaliveStream(w, r)
	case manifestPath:
		b.serveManifest(w, r)
	}
}

// serveOAuth serves OAuth's discovery documents and endpoints: the
// built-in authorization server's, or a 404 that says where tokens come
// from.
func (b *Bridge) serveOAuth(w http.ResponseWriter, r *http.Request) {
	t := b.t()
	switch {
	case b.opts.AuthServer != nil:
		b.opts.AuthServer.ServeHTTP(w, r.WithContext(authserver.WithBase(r.Context(), b.baseURL(r))))
	case len(t.operatorPolicies) > 0:
		httpx.WriteErrorFor(w, r, http.StatusNotFound, codeServer, fmt.Sprintf("this bridge is not an authorization server: its endpoints accept tokens from the issuer named in their protected-resource metadata (%s/{destination}/mcp)", prmPath))
	default:
		httpx.WriteErrorFor(w, r, http.StatusNotFound, codeServer, "this bridge does not use OAuth; it is open, or protected by a bearer token its operator gives you (Authorization: Bearer …)")
	}
}

// isOAuthWellKnown reports whether path is one of the discovery documents an
// OAuth client looks for.
func isOAuthWellKnown(path string) bool {
	for _, p := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"} {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}

// endpoint is the endpoint of tg, an endpoint route (/{key}/mcp, sse or
// message); for any other answer (421, 404, the legacy transport's 410) it
// writes it and returns nil.
func (b *Bridge) endpoint(w http.ResponseWriter, r *http.Request, tg target) *session.Endpoint {
	t := b.t()
	if name, profile := config.ProfileName(tg.key); profile {
		if tg.route != "mcp" {
			b.noRoute(w, r, tg) // a profile has no legacy transport
			return nil
		}
		if ep := t.profileEndpoint(name); ep != nil {
			return ep
		}
		if !b.misdirected(w, r, tg.key) {
			names := "none (declare them under 'profiles:' in the destinations file)"
			if len(t.cfg.ProfileNames) > 0 {
				names = strings.Join(t.cfg.ProfileNames, ", ")
			}
			httpx.WriteErrorFor(w, r, http.StatusNotFound, codeServer, fmt.Sprintf("no profile named %q; configured profiles: %s", name, names))
		}
		return nil
	}
	ep := t.endpoints[tg.key]
	if ep == nil {
		if !b.misdirected(w, r, tg.key) {
			httpx.WriteErrorFor(w, r, http.StatusNotFound, codeServer, fmt.Sprintf("no destination named %q; configured destinations: %s", tg.key, b.list()))
		}
		return nil
	}
	if tg.route == "mcp" {
		return ep
	}
	b.legacyHits.WithLabelValues(tg.key).Inc()
	httpx.WriteErrorFor(w, r, http.StatusGone, codeServer, fmt.Sprintf("the HTTP+SSE transport (/%s/sse, /%s/message) is gone; this bridge speaks MCP Streamable HTTP at %s: configure your client with type \"http\" and that URL", tg.key, tg.key, config.KeyPath(tg.key)))
	return nil
}

// noRoute answers a path no route serves: 404 naming the routes there
// are, or 421 for a destination another instance of the fleet serves.
func (b *Bridge) noRoute(w http.ResponseWriter, r *http.Request, tg target) {
	t := b.t()
	if _, profile := config.ProfileName(tg.key); profile || tg.route == "" || strings.Contains(tg.route, "/") {
		httpx.WriteErrorFor(w, r, http.StatusNotFound, codeServer, fmt.Sprintf("no route for %s; MCP endpoints are at /{destination}/mcp (destinations: %s)", r.URL.Path, b.list()))
		return
	}
	if t.endpoints[tg.key] == nil {
		if !b.misdirected(w, r, tg.key) {
			httpx.WriteErrorFor(w, r, http.StatusNotFound, codeServer, fmt.Sprintf("no destination named %q; configured destinations: %s", tg.key, b.list()))
		}
		return
	}
	httpx.WriteErrorFor(w, r, http.StatusNotFound, codeServer, fmt.Sprintf("no route for %s; the MCP endpoint of %q is %s", r.URL.Path, tg.key, config.KeyPath(tg.key)))
}

// list names the destinations for error messages.
func (b *Bridge) list() string {
	t := b.t()
	if len(t.names) == 0 {
		return "none"
	}
	return strings.Join(t.names, ", ")
}

// defaultEndpoint is the endpoint /mcp and / serve; when there is none it
// writes the 404 and returns nil.
func (b *Bridge) defaultEndpoint(w http.ResponseWriter, r *http.Request) *session.Endpoint {
	t := b.t()
	if t.cfg.DefaultProfile {
		if ep := t.profileEndpoint(t.cfg.Default); ep != nil {
			return ep
		}
	} else if ep := t.endpoints[t.cfg.Default]; ep != nil {
		return ep
	}
	if t.cfg.AwayDefault != "" && b.misdirected(w, r, t.cfg.AwayDefault) {
		return nil
	}
	httpx.WriteErrorFor(w, r, http.StatusNotFound, codeServer, fmt.Sprintf("no default destination: set 'default: NAME' in the destinations file, or use /{destination}/mcp (destinations: %s)", b.list()))
	return nil
}

// serveRoot: POST and DELETE go to the default destination (some connectors
// post to the origin's root), so does an MCP GET (a session and Accept:
// text/event-stream); any other GET describes the bridge.
func (b *Bridge) serveRoot(w http.ResponseWriter, r *http.Request) {
	t := b.t()
	switch {
	case r.Method == http.MethodPost || r.Method == http.MethodDelete || httpx.OpensStream(r):
		if ep := b.defaultEndpoint(w, r); ep != nil {
			ep.ServeHTTP(w, r)
		}
	case r.Method == http.MethodGet || r.Method == http.MethodHead:
		base := b.baseURL(r)
		type dest struct {
			Name string `json:"name"`
			URL  string `json:"url"`
		}
		type prof struct {
			Name    string   `json:"name"`
			URL     string   `json:"url"`
			Members []string `json:"members"`
		}
		doc := struct {
			Name         string   `json:"name"`
			Version      string   `json:"version"`
			Default      string   `json:"default,omitempty"`
			Destinations []dest   `json:"destinations"`
			Profiles     []prof   `json:"profiles,omitempty"`
			Protocols    []string `json:"protocol_versions"`
		}{Name: "stelae-bridge", Version: b.opts.Version, Default: t.cfg.Default, Protocols: dispatch.Versions(), Destinations: []dest{}}
		for _, n := range t.names {
			doc.Destinations = append(doc.Destinations, dest{Name: n, URL: base + "/" + n + "/mcp"})
		}
		for _, n := range t.cfg.ProfileNames {
			doc.Profiles = append(doc.Profiles, prof{Name: n, URL: base + config.ProfilePath(n), Members: t.cfg.Profiles[n].Destinations})
		}
		writeJSON(w, r, http.StatusOK, doc)
	default:
		w.Header().Set("Allow", "GET, HEAD, POST, DELETE, OPTIONS")
		httpx.WriteErrorFor(w, r, http.StatusMethodNotAllowed, codeServer, fmt.Sprintf("method %s is not supported on /", r.Method))
	}
}

// baseURL is the scheme and host clients reach the bridge at: -public-url,
// else the request's Host (and, when trusted, X-Forwarded-Proto/-Host).
func (b *Bridge) baseURL(r *http.Request) string {
	if b.opts.PublicURL != "" {
		return strings.TrimSuffix(b.opts.PublicURL, "/")
	}
	scheme, host := "http", r.Host
	if r.TLS != nil {
		scheme = "https"
	}
	if b.opts.TrustProxyHeaders {
		if p := r.Header.Get("X-Forwarded-Proto"); p == "http" || p == "https" {
			scheme = p
		}
		if fh := r.Header.Get("X-Forwarded-Host"); fh != "" {
			host = strings.TrimSpace(strings.Split(fh, ",")[0])
		}
	}
	return scheme + "://" + host
}

func writeJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	body, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		httpx.WriteErrorFor(w, r, http.StatusInternalServerError, codeServer, "could not encode the answer: "+err.Error())
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if h.Get("Cache-Control") == "" {
		h.Set("Cache-Control", "no-store")
	}
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(append(body, '\n'))
	}
}

// onlyGet answers 405 to anything but GET and HEAD and reports whether r
// may go on.
func onlyGet(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	w.Header().Set("Allow", "GET, HEAD")
	httpx.WriteErrorFor(w, r, http.StatusMethodNotAllowed, codeServer, fmt.Sprintf("%s answers GET only", r.URL.Path))
	return false
}

// serveVersion reports the bridge's version, Go version and MCP versions.
func (b *Bridge) serveVersion(w http.ResponseWriter, r *http.Request) {
	if !onlyGet(w, r) {
		return
	}
	versions := dispatch.Versions()
	if b.opts.ProtocolEras != session.Eras2025 {
		versions = append(versions, dispatch.ModernVersion) // stateless requests (-protocol-eras both)
	}
	writeJSON(w, r, http.StatusOK, map[string]any{"name": "stelae-bridge", "version": b.opts.Version, "commit": b.opts.Commit, "go": runtime.Version(), "protocol_versions": versions})
}

// destinationHealth is one destination in /healthz: states and counts for
// anyone; with ?verbose (and a token when auth is on) the details too,
// which may name paths and commands.
type destinationHealth struct {
	State string `json:"state"`
	// Restarts counts every restart since the bridge started, like
	// stelae_child_restarts_total; RecentRestarts those of the current run
	// of failures (reset after a stable run), which decide when the
	// destination is marked failed.
	Restarts       uint64  `json:"restarts"`
	RecentRestarts int     `json:"recent_restarts"`
	Sessions       int     `json:"sessions"`
	Children       int     `json:"children"`
	UptimeS        float64 `json:"uptime_s"`
	// Details, with ?verbose only.
	PID       *int    `json:"pid,omitempty"`
	Isolation string  `json:"isolation,omitempty"`
	LastExit  *string `json:"last_exit,omitempty"`
	// ChildSpeaks is the protocol the running child is spoken to in, as
	// its start found: "2026-07-28" for a child that answered
	// server/discover for it, else "2025"; with ?verbose only.
	ChildSpeaks string `json:"child_speaks,omitempty"`
	// SessionList describes each session (id prefix, client, version,
	// age, idle time, calls in flight, streams), with ?verbose only.
	SessionList []session.SessionInfo `json:"session_list,omitempty"`
}

// childSpeaks is what a destination's running child speaks ("" when none
// runs).
func childSpeaks(st dispatch.Status) string {
	switch {
	case st.State != supervisor.StateRunning:
		return ""
	case st.ChildSpeaks2026:
		return "2026-07-28"
	default:
		return "2025"
	}
}

// serveHealth: ok when no destination has failed, degraded when some have,
// down (503) when every one has. It needs no token; ?verbose does when auth
// is on.
func (b *Bridge) serveHealth(w http.ResponseWriter, r *http.Request) {
	t := b.t()
	if !onlyGet(w, r) {
		return
	}
	// ?verbose shows details (pids, exit errors with paths): the auth
	// layer lets it through only with a token; plain /healthz needs none.
	_, verbose := r.URL.Query()["verbose"]
	dests := map[string]destinationHealth{}
	failed := 0
	for _, n := range t.names {
		ep := t.endpoints[n]
		st := ep.Status()
		dh := destinationHealth{State: st.State, Restarts: st.RestartsTotal, RecentRestarts: st.Restarts, Sessions: ep.SessionCount(), Children: st.Children}
		if verbose {
			dh.PID, dh.LastExit, dh.Isolation = &st.PID, &st.LastExit, "shared"
			dh.ChildSpeaks = childSpeaks(st)
			dh.SessionList = ep.Sessions()
			switch {
			case ep.Isolated():
				dh.Isolation = "session"
			case ep.UserIsolated():
				dh.Isolation = "user"
			}
		}
		if !st.Started.IsZero() {
			dh.UptimeS = time.Since(st.Started).Round(time.Millisecond).Seconds()
		}
		if st.State == supervisor.StateFailed {
			failed++
		}
		dests[n] = dh
	}
	status, code := "ok", http.StatusOK
	switch {
	case len(t.names) > 0 && failed == len(t.names):
		status, code = "down", http.StatusServiceUnavailable
	case failed > 0:
		status = "degraded"
	}
	body := map[string]any{"status": status, "destinations": dests}
	if t.cfg.Instance != "" {
		body["instance"] = t.cfg.Instance
	}
	if ph := t.profilesHealth(verbose); ph != nil {
		body["profiles"] = ph
	}
	writeJSON(w, r, code, body)
}

// serveReady is the readiness route for load balancers and Kubernetes:
// 200 while the bridge takes requests, 503 with Retry-After from the start
// of its shutdown (the drain of calls in flight included). It needs no
// token.
func (b *Bridge) serveReady(w http.ResponseWriter, r *http.Request) {
	if !onlyGet(w, r) {
		return
	}
	if b.stopping() {
		w.Header().Set("Retry-After", "5")
		writeJSON(w, r, http.StatusServiceUnavailable, map[string]string{"status": "draining"})
		return
	}
	writeJSON(w, r, http.StatusOK, map[string]string{"status": "ready"})
}

// serveKeepaliveStream is an SSE stream of keepalive comments only: it shows
// whether a tunnel or proxy buffers streams.
func (b *Bridge) serveKeepaliveStream(w http.ResponseWriter, r *http.Request) {
	if !onlyGet(w, r) {
		return
	}
	httpx.SetSSEHeaders(w.Header())
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	rc := http.NewResponseController(w)
	t := time.NewTicker(b.opts.KeepAlive)
	defer t.Stop()
	for {
		_ = rc.SetWriteDeadline(time.Now().Add(b.opts.WriteTimeout))
		if _, err := w.Write([]byte(": keepalive\n\n")); err != nil || rc.Flush() != nil {
			return
		}
		select {
		case <-t.C:
		case <-r.Context().Done():
			return
		case <-b.streams:
			return
		}
	}
}
