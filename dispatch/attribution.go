package dispatch

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stelae-bridge/stelae-bridge/jsonrpc"
)

// Attribution. A stdio child's requests (sampling, elicitation, roots) and
// its log messages (notifications/message) carry no link to the call that
// caused them; on a shared child the bridge must decide whose they are,
// and when it cannot know, it gives them to nobody. A user is what
// Session.User names: a 2025 session, a stateless request (each its own),
// or — with auth — every session and request of one principal.
//
//   - Exact: every client call in flight belongs to one user (one call, or
//     several of the same user; abandoned calls the child may still be
//     working on count too, abandoned.go; calls parked for their clients'
//     input do not count beside a call that runs alone, turns.go). Requests
//     and log lines go to that user's newest call: its stream (a 2025 POST
//     stream, a stateless request's response stream), else its session's
//     GET stream.
//   - Ambiguous: calls of several users are in flight. The bridge cannot
//     know whose a request is, so the child gets an error at once
//     (refused, counted in Status.Refused, and logged once per destination
//     with the setting that makes it exact: 'interactive:', turns.go). A
//     log line follows Options.Logs (by default it is dropped and
//     counted).
//   - Idle: no client call is in flight (server-filesystem asks for roots
//     right after the handshake). A request goes to the one user
//     connected (one of its sessions that declared the capability the
//     request needs); with more than one connected it is refused. A log
//     line follows Options.Logs.
//
// A request also goes nowhere (the child gets an error at once, so it
// never waits for an answer that cannot come) when the chosen session did
// not declare the capability it needs, or when the only calls in flight
// are abandoned ones. An interactive destination (turns.go) runs the calls
// that may ask alone, so their requests are always exact.

// Values of Options.Logs: what becomes of a log line that cannot be
// attributed exactly.
const (
	// LogsAttributed (the default) gives a line that comes while no call
	// is in flight to the one user connected (a Transient caller does not
	// count), and drops every other line it cannot attribute (counted in
	// Status.LogsDropped).
	LogsAttributed = "attributed"
	// LogsFanout sends it to every session's GET stream, as a child that
	// logs only about itself would want.
	LogsFanout = "fanout"
	// LogsDrop drops it (counted in Status.LogsDropped).
	LogsDrop = "drop"
)

// Why the bridge refused a request of the child's (Status.Refused keys,
// the reason label of stelae_child_requests_refused_total).
const (
	// RefusedUsers: calls of more than one user were in flight.
	RefusedUsers = "several_users"
	// RefusedNoCall: no call was in flight and more than one user was
	// connected.
	RefusedNoCall = "no_call"
	// RefusedAbandoned: the only calls in flight were abandoned ones.
	RefusedAbandoned = "abandoned"
	// RefusedCapability: the user it would go to did not declare the
	// capability it needs.
	RefusedCapability = "capability"
	// RefusedNoSession: no session was connected.
	RefusedNoSession = "no_session"
	// RefusedQueueFull: the session it went to could take no more
	// messages.
	RefusedQueueFull = "queue_full"
)

// refusals lists the reasons.
var refusals = [...]string{RefusedUsers, RefusedNoCall, RefusedAbandoned, RefusedCapability, RefusedNoSession, RefusedQueueFull}

// RefusalReasons are the reasons a request of the child's is refused for
// (Status.Refused's keys).
func RefusalReasons() []string { return append([]string(nil), refusals[:]...) }

// inflight returns how many users the client calls in flight on the child
// belong to — 0, 1, or 2 for "more than one", abandoned calls included —
// and, when it is one, that user's newest call (nil when its only calls
// are abandoned ones). While a live call runs alone (turns.go), the calls
// parked for their clients' input (Call.Park) do not count: each is
// blocked on the answer to a request the child already sent for it, which
// waits for its client's retry, so what the child sends meanwhile is the
// call's that runs alone. (Abandoned calls, parked or not, still count:
// the child may go on with them.) d.pmu must be held.
func (d *Dispatcher) inflight(now time.Time) (newest *Call, users int) {
	var seen userSet
	aloneRuns := false
	if d.turns.alone {
		for _, q := range d.pending {
			if q.sess != nil && q.turn == alone {
				aloneRuns = true
				break
			}
		}
	}
	var up uint64
	for u, q := range d.pending {
		if q.sess == nil || q.waiting {
			continue // the bridge's own call, or one the child answered (modern.go)
		}
		if aloneRuns && q.parked != noTurn {
			continue // parked beside a call that runs alone
		}
		seen.see(q.sess.User())
		if u > up {
			up, newest = u, q
		}
	}
	d.expireAbandoned(now)
	for _, a := range d.abandoned {
		seen.see(a.user)
	}
	if seen.n != 1 {
		newest = nil
	}
	return newest, seen.n
}

// userSet counts the users seen, as 0, 1 or 2 ("more than one"), and
// keeps the one when there is one.
type userSet struct {
	owner any
	n     int
}

func (s *userSet) see(u any) {
	switch {
	case s.n == 0:
		s.owner, s.n = u, 1
	case s.n == 1 && u != s.owner:
		s.n = 2
	}
}

// connected returns how many users are connected — 0, 1, or 2 for "more
// than one"; Transient callers do not count — and the sessions of the one
// user that meet n (all of them when n needs nothing). d.mu must be held.
func (d *Dispatcher) connected(n need) (sessions []Session, users int) {
	var owner any
	for s, caps := range d.sessions {
		if t, ok := s.(Transient); ok && t.Transient() {
			continue
		}
		switch u := s.User(); {
		case users == 0:
			owner, users = u, 1
		case u != owner:
			return nil, 2
		}
		if n.met(caps) {
			sessions = append(sessions, s)
		}
	}
	return sessions, users
}

// refusal is why a request of the child's goes to nobody.
type refusal struct {
	reason string // one of refusals
	why    string
}

// attribute picks the session that answers a request the child sent (see
// the policy above), and registers it as the request's addressee.
//
// p is the newest call's pending entry when the message was queued for its
// caller (the POST stream); otherwise the caller delivers msg to target.
// When target is nil, no refusal says why.
func (d *Dispatcher) attribute(n need, childID json.RawMessage, msg []byte) (target Session, p *Call, no refusal) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	d.pmu.Lock()
	defer d.pmu.Unlock()
	p, users := d.inflight(time.Now())
	switch {
	case users > 1:
		return nil, nil, refusal{RefusedUsers, "calls of more than one user are in flight on the shared child (" + d.toolsInFlightLocked() + "), so the bridge cannot know whose it is"}
	case users == 1 && p == nil:
		return nil, nil, refusal{RefusedAbandoned, "the only calls in flight were abandoned (cancelled, timed out, or their session ended)"}
	case p != nil:
		if !n.met(d.sessions[p.sess]) {
			return nil, nil, refusal{RefusedCapability, "the session whose call is in flight did not declare the " + n.name + " capability"}
		}
		target = p.sess
		if !d.toCaller(p, msg) {
			p = nil
		}
	default:
		sessions, users := d.connected(n)
		switch {
		case users == 0:
			return nil, nil, refusal{RefusedNoSession, "no session is connected"}
		case users > 1:
			why := "no call is in flight and sessions of more than one user are connected (" + strconv.Itoa(len(d.sessions)) + " sessions), so it cannot be attributed to one"
			if n.name == "roots" {
				why += " (configure 'roots:' for the destination to have the bridge answer roots/list)"
			}
			return nil, nil, refusal{RefusedNoCall, why}
		case len(sessions) == 0:
			return nil, nil, refusal{RefusedCapability, "no call is in flight and the session connected did not declare the " + n.name + " capability"}
		}
		target = sessions[0]
	}
	d.childReqs[string(childID)] = childRequest{sess: target}
	return target, p, refusal{}
}

// toolsInFlightLocked names what the client calls in flight are ("tools
// search, ask; resources/read"), for the message that tells the operator
// which tools to declare interactive. d.pmu must be held.
func (d *Dispatcher) toolsInFlightLocked() string {
	var names []string
	for _, q := range d.pending {
		if q.sess == nil {
			continue
		}
		// The call's request as written to the child is its own until it
		// ends (a pending call's out does not change).
		method := jsonrpc.String(jsonrpc.Member(q.out, "method"))
		if method == "tools/call" {
			method = "tool " + strconv.Quote(jsonrpc.String(jsonrpc.Member(jsonrpc.Member(q.out, "params"), "name")))
		}
		if !slices.Contains(names, method) {
			names = append(names, method)
		}
	}
	slices.Sort(names)
	if len(names) == 0 {
		return "only abandoned calls"
	}
	return "calls in flight: " + strings.Join(names, ", ")
}

// routeLog sends a log message of the child's to the user it can be
// attributed to; one that cannot be attributed exactly follows
// Options.Logs. It never blocks.
func (d *Dispatcher) routeLog(line []byte) {
	msg := append([]byte(nil), line...)
	d.mu.RLock()
	defer d.mu.RUnlock()
	d.pmu.Lock()
	p, users := d.inflight(time.Now())
	if p != nil {
		if !d.toCaller(p, msg) && !p.sess.Deliver(msg) {
			d.logsDropped.Add(1)
		}
		d.pmu.Unlock()
		return
	}
	d.pmu.Unlock()
	switch {
	case d.opts.Logs == LogsFanout:
		for s := range d.sessions {
			if !relayed(s) {
				d.deliver(s, msg)
			}
		}
	case d.opts.Logs != LogsDrop && users == 0:
		// Idle: the one user connected, if there is one.
		sessions, users := d.connected(need{})
		delivered := false
		for _, s := range sessions {
			if users == 1 && s.Deliver(msg) {
				delivered = true
			}
		}
		if !delivered {
			d.logsDropped.Add(1)
		}
	default:
		d.logsDropped.Add(1)
	}
}
