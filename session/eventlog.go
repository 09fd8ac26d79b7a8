package session

import (
	"strconv"
	"strings"
)

// event is one SSE event of a session: a message (or, with nil data, a
// priming event) on one stream.
type event struct {
	stream uint64
	kind   byte // 'g' GET stream, 'p' POST stream
	seq    uint64
	data   []byte
	last   bool // the stream ends after this event
}

// appendID writes the event id: kind, stream and sequence ("p3-17"). It is
// unique in the session and names the stream it belongs to.
func (ev event) appendID(dst []byte) []byte {
	dst = append(dst, ev.kind)
	dst = strconv.AppendUint(dst, ev.stream, 10)
	dst = append(dst, '-')
	return strconv.AppendUint(dst, ev.seq, 10)
}

// parseEventID reads an id written by appendID.
func parseEventID(id string) (kind byte, stream, seq uint64, ok bool) {
	if len(id) < 4 || (id[0] != 'g' && id[0] != 'p') {
		return 0, 0, 0, false
	}
	st, sq, found := strings.Cut(id[1:], "-")
	if !found {
		return 0, 0, 0, false
	}
	a, err1 := strconv.ParseUint(st, 10, 64)
	b, err2 := strconv.ParseUint(sq, 10, 64)
	if err1 != nil || err2 != nil {
		return 0, 0, 0, false
	}
	return id[0], a, b, true
}

// eventLog holds a session's most recent events, oldest first, in a ring
// that grows with use up to max (an idle session holds none). Sequence
// numbers are contiguous: every event of the session is logged, so the
// event with sequence q sits at a known place.
type eventLog struct {
	max   int
	ring  []event
	start int    // index of the oldest event once the ring is full
	first uint64 // sequence number of the oldest event; 0 when empty
}

// add logs ev, whose seq must follow the newest one's, and returns the event
// it pushed out of a full log (ok false when none).
func (l *eventLog) add(ev event) (dropped event, ok bool) {
	if len(l.ring) == 0 {
		l.first = ev.seq
	}
	if len(l.ring) < l.max {
		l.ring = append(l.ring, ev)
		return event{}, false
	}
	dropped = l.ring[l.start]
	l.ring[l.start] = ev
	l.start = (l.start + 1) % len(l.ring)
	l.first++
	return dropped, true
}

// oldest is the sequence number of the oldest event still logged, or next
// when the log is empty.
func (l *eventLog) oldest(next uint64) uint64 {
	if len(l.ring) == 0 {
		return next
	}
	return l.first
}

// at returns the event with sequence q, which must be logged.
func (l *eventLog) at(q uint64) *event {
	return &l.ring[(l.start+int(q-l.first))%len(l.ring)]
}

// has reports whether event q is logged.
func (l *eventLog) has(q uint64) bool {
	return len(l.ring) > 0 && q >= l.first && q < l.first+uint64(len(l.ring))
}
