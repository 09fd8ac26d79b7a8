package dispatch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/stelae-bridge/stelae-bridge/jsonrpc"
	"strconv"
	"time"
)

// Call forwards a client's request to the child and returns the child's
// response with the client's id restored. initialize, ping and the
// resources/(un)subscribe reference counts are answered by the bridge. The
// call ends with ErrTimeout after timeout (a cancellation is sent to the
// child) and with ErrCanceled when ctx ends or the session is detached.
// With Options.ToolAllowed, tools/list answers lose the hidden tools and a
// tools/call of a hidden tool is answered at once with a JSON-RPC error
// (jsonrpc.CodeInvalidParams), whatever the child's state. Messages that a more lenient decoder
// could read differently are refused (see screen).
// w, when not nil, follows the call (see Watcher).
func (d *Dispatcher) Call(ctx context.Context, s Session, m *jsonrpc.Message, timeout time.Duration, w Watcher) ([]byte, error) {
	if code, why := d.screen(m, true); code != 0 {
		return jsonrpc.ErrorResponse(m.ID, code, why), nil
	}
	if m.Method == "ping" {
		return jsonrpc.AppendResponse(nil, m.ID, json.RawMessage("{}"), nil), nil
	}
	p := getPending(timeout)
	p.watch = w
	defer putPending(p)
	switch m.Method {
	case "initialize":
		return d.initialize(ctx, p.timer.C, m)
	case "resources/subscribe":
		return d.subscribe(ctx, p, s, m)
	case "resources/unsubscribe":
		return d.unsubscribe(ctx, p, s, m)
	case "tools/list":
		if d.opts.ToolAllowed != nil {
			return d.filterToolList(d.forward(ctx, p, s, m))
		}
	}
	return d.forward(ctx, p, s, m)
}

// forward sends m to the child under a fresh upstream id and waits.
func (d *Dispatcher) forward(ctx context.Context, p *pending, s Session, m *jsonrpc.Message) ([]byte, error) {
	c, err := d.running(ctx, p.timer.C, false)
	if err != nil {
		return nil, err
	}
	return d.roundTrip(ctx, p, c, s, m.ID, m.Method, m.Params)
}

// initialize answers a session's initialize from the cached handshake,
// starting the child (or retrying a failed one) when needed. The caller has
// validated m's params (ValidateInitialize).
func (d *Dispatcher) initialize(ctx context.Context, timeout <-chan time.Time, m *jsonrpc.Message) ([]byte, error) {
	if _, err := d.running(ctx, timeout, true); err != nil {
		return nil, err
	}
	d.mu.RLock()
	result := d.initResult
	d.mu.RUnlock()
	// The child negotiated once, with the bridge; each client gets the
	// version it asked for when the bridge supports it and the child's is
	// not older.
	var asked, child struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	_ = json.Unmarshal(m.Params, &asked)
	_ = json.Unmarshal(result, &child)
	if v := negotiate(asked.ProtocolVersion, child.ProtocolVersion); v != child.ProtocolVersion {
		if r, err := jsonrpc.Replace(result, "protocolVersion", json.RawMessage(strconv.Quote(v))); err == nil {
			result = r
		}
	}
	return jsonrpc.AppendResponse(nil, m.ID, result, nil), nil
}

// SupportedVersions are the MCP protocol versions the bridge speaks, oldest
// first.
var SupportedVersions = []string{"2024-11-05", "2025-03-26", "2025-06-18", LatestVersion}

// LatestVersion is the newest protocol version the bridge speaks; its own
// handshake with a child asks for it first.
const LatestVersion = "2025-11-25"

// Supported reports whether v is one of SupportedVersions.
func Supported(v string) bool {
	for _, s := range SupportedVersions {
		if s == v {
			return true
		}
	}
	return false
}

// negotiate picks the version to answer a client that asked for asked when
// the child runs child.
func negotiate(asked, child string) string {
	if Supported(asked) && (child == "" || asked <= child) {
		return asked
	}
	return child
}

// roundTrip registers p as a pending call, writes the request and waits for
// the answer, the child's exit, p's timer or ctx. It returns the response with
// clientID. s is nil for the bridge's own calls, whose clientID is the
// upstream id. On return p is out of the pending map and its channel empty.
func (d *Dispatcher) roundTrip(ctx context.Context, p *pending, c *child, s Session, clientID json.RawMessage, method string, params json.RawMessage) ([]byte, error) {
	up := d.seq.Add(1)
	upID := strconv.AppendUint(p.idBuf[:0], up, 10)
	if clientID == nil {
		clientID = upID
	}
	p.sess, p.clientID = s, clientID
	if s != nil && bytes.Contains(params, []byte(`"progressToken"`)) {
		params, p.clientToken = rewriteProgressToken(params, upID)
	}
	p.out = jsonrpc.AppendRequest(p.out[:0], upID, method, params)

	// Register before writing: the answer may come before Write returns.
	d.pmu.Lock()
	d.pending[up] = p
	d.pmu.Unlock()
	if err := c.conn.WriteMessage(p.out); err != nil {
		if d.takePending(up) == nil {
			r := <-p.reply // taken by a reply or a cancel just now
			d.flushRelated(p)
			return r.msg, r.err
		}
		d.flushRelated(p)
		return nil, fmt.Errorf("%w: %v", ErrChildExited, err)
	}
	var tick <-chan time.Time
	if p.watch != nil {
		tick = p.watch.Tick()
	}
	for {
		select {
		case r := <-p.reply:
			d.flushRelated(p)
			return r.msg, r.err
		case msg := <-p.related:
			p.watch.Related(msg)
		case <-tick:
			p.watch.Ticked()
		case <-c.done:
			if d.takePending(up) == nil {
				r := <-p.reply
				d.flushRelated(p)
				return r.msg, r.err
			}
			d.flushRelated(p)
			return nil, fmt.Errorf("%w: destination %q (%s)", ErrChildExited, d.opts.Name, exitStatus(c.conn))
		case <-p.timer.C:
			return d.abandon(c, p, up, upID, ErrTimeout, "the bridge's request timeout expired")
		case <-ctx.Done():
			return d.abandon(c, p, up, upID, ctxErr(ctx), "the client cancelled the request")
		}
	}
}

// flushRelated hands the watcher what is still queued for a finished call; p
// is out of the pending map, so nothing more arrives.
func (d *Dispatcher) flushRelated(p *pending) {
	for {
		select {
		case msg := <-p.related:
			p.watch.Related(msg)
		default:
			return
		}
	}
}

// abandon gives up on a pending call and tells the child, unless the answer
// has just arrived.
func (d *Dispatcher) abandon(c *child, p *pending, up uint64, upID []byte, err error, reason string) ([]byte, error) {
	if d.takePending(up) == nil {
		r := <-p.reply
		d.flushRelated(p)
		return r.msg, r.err
	}
	d.flushRelated(p)
	d.sendCancel(c, upID, reason)
	return nil, err
}

// takePending removes and returns pending call up, or nil when another path
// (reply, cancel, session end) already took it.
func (d *Dispatcher) takePending(up uint64) *pending {
	d.pmu.Lock()
	p := d.pending[up]
	delete(d.pending, up)
	d.pmu.Unlock()
	return p
}

// sendCancel tells the child to stop working on upstream request upID.
func (d *Dispatcher) sendCancel(c *child, upID []byte, reason string) {
	params := append([]byte(`{"requestId":`), upID...)
	params = append(params, `,"reason":`...)
	params = jsonrpc.AppendString(params, reason)
	params = append(params, '}')
	if err := c.conn.WriteMessage(jsonrpc.AppendRequest(nil, nil, "notifications/cancelled", params)); err != nil {
		d.log.Debug("could not send cancellation to the child", "destination", d.opts.Name, "error", err)
	}
}

// fireAndForget sends a request whose answer nobody waits for.
func (d *Dispatcher) fireAndForget(c *child, method string, params json.RawMessage) {
	up := strconv.AppendUint(nil, d.seq.Add(1), 10)
	if err := c.conn.WriteMessage(jsonrpc.AppendRequest(nil, up, method, params)); err != nil {
		d.log.Debug("could not write to the child", "destination", d.opts.Name, "method", method, "error", err)
	}
}

// rewriteProgressToken replaces params._meta.progressToken with token and
// returns the new params and the client's token.
func rewriteProgressToken(params json.RawMessage, token []byte) (json.RawMessage, json.RawMessage) {
	meta := jsonrpc.Member(params, "_meta")
	clientToken := jsonrpc.Member(meta, "progressToken")
	if clientToken == nil {
		return params, nil
	}
	newMeta, err := jsonrpc.Replace(meta, "progressToken", token)
	if err != nil {
		return params, nil
	}
	newParams, err := jsonrpc.Replace(params, "_meta", newMeta)
	if err != nil {
		return params, nil
	}
	return newParams, clientToken
}

// Notify forwards a client's notification. notifications/initialized is the
// bridge's business and is dropped; notifications/cancelled is mapped to the
// upstream id.
func (d *Dispatcher) Notify(s Session, m *jsonrpc.Message) error {
	if code, why := d.screen(m, false); code != 0 {
		return fmt.Errorf("%w: %s", ErrRefused, why)
	}
	switch m.Method {
	case "notifications/initialized":
		return nil
	case "notifications/cancelled":
		return d.clientCancel(s, m)
	case "notifications/roots/list_changed":
		if d.opts.Roots != nil {
			return nil // the bridge answers roots/list from the configuration
		}
	}
	d.mu.RLock()
	c := d.cur
	d.mu.RUnlock()
	if c == nil {
		d.log.Debug("notification dropped: child not running", "destination", d.opts.Name, "method", m.Method)
		return nil
	}
	return c.conn.WriteMessage(jsonrpc.AppendRequest(nil, nil, m.Method, m.Params))
}

// clientCancel maps a client's cancellation to the upstream id and ends the
// waiting call with a JSON-RPC error.
func (d *Dispatcher) clientCancel(s Session, m *jsonrpc.Message) error {
	reqID := jsonrpc.Member(m.Params, "requestId")
	if reqID == nil {
		return nil
	}
	var found uint64
	d.pmu.Lock()
	for up, p := range d.pending {
		if p.sess == s && bytes.Equal(p.clientID, reqID) && up > found {
			found = up
		}
	}
	p := d.pending[found]
	delete(d.pending, found)
	d.pmu.Unlock()
	if p == nil {
		return nil
	}
	p.reply <- reply{msg: jsonrpc.ErrorResponse(p.clientID, jsonrpc.CodeRequestCancelled, "request cancelled by the client")}
	d.mu.RLock()
	c := d.cur
	d.mu.RUnlock()
	if c != nil {
		reason := jsonrpc.Member(m.Params, "reason")
		params := append([]byte(`{"requestId":`), strconv.AppendUint(nil, found, 10)...)
		if reason != nil {
			params = append(append(params, `,"reason":`...), reason...)
		}
		params = append(params, '}')
		return c.conn.WriteMessage(jsonrpc.AppendRequest(nil, nil, "notifications/cancelled", params))
	}
	return nil
}

// Respond forwards a client's answer to a request the child sent it.
func (d *Dispatcher) Respond(s Session, m *jsonrpc.Message) error {
	key := string(m.ID)
	d.pmu.Lock()
	cr, ok := d.childReqs[key]
	if ok && cr.sess == s {
		delete(d.childReqs, key)
	}
	d.pmu.Unlock()
	if !ok || cr.sess != s {
		d.log.Warn("client answered a request the child is not waiting for; dropped", "destination", d.opts.Name, "session", s.SessionID(), "id", key)
		return nil
	}
	d.mu.RLock()
	c := d.cur
	d.mu.RUnlock()
	if c == nil {
		return fmt.Errorf("%w: destination %q is restarting; the child's request was lost", ErrUnavailable, d.opts.Name)
	}
	return c.conn.WriteMessage(jsonrpc.AppendResponse(nil, m.ID, m.Result, m.Error))
}
