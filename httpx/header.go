package httpx

import (
	"net/http"
	"strconv"
	"strings"
)

// Header names, in canonical form: http.Header.Get canonicalizes (and
// allocates for) any other spelling.
const (
	HeaderSessionID       = "Mcp-Session-Id"
	HeaderProtocolVersion = "Mcp-Protocol-Version"
)

// Header is h's first value for key, which must be in canonical form (as
// every key of a request's header map is): http.Header.Get canonicalizes
// key again on every call, and a POST reads a dozen headers.
func Header(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// SetSSEHeaders sets the headers of an SSE response (no caching, no
// proxy buffering).
func SetSSEHeaders(h http.Header) {
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
}

// Accepts reports whether an Accept header allows the media type full
// (type/subtype), directly or through a wildcard, with a non-zero quality.
func Accepts(accept, full string) bool {
	typ, _, _ := strings.Cut(full, "/")
	// Walked in place: no allocation (it runs on every POST, twice).
	for rest := accept; rest != ""; {
		var part string
		part, rest, _ = strings.Cut(rest, ",")
		mt, params, _ := strings.Cut(part, ";")
		mt = strings.TrimSpace(mt)
		match := strings.EqualFold(mt, full) || mt == "*/*" ||
			(len(mt) == len(typ)+2 && strings.EqualFold(mt[:len(typ)], typ) && mt[len(typ):] == "/*")
		if match && !zeroQuality(params) {
			return true
		}
	}
	return false
}

// AcceptsSSE reports whether an Accept header allows text/event-stream.
func AcceptsSSE(accept string) bool { return accept != "" && Accepts(accept, "text/event-stream") }

// zeroQuality reports whether media-type parameters say q=0 ("not
// acceptable").
func zeroQuality(params string) bool {
	for rest := params; rest != ""; {
		var p string
		p, rest, _ = strings.Cut(rest, ";")
		k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
		if strings.EqualFold(k, "q") {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return err == nil && f == 0
		}
	}
	return false
}

// OpensStream reports whether a GET is an MCP client opening its session's
// stream (a session id and Accept: text/event-stream), rather than a person
// or a probe.
func OpensStream(r *http.Request) bool {
	return r.Method == http.MethodGet && Header(r.Header, HeaderSessionID) != "" && AcceptsSSE(Header(r.Header, "Accept"))
}
