package session

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"time"

	"github.com/stelae-bridge/stelae-bridge/dispatch"
)

// principal identifies the bearer token a request carried (its SHA-256);
// zero when auth is off. Tokens themselves are never kept or logged.
type principal [32]byte

type principalKey struct{}

func principalOf(r *http.Request) principal {
	p, _ := r.Context().Value(principalKey{}).(principal)
	return p
}

// ReservedNames are the path segments the bridge's own routes take: no
// destination may be named so (in any letter case).
var ReservedNames = []string{"mcp", "sse", "message", "healthz", "metrics", "version", "tools", "stream", ".well-known"}

// ServeHTTP is the bridge's HTTP surface. No path ever redirects; anything
// that is not a known route answers 404.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.guard(w, r) || h.cors(w, r) {
		return
	}
	path := r.URL.Path
	switch {
	case path == "/healthz":
		h.serveHealth(w, r)
		return
	case h.closing.Load():
		// Sessions are ending: a 404 would send spec clients to initialize
		// again into a bridge that is going away.
		w.Header().Set("Retry-After", "5")
		writeError(w, http.StatusServiceUnavailable, codeServer, "the bridge is shutting down; retry when it is back")
		return
	case strings.HasPrefix(path, "/.well-known/oauth-protected-resource"),
		strings.HasPrefix(path, "/.well-known/oauth-authorization-server"),
		strings.HasPrefix(path, "/.well-known/openid-configuration"):
		writeError(w, http.StatusNotFound, codeServer, "this bridge does not use OAuth; it is open, or protected by a bearer token its operator gives you (Authorization: Bearer …)")
		return
	}
	if len(h.opts.AuthTokens) > 0 {
		p, ok := h.authenticate(r)
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="stelae-bridge"`)
			writeError(w, http.StatusUnauthorized, codeServer, "missing or wrong bearer token: send Authorization: Bearer <token> with a token the bridge's operator configured")
			return
		}
		r = r.WithContext(context.WithValue(r.Context(), principalKey{}, p))
	}
	switch strings.TrimSuffix(path, "/") {
	case "":
		h.serveRoot(w, r)
	case "/mcp":
		if ep := h.defaultEndpoint(w); ep != nil {
			ep.serveMCP(w, r, h.shutdown)
		}
	case "/version":
		h.serveVersion(w, r)
	case "/metrics":
		if onlyGet(w, r) {
			h.metrics.handler().ServeHTTP(w, r)
		}
	case "/tools/list":
		h.serveToolsList(w, r)
	case "/stream":
		h.serveKeepaliveStream(w, r)
	case "/.well-known/mcp/manifest.json":
		h.serveManifest(w, r)
	default:
		h.serveDestination(w, r)
	}
}

// authenticate checks the bearer token in constant time against every
// configured one.
func (h *Handler) authenticate(r *http.Request) (principal, bool) {
	auth := r.Header.Get("Authorization")
	scheme, token, _ := strings.Cut(auth, " ")
	if !strings.EqualFold(scheme, "Bearer") || token == "" {
		return principal{}, false
	}
	ok := 0
	for _, t := range h.opts.AuthTokens {
		ok |= subtle.ConstantTimeCompare([]byte(t), []byte(token))
	}
	return sha256.Sum256([]byte(token)), ok == 1
}

func (h *Handler) defaultEndpoint(w http.ResponseWriter) *endpoint {
	if ep := h.endpoints[h.opts.Default]; ep != nil {
		return ep
	}
	writeError(w, http.StatusNotFound, codeServer, fmt.Sprintf("no default destination: set 'default: NAME' in the destinations file, or use /{destination}/mcp (destinations: %s)", h.list()))
	return nil
}

// serveRoot: POST and DELETE go to the default destination (some connectors
// post to the origin's root), so does an MCP GET (a session and Accept:
// text/event-stream); any other GET describes the bridge.
func (h *Handler) serveRoot(w http.ResponseWriter, r *http.Request) {
	mcpGet := r.Method == http.MethodGet && r.Header.Get(headerSessionID) != "" && acceptsSSE(r.Header.Get("Accept"))
	switch {
	case r.Method == http.MethodPost || r.Method == http.MethodDelete || mcpGet:
		if ep := h.defaultEndpoint(w); ep != nil {
			ep.serveMCP(w, r, h.shutdown)
		}
	case r.Method == http.MethodGet || r.Method == http.MethodHead:
		base := h.baseURL(r)
		type dest struct {
			Name string `json:"name"`
			URL  string `json:"url"`
		}
		doc := struct {
			Name         string   `json:"name"`
			Version      string   `json:"version"`
			Default      string   `json:"default,omitempty"`
			Destinations []dest   `json:"destinations"`
			Protocols    []string `json:"protocol_versions"`
		}{Name: "stelae-bridge", Version: h.opts.Version, Default: h.opts.Default, Protocols: dispatch.Versions(), Destinations: []dest{}}
		for _, n := range h.names {
			doc.Destinations = append(doc.Destinations, dest{Name: n, URL: base + "/" + n + "/mcp"})
		}
		writeJSON(w, r, http.StatusOK, doc)
	default:
		w.Header().Set("Allow", "GET, HEAD, POST, DELETE, OPTIONS")
		writeError(w, http.StatusMethodNotAllowed, codeServer, fmt.Sprintf("method %s is not supported on /", r.Method))
	}
}

// baseURL is the scheme and host clients reach the bridge at.
func (h *Handler) baseURL(r *http.Request) string {
	if h.opts.PublicURL != "" {
		return strings.TrimSuffix(h.opts.PublicURL, "/")
	}
	scheme, host := "http", r.Host
	if r.TLS != nil {
		scheme = "https"
	}
	if h.opts.TrustProxyHeaders {
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
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		writeError(w, http.StatusInternalServerError, codeServer, "could not encode the answer: "+err.Error())
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(append(b, '\n'))
	}
}

func onlyGet(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	w.Header().Set("Allow", "GET, HEAD")
	writeError(w, http.StatusMethodNotAllowed, codeServer, fmt.Sprintf("%s answers GET only", r.URL.Path))
	return false
}

// serveVersion reports the bridge's version, Go version and MCP versions.
func (h *Handler) serveVersion(w http.ResponseWriter, r *http.Request) {
	if !onlyGet(w, r) {
		return
	}
	writeJSON(w, r, http.StatusOK, map[string]any{"name": "stelae-bridge", "version": h.opts.Version, "go": runtime.Version(), "protocol_versions": dispatch.Versions()})
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
}

// serveHealth: ok when no destination has failed, degraded when some have,
// down (503) when every one has. It needs no token; ?verbose does when auth
// is on.
func (h *Handler) serveHealth(w http.ResponseWriter, r *http.Request) {
	if !onlyGet(w, r) {
		return
	}
	_, verbose := r.URL.Query()["verbose"]
	if verbose && len(h.opts.AuthTokens) > 0 {
		if _, ok := h.authenticate(r); !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="stelae-bridge"`)
			writeError(w, http.StatusUnauthorized, codeServer, "/healthz?verbose shows details (pids, exit errors with paths): send Authorization: Bearer <token>; plain /healthz needs none")
			return
		}
	}
	dests := map[string]destinationHealth{}
	failed := 0
	for _, n := range h.names {
		ep := h.endpoints[n]
		st := ep.status()
		dh := destinationHealth{State: st.State, Restarts: st.RestartsTotal, RecentRestarts: st.Restarts, Sessions: ep.reg.count(), Children: st.Children}
		if verbose {
			dh.PID, dh.LastExit, dh.Isolation = &st.PID, &st.LastExit, "shared"
			if ep.perSession != nil {
				dh.Isolation = "session"
			}
		}
		if !st.Started.IsZero() {
			dh.UptimeS = time.Since(st.Started).Round(time.Millisecond).Seconds()
		}
		if st.State == "failed" {
			failed++
		}
		dests[n] = dh
	}
	status, code := "ok", http.StatusOK
	switch {
	case len(h.names) > 0 && failed == len(h.names):
		status, code = "down", http.StatusServiceUnavailable
	case failed > 0:
		status = "degraded"
	}
	writeJSON(w, r, code, map[string]any{"status": status, "destinations": dests})
}

// serveKeepaliveStream is an SSE stream of keepalive comments only: it shows
// whether a tunnel or proxy buffers streams.
func (h *Handler) serveKeepaliveStream(w http.ResponseWriter, r *http.Request) {
	if !onlyGet(w, r) {
		return
	}
	setSSEHeaders(w.Header())
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	rc := http.NewResponseController(w)
	t := time.NewTicker(h.opts.KeepAlive)
	defer t.Stop()
	for {
		_ = rc.SetWriteDeadline(time.Now().Add(h.opts.WriteTimeout))
		if _, err := w.Write([]byte(": keepalive\n\n")); err != nil || rc.Flush() != nil {
			return
		}
		select {
		case <-t.C:
		case <-r.Context().Done():
			return
		case <-h.shutdown:
			return
		}
	}
}
