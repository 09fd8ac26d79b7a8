package recycle

// Batch collects bytes from many writers for one taker at a time, in two
// buffers that take turns: while the taker writes one, writers append to
// the other. Its owner guards it with a lock of its own (Batch has none)
// and lets one taker at a time hold a taken buffer.
//
// Ownership: the buffer being appended to (cur) and the spare belong to
// the Batch, under its owner's lock. Take hands cur to the taker, who owns
// it alone until it calls Give — the Batch keeps no reference to it, and
// the spare becomes cur. Give makes a written buffer the spare again
// (poisoned first), or drops it when it grew past Keep or a spare is there
// already.
type Batch struct {
	// Keep is the largest buffer (by capacity) kept as the spare; a
	// larger one goes to the collector, so one burst does not pin memory.
	Keep int
	cur  []byte
	// spare has length 0, or is nil.
	spare []byte
}

// Append adds p to the batch.
func (b *Batch) Append(p []byte) { b.cur = append(b.cur, p...) }

// AppendLine adds p and a newline.
func (b *Batch) AppendLine(p []byte) { b.cur = append(append(b.cur, p...), '\n') }

// Len is the number of bytes waiting.
func (b *Batch) Len() int { return len(b.cur) }

// Take returns the bytes waiting; the caller owns them until Give. The
// batch goes on in its spare (or a new buffer).
func (b *Batch) Take() []byte {
	t := b.cur
	b.cur, b.spare = b.spare, nil
	return t
}

// Give returns a buffer that Take returned, once it is written and
// nothing refers to it.
func (b *Batch) Give(t []byte) {
	if Enabled && cap(t) > 0 && cap(b.cur) > 0 && &t[:1][0] == &b.cur[:1][0] {
		panic("recycle: a buffer given back to a batch that still appends to it")
	}
	if cap(t) == 0 || cap(t) > b.Keep || b.spare != nil {
		return
	}
	Poison(t)
	b.spare = t[:0]
}

// Drop forgets what is waiting (the writes failed for good).
func (b *Batch) Drop() { b.cur, b.spare = nil, nil }
