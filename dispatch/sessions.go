package dispatch

import (
	"context"
	"encoding/json"
	"github.com/stelae-bridge/stelae-bridge/jsonrpc"
	"strconv"
	"time"
)

// Attach adds a session to the destination's fan-out set. initParams are the
// params of the session's initialize: the capabilities it declares decide
// which of the child's requests it may be sent.
func (d *Dispatcher) Attach(s Session, initParams json.RawMessage) {
	d.mu.Lock()
	d.sessions[s] = parseClientCaps(initParams)
	d.lingerGen++ // a pending linger stop no longer applies
	d.unclaimed = false
	d.mu.Unlock()
}

// Detach removes a session: its in-flight calls end with cause (ErrCanceled
// when nil) and are cancelled at the child, requests the child sent it are
// answered with an error, its subscriptions are released, and the child is
// stopped when no session is left.
func (d *Dispatcher) Detach(s Session, cause error) {
	if cause == nil {
		cause = ErrCanceled
	}
	d.mu.Lock()
	if _, ok := d.sessions[s]; !ok {
		d.mu.Unlock()
		return
	}
	delete(d.sessions, s)
	var release []string
	for uri, set := range d.subs {
		if _, ok := set[s]; ok {
			delete(set, s)
			if len(set) == 0 {
				delete(d.subs, uri)
				release = append(release, uri)
			}
		}
	}
	c := d.cur
	remaining := len(d.sessions)
	d.lingerGen++
	gen := d.lingerGen
	d.mu.Unlock()

	var cancelled []uint64
	var orphaned []string
	d.pmu.Lock()
	for up, p := range d.pending {
		if p.sess == s {
			delete(d.pending, up)
			cancelled = append(cancelled, up)
			p.reply <- reply{err: cause}
		}
	}
	for id, cr := range d.childReqs {
		if cr.sess == s {
			delete(d.childReqs, id)
			orphaned = append(orphaned, id)
		}
	}
	d.pmu.Unlock()
	if c != nil {
		for _, up := range cancelled {
			d.sendCancel(c, strconv.AppendUint(nil, up, 10), "the client session ended")
		}
		for _, id := range orphaned {
			d.writeTo(c, jsonrpc.ErrorResponse(json.RawMessage(id), jsonrpc.CodeInternalError, "the client session that received this request has ended"))
		}
		for _, uri := range release {
			d.fireAndForget(c, "resources/unsubscribe", uriParams(uri))
		}
	}
	if remaining > 0 {
		return
	}
	if d.opts.Linger <= 0 {
		d.stopIfUnused(gen)
		return
	}
	time.AfterFunc(d.opts.Linger, func() { d.stopIfUnused(gen) })
}

// stopIfUnused stops the child when no session attached since gen.
func (d *Dispatcher) stopIfUnused(gen int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.lingerGen != gen || len(d.sessions) > 0 {
		return
	}
	if d.state == stateStarting {
		// A start survives the clients that caused it: a first npx
		// download outlasts a request timeout, and stopping it would make
		// every retry start over (and can leave a half-written cache).
		d.unclaimed = true
		return
	}
	if d.life != nil {
		d.log.Info("last session ended; stopping the child", "destination", d.opts.Name)
	}
	d.stopLifetimeLocked()
}

// subscribe forwards the first subscription to a uri and answers the others
// itself, so one session's unsubscribe cannot cancel another's.
func (d *Dispatcher) subscribe(ctx context.Context, p *pending, s Session, m *jsonrpc.Message) ([]byte, error) {
	uri, ok := paramURI(m)
	if !ok {
		return d.forward(ctx, p, s, m)
	}
	d.mu.Lock()
	set := d.subs[uri]
	first := len(set) == 0
	if set == nil {
		set = map[Session]struct{}{}
		d.subs[uri] = set
	}
	set[s] = struct{}{}
	d.mu.Unlock()
	if !first {
		return jsonrpc.AppendResponse(nil, m.ID, json.RawMessage("{}"), nil), nil
	}
	resp, err := d.forward(ctx, p, s, m)
	if failed(resp, err) {
		d.mu.Lock()
		if set := d.subs[uri]; set != nil {
			delete(set, s)
			if len(set) == 0 {
				delete(d.subs, uri)
			}
		}
		d.mu.Unlock()
	}
	return resp, err
}

// unsubscribe forwards only when the last subscriber of a uri leaves.
func (d *Dispatcher) unsubscribe(ctx context.Context, p *pending, s Session, m *jsonrpc.Message) ([]byte, error) {
	uri, ok := paramURI(m)
	if !ok {
		return d.forward(ctx, p, s, m)
	}
	d.mu.Lock()
	set := d.subs[uri]
	_, had := set[s]
	delete(set, s)
	last := had && len(set) == 0
	if last {
		delete(d.subs, uri)
	}
	d.mu.Unlock()
	if !last {
		return jsonrpc.AppendResponse(nil, m.ID, json.RawMessage("{}"), nil), nil
	}
	return d.forward(ctx, p, s, m)
}

func paramURI(m *jsonrpc.Message) (string, bool) {
	var p struct {
		URI *string `json:"uri"`
	}
	if json.Unmarshal(m.Params, &p) != nil || p.URI == nil {
		return "", false
	}
	return *p.URI, true
}

// failed reports whether a forwarded call did not succeed.
func failed(resp []byte, err error) bool {
	if err != nil {
		return true
	}
	var r struct {
		Error json.RawMessage `json:"error"`
	}
	return json.Unmarshal(resp, &r) != nil || len(r.Error) > 0
}
