package session

import (
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
)

// errSessionCap is returned when a destination has no room for a session.
var errSessionCap = errors.New("session limit reached")

// registry holds the sessions of one destination.
type registry struct {
	max int

	// mu guards sessions.
	mu       sync.Mutex
	sessions map[string]*Session
}

func newRegistry(max int) *registry {
	return &registry{max: max, sessions: map[string]*Session{}}
}

// create adds a session with a fresh UUID v4. At the cap it first evicts the
// least recently used session of the same owner that is not busy (no open
// stream, no call in flight), however recently it was used: many clients
// (claude.ai conversations, Inspector runs, conformance suites) never send
// DELETE, and spec clients answer the evicted session's 404 by
// initializing again. Only the owner's own: with auth, one token's
// initializes cannot end another's sessions (without auth every session
// has the same, zero, owner). It returns that victim so the caller can end
// it; errSessionCap when none can go.
func (r *registry) create(ep *Endpoint, owner Principal) (s *Session, evicted *Session, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.sessions) >= r.max {
		var oldest int64
		for _, c := range r.sessions {
			if used := c.lastUsed.Load(); c.owner == owner && !c.busy() && (evicted == nil || used < oldest) {
				oldest, evicted = used, c
			}
		}
		if evicted == nil {
			return nil, nil, errSessionCap
		}
		delete(r.sessions, evicted.id)
	}
	s = newSession(uuid.NewString(), ep)
	s.owner = owner
	r.sessions[s.id] = s
	return s, evicted, nil
}

// restore adds a session kept from before a restart, under its id.
func (r *registry) restore(ep *Endpoint, id string, owner Principal) *Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := newSession(id, ep)
	s.owner = owner
	r.sessions[id] = s
	return s
}

func (r *registry) get(id string) *Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sessions[id]
}

// remove deletes s; false when it was already gone.
func (r *registry) remove(s *Session) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sessions[s.id] != s {
		return false
	}
	delete(r.sessions, s.id)
	return true
}

// expired removes and returns the sessions idle for at least ttl.
func (r *registry) expired(ttl time.Duration) []*Session {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*Session
	for id, s := range r.sessions {
		if s.idleFor(now) >= ttl {
			delete(r.sessions, id)
			out = append(out, s)
		}
	}
	return out
}

// find returns the one session whose id starts with prefix, leaving it in
// the registry (and every other session with it): ErrNoSuchSession when
// none does, ErrAmbiguousShort when more than one does.
func (r *registry) find(prefix string) (*Session, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var found *Session
	for id, s := range r.sessions {
		if strings.HasPrefix(id, prefix) {
			if found != nil {
				return nil, ErrAmbiguousShort
			}
			found = s
		}
	}
	if found == nil {
		return nil, ErrNoSuchSession
	}
	return found, nil
}

// list returns the sessions, leaving them in the registry.
func (r *registry) list() []*Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*Session, 0, len(r.sessions))
	for _, s := range r.sessions {
		out = append(out, s)
	}
	return out
}

// takeAll removes and returns every session: only for ending them all
// (the endpoint's shutdown or retirement). To look sessions up, use get,
// find or list, which leave them where they are.
func (r *registry) takeAll() []*Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*Session, 0, len(r.sessions))
	for id, s := range r.sessions {
		delete(r.sessions, id)
		out = append(out, s)
	}
	return out
}

func (r *registry) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.sessions)
}
