//go:build windows

package main

// monotonicUsec: systemd does not run on Windows (the notifier is never
// made there: no NOTIFY_SOCKET).
func monotonicUsec() int64 { return 0 }
