package dispatch

import (
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/stelae-bridge/stelae-bridge/jsonrpc"
	"github.com/stelae-bridge/stelae-bridge/supervisor"
)

// read is the one goroutine that reads the child's stdout. It never blocks on
// a session: deliveries are non-blocking.
func (d *Dispatcher) read(c *child) {
	defer func() {
		// Requests from this child can no longer be answered, and it
		// works on no abandoned call any more.
		d.pmu.Lock()
		clear(d.childReqs)
		d.clearAbandonedLocked()
		d.pmu.Unlock()
		d.tasks.clear() // the child's tasks end with it
		close(c.done)
	}()
	var m jsonrpc.Message
	for {
		line, err := c.conn.ReadMessage()
		if err != nil {
			var tooLong *supervisor.LineTooLongError
			if errors.As(err, &tooLong) {
				d.lineTooLong(tooLong)
				continue
			}
			return
		}
		if len(line) == 0 {
			continue
		}
		if err := jsonrpc.ParseInto(line, &m); err != nil {
			d.log.Warn("child wrote a line that is not a JSON-RPC message; skipped", "error", err, "line", truncate(line, 200))
			if !c.handshaken.Load() {
				c.noted(line)
			}
			continue
		}
		switch m.Kind() {
		case jsonrpc.KindResponse:
			d.routeResponse(&m)
		case jsonrpc.KindNotification:
			if c.modern {
				routed, ok := listenNotification(&m, line)
				if !ok {
					continue
				}
				if len(routed) != len(line) {
					if err := jsonrpc.ParseInto(routed, &m); err != nil {
						continue
					}
					line = routed
				}
				if m.Method == "notifications/message" {
					d.routeModernLog(line, jsonrpc.String(jsonrpc.Member(m.Params, "level")))
					continue
				}
			}
			if m.Method == "notifications/tools/list_changed" {
				d.refreshTools(c) // never blocks: the fetch has its own goroutine
			}
			d.routeNotification(&m, line)
		case jsonrpc.KindRequest:
			d.routeChildRequest(c, &m, line)
		default:
			d.log.Warn("child wrote an invalid JSON-RPC message; skipped", "line", truncate(line, 200))
		}
	}
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

func (d *Dispatcher) lineTooLong(e *supervisor.LineTooLongError) {
	d.log.Warn("child wrote a line over the maximum message size; discarded", "bytes", e.Len, "max", e.Max)
	up, ok := jsonrpc.UintIDFromPrefix(e.Prefix)
	if !ok {
		return
	}
	if call := d.takeAnswered(up, false); call != nil {
		call.reply <- reply{err: ErrTooLarge}
	}
}

// routeResponse hands the child's answer to the waiting call.
func (d *Dispatcher) routeResponse(m *jsonrpc.Message) {
	up, ok := jsonrpc.Uint(m.ID)
	var p *Call
	if ok {
		p = d.takeAnswered(up, m.Error == nil)
	}
	if p == nil {
		d.log.Debug("response for no pending call; dropped", "id", string(m.ID))
		return
	}
	if p.ownsTask && p.sess != nil && m.Error == nil {
		// Recorded before the reader goes on: the task's status
		// notifications that follow find their owner.
		d.tasks.record(p.sess, m.Result, time.Now())
	}
	// The line is reused by the next read: build the client's response now.
	p.reply <- reply{msg: jsonrpc.AppendResponse(make([]byte, 0, len(m.Result)+len(m.Error)+len(p.clientID)+40), p.clientID, m.Result, m.Error)}
}

// routeNotification sends a child's notification to the sessions it concerns.
func (d *Dispatcher) routeNotification(m *jsonrpc.Message, line []byte) {
	switch m.Method {
	case "notifications/progress":
		d.routeProgress(m)
		return
	case "notifications/cancelled":
		// The child withdraws a request it sent to a client.
		key := string(jsonrpc.Member(m.Params, "requestId"))
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
	case "notifications/message":
		d.routeLog(line)
		return
	case "notifications/tasks/status":
		d.routeTaskStatus(m, line)
		return
	}
	msg := append([]byte(nil), line...)
	d.mu.RLock()
	for s := range d.sessions {
		if !relayed(s) {
			d.deliver(s, msg)
		}
	}
	d.mu.RUnlock()
}

func (d *Dispatcher) deliver(s Session, msg []byte) {
	if !s.Deliver(msg) {
		d.log.Debug("notification not delivered: session queue full", "session", s.SessionID())
	}
}

// routeProgress restores the client's progress token and delivers the
// notification to the session that owns it.
func (d *Dispatcher) routeProgress(m *jsonrpc.Message) {
	up, ok := jsonrpc.Uint(jsonrpc.Member(m.Params, "progressToken"))
	if !ok {
		return
	}
	d.pmu.Lock()
	p := d.pending[up]
	var params json.RawMessage
	var err error
	if p != nil && p.clientToken != nil && p.sess != nil {
		params, err = jsonrpc.Replace(m.Params, "progressToken", p.clientToken)
		if err == nil {
			msg := jsonrpc.AppendRequest(nil, nil, m.Method, params)
			if !d.toCaller(p, msg) {
				d.deliver(p.sess, msg)
			}
		}
	}
	d.pmu.Unlock()
}

// toCaller queues msg among the call's related messages, which its caller
// reads with Call.Next. d.pmu must be held, so that p is still the call it
// was when looked up. It never blocks.
func (d *Dispatcher) toCaller(p *Call, msg []byte) bool {
	if !p.follow || len(p.related) >= relatedQueue {
		return false
	}
	p.related = append(p.related, msg)
	select {
	case p.relatedReady <- struct{}{}:
	default: // the token is there already
	}
	if d.opts.TraceRelated != nil && p.ctx != nil {
		d.opts.TraceRelated(p.ctx, jsonrpc.String(jsonrpc.Member(msg, "method")), jsonrpc.Member(msg, "id") != nil)
	}
	return true
}

// routeChildRequest answers the child's requests: ping and, when the
// destination has configured roots, roots/list are answered by the bridge;
// any other request goes to the session it can be attributed to (see
// attribution.go). When no session can take it the child gets an error at
// once, so it never waits for an answer that cannot come.
func (d *Dispatcher) routeChildRequest(c *child, m *jsonrpc.Message, line []byte) {
	if m.Method == "ping" {
		d.answerChild(c, jsonrpc.AppendResponse(nil, m.ID, json.RawMessage("{}"), nil))
		return
	}
	if m.Method == "roots/list" && d.opts.Roots != nil {
		d.answerChild(c, jsonrpc.AppendResponse(nil, m.ID, d.opts.Roots, nil))
		return
	}
	msg := append([]byte(nil), line...)
	target, p, no := d.attribute(capabilityFor(m), m.ID, msg)
	if target != nil && (p != nil || target.Deliver(msg)) {
		return
	}
	if target != nil {
		d.pmu.Lock()
		delete(d.childReqs, string(m.ID))
		d.pmu.Unlock()
		no = refusal{RefusedQueueFull, "the session it was routed to can take no more messages"}
	}
	d.refuse(c, m, no)
}

// refuse answers a request of the child's that goes to nobody with an
// error, counts it, and tells the operator: the first refusal of each
// reason at warn, with what would make it routable, the others at debug.
func (d *Dispatcher) refuse(c *child, m *jsonrpc.Message, no refusal) {
	i := slices.Index(refusals[:], no.reason)
	d.refused[i].Add(1)
	level := hclog.Debug
	if d.warned[i].CompareAndSwap(false, true) {
		level = hclog.Warn
	}
	if d.log.IsDebug() || level == hclog.Warn {
		args := []any{"method", m.Method, "reason", no.why}
		switch no.reason {
		case RefusedUsers, RefusedAbandoned:
			args = append(args, "fix", "if the tools of this destination ask their clients things during calls (sampling, elicitation, roots), list them under 'interactive:' in the destinations file (their calls then run alone, and their requests reach the user whose call caused them), or set 'interactive: true' (every call runs alone); refusals are counted in stelae_child_requests_refused_total")
		case RefusedNoCall:
			args = append(args, "fix", "the child asked while no call was in flight; with one client connected it would reach that client ('roots:' answers roots/list from the configuration)")
		}
		d.log.Log(level, "child request refused: the child got an error (further refusals for this reason are logged at debug)", args...)
	}
	d.answerChild(c, jsonrpc.ErrorResponse(m.ID, jsonrpc.CodeInternalError, "no client session can answer "+strconv.Quote(m.Method)+" now: "+no.why))
}

// answerChild queues the bridge's answer to one of the child's requests.
// It is the reader's (routeChildRequest) and so never waits on the
// child's stdin: a child that writes its stdout while its stdin is full
// waits for the reader, which would otherwise wait for it.
func (d *Dispatcher) answerChild(c *child, msg []byte) {
	if err := c.conn.Enqueue(msg); err != nil {
		d.log.Debug("could not write to the child", "error", err)
	}
}

func (d *Dispatcher) writeTo(c *child, msg []byte) {
	if err := c.conn.WriteMessage(msg); err != nil {
		d.log.Debug("could not write to the child", "error", err)
	}
}
