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
	// idHeader is id as a header value, assigned to answers' header maps
	// as it is (see jsonContentType); nothing may modify it.
	idHeader []string
	ep       *Endpoint
	// d serves the session: the destination's shared child, or the
	// session's own (isolation: session).
	d        *dispatch.Dispatcher
	created  time.Time
	lastUsed atomic.Int64 // unix nanoseconds of the last request or stream end
	inflight atomic.Int32 // POSTs being served
	owner    Principal    // the bearer token that created it (hashed)

	// ctx ends when the session does.
	ctx    context.Context
	cancel context.CancelCauseFunc

	// mu guards every field below.
	mu sync.Mutex
	// version is the protocol version negotiated at initialize.
	version string
	// initParams are the client's initialize params (kept with the
	// session in the Store).
	initParams []byte
	// client is its initialize's clientInfo as "name version"
	// (clientLabel), for the tail.
	client     string
	seq        uint64 // last event sequence number in this session
	lastStream uint64 // last stream number handed out
	// log holds the session's recent events. Notifications for GET streams
	// are logged once, as events of the shared GET sequence (stream 0),
	// however many GET streams are open; each stream follows the log with
	// its own cursor.
	log eventLog
	// gets are the open GET streams; each receives the session's messages.
	gets map[*stream]struct{}
	// handed is the last GET event handed to an open stream; the GET events
	// after it wait in the log for the next stream (the backlog).
	handed uint64
	// postLive holds the POST streams whose call is still going; resumers the
	// GET connections that took one over after its POST connection dropped.
	postLive  map[uint64]bool
	resumers  map[uint64]*stream
	dropping  bool // backlog events fell out of the log since a stream last attached
	endReason error
}

func newSession(id string, ep *Endpoint) *Session {
	ctx, cancel := context.WithCancelCause(context.Background())
	s := &Session{id: id, idHeader: []string{id}, ep: ep, d: ep.dispatcherFor(), created: time.Now(), ctx: ctx, cancel: cancel,
		gets: map[*stream]struct{}{}, postLive: map[uint64]bool{}, resumers: map[uint64]*stream{}}
	s.log.max = max(ep.opts.EventLogSize, ep.opts.StreamQueue)
	s.touch()
	return s
}

var _ dispatch.Session = (*Session)(nil)

// SessionID implements dispatch.Session.
func (s *Session) SessionID() string { return s.id }

// User implements dispatch.Session: the principal that created the session
// when auth is on (its sessions and stateless requests are one user), else
// the session itself.
func (s *Session) User() any { return userOf(s.owner, s) }

// userOf is the user of a caller whose principal is p: p when auth set one,
// else the caller itself.
func userOf(p Principal, self any) any {
	if p != (Principal{}) {
		return p
	}
	return self
}

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
		return dispatch.Version20250326
	}
	return s.version
}

// primes reports whether the session's streams start with a priming event:
// from protocol version 2025-11-25 on.
func (s *Session) primes() bool { return s.protocolVersion() >= dispatch.Version20251125 }

// End implements dispatch.Session: the destination failed.
func (s *Session) End(reason error) { s.ep.endSession(s, reason) }

// close ends the session's streams and marks it ended.
func (s *Session) close(reason error) {
	s.mu.Lock()
	if s.endReason == nil {
		s.endReason = reason
	}
	s.mu.Unlock()
	s.cancel(reason)
}

func (s *Session) touch() { s.touchAt(time.Now()) }

// touchAt records a use of the session at t.
func (s *Session) touchAt(t time.Time) { s.lastUsed.Store(t.UnixNano()) }

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
