package dispatch

import (
	"encoding/json"
	"errors"
	"strconv"
)

// read is the one goroutine that reads the child's stdout. It never blocks on
// a session: deliveries are non-blocking.
func (d *Dispatcher) read(c *child) {
	defer func() {
		// Requests from this child can no longer be answered.
		d.pmu.Lock()
		clear(d.childReqs)
		d.pmu.Unlock()
		close(c.done)
	}()
	var m Message
	for {
		line, err := c.conn.ReadMessage()
		if err != nil {
			var tooLong *LineTooLongError
			if errors.As(err, &tooLong) {
				d.lineTooLong(tooLong)
				continue
			}
			return
		}
		if len(line) == 0 {
			continue
		}
		if err := ParseInto(line, &m); err != nil {
			d.log.Warn("child wrote a line that is not a JSON-RPC message; skipped", "destination", d.opts.Name, "error", err, "line", truncate(line, 200))
			continue
		}
		switch m.Kind() {
		case KindResponse:
			d.routeResponse(&m)
		case KindNotification:
			if m.Method == "notifications/tools/list_changed" {
				d.refreshTools(c) // never blocks: the fetch has its own goroutine
			}
			d.routeNotification(&m, line)
		case KindRequest:
			d.routeChildRequest(c, &m, line)
		default:
			d.log.Warn("child wrote an invalid JSON-RPC message; skipped", "destination", d.opts.Name, "line", truncate(line, 200))
		}
	}
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

func (d *Dispatcher) lineTooLong(e *LineTooLongError) {
	d.log.Warn("child wrote a line over the maximum message size; discarded", "destination", d.opts.Name, "bytes", e.Len, "max", e.Max)
	up, ok := idFromPrefix(e.Prefix)
	if !ok {
		return
	}
	if p := d.takePending(up); p != nil {
		p.reply <- reply{err: ErrTooLarge}
	}
}

// routeResponse hands the child's answer to the waiting call.
func (d *Dispatcher) routeResponse(m *Message) {
	up, ok := parseUint(m.ID)
	var p *pending
	if ok {
		p = d.takePending(up)
	}
	if p == nil {
		d.log.Debug("response for no pending call; dropped", "destination", d.opts.Name, "id", string(m.ID))
		return
	}
	// The line is reused by the next read: build the client's response now.
	p.reply <- reply{msg: appendResponse(make([]byte, 0, len(m.Result)+len(m.Error)+len(p.clientID)+40), p.clientID, m.Result, m.Error)}
}

// routeNotification sends a child's notification to the sessions it concerns.
func (d *Dispatcher) routeNotification(m *Message, line []byte) {
	switch m.Method {
	case "notifications/progress":
		d.routeProgress(m)
		return
	case "notifications/cancelled":
		// The child withdraws a request it sent to a client.
		key := string(member(m.Params, "requestId"))
		d.pmu.Lock()
		cr, ok := d.childReqs[key]
		delete(d.childReqs, key)
		d.pmu.Unlock()
		if ok {
			cr.sess.Deliver(append([]byte(nil), line...))
		}
		return
	case "notifications/resources/updated":
		var p struct {
			URI string `json:"uri"`
		}
		_ = json.Unmarshal(m.Params, &p)
		msg := append([]byte(nil), line...)
		d.mu.RLock()
		for s := range d.subs[p.URI] {
			d.deliver(s, msg)
		}
		d.mu.RUnlock()
		return
	}
	msg := append([]byte(nil), line...)
	d.mu.RLock()
	for s := range d.sessions {
		d.deliver(s, msg)
	}
	d.mu.RUnlock()
}

func (d *Dispatcher) deliver(s Session, msg []byte) {
	if !s.Deliver(msg) {
		d.log.Debug("notification not delivered: session queue full", "destination", d.opts.Name, "session", s.SessionID())
	}
}

// routeProgress restores the client's progress token and delivers the
// notification to the session that owns it.
func (d *Dispatcher) routeProgress(m *Message) {
	up, ok := parseUint(member(m.Params, "progressToken"))
	if !ok {
		return
	}
	d.pmu.Lock()
	p := d.pending[up]
	var params json.RawMessage
	var err error
	if p != nil && p.clientToken != nil && p.sess != nil {
		params, err = replaceMember(m.Params, "progressToken", p.clientToken)
		if err == nil {
			msg := appendRequest(nil, nil, m.Method, params)
			if !d.toCaller(p, msg) {
				d.deliver(p.sess, msg)
			}
		}
	}
	d.pmu.Unlock()
}

// toCaller queues msg for the call's watcher. d.pmu must be held, so that p
// is still the call it was when looked up. It never blocks.
func (d *Dispatcher) toCaller(p *pending, msg []byte) bool {
	if p.watch == nil {
		return false
	}
	select {
	case p.related <- msg:
		return true
	default:
		return false
	}
}

// routeChildRequest answers ping, and sends other requests to the session
// with the most recent call in flight. When no session can take it the child
// gets an error at once.
func (d *Dispatcher) routeChildRequest(c *child, m *Message, line []byte) {
	if m.Method == "ping" {
		d.writeTo(c, appendResponse(nil, m.ID, json.RawMessage("{}"), nil))
		return
	}
	var target Session
	var newest uint64
	msg := append([]byte(nil), line...)
	d.pmu.Lock()
	for up, p := range d.pending {
		if p.sess != nil && up > newest {
			newest, target = up, p.sess
		}
	}
	delivered := false
	if target != nil {
		d.childReqs[string(m.ID)] = childRequest{sess: target}
		delivered = d.toCaller(d.pending[newest], msg)
	}
	d.pmu.Unlock()
	if delivered || (target != nil && target.Deliver(msg)) {
		return
	}
	if target != nil {
		d.pmu.Lock()
		delete(d.childReqs, string(m.ID))
		d.pmu.Unlock()
	}
	text := "no client session can answer " + strconv.Quote(m.Method) + " now: it is only routed to a session with a call in flight"
	d.log.Warn("child request not routable; answered with an error", "destination", d.opts.Name, "method", m.Method)
	d.writeTo(c, ErrorResponse(m.ID, -32603, text))
}

func (d *Dispatcher) writeTo(c *child, msg []byte) {
	if err := c.conn.WriteMessage(msg); err != nil {
		d.log.Debug("could not write to the child", "destination", d.opts.Name, "error", err)
	}
}
