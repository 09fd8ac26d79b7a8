// Package supervisor owns a destination's child processes and their
// lifetimes.
//
// It owns:
//   - Supervisor: start on demand (the first session's Hold, or Prestart),
//     the Ready hook that must accept a child before it serves, restart
//     with backoff after a crash, the stable-run reset, the failed state,
//     linger after the last session, Status, and Close, which waits for
//     every goroutine and timer it started;
//   - Process: the child itself — its own process group (a job object on
//     Windows), bridge-owned pipes, stderr lines logged, stop escalation
//     (close stdin, SIGTERM, SIGKILL to the group; on Windows, close stdin,
//     terminate the job), the line reader with its size limit (a line lent
//     until the next read), the stdin queue (one writer at a time, batches
//     in a recycle.Batch; Enqueue for the stdout reader, which must never
//     wait on stdin), write deadlines (a timer where stdin takes none), and
//     the stop of a child that stops reading its stdin;
//   - the reaper (this binary in a hidden mode) that kills a child's group
//     when the bridge dies outright, and the records that let the next
//     bridge kill what a killed one left (Unix; a job object needs neither);
//   - the child's environment: the bridge's own, minus the bridge's
//     settings and secrets (ChildEnviron), by the platform's rules for
//     names (case-insensitive on Windows).
//
// What differs by platform lives in one file per platform and concern,
// under one contract each (written in the first file named):
// tree_{unix,windows}.go (a child's processes held together: a process
// group, or a job object), spawn_{linux,darwin,windows}.go (how a child is
// created, and how a reaper learns of the bridge's death: Linux's
// parent-death signal, macOS's kqueue), reaper{,_unix,_windows}.go,
// records.go and records_windows.go, proc_{linux,darwin,windows}.go
// (process look-ups for the records and the reaper: /proc, sysctl
// kern.proc; the platform's state directory, statedir.go) and
// env_{unix,windows}.go. Windows's rules for names and arguments
// (env_windowsrules.go, batchargs.go) are built on every platform so that
// their tests run everywhere; config holds the rules for finding commands
// (PATHEXT) the same way.
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
