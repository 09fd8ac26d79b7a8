// Package session is the HTTP surface of each destination's MCP endpoint:
// header checks, sessions (ids, cap, expiry), SSE streams, heartbeats and the
// resumable event log.
package session

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stelae-bridge/stelae-bridge/dispatch"
)

// Session is one MCP client's Mcp-Session-Id on one destination.
type Session struct {
	id string
	ep *endpoint
	// d serves the session: the destination's shared child, or the
	// session's own (isolation: session).
	d        *dispatch.Dispatcher
	created  time.Time
	lastUsed atomic.Int64 // unix nanoseconds of the last request or stream end
	inflight atomic.Int32 // POSTs being served
	owner    principal    // the bearer token that created it (hashed)

	// ctx ends when the session does.
	ctx    context.Context
	cancel context.CancelFunc

	// mu guards every field below.
	mu sync.Mutex
	// version is the protocol version negotiated at initialize.
	version    string
	seq        uint64 // last event sequence number in this session
	lastStream uint64 // last stream number handed out
	log        eventLog
	// gets are the open GET streams; each receives the session's messages.
	gets map[*stream]struct{}
	// postLive holds the POST streams whose call is still going; resumers the
	// GET connections that took one over after its POST connection dropped.
	postLive  map[uint64]bool
	resumers  map[uint64]*stream
	backlog   [][]byte
	dropping  bool // the backlog overflowed since a stream last attached
	endReason error
}

// stream is one open SSE connection's queue.
type stream struct {
	id     uint64
	kind   byte // 'g' for GET streams, 'p' for POST streams
	ch     chan event
	kicked chan struct{} // closed when the stream fell behind
	once   sync.Once
}

func (st *stream) kick() { st.once.Do(func() { close(st.kicked) }) }

func newSession(id string, ep *endpoint) *Session {
	ctx, cancel := context.WithCancel(context.Background())
	s := &Session{id: id, ep: ep, d: ep.dispatcherFor(), created: time.Now(), ctx: ctx, cancel: cancel,
		gets: map[*stream]struct{}{}, postLive: map[uint64]bool{}, resumers: map[uint64]*stream{}}
	s.log.init(ep.opts.EventLogSize)
	s.touch()
	return s
}

var _ dispatch.Session = (*Session)(nil)

// SessionID implements dispatch.Session.
func (s *Session) SessionID() string { return s.id }

// setVersion records the protocol version the session negotiated.
func (s *Session) setVersion(v string) {
	s.mu.Lock()
	s.version = v
	s.mu.Unlock()
}

// protocolVersion is the negotiated version, or 2025-03-26 when unknown.
func (s *Session) protocolVersion() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.version == "" {
		return "2025-03-26"
	}
	return s.version
}

// primes reports whether the session's streams start with a priming event:
// from protocol version 2025-11-25 on.
func (s *Session) primes() bool { return s.protocolVersion() >= "2025-11-25" }

// Deliver implements dispatch.Session: it queues msg on every open GET
// stream, or in the bounded backlog while none is open. It never blocks; a
// stream whose queue is full is closed so its client reconnects and resumes.
func (s *Session) Deliver(msg []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.endReason != nil {
		return false
	}
	delivered := false
	defer func() {
		if delivered {
			s.ep.m.delivered.Inc()
		} else {
			s.ep.m.dropped.Inc()
		}
	}()
	for st := range s.gets {
		ev := s.recordLocked(st.id, st.kind, msg, false)
		select {
		case st.ch <- ev:
			delivered = true
		default:
			// Never wait on a slow client: end its connection; what it
			// missed stays in the event log for its reconnect.
			s.ep.log.Warn("SSE stream fell behind; closing it so the client reconnects", "session", s.id, "destination", s.ep.name, "queue", cap(st.ch))
			delete(s.gets, st)
			st.kick()
		}
	}
	if delivered {
		return true
	}
	delivered = true // kept in the backlog
	if len(s.backlog) >= s.ep.opts.BacklogSize {
		s.ep.m.dropped.Inc()
		// Keep the newest: drop the oldest.
		copy(s.backlog, s.backlog[1:])
		s.backlog = s.backlog[:len(s.backlog)-1]
		if !s.dropping {
			s.dropping = true
			s.ep.log.Warn("session has no GET stream and its backlog is full; dropping the oldest notifications until a stream attaches", "session", s.id, "destination", s.ep.name, "backlog", s.ep.opts.BacklogSize)
		}
	}
	s.backlog = append(s.backlog, msg)
	return true
}

// recordLocked logs an event of stream id and returns it. s.mu must be held.
func (s *Session) recordLocked(id uint64, kind byte, data []byte, last bool) event {
	s.seq++
	ev := event{stream: id, kind: kind, seq: s.seq, data: data, last: last}
	s.log.add(ev)
	return ev
}

// End implements dispatch.Session: the destination failed.
func (s *Session) End(reason error) {
	s.ep.reg.remove(s)
	s.close(reason)
}

// close ends the session's streams and marks it ended.
func (s *Session) close(reason error) {
	s.mu.Lock()
	if s.endReason == nil {
		s.endReason = reason
		s.backlog = nil
	}
	s.mu.Unlock()
	s.cancel()
}

// openGet starts a GET stream. With lastEventID it resumes the stream that
// event belongs to: replay holds the events after it, and done says the
// stream ends after the replay (a POST stream whose answer is in it).
// Without one, or when the event is no longer in the log, a new stream
// starts and takes the backlog.
func (s *Session) openGet(lastEventID string) (st *stream, replay []event, done, resumed, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.endReason != nil {
		return nil, nil, false, false, false
	}
	st = &stream{ch: make(chan event, s.ep.opts.StreamQueue), kicked: make(chan struct{})}
	if kind, id, seq, parsed := parseEventID(lastEventID); parsed && s.log.has(id, seq) {
		replay = s.log.after(id, seq)
		st.id, st.kind, resumed = id, kind, true
		switch {
		case kind == 'g':
			// What came while no GET stream was open follows the replay.
			s.takeBacklogLocked(st)
			s.gets[st] = struct{}{}
		case s.postLive[id]:
			if old := s.resumers[id]; old != nil {
				old.kick()
			}
			s.resumers[id] = st
		default:
			// The POST stream has ended: its answer is in the replay.
			done = true
		}
		return st, replay, done, true, true
	}
	if lastEventID != "" {
		s.ep.log.Info("Last-Event-ID not in the event log; opening a fresh stream", "session", s.id, "destination", s.ep.name, "last_event_id", lastEventID)
	}
	s.lastStream++
	st.id, st.kind = s.lastStream, 'g'
	s.takeBacklogLocked(st)
	s.gets[st] = struct{}{}
	return st, nil, false, false, true
}

// takeBacklogLocked moves the messages kept while the session had no GET
// stream onto st, recording each as an event of st. s.mu must be held.
func (s *Session) takeBacklogLocked(st *stream) {
	for len(s.backlog) > 0 && len(st.ch) < cap(st.ch) {
		st.ch <- s.recordLocked(st.id, st.kind, s.backlog[0], false)
		s.backlog = s.backlog[1:]
	}
	s.dropping = false
}

// closeStream forgets a GET connection.
func (s *Session) closeStream(st *stream) {
	s.mu.Lock()
	delete(s.gets, st)
	if s.resumers[st.id] == st {
		delete(s.resumers, st.id)
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

// emitPost records an event of POST stream id and hands it to the GET that
// resumed the stream, if one did (its POST connection is then gone). last
// ends the stream.
func (s *Session) emitPost(id uint64, data []byte, last bool) event {
	s.mu.Lock()
	defer s.mu.Unlock()
	ev := s.recordLocked(id, 'p', data, last)
	if r := s.resumers[id]; r != nil {
		select {
		case r.ch <- ev:
		default:
			r.kick()
			delete(s.resumers, id)
		}
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

func (s *Session) touch() { s.lastUsed.Store(time.Now().UnixNano()) }

// busy reports whether the session has a request in flight or an open
// stream.
func (s *Session) busy() bool {
	if s.inflight.Load() > 0 {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.gets)+len(s.resumers) > 0
}

// idleFor reports how long the session has had no request and no stream; 0
// while it is in use.
func (s *Session) idleFor(now time.Time) time.Duration {
	if s.busy() {
		return 0
	}
	return now.Sub(time.Unix(0, s.lastUsed.Load()))
}
