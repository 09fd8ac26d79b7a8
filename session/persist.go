package session

import (
	"cmp"
	"slices"
	"time"

	"github.com/stelae-bridge/stelae-bridge/jsonrpc"
)

// This file keeps an endpoint's sessions in its Store (Options.Store), so
// that they survive a restart of the bridge.

// record is what the Store keeps of s.
func (s *Session) record() StoredSession {
	s.mu.Lock()
	defer s.mu.Unlock()
	return StoredSession{ID: s.id, Owner: s.owner, Version: s.version, InitParams: s.initParams, LastUsed: time.Unix(0, s.lastUsed.Load()), Created: s.created,
		UserKey: s.ep.user.Key, UserName: s.ep.user.Name}
}

// persist writes a new session to the Store.
func (ep *Endpoint) persist(s *Session) {
	if ep.opts.Store == nil {
		return
	}
	if err := ep.opts.Store.Save(ep.name, []StoredSession{s.record()}); err != nil {
		ep.log.Warn("cannot keep the session in the sessions file: it will not survive a restart", "session", s.id, "error", err)
	}
}

// forget removes a session that ended for good from the Store.
func (ep *Endpoint) forget(s *Session) {
	if err := ep.opts.Store.Delete(ep.name, s.id); err != nil {
		ep.log.Warn("cannot remove an ended session from the sessions file", "session", s.id, "error", err)
	}
}

// saveSessions writes every session's last use to the Store, as the bridge
// shuts down.
func (ep *Endpoint) saveSessions() {
	if ep.opts.Store == nil {
		return
	}
	var recs []StoredSession
	for _, s := range ep.reg.list() {
		if r := s.record(); r.Version != "" { // initialized
			recs = append(recs, r)
		}
	}
	if err := ep.opts.Store.Save(ep.name, recs); err != nil {
		ep.log.Warn("cannot save the sessions for the next bridge", "sessions", len(recs), "error", err)
	}
}

// Restore takes back the sessions the Store kept for this destination:
// the most recently used, up to the session cap, that have not expired
// (the rest are removed). Each is attached to the shared child with its
// client's capabilities; the child starts when a call comes. The bridge
// calls it once, as it starts (not for an endpoint a reload made: the
// sessions of a changed destination end).
func (ep *Endpoint) Restore() {
	if ep.opts.Store == nil {
		return
	}
	recs, err := ep.opts.Store.Load(ep.name)
	if err != nil {
		ep.log.Warn("cannot read the sessions file: earlier sessions are not taken back", "error", err)
		return
	}
	if ep.users != nil {
		ep.users.restore(ep, recs)
		return
	}
	ep.restoreRecords(recs)
}

// restoreRecords takes back recs (see Restore).
func (ep *Endpoint) restoreRecords(recs []StoredSession) {
	slices.SortFunc(recs, func(a, b StoredSession) int { return b.LastUsed.Compare(a.LastUsed) })
	now, kept := time.Now(), 0
	for _, r := range recs {
		if now.Sub(r.LastUsed) >= ep.opts.SessionTTL || kept >= ep.opts.MaxSessions || r.Version == "" {
			_ = ep.opts.Store.Delete(ep.name, r.ID)
			continue
		}
		s := ep.reg.restore(ep, r.ID, r.Owner)
		s.lastUsed.Store(r.LastUsed.UnixNano())
		// Its age goes on from its initialize, not from this restart (a
		// record without it was made no later than its last use).
		created := r.Created
		if created.IsZero() || created.After(r.LastUsed) {
			created = r.LastUsed
		}
		s.mu.Lock()
		s.created = created
		s.mu.Unlock()
		s.setVersion(r.Version)
		s.mu.Lock()
		s.initParams, s.client = r.InitParams, clientLabel(jsonrpc.Member(r.InitParams, "clientInfo"))
		s.mu.Unlock()
		s.d.Attach(s, r.InitParams)
		kept++
	}
	if kept > 0 {
		ep.log.Info("sessions taken back from before the restart", "sessions", kept)
	}
}

// SessionInfo is what an operator is shown of a session (/healthz?verbose):
// never its whole id, which is a credential where auth is off.
type SessionInfo struct {
	// ID is the id's first 8 characters (the log names it whole).
	ID string `json:"id"`
	// Client is the clientInfo of its initialize: "name version".
	Client          string  `json:"client,omitempty"`
	ProtocolVersion string  `json:"protocol_version"`
	AgeS            float64 `json:"age_s"`
	IdleS           float64 `json:"idle_s"`
	Inflight        int     `json:"inflight"`
	Streams         int     `json:"streams"`
	// Principal is whose session it is (Principal.Short).
	Principal string `json:"principal"`
}

// Sessions describes the live sessions, the most recently used first.
func (ep *Endpoint) Sessions() []SessionInfo {
	if ep.users != nil {
		var out []SessionInfo
		for _, ue := range ep.users.all() {
			out = append(out, ue.ep.Sessions()...)
		}
		return out
	}
	now := time.Now()
	var out []SessionInfo
	for _, s := range ep.reg.list() {
		s.mu.Lock()
		info := SessionInfo{ID: s.id[:8], ProtocolVersion: s.version, Streams: len(s.gets), Inflight: int(s.inflight.Load()),
			AgeS: now.Sub(s.created).Round(time.Millisecond).Seconds(), IdleS: now.Sub(time.Unix(0, s.lastUsed.Load())).Round(time.Millisecond).Seconds()}
		info.Client = s.client
		s.mu.Unlock()
		info.Principal = s.owner.Short()
		out = append(out, info)
	}
	slices.SortFunc(out, func(a, b SessionInfo) int { return cmp.Compare(a.IdleS, b.IdleS) })
	return out
}
