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

// eventLog is a bounded ring of a session's most recent events; the oldest
// are forgotten first.
type eventLog struct {
	ring  []event
	start int // index of the oldest event
	n     int
}

func (l *eventLog) init(size int) { l.ring = make([]event, size) }

func (l *eventLog) add(ev event) {
	if len(l.ring) == 0 {
		return
	}
	if l.n < len(l.ring) {
		l.ring[(l.start+l.n)%len(l.ring)] = ev
		l.n++
		return
	}
	l.ring[l.start] = ev
	l.start = (l.start + 1) % len(l.ring)
}

func (l *eventLog) at(i int) *event { return &l.ring[(l.start+i)%len(l.ring)] }

// has reports whether event (stream, seq) is still in the log.
func (l *eventLog) has(stream, seq uint64) bool {
	for i := 0; i < l.n; i++ {
		if ev := l.at(i); ev.stream == stream && ev.seq == seq {
			return true
		}
	}
	return false
}

// after returns the logged events of stream that came after seq, priming
// events left out.
func (l *eventLog) after(stream, seq uint64) []event {
	var out []event
	for i := 0; i < l.n; i++ {
		if ev := l.at(i); ev.stream == stream && ev.seq > seq && ev.data != nil {
			out = append(out, *ev)
		}
	}
	return out
}
