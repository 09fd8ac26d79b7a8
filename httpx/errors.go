package httpx

import (
	"net/http"

	"github.com/stelae-bridge/stelae-bridge/jsonrpc"
)

// ModernVersion is the stateless protocol era's version (MCP 2026-07-28):
// its requests carry it in params._meta and in the MCP-Protocol-Version
// header.
const ModernVersion = "2026-07-28"

// IsModern reports whether r is a request of the 2026-07-28 era (its
// MCP-Protocol-Version header says so).
func IsModern(r *http.Request) bool { return Header(r.Header, HeaderProtocolVersion) == ModernVersion }

// legacyCode reports whether code is in the sub-range the 2026-07-28
// specification marks legacy (-32000 to -32019: "new implementations
// SHOULD NOT use codes from this sub-range"; -32020 to -32099 are its
// own).
func legacyCode(code int) bool { return code <= -32000 && code >= -32019 }

// EraCode is the JSON-RPC code of a transport error of the bridge's own
// (HTTP status status) for a request of the 2026-07-28 era when modern:
// where the 2025 era's answers keep -32000 and -32001, the status itself
// (503, 504, 429, …), outside the JSON-RPC reserved range as the
// specification asks of codes it does not define.
func EraCode(modern bool, status, code int) int {
	if modern && legacyCode(code) {
		return status
	}
	return code
}

// WriteErrorFor is WriteError for request r: a 2026-07-28 request's
// transport error carries EraCode's code, a 2025 one code.
func WriteErrorFor(w http.ResponseWriter, r *http.Request, status, code int, msg string) int {
	return WriteError(w, status, EraCode(IsModern(r), status, code), msg)
}

// WriteError writes a transport error: a JSON-RPC error object with a null
// id and a message a person can act on. It returns status.
func WriteError(w http.ResponseWriter, status, code int, msg string) int {
	return WriteRPCError(w, status, nil, code, msg)
}

// WriteRPCError answers a request with a JSON-RPC error carrying its id
// (nil: null). It returns status.
func WriteRPCError(w http.ResponseWriter, status int, id []byte, code int, msg string) int {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(jsonrpc.ErrorResponse(id, code, msg))
	return status
}

// ServerErrorBody is the body of a transport error written by hand (the
// connection limit's 503, before any handler): a JSON-RPC server error
// (-32000) with a null id and msg.
func ServerErrorBody(msg string) []byte {
	return jsonrpc.ErrorResponse(nil, jsonrpc.CodeServerError, msg)
}
