// Package supervisor owns a destination's child processes and their
// lifetimes.
//
// It owns:
//   - Supervisor: start on demand (the first session's Hold, or Prestart),
//     the Ready hook that must accept a child before it serves, restart
//     with backoff after a crash, the stable-run reset, the failed state,
//     linger after the last session, Status, and Close, which waits for
//     every goroutine and timer it started;
//   - Process: the child itself — its own process group, bridge-owned
//     pipes, stderr lines logged, stop escalation (close stdin, SIGTERM,
//     SIGKILL to the group), the line reader with its size limit (a line
//     lent until the next read), the stdin queue (one writer at a time,
//     batches in a recycle.Batch; Enqueue for the stdout reader, which
//     must never wait on stdin), write deadlines, and the stop of a child
//     that stops reading its stdin;
//   - the reaper (this binary in a hidden mode) that kills a child's group
//     when the bridge dies outright, and the records that let the next
//     bridge kill what a killed one left;
//   - the child's environment: the bridge's own, minus the bridge's
//     settings and secrets (ChildEnviron).
//
// What differs by platform lives in one file per platform and concern,
// under one contract each: spawn_*.go (the process group, and how a reaper
// learns of the bridge's death: Linux's parent-death signal, macOS's
// kqueue) and proc_*.go (process look-ups for the records and the reaper:
// /proc, sysctl kern.proc; the platform's state directory). Windows is not
// built yet.
//
// It never reads the JSON-RPC inside a line and knows nothing of sessions
// or HTTP: its user (package dispatch) does the handshake in Ready and
// routes the lines.
//
// Data path: Launcher → Child (ReadMessage, WriteMessage) → the Ready hook
// → Running/Current hand the child to callers; on exit, the restart loop →
// Launcher again, or failed.
//
// The specification (MCP 2025-11-25, basic/transports, stdio) decides:
// "Messages are delimited by newlines, and MUST NOT contain embedded
// newlines" (the line reader), and "The server MUST NOT write anything to
// its stdout that is not a valid MCP message" — a child that does anyway
// has the line skipped and logged, never passed on.
package supervisor
