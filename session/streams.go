package session

import (
	"sync"
)

// This file is how a session's messages reach its SSE streams. Every event
// is recorded once in the session's log; a stream holds no queue of its own,
// only a cursor into the log and a wake-up channel, so an idle stream costs
// a few hundred bytes and one notification costs one log entry per session
// however many streams it has. The stream's goroutine takes what is new
// under the session lock and writes it in one write.
//
// A stream whose cursor falls more than StreamQueue events behind (its
// client stopped reading) is kicked: dropped from the session and its
// connection aborted at once, so no work is spent on it any more; the
// client reconnects with Last-Event-ID and the log replays what it missed.

// stream is one open SSE connection that follows the session's log.
type stream struct {
	id   uint64 // the stream's own number: its priming event's id
	kind byte   // 'g' for GET streams, 'p' for a POST stream taken over
	// follows is the stream whose events it sends: 0, the shared GET
	// sequence, for GET streams; a POST stream's number for a resumer.
	follows uint64
	// next is the sequence number of the next event to consider. Guarded
	// by the session's mu.
	next uint64
	// wake has a buffer of one: there may be something new.
	wake chan struct{}
	// kicked is closed when the stream is dropped for falling behind.
	kicked chan struct{}
	once   sync.Once
	// abort ends the connection's writes at once (a blocked write fails).
	abort func()
}

func newStream(abort func()) *stream {
	return &stream{wake: make(chan struct{}, 1), kicked: make(chan struct{}), abort: abort}
}

func (st *stream) kick() {
	st.once.Do(func() {
		close(st.kicked)
		if st.abort != nil {
			st.abort()
		}
	})
}

func (st *stream) poke() {
	select {
	case st.wake <- struct{}{}:
	default:
	}
}

// recordLocked logs an event of stream id and returns it. s.mu must be held.
func (s *Session) recordLocked(id uint64, kind byte, data []byte, last bool) event {
	s.seq++
	ev := event{stream: id, kind: kind, seq: s.seq, data: data, last: last}
	if old, ok := s.log.add(ev); ok && old.kind == 'g' && old.stream == 0 && old.seq > s.handed {
		// A notification no stream ever got fell out of the log.
		s.ep.m.Dropped.Inc()
		if !s.dropping {
			s.dropping = true
			s.ep.log.Warn("session has no GET stream and its event log is full; the oldest notifications are lost until a stream attaches", "session", s.id, "event_log_size", s.log.max)
		}
	}
	return ev
}

// wakeLocked pokes the streams that follow stream `follows` and kicks the
// ones too far behind. s.mu must be held.
func (s *Session) wakeLocked(st *stream) bool {
	if s.seq+1-st.next > uint64(s.ep.opts.StreamQueue) || st.next < s.log.oldest(s.seq+1) {
		s.ep.m.Dropped.Inc()
		s.ep.log.Warn("SSE stream fell behind; closing it so the client reconnects", "session", s.id, "behind", s.seq+1-st.next)
		st.kick()
		return false
	}
	st.poke()
	return true
}

// Deliver implements dispatch.Session: it logs msg once for the session's
// GET streams and wakes them; while none is open it waits in the log for the
// next one. It never blocks.
func (s *Session) Deliver(msg []byte) bool {
	s.mu.Lock()
	if s.endReason != nil {
		s.mu.Unlock()
		s.ep.m.Dropped.Inc()
		return false
	}
	s.recordLocked(0, 'g', msg, false)
	for st := range s.gets {
		if !s.wakeLocked(st) {
			delete(s.gets, st)
		}
	}
	if len(s.gets) > 0 {
		s.handed = s.seq
	}
	s.mu.Unlock()
	s.ep.m.Delivered.Inc()
	return true
}

// openGet starts a GET stream. With lastEventID it resumes the stream that
// event belongs to from the log: a GET stream gets every notification after
// it (those that came while it was disconnected too); a POST stream its
// remaining messages and answer (done: the answer was already logged, the
// stream ends with the replay). Without one, or when the event is no longer
// in the log, a new stream starts and takes what waited for one. ok is false
// when the session has ended; full when it has its maximum of streams.
func (s *Session) openGet(lastEventID string, abort func()) (st *stream, resumed, done, ok, full bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.endReason != nil {
		return nil, false, false, false, false
	}
	if len(s.gets)+len(s.resumers) >= s.ep.opts.MaxStreamsPerSession {
		return nil, false, false, true, true
	}
	st = newStream(abort)
	s.lastStream++
	st.id, st.kind = s.lastStream, 'g'
	if kind, id, seq, parsed := parseEventID(lastEventID); parsed && seq <= s.seq && seq+1 >= s.log.oldest(s.seq+1) && (kind == 'g' || s.log.has(seq)) {
		st.next = seq + 1
		switch {
		case kind == 'g':
			s.gets[st] = struct{}{}
			s.handed = s.seq
		case s.postLive[id]:
			st.kind, st.follows, st.id = 'p', id, id
			if old := s.resumers[id]; old != nil {
				old.kick()
			}
			s.resumers[id] = st
		default:
			// The POST stream has ended: its answer is in the replay.
			st.kind, st.follows, st.id = 'p', id, id
			done = true
		}
		return st, true, done, true, false
	}
	if lastEventID != "" {
		s.ep.log.Info("Last-Event-ID not in the event log; opening a fresh stream", "session", s.id, "last_event_id", field(lastEventID))
	}
	// What waited for a stream: the GET events after the last one handed.
	st.next = max(s.handed+1, s.log.oldest(s.seq+1))
	s.handed = s.seq
	s.dropping = false
	s.gets[st] = struct{}{}
	return st, false, false, true, false
}

// appendNew appends to dst, as SSE, the events st has not sent yet, and
// moves its cursor past them. last reports that the stream's final event is
// among them (a POST stream's answer). kicked is true when what the stream
// needs has left the log (it must end).
func (s *Session) appendNew(st *stream, dst []byte) (out []byte, last, kicked bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st.next < s.log.oldest(s.seq+1) {
		return dst, false, true
	}
	for q := st.next; q <= s.seq; q++ {
		ev := s.log.at(q)
		if ev.kind == st.kind && ev.stream == st.follows && ev.data != nil {
			dst = appendEvent(dst, *ev)
			if ev.last {
				last = true
				break
			}
		}
	}
	st.next = s.seq + 1
	return dst, last, false
}

// closeStream forgets a GET connection.
func (s *Session) closeStream(st *stream) {
	s.mu.Lock()
	delete(s.gets, st)
	if st.kind == 'p' && s.resumers[st.follows] == st {
		delete(s.resumers, st.follows)
	}
	s.mu.Unlock()
	s.touch()
}

// openPost starts a POST stream for a call that switched to SSE.
func (s *Session) openPost() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastStream++
	s.postLive[s.lastStream] = true
	return s.lastStream
}

// emitPost records an event of POST stream id and wakes the GET that
// resumed the stream, if one did (its POST connection is then gone). last
// ends the stream.
func (s *Session) emitPost(id uint64, data []byte, last bool) event {
	s.mu.Lock()
	defer s.mu.Unlock()
	ev := s.recordLocked(id, 'p', data, last)
	if r := s.resumers[id]; r != nil && !s.wakeLocked(r) {
		delete(s.resumers, id)
	}
	if last {
		delete(s.postLive, id)
	}
	return ev
}

// prime records the priming event that opens a stream.
func (s *Session) prime(id uint64, kind byte) event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.recordLocked(id, kind, nil, false)
}
