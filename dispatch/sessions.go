package dispatch

import (
	"encoding/json"
	"time"

	"github.com/stelae-bridge/stelae-bridge/jsonrpc"
)

// Attach adds a session to the destination's fan-out set; the child runs
// while any session is attached. initParams are the params of the
// session's initialize: the capabilities it declares decide which of the
// child's requests it may be sent.
func (d *Dispatcher) Attach(s Session, initParams json.RawMessage) {
	d.attach(s, parseClientCaps(initParams))
}

// AttachCaller attaches a caller without a session of its own (a
// stateless request, for as long as its call lives): with every capability
// (a modern request, which enforces what it declared itself) or none.
func (d *Dispatcher) AttachCaller(s Session, every bool) {
	if every {
		d.attach(s, clientCaps{roots: true, sampling: true, elicitForm: true, elicitURL: true})
	} else {
		d.attach(s, clientCaps{})
	}
}

// Envelope is what a 2026-07-28 caller declared in its request's _meta,
// as the session layer read and checked it: a child of that era reads the
// same (modern.go).
type Envelope struct {
	ClientInfo   json.RawMessage
	Capabilities json.RawMessage
	// LogLevel is the least severity of the log messages it takes ("":
	// none).
	LogLevel string
}

// AttachModern attaches a 2026-07-28 caller (for as long as its call
// lives) as AttachCaller(s, true) does, with what it declared: a 2026 child
// reads that, and its input_required answers go to the caller as they are.
func (d *Dispatcher) AttachModern(s Session, env Envelope) {
	d.attach(s, clientCaps{roots: true, sampling: true, elicitForm: true, elicitURL: true,
		envelope: modernEnvelope(env.ClientInfo, env.Capabilities, env.LogLevel), modern: true, logLevel: env.LogLevel})
}

func (d *Dispatcher) attach(s Session, caps clientCaps) {
	caps.failures = d.sup.Failures()
	d.mu.Lock()
	_, had := d.sessions[s]
	d.sessions[s] = caps
	d.mu.Unlock()
	if !had {
		d.sup.Hold()
	}
}

// Detach removes a session: its in-flight calls end with cause (ErrCanceled
// when nil) and are cancelled at the child, requests the child sent it are
// answered with an error (saying cause, when given) — written after the
// cancellations, so that a child that looks, when its request is answered,
// whether the call was cancelled, sees that it was and stops (else it
// would finish the call after reading the cancellation, and be taken for a
// child that goes on with cancelled calls: abandoned.go) — its
// subscriptions are released, and the child is stopped when no session is
// left. It can safely be called more than once.
func (d *Dispatcher) Detach(s Session, cause error) {
	orphanWhy := "the client session that received this request has ended"
	if cause == nil {
		cause = ErrCanceled
	} else {
		orphanWhy = cause.Error()
	}
	d.mu.Lock()
	_, attached := d.sessions[s]
	var release []string
	if attached {
		delete(d.sessions, s)
		for uri, set := range d.subs {
			if _, ok := set[s]; ok {
				delete(set, s)
				if len(set) == 0 {
					delete(d.subs, uri)
					release = append(release, uri)
				}
			}
		}
	}
	d.mu.Unlock()
	if d.opts.Fan != nil {
		// After s left: a call that attaches it elsewhere now finds it
		// gone (Fan), and one that did before is detached here — also
		// for a session the dispatcher ended already (endAll).
		d.opts.Fan.Detach(s, cause)
	}
	if !attached {
		return
	}

	var cancelled []uint64
	var orphaned []string
	d.pmu.Lock()
	now := time.Now()
	for up, call := range d.pending {
		if call.sess == s {
			delete(d.pending, up)
			if d.abandonLocked(call, now) {
				cancelled = append(cancelled, up)
			}
			call.reply <- reply{err: cause}
		}
	}
	for id, cr := range d.childReqs {
		if cr.sess == s {
			delete(d.childReqs, id)
			orphaned = append(orphaned, id)
		}
	}
	d.pmu.Unlock()
	if c := d.current(); c != nil {
		for _, up := range cancelled {
			d.sendCancel(c, up, "the client session ended")
		}
		d.cancelsWritten(c, cancelled...)
		for _, id := range orphaned {
			d.writeTo(c, jsonrpc.ErrorResponse(json.RawMessage(id), jsonrpc.CodeInternalError, orphanWhy))
		}
		switch {
		case c.modern && len(release) > 0:
			d.listenAnew(c) // without the uris no one wants now (listen.go)
		case !c.modern:
			for _, uri := range release {
				d.fireAndForget(c, "resources/unsubscribe", uriParams(uri))
			}
		}
	}
	d.sup.Release()
}

// subscribe forwards the first subscription to a uri and answers the others
// itself, so one session's unsubscribe cannot cancel another's.
func (d *Dispatcher) subscribe(call *Call, s Session, m *jsonrpc.Message) *Call {
	uri, ok := paramURI(m)
	if !ok {
		return d.forward(call, m)
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
		return call.finish(jsonrpc.AppendResponse(nil, m.ID, json.RawMessage("{}"), nil), nil)
	}
	call.after = func(resp []byte, err error) ([]byte, error) {
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
	return d.forward(call, m)
}

// unsubscribe forwards only when the last subscriber of a uri leaves.
func (d *Dispatcher) unsubscribe(call *Call, s Session, m *jsonrpc.Message) *Call {
	uri, ok := paramURI(m)
	if !ok {
		return d.forward(call, m)
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
		return call.finish(jsonrpc.AppendResponse(nil, m.ID, json.RawMessage("{}"), nil), nil)
	}
	return d.forward(call, m)
}

// paramURI is the URI a subscription is counted under: params' one
// "uri" as every decoder reads it (the screen refused any other).
func paramURI(m *jsonrpc.Message) (string, bool) {
	uri, err := jsonrpc.ExactMember(m.Params, "uri")
	if err != nil || len(uri) == 0 || uri[0] != '"' {
		return "", false
	}
	return jsonrpc.String(uri), true
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
