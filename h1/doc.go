// Package h1 is the bridge's HTTP/1.1 server: a fast path for the hot
// request — a strict POST whose Content-Length body came with its head —
// read and answered by its own code (fasthead.go, fastresponse.go), and
// every other request handed, with the connection and the bytes read, to
// net/http, which serves it exactly as it would have from the start; a
// connection net/http answered comes back once it has waited a second for
// its next request. Server's doc (server.go) is the contract: which
// requests the fast path takes and which of net/http's guarantees it keeps
// (a request and a ResponseWriter of the handler's own, the context, the
// answers as a client reads them: FuzzFastHead and FuzzFastResponse hold
// them to net/http's).
//
// It also owns the connection limit (connlimit.go, ConnLimit):
// -max-connections, half of them per source address, counted from accept
// to close on either path, the connection idle longest closed to make
// room, else 503 with Retry-After; and the connections' read buffers
// (connbuf.go: one owner at a time, recycled under recycle's rule).
//
// It is joined to the bridge at one seam, as x/net's http2 is to
// net/http: bridge makes a Server for its handler (NewServer, SetLimit),
// serves its listener (Serve), and at its end shuts it down or hands the
// socket over (StopAccepting, IdleConns, CloseIdle, Shutdown, Close). It
// knows nothing of MCP; it imports nothing of the house but httpx and
// recycle. Tests speak to it byte for byte through h1test.
package h1
