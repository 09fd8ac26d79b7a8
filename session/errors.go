package session

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/google/uuid"

	"github.com/stelae-bridge/stelae-bridge/dispatch"
	"github.com/stelae-bridge/stelae-bridge/jsonrpc"
)

// Header names, in canonical form: http.Header.Get canonicalizes (and
// allocates for) any other spelling.
const (
	headerSessionID       = "Mcp-Session-Id"
	headerProtocolVersion = "Mcp-Protocol-Version"
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

// jsonContentType is the Content-Type header's value for JSON answers,
// assigned to the header map as it is (net/http does the same with its own
// defaults): Header.Set would allocate the slice for every answer. Nothing
// may modify it.
var jsonContentType = []string{"application/json"}

// JSON-RPC error codes used in transport error bodies.
const (
	codeParse           = jsonrpc.CodeParseError
	codeInvalidRequest  = jsonrpc.CodeInvalidRequest
	codeInvalidParams   = jsonrpc.CodeInvalidParams
	codeServer          = jsonrpc.CodeServerError
	codeSessionNotFound = jsonrpc.CodeSessionNotFound
)

// legacyCode reports whether code is in the sub-range the 2026-07-28
// specification marks legacy (-32000 to -32019: "new implementations
// SHOULD NOT use codes from this sub-range"; -32020 to -32099 are its
// own).
func legacyCode(code int) bool { return code <= -32000 && code >= -32019 }

// eraCode is the JSON-RPC code of a transport error of the bridge's own
// (HTTP status status) for a request of the 2026-07-28 era when modern:
// where the 2025 era's answers keep -32000 and -32001, the status itself
// (503, 504, 429, …), outside the JSON-RPC reserved range as the
// specification asks of codes it does not define.
func eraCode(modern bool, status, code int) int {
	if modern && legacyCode(code) {
		return status
	}
	return code
}

// IsModern reports whether r is a request of the 2026-07-28 era (its
// MCP-Protocol-Version header says so).
func IsModern(r *http.Request) bool { return Header(r.Header, headerProtocolVersion) == eraModern }

// WriteErrorFor is WriteError for request r: a 2026-07-28 request's
// transport error carries eraCode's code, a 2025 one code.
func WriteErrorFor(w http.ResponseWriter, r *http.Request, status, code int, msg string) int {
	return WriteError(w, status, eraCode(IsModern(r), status, code), msg)
}

// WriteError writes a transport error: a JSON-RPC error object with a null
// id and a message a person can act on. It returns status.
func WriteError(w http.ResponseWriter, status, code int, msg string) int {
	return writeRPCError(w, status, nil, code, msg)
}

// writeRPCError answers a request with a JSON-RPC error carrying its id.
func writeRPCError(w http.ResponseWriter, status int, id []byte, code int, msg string) int {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(jsonrpc.ErrorResponse(id, code, msg))
	return status
}

// statusFor maps a dispatch error to its HTTP status and message.
func statusFor(dest string, err error) (int, string) {
	switch {
	case errors.Is(err, dispatch.ErrTimeout):
		return http.StatusGatewayTimeout, fmt.Sprintf("destination %q did not answer within the request timeout; the request was cancelled at the server (raise -request-timeout for slow tools)", dest)
	case errors.Is(err, dispatch.ErrTooLarge):
		return http.StatusBadGateway, fmt.Sprintf("destination %q answered with a message over the maximum message size; it was discarded (raise -max-message-size)", dest)
	case errors.Is(err, dispatch.ErrChildExited), errors.Is(err, dispatch.ErrUnavailable), errors.Is(err, dispatch.ErrStarting), errors.Is(err, dispatch.ErrRestarting):
		return http.StatusServiceUnavailable, dispatch.PublicReason(err)
	case errors.Is(err, dispatch.ErrCanceled):
		return http.StatusNotFound, "the session ended while the request was in flight (" + err.Error() + "); send initialize to start a new session"
	case errors.Is(err, dispatch.ErrNotInitialized):
		return http.StatusBadRequest, err.Error()
	}
	return http.StatusBadGateway, fmt.Sprintf("destination %q: %s", dest, dispatch.PublicReason(err))
}

// validSessionID accepts the canonical UUID form the bridge hands out.
func validSessionID(id string) bool {
	if len(id) != 36 {
		return false
	}
	_, err := uuid.Parse(id)
	return err == nil
}

func setSSEHeaders(h http.Header) {
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
}

// SetSSEHeaders sets the headers of an SSE response.
func SetSSEHeaders(h http.Header) { setSSEHeaders(h) }
