package session

import (
	"errors"
	"fmt"
	"strings"

	"github.com/stelae-bridge/stelae-bridge/dispatch"
)

// The operator's actions on an endpoint (the console's): end a session,
// restart the child, see the whole tool catalogue with its allow/deny
// marks. None of them can change what the child runs.

// errEndedByOperator ends a session the operator ended; its calls in
// flight end with it and its next request gets 404.
var errEndedByOperator = fmt.Errorf("%w: the bridge's operator ended the session", dispatch.ErrCanceled)

// Errors of EndSession.
var (
	ErrNoSuchSession  = errors.New("no such session (it may have ended already)")
	ErrAmbiguousShort = errors.New("more than one session starts with that id; give more of it")
)

// EndSession ends the session whose id starts with prefix (at least the 8
// characters SessionInfo shows), as a DELETE from its client would: its
// streams close, its calls end, and its next request gets 404.
func (ep *Endpoint) EndSession(prefix string) error {
	if len(prefix) < 8 {
		return ErrNoSuchSession
	}
	var found *Session
	for _, s := range ep.reg.all() {
		if strings.HasPrefix(s.id, prefix) {
			if found != nil {
				return ErrAmbiguousShort
			}
			found = s
		}
	}
	if found == nil {
		return ErrNoSuchSession
	}
	ep.log.Info("session ended by the operator", "session", found.id)
	ep.endSession(found, errEndedByOperator)
	return nil
}

// Restart restarts the destination's child (dispatch.Restart); isolated
// per session, every session's own child.
func (ep *Endpoint) Restart() error {
	if ep.perSession == nil {
		return ep.shared.Restart()
	}
	ep.kids.mu.Lock()
	kids := make([]*dispatch.Dispatcher, 0, len(ep.kids.live))
	for d := range ep.kids.live {
		kids = append(kids, d)
	}
	ep.kids.mu.Unlock()
	var errs []error
	for _, d := range kids {
		errs = append(errs, d.Restart())
	}
	return errors.Join(errs...)
}

// ToolMarks is the destination's whole tool catalogue, each tool marked
// allowed or denied by its lists (dispatch.ToolMarks); isolated per
// session, a live session's child's.
func (ep *Endpoint) ToolMarks() ([]dispatch.ToolMark, bool) {
	if ep.perSession == nil {
		return ep.shared.ToolMarks()
	}
	ep.kids.mu.Lock()
	defer ep.kids.mu.Unlock()
	for d := range ep.kids.live {
		if marks, known := d.ToolMarks(); known {
			return marks, true
		}
	}
	return nil, false
}
