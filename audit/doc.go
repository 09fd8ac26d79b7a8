// Package audit keeps the audit trail: one JSON line per MCP message a
// client POSTed — who (the operator's name for the user, the client's
// name and version), where (destination or profile), what (method, tool,
// arguments), what became of it (outcome, result, duration) and its trace
// id — written to a file that rotates by size, or to stdout.
//
// A Trail is a session.Tail: the endpoints hand it each POST's entry
// after the POST was answered. Access never blocks and never does I/O:
// it queues the entry, bounded in entries and in bytes, and a full queue
// counts the entry as dropped (stelae_audit_dropped_total, a warning, and
// a "dropped" line in the trail itself) rather than waiting. One
// goroutine, owned by the Trail and waited for by Close, redacts (package
// redact, as the log's audit of bodies does) or hashes the bodies,
// writes the lines, fsyncs them in batches (at most SyncEvery apart, and
// at rotation and Close) and rotates the file past MaxSize, keeping Keep
// old files (PATH.1 the newest).
//
// It imports session for the entry it is handed, and redact; nothing of
// the bridge imports it but the packages that wire it (bridge, cmd).
package audit
