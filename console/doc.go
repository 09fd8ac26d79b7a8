// Package console is the operator console: one small page at /console,
// its assets embedded in the binary, that shows what the bridge is doing —
// each destination's child (state, pid, uptime, restarts, backoff, why it
// failed, start progress), its sessions, calls per second and errors, the
// tool catalogue with its allow/deny marks, a live tail of the access log,
// the built-in server's OAuth clients and the profiles — and offers the
// operator's three safe actions: end a session, restart a child, revoke a
// client. Nothing here can add or change a command.
//
// It reads only what the bridge hands it through Backend (the status APIs
// of dispatch, supervisor, session and authserver) and the access entries
// each endpoint gives its Tail; the page follows them over one SSE stream
// (a snapshot a second, new log entries four times a second), so the call
// path pays one short locked append per POST and nothing per viewer.
//
// Who may see it (access.go): with auth on, an operator — a static
// operator token (Authorization: Bearer, or typed on the sign-in page) or
// the built-in authorization server's passphrase — never an MCP client's
// access token alone; with auth off, whoever has the console's per-run
// token (random, made by New, printed once in the bridge's banner as the
// link /console?token=…, which signs the browser in) and is on this
// machine (a loopback peer, a loopback Host, no proxy's forwarding
// headers) unless Options.Remote. Tokens are checked first, in constant
// time, and never held by a lockout (they cannot be guessed); the
// passphrase is checked by the built-in server under the approval page's
// lockout and with its ways in (a trusted browser, the unlock code);
// without one, the console's own counts (package lockout: per address and
// for everyone, forgotten after an hour) hold wrong tries. Every answer
// carries a CSP without 'unsafe-inline', X-Frame-Options DENY and
// no-store; every action needs the page's CSRF token and a same-origin
// request.
package console
