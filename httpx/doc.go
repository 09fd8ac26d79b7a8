// Package httpx is the small HTTP leaf the rooms that answer requests
// share, one owner for each piece: the bearer token's parse and its
// constant-time match (bearer.go), the JSON-RPC error answers of the
// bridge's own transport errors with the code each protocol era takes
// (errors.go), and the header reads, the Accept parser and the SSE
// response headers (header.go). bridge, session and console use it; it
// imports nothing of the house but jsonrpc.
package httpx
