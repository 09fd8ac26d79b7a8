package session

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/stelae-bridge/stelae-bridge/dispatch"
)

// checkVersion validates MCP-Protocol-Version. It writes the error and
// returns its status, or 0 when the header is absent or supported.
func (ep *endpoint) checkVersion(w http.ResponseWriter, r *http.Request, s *Session) int {
	v := r.Header.Get("MCP-Protocol-Version")
	if v == "" || dispatch.Supported(v) {
		return 0
	}
	w.Header().Set(headerSessionID, s.id)
	return writeError(w, http.StatusBadRequest, codeServer, fmt.Sprintf("unsupported MCP-Protocol-Version %q; this bridge supports %s", v, strings.Join(dispatch.Versions(), ", ")))
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

// guard protects against DNS rebinding: a present Origin must be allowed,
// and while the bridge listens on loopback the Host must be a loopback name
// or an allowed host. It writes the 403 itself and reports false.
func (h *Handler) guard(w http.ResponseWriter, r *http.Request) bool {
	if origin := r.Header.Get("Origin"); origin != "" && !h.originAllowed(origin) {
		writeError(w, http.StatusForbidden, codeServer, fmt.Sprintf("Origin %q is not allowed (DNS-rebinding protection); to serve browser clients from it, start the bridge with -allowed-origins %s", origin, origin))
		return false
	}
	if h.opts.CheckHost && !h.hostAllowed(r.Host) {
		writeError(w, http.StatusForbidden, codeServer, fmt.Sprintf("Host %q is not allowed (DNS-rebinding protection); when the bridge is reached through a tunnel or proxy, start it with -allowed-hosts %s", r.Host, hostOnly(r.Host)))
		return false
	}
	return true
}

func (h *Handler) hostAllowed(hostport string) bool {
	host := hostOnly(hostport)
	if isLoopbackHost(host) {
		return true
	}
	for _, a := range h.opts.AllowedHosts {
		if a == "*" || strings.EqualFold(a, host) || strings.EqualFold(a, hostport) {
			return true
		}
	}
	return false
}

// originAllowed accepts loopback origins (pages on this machine) and the
// configured ones; "*" accepts all.
func (h *Handler) originAllowed(origin string) bool {
	for _, a := range h.opts.AllowedOrigins {
		if a == "*" || strings.EqualFold(strings.TrimSuffix(a, "/"), origin) {
			return true
		}
	}
	u, err := url.Parse(origin)
	return err == nil && u.Host != "" && isLoopbackHost(hostOnly(u.Host))
}

// corsMethods and corsHeaders are what browser clients may use.
const (
	corsMethods = "GET, POST, DELETE, OPTIONS"
	corsHeaders = "Content-Type, Accept, Authorization, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID"
)

// cors adds the CORS response headers for an allowed Origin when CORS is on
// (origins configured). It reports whether r was a preflight, answered here.
func (h *Handler) cors(w http.ResponseWriter, r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" || len(h.opts.AllowedOrigins) == 0 {
		return false
	}
	hdr := w.Header()
	if h.allowAnyOrigin {
		hdr.Set("Access-Control-Allow-Origin", "*")
	} else {
		hdr.Set("Access-Control-Allow-Origin", origin)
		hdr.Add("Vary", "Origin")
	}
	hdr.Set("Access-Control-Expose-Headers", "Mcp-Session-Id, Mcp-Protocol-Version")
	if r.Method != http.MethodOptions || r.Header.Get("Access-Control-Request-Method") == "" {
		return false
	}
	hdr.Set("Access-Control-Allow-Methods", corsMethods)
	hdr.Set("Access-Control-Allow-Headers", corsHeaders)
	hdr.Set("Access-Control-Max-Age", "600")
	hdr.Set("Allow", allowMethods)
	w.WriteHeader(http.StatusNoContent)
	return true
}
