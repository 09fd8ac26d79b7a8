package session

import (
	"errors"
	"fmt"

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
	if ep.users != nil {
		for _, ue := range ep.users.all() {
			if err := ue.ep.EndSession(prefix); !errors.Is(err, ErrNoSuchSession) {
				return err
			}
		}
		return ErrNoSuchSession
	}
	found, err := ep.reg.find(prefix)
	if err != nil {
		return err
	}
	ep.log.Info("session ended by the operator", "session", found.id)
	ep.endSession(found, errEndedByOperator)
	return nil
}

// Restart restarts the destination's child (dispatch.Restart); isolated
// per session, every session's own child. It returns how many children
// are starting because of it: 0 when none was running (nothing is
// started for nobody; the next call starts one).
func (ep *Endpoint) Restart() (int, error) {
	if ep.users != nil {
		n := 0
		var errs []error
		for _, ue := range ep.users.all() {
			k, err := ue.ep.Restart()
			n += k
			errs = append(errs, err)
		}
		return n, errors.Join(errs...)
	}
	if ep.perSession == nil {
		started, err := ep.shared.Restart()
		if started {
			return 1, err
		}
		return 0, err
	}
	ep.kids.mu.Lock()
	kids := make([]*dispatch.Dispatcher, 0, len(ep.kids.live))
	for d := range ep.kids.live {
		kids = append(kids, d)
	}
	ep.kids.mu.Unlock()
	n := 0
	var errs []error
	for _, d := range kids {
		started, err := d.Restart()
		if started {
			n++
		}
		errs = append(errs, err)
	}
	return n, errors.Join(errs...)
}

// ToolMarks is the destination's whole tool catalogue, each tool marked
// allowed or denied by its lists (dispatch.ToolMarks); isolated per
// session, a live session's child's.
func (ep *Endpoint) ToolMarks() ([]dispatch.ToolMark, bool) {
	if ep.users != nil {
		for _, ue := range ep.users.all() {
			if marks, known := ue.ep.ToolMarks(); known {
				return marks, true
			}
		}
		return nil, false
	}
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
