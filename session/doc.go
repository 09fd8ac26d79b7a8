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
//     session (endSession), whatever the reason; sessions across a
//     restart of the bridge (store.go: the Store seam and its bbolt file;
//     persist.go: what is written when, and Restore at the start);
//   - SSE: the POST→SSE switch (response modes), GET streams with
//     keepalives, per-session event logs and resumption with Last-Event-ID;
//   - the access log, with audit bodies through package redact, and the
//     endpoint's metrics (Metrics; the bridge registers them);
//   - what a principal is (principal.go): a session's owner, made by
//     PrincipalKey (HMAC-SHA256 under the install's key) from what the
//     bridge's auth layer admitted; and what a user is (user.go): the
//     person behind it, for a child per user;
//   - children per session ('isolation: session', isolation.go) and per
//     user ('isolation: user', users.go: an endpoint of each user's own,
//     made on their first request and let go when idle, under caps).
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
// Every POSTed call, of either era, is waited for by one loop (await.go):
// the handler's goroutine takes the call's events and hands them to the
// form of its answer (postAnswer for a session's call, requestAnswer for a
// request without a session), which decides JSON or SSE and keepalives.
//
// The 2026-07-28 era has its rooms here, beside the sessions and on the
// same child (a POST whose params._meta carries the protocol version; such a
// request has no session):
//   - stateless.go: the era's state (type stateless, the endpoint's sl:
//     parked calls, tasks, the keeper), telling the eras apart, the
//     validation ladder, server/discover, the flight of a stateless
//     request (statelessCaller, flight) and the form of its answer
//     (requestAnswer), in JSON or on a stream scoped to it;
//   - mrtr.go: a child's requests during a call become input_required
//     results (MRTR, with a requestState the bridge signs); parked calls
//     are the endpoint's and end at its Shutdown;
//   - listen.go: subscriptions/listen streams;
//   - tasks.go: the tasks extension, whose tasks the bridge keeps itself;
//   - keeper.go: holding the shared child for stateless callers.
//
// Translating between the eras (params as the child gets them, results
// marked complete, caching hints, server/discover from the handshake) is
// dispatch's, in one file: dispatch/translate.go. From SEP-2663:
//   - "A server MUST NOT return CreateTaskResult to a client that did not
//     include the extension capability on its request" (stateless.go: only
//     with the extension is a call given a grace period to become a task);
//   - "A server MUST NOT return CreateTaskResult until the task is durably
//     created" (adoptTask registers the task before answering);
//   - "Each request key in inputRequests MUST be unique over the lifetime of
//     a single task" (taskAsks never reuses a key);
//   - tasks/update and tasks/cancel "MUST acknowledge the request with an
//     empty result" with resultType "complete" (serveTaskMethod).
//
// The specification (MCP 2025-11-25, basic/transports) decides:
//   - "If the input is a JSON-RPC response or notification: If the server
//     accepts the input, the server MUST return HTTP status code 202
//     Accepted with no body." (post.go)
//   - "If the input is a JSON-RPC request, the server MUST either return
//     Content-Type: text/event-stream, to initiate an SSE stream, or
//     Content-Type: application/json, to return one JSON object." (the
//     response modes in post.go and postanswer.go)
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
