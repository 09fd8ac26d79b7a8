package dispatch

import (
	"context"
	"time"

	"github.com/stelae-bridge/stelae-bridge/jsonrpc"
)

// Fan serves some of the calls a dispatcher's clients make on other
// dispatchers: a profile's (package profile) sends a tools/call straight
// to its member's dispatcher, so a call through a profile costs what a
// call at the member's own endpoint does. The calls Begin returns belong
// to the other dispatcher; the client's session is attached there through
// a Session of the fan's (AttachLike), so that dispatcher attributes what
// its child sends among its own callers, exactly as for its own clients.
// The fan gives the other dispatcher's child's requests ids of its own
// (two members' children both start at 0), through Call.Through and the
// Deliver of its sessions, and takes the clients' answers back (Respond).
type Fan interface {
	// Begin returns the call that serves m on another dispatcher, or nil:
	// d serves it itself (as it serves everything the fan cannot route at
	// once, so that d's own answer — a list, an error that names the
	// cause — comes).
	Begin(ctx context.Context, d *Dispatcher, s Session, m *jsonrpc.Message, timeout time.Duration, follow bool) *Call
	// Respond passes on s's answer to a request the fan gave an id of its
	// own; false when m's id is not one of those.
	Respond(s Session, m *jsonrpc.Message) (bool, error)
	// Cancelled passes on s's notifications/cancelled to the calls Begin
	// made for it.
	Cancelled(s Session, m *jsonrpc.Message)
	// Detach: s leaves d (cause as Dispatcher.Detach's); its calls on
	// the other dispatchers end with it.
	Detach(s Session, cause error)
}

// Relayed is implemented by a Session whose client hears the dispatcher's
// broadcasts through another of its sessions (a Fan's: the profile's
// child is a session of the member too, and relays them to every client
// of the profile). Broadcasts — a notification for every session, log
// lines fanned out (LogsFanout) — skip it: its client would get each
// twice.
type Relayed interface {
	Relayed() bool
}

// relayed reports whether s hears broadcasts through another session.
func relayed(s Session) bool {
	r, ok := s.(Relayed)
	return ok && r.Relayed()
}

// AttachLike attaches s with the capabilities session like declared at
// from (a Fan's session for a client of another dispatcher); false when
// like is not attached there.
func (d *Dispatcher) AttachLike(s Session, from *Dispatcher, like Session) bool {
	from.mu.RLock()
	caps, ok := from.sessions[like]
	from.mu.RUnlock()
	if ok {
		d.attach(s, caps)
	}
	return ok
}

// Through makes the caller see the call's related messages as related
// returns them and its end as end does (nil: as they are); set before the
// first Next (a Fan's calls: ids of the fan's own, errors that name the
// member).
func (call *Call) Through(related func([]byte) []byte, end func([]byte, error) ([]byte, error)) {
	call.relate = related
	switch {
	case end == nil:
	case call.after == nil:
		call.after = end
	default:
		first := call.after
		call.after = func(msg []byte, err error) ([]byte, error) { return end(first(msg, err)) }
	}
}

// relatedEvent is the event of a related message, as Through says.
func (call *Call) relatedEvent(msg []byte) Event {
	if call.relate != nil {
		msg = call.relate(msg)
	}
	return Event{Related: msg}
}
