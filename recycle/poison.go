package recycle

// Poison fills b up to its capacity with PoisonByte when Enabled; otherwise
// it does nothing. Call it on a buffer as it is given back (to a pool, or
// to a batch as its spare), never on one that is still referenced by
// design.
func Poison(b []byte) {
	if !Enabled {
		return
	}
	b = b[:cap(b)]
	if len(b) == 0 {
		return
	}
	// Doubling copies: a few memmoves for a MiB, not a loop per byte.
	b[0] = PoisonByte
	for n := 1; n < len(b); n *= 2 {
		copy(b[n:], b[:n])
	}
}

// PoisonByte is what a poisoned buffer holds: not UTF-8, so no JSON
// parser, HTTP parser or digest takes it for data.
const PoisonByte = 0xFE

// Poisoned reports whether b (up to its length) is all PoisonByte: a
// test's check that what it holds was given back.
func Poisoned(b []byte) bool {
	for _, c := range b {
		if c != PoisonByte {
			return false
		}
	}
	return len(b) > 0
}
