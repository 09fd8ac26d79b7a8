package h1

// fdLimit: Windows has no file-descriptor limit for sockets (its handles
// are bounded by memory).
func fdLimit() (uint64, bool) { return 0, false }
