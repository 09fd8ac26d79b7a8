// Package session is the HTTP surface of each destination's MCP endpoint:
// header checks, sessions (ids, cap, expiry), SSE streams and heartbeats.
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
	id       string
	ep       *endpoint
	created  time.Time
	lastUsed atomic.Int64 // unix nanoseconds of the last request or stream end
	inflight atomic.Int32 // POSTs being served
	eventSeq atomic.Uint64

	// ctx ends when the session does.
	ctx    context.Context
	cancel context.CancelFunc

	// mu guards streams, backlog, dropping and endReason.
	mu        sync.Mutex
	streams   map[*stream]struct{}
	backlog   [][]byte
	dropping  bool // the backlog overflowed since a stream last attached
	endReason error
}

// stream is one open GET (SSE) stream of a session.
type stream struct {
	ch     chan []byte
	kicked chan struct{} // closed when the stream fell behind
	once   sync.Once
}

func (st *stream) kick() { st.once.Do(func() { close(st.kicked) }) }

func newSession(id string, ep *endpoint) *Session {
	ctx, cancel := context.WithCancel(context.Background())
	s := &Session{id: id, ep: ep, created: time.Now(), ctx: ctx, cancel: cancel, streams: map[*stream]struct{}{}}
	s.touch()
	return s
}

var _ dispatch.Session = (*Session)(nil)

// SessionID implements dispatch.Session.
func (s *Session) SessionID() string { return s.id }

// Deliver implements dispatch.Session: it queues msg on every open stream, or
// in the bounded backlog while none is open. It never blocks; a stream whose
// queue is full is closed so its client reconnects.
func (s *Session) Deliver(msg []byte) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.endReason != nil {
		return false
	}
	if len(s.streams) == 0 {
		if len(s.backlog) >= s.ep.opts.BacklogSize {
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
	delivered := false
	for st := range s.streams {
		select {
		case st.ch <- msg:
			delivered = true
		default:
			// Never wait on a slow client: end its stream; it reconnects.
			s.ep.log.Warn("SSE stream fell behind; closing it so the client reconnects", "session", s.id, "destination", s.ep.name, "queue", cap(st.ch))
			delete(s.streams, st)
			st.kick()
		}
	}
	if !delivered && len(s.streams) == 0 {
		s.backlog = append(s.backlog, msg)
		return true
	}
	return delivered
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

// openStream registers a new GET stream and hands it the backlog.
func (s *Session) openStream() (*stream, bool) {
	st := &stream{ch: make(chan []byte, s.ep.opts.StreamQueue), kicked: make(chan struct{})}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.endReason != nil {
		return nil, false
	}
	for len(s.backlog) > 0 && len(st.ch) < cap(st.ch) {
		st.ch <- s.backlog[0]
		s.backlog = s.backlog[1:]
	}
	s.dropping = false
	s.streams[st] = struct{}{}
	return st, true
}

func (s *Session) closeStream(st *stream) {
	s.mu.Lock()
	delete(s.streams, st)
	s.mu.Unlock()
	s.touch()
}

func (s *Session) touch() { s.lastUsed.Store(time.Now().UnixNano()) }

// idleFor reports how long the session has had no request and no stream; 0
// while it is in use.
func (s *Session) idleFor(now time.Time) time.Duration {
	if s.inflight.Load() > 0 {
		return 0
	}
	s.mu.Lock()
	n := len(s.streams)
	s.mu.Unlock()
	if n > 0 {
		return 0
	}
	return now.Sub(time.Unix(0, s.lastUsed.Load()))
}
