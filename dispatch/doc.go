// Package dispatch is the demultiplexer of one shared child: many sessions'
// JSON-RPC traffic over one stdio pipe pair (Dispatcher).
//
// It owns:
//   - upstream ids: every request to the child gets a fresh bridge-minted
//     integer id, registered as pending before it is written; the answer is
//     routed back by that id and the client's id restored byte for byte;
//   - calls (Call): the handle a caller waits on — Begin returns it, Next
//     yields its related messages, the caller's own ticks and its end; the
//     caller owns the wait;
//   - routing of what the child writes: responses to their calls, progress
//     (token rewritten both ways) to the call's caller, cancellations,
//     resources/updated to subscribers (reference-counted subscriptions),
//     the status of a task of the child's to the session that made it,
//     other notifications to every session, and the child's own requests
//     and log lines to the one user every client call in flight belongs
//     to — or to nobody, when calls of several users are in flight
//     (attribution.go: it refuses rather than guess); calls given up on
//     that the child may still work on (abandoned.go);
//   - the child's own tasks (MCP 2025-11-25, childtasks.go): each is the
//     user's whose call created it; another user's tasks/get, tasks/result
//     and tasks/cancel of it are answered as for an unknown task, and
//     tasks/list shows each user only theirs;
//   - the turns of an interactive destination (turns.go): the calls that
//     may ask their clients things run alone, so their requests are
//     routable;
//   - the fan (fan.go): a profile's calls served on its members'
//     dispatchers, their children's requests given ids of the fan's own
//     and attributed among the members' callers;
//   - which client capability a child's request needs (caps.go: an
//     elicitation needs the mode it asks in), for both eras' routing;
//   - the translation between the eras for a child of the 2025 era
//     (translate.go: server/discover, a request's params without the 2026
//     envelope, results marked complete), the tasks extension's view of
//     the catalogue (tasks.go) and the tools' mirrored headers
//     (toolheaders.go);
//   - the dialect of each child, chosen at its start (handshake.go asks
//     server/discover first): a child of the MCP 2026-07-28 era is spoken
//     to in it (modern.go) — no initialize, the caller's envelope in every
//     request, its input_required answers taken by 2026-07-28 callers as
//     they are and turned into a 2025 session's own requests, answered back
//     as the call's retry (exact attribution by construction) — and its
//     list changes and resource updates come from the one
//     subscriptions/listen the bridge holds with it (listen.go);
//   - the bridge's initialize handshake with each child start of the 2025
//     era, its cached result answered to every session's initialize,
//     version negotiation;
//   - the tool catalogue and the tool filter (a hidden tool never reaches
//     the child), and the screen that refuses what a lenient decoder could
//     read differently: a method in another letter case, and any member
//     the bridge routes, filters or rewrites by (a tool's or prompt's
//     name, a resource's uri, _meta.progressToken, a cancellation's
//     requestId) given twice or in another spelling (jsonrpc.ExactMember),
//     so that the child reads what the bridge read.
//
// It never starts, restarts or stops a process itself — its
// supervisor.Supervisor does, and hands it a running child through the
// Ready hook (after the handshake) — and it never speaks HTTP.
//
// Data path: session → Begin/Notify/Respond → (screen, filter, id and token
// rewrite by splicing, never re-encoding the client's params) →
// supervisor.Child.WriteMessage; the read goroutine (one per child) →
// jsonrpc.ParseInto → routeResponse / routeNotification /
// routeChildRequest → Call.reply, Call.related (+ relatedReady) or Session.Deliver.
//
// The specification (MCP 2025-11-25) decides:
//   - "Progress tokens MUST be a string or integer value" and "MUST be
//     unique across all active requests": each session's tokens could
//     collide on a shared child, so the bridge sends the upstream id as the
//     token and restores the client's on the way back.
//   - "The initialize request MUST NOT be cancelled by clients", and
//     cancellation notifications "MUST only reference requests that were
//     previously issued in the same direction": a client's cancellation is
//     mapped to the upstream id of that session's call, never another's.
//   - "If the server supports the requested protocol version, it MUST
//     respond with the same version. Otherwise, the server MUST respond with
//     another protocol version it supports" (handshake.go, negotiate).
package dispatch
