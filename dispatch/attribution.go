package dispatch

import (
	"encoding/json"
	"strconv"
)

// Attribution. A stdio child's requests (sampling, elicitation, roots) and
// its log messages (notifications/message) carry no link to the call that
// caused them; on a shared child the bridge must decide whose they are.
//
//   - Exact: every client call in flight belongs to one session (one call,
//     or several of the same session; a modern request is a session of its
//     own). Requests and log lines go to that session: the stream of its
//     newest call (a 2025 POST stream, a modern request's response stream),
//     else its GET stream.
//   - Ambiguous: calls of several sessions are in flight. A log line follows
//     Options.Logs (by default it is dropped and counted: no session gets
//     another's lines). A request goes to the session of the newest call in
//     flight, as the bridge has always done: the request usually comes
//     right after the call that causes it starts (refusing it would break
//     every overlap of two clients), but it can be another's. A destination
//     whose child asks its clients things while serving several users
//     should be interactive.
//   - Idle: no client call is in flight (server-filesystem asks for roots
//     right after the handshake). A request goes to the only session that
//     declared the capability it needs; a log line follows Options.Logs.
//
// A request goes nowhere (the child gets an error at once, so it never
// waits for an answer that cannot come) when the chosen session did not
// declare the capability it needs. An interactive destination
// (Options.Interactive, interactive.go) has at most one client call in
// flight, so attribution is always exact or idle. A call the client
// abandoned is no longer in flight.

// Values of Options.Logs: what becomes of a log line that cannot be
// attributed exactly.
const (
	// LogsAttributed (the default) gives it to the sole session when only
	// one is attached (a Transient caller does not count) and drops it
	// otherwise (counted in Status.LogsDropped).
	LogsAttributed = "attributed"
	// LogsFanout sends it to every session's GET stream, as a child that
	// logs only about itself would want.
	LogsFanout = "fanout"
	// LogsDrop drops it (counted in Status.LogsDropped).
	LogsDrop = "drop"
)

// inflight returns the newest client call in flight and how many sessions
// the client calls in flight belong to: 0, 1, or 2 for "more than one".
// d.pmu must be held.
func (d *Dispatcher) inflight() (newest *Call, sessions int) {
	var up uint64
	var owner Session
	for u, q := range d.pending {
		if q.sess == nil {
			continue // the bridge's own call
		}
		switch {
		case owner == nil:
			owner, sessions = q.sess, 1
		case q.sess != owner:
			sessions = 2
		}
		if u > up {
			up, newest = u, q
		}
	}
	return newest, sessions
}

// attribute picks the session that answers a request the child sent (see
// the policy above), and registers it as the request's addressee.
//
// p is the newest call's pending entry when the message was queued for its
// caller (the POST stream); otherwise the caller delivers msg to target.
// why says, when target is nil, why no session can take it.
func (d *Dispatcher) attribute(n need, childID json.RawMessage, msg []byte) (target Session, p *Call, why string) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	d.pmu.Lock()
	defer d.pmu.Unlock()
	p, _ = d.inflight()
	switch {
	case p != nil:
		if !n.met(d.sessions[p.sess]) {
			return nil, nil, "the session whose call is the newest in flight did not declare the " + n.name + " capability"
		}
		target = p.sess
		if !d.toCaller(p, msg) {
			p = nil
		}
	default:
		var count int
		for s, caps := range d.sessions {
			if n.met(caps) {
				target = s
				count++
			}
		}
		switch {
		case count == 0 && n.name != "":
			return nil, nil, "no call is in flight and no session declared the " + n.name + " capability"
		case count == 0:
			return nil, nil, "no session is connected"
		case count > 1:
			why = "no call is in flight, and " + strconv.Itoa(count) + " sessions could answer it, so it cannot be attributed to one"
			if n.name == "roots" {
				why += " (configure 'roots:' for the destination to have the bridge answer roots/list)"
			}
			return nil, nil, why
		}
	}
	d.childReqs[string(childID)] = childRequest{sess: target}
	return target, p, ""
}

// routeLog sends a log message of the child's to the session it can be
// attributed to; one that cannot be attributed exactly follows
// Options.Logs. It never blocks.
func (d *Dispatcher) routeLog(line []byte) {
	msg := append([]byte(nil), line...)
	d.mu.RLock()
	defer d.mu.RUnlock()
	d.pmu.Lock()
	p, sessions := d.inflight()
	if sessions == 1 {
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
			d.deliver(s, msg)
		}
	case d.opts.Logs != LogsDrop:
		var sole Session
		n := 0
		for s := range d.sessions {
			if t, ok := s.(Transient); ok && t.Transient() {
				continue
			}
			sole = s
			n++
		}
		if n != 1 || !sole.Deliver(msg) {
			d.logsDropped.Add(1)
		}
	default:
		d.logsDropped.Add(1)
	}
}
