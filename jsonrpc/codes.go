package jsonrpc

// JSON-RPC 2.0 error codes, and the ones MCP and the bridge add.
const (
	// CodeParseError: the body is not JSON.
	CodeParseError = -32700
	// CodeInvalidRequest: JSON, but not a valid JSON-RPC message.
	CodeInvalidRequest = -32600
	// CodeMethodNotFound: no such method.
	CodeMethodNotFound = -32601
	// CodeInvalidParams: the method's params are wrong.
	CodeInvalidParams = -32602
	// CodeInternalError: the receiver failed.
	CodeInternalError = -32603
	// CodeServerError is the code of the bridge's transport errors (HTTP
	// status codes carry the detail).
	CodeServerError = -32000
	// CodeSessionNotFound: the session is unknown (MCP's convention for 404).
	CodeSessionNotFound = -32001
	// CodeRequestCancelled: the client cancelled the request.
	CodeRequestCancelled = -32800
	// CodeHeaderMismatch: an MCP request header disagrees with the body
	// (MCP 2026-07-28).
	CodeHeaderMismatch = -32020
	// CodeMissingCapability: the request needs a client capability its
	// _meta does not declare (MCP 2026-07-28).
	CodeMissingCapability = -32021
	// CodeUnsupportedVersion: the request's protocol version is not one the
	// server implements (MCP 2026-07-28).
	CodeUnsupportedVersion = -32022
)
