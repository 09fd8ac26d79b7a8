// Package session is one destination's MCP Streamable HTTP endpoint and its
// sessions (Endpoint): POST, GET, DELETE, HEAD and OPTIONS on
// /{destination}/mcp.
//
// It owns:
//   - the request checks: Content-Type, Accept, Mcp-Session-Id,
//     MCP-Protocol-Version, body limits (size, time, the shared memory
//     budget in Limits);
//   - sessions: ids, the cap with eviction of the least recently used idle
//     one, expiry (the endpoint's janitor), and one idempotent way to end a
//     session (endSession), whatever the reason;
//   - SSE: the POST→SSE switch (response modes), GET streams with
//     keepalives, per-session event logs and resumption with Last-Event-ID;
//   - the access log, with audit bodies through package redact, and the
//     endpoint's metrics (Metrics; the bridge registers them).
//
// It never parses a bearer token, never routes between destinations and
// never talks to a child: the principal comes from the request's context
// (set by package bridge's auth layer, read with PrincipalFrom), and every
// JSON-RPC message goes to a dispatch.Dispatcher. The caller owns the wait:
// a POST takes a dispatch.Call and selects on it with its own keepalive
// ticker.
//
// Data path: POST body → checks → jsonrpc.Parse → dispatch (Begin/Next for
// requests, Notify, Respond) → JSON answer or SSE events on the POST; a
// child's notifications come back through Session.Deliver into the
// session's event log and out on its GET stream.
//
// The specification (MCP 2025-11-25, basic/transports) decides:
//   - "If the input is a JSON-RPC response or notification: If the server
//     accepts the input, the server MUST return HTTP status code 202
//     Accepted with no body." (post.go)
//   - "If the input is a JSON-RPC request, the server MUST either return
//     Content-Type: text/event-stream, to initiate an SSE stream, or
//     Content-Type: application/json, to return one JSON object." (the
//     response modes in post.go and watcher.go)
//   - "The server MUST NOT send a JSON-RPC response on the stream unless
//     resuming a stream associated with a previous client request." (a GET
//     stream carries only notifications and the child's requests)
//   - "The server MUST send each of its JSON-RPC messages on only one of
//     the connected streams" and "MUST NOT replay messages that would have
//     been delivered on a different stream." (streams.go: event ids name
//     their stream; resumption replays only that stream)
//   - "The server MAY terminate the session at any time, after which it
//     MUST respond to requests containing that session ID with HTTP 404 Not
//     Found." (endpoint.go, sessionFrom)
//   - "If the server receives a request with an invalid or unsupported
//     MCP-Protocol-Version, it MUST respond with 400 Bad Request."
//     (version.go)
package session
