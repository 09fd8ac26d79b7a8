package profile

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/stelae-bridge/stelae-bridge/dispatch"
	"github.com/stelae-bridge/stelae-bridge/jsonrpc"
	"github.com/stelae-bridge/stelae-bridge/supervisor"
)

// This file is the profile's fan (dispatch.Fan): the calls routed by name
// — tools/call, prompts/get, resources/read, completion/complete — go
// from the profile's dispatcher straight to the member's, once the
// profile's child knows the names (it listed them) and the member is
// attached. A call through a profile then costs what one at the member's
// own endpoint does: no second dispatcher, no hop through the child.
// Everything else (the handshake, lists, subscriptions, a name the lists
// lack, a member that is down) the child serves as before.
//
// Each client session of the profile is attached to a member it calls
// through a view of its own: a dispatch.Session of the member's whose
// user is the client's, so the member attributes what its child sends
// among its own callers, exactly as for its own clients. A view is
// Transient: it never counts as a connected user, so what a member sends
// while none of its calls is in flight still goes to the child's one
// session of it (memberSession), and on to the profile's attribution, as
// before. The member's requests to a view get ids of the fan's own (two
// members' children both start at 0), on a call's stream (Call.Through)
// and on the view's GET stream (Deliver); the client's answer comes back
// by that id (Respond).

// Profile is one dispatcher's profile: its child's launcher and its fan.
type Profile struct {
	o   Options
	log hclog.Logger

	// mu guards cur, sessions, reqs and next.
	mu  sync.Mutex
	cur *child
	// sessions are the client sessions with views, by their session at
	// the profile's dispatcher.
	sessions map[dispatch.Session]*fanSession
	// reqs are the members' requests to views, by the fan's id.
	reqs map[string]fanRequest
	next uint64
}

// fanSession is one client session's views.
type fanSession struct {
	// mu guards views; it is held while a view attaches, so that a
	// session's concurrent first calls to a member make one view.
	mu    sync.Mutex
	views map[*memberSession]*view
}

// fanRequest is a member's request to a view: the view and the member's
// id of it.
type fanRequest struct {
	v  *view
	id json.RawMessage
}

// New returns the profile of one dispatcher: Launcher for its
// dispatch.Options.Launch, itself for its Fan.
func New(o Options) *Profile {
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	return &Profile{o: o, log: o.Logger.Named("profile").With("profile", o.Name), sessions: map[dispatch.Session]*fanSession{}, reqs: map[string]fanRequest{}}
}

// Launcher is the profile's supervisor.Launcher: each start makes a new
// child, which the fan routes by while it runs.
func (p *Profile) Launcher() supervisor.Launcher {
	return func(context.Context) (supervisor.Child, error) {
		c := newChild(p.o)
		c.onStop = func() {
			p.mu.Lock()
			if p.cur == c {
				p.cur = nil
			}
			p.mu.Unlock()
		}
		p.mu.Lock()
		p.cur = c
		p.mu.Unlock()
		return c, nil
	}
}

// fanned are the methods the fan serves (routed by name or URI, nothing
// kept at the member for the session).
func fanned(method string) bool {
	switch method {
	case "tools/call", "prompts/get", "resources/read", "completion/complete":
		return true
	}
	return false
}

// Begin implements dispatch.Fan.
func (p *Profile) Begin(ctx context.Context, d *dispatch.Dispatcher, s dispatch.Session, m *jsonrpc.Message, timeout time.Duration, follow bool) *dispatch.Call {
	if !fanned(m.Method) {
		return nil
	}
	p.mu.Lock()
	c := p.cur
	p.mu.Unlock()
	if c == nil {
		return nil
	}
	ms, params := c.fanRoute(m)
	if ms == nil {
		return nil
	}
	v := p.view(d, s, ms)
	if v == nil {
		return nil
	}
	call := ms.m.D.Begin(ctx, v, &jsonrpc.Message{ID: m.ID, Method: m.Method, Params: params}, timeout, follow)
	// The client's id, kept: a call parked for input outlives the request
	// whose bytes m.ID are (Call.Keep).
	id, dest := bytes.Clone(m.ID), ms.m.Name
	call.Through(v.relate, func(msg []byte, err error) ([]byte, error) {
		if err != nil {
			// As the child answers a call to a member that fails: a
			// JSON-RPC error that names the member.
			return jsonrpc.ErrorResponse(id, jsonrpc.CodeServerError, fmt.Sprintf("destination %q: %s", dest, dispatch.PublicReason(err))), nil
		}
		return msg, nil
	})
	return call
}

// view is s's view of member ms, attached (with s's capabilities at d)
// on its first use; nil when s is not attached at d (any more).
func (p *Profile) view(d *dispatch.Dispatcher, s dispatch.Session, ms *memberSession) *view {
	p.mu.Lock()
	fs := p.sessions[s]
	if fs == nil {
		fs = &fanSession{views: map[*memberSession]*view{}}
		p.sessions[s] = fs
	}
	p.mu.Unlock()
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if v := fs.views[ms]; v != nil {
		return v
	}
	v := &view{p: p, s: s, ms: ms, fs: fs}
	v.relate = v.related
	// s detached from d: Detach (which comes after) forgets fs, or did.
	if !ms.m.D.AttachLike(v, d, s) {
		if len(fs.views) == 0 {
			p.mu.Lock()
			if p.sessions[s] == fs {
				delete(p.sessions, s)
			}
			p.mu.Unlock()
		}
		return nil
	}
	fs.views[ms] = v
	return v
}

// Respond implements dispatch.Fan.
func (p *Profile) Respond(s dispatch.Session, m *jsonrpc.Message) (bool, error) {
	p.mu.Lock()
	r, ok := p.reqs[string(m.ID)]
	mine := ok && r.v.s == s
	if mine {
		delete(p.reqs, string(m.ID))
	}
	p.mu.Unlock()
	if !ok {
		return false, nil
	}
	if !mine {
		p.log.Warn("client answered a request sent to another session; dropped", "session", s.SessionID())
		return true, nil
	}
	answer := *m
	answer.ID = r.id
	return true, r.v.ms.m.D.Respond(r.v, &answer)
}

// Cancelled implements dispatch.Fan: the member that has the call ends it.
func (p *Profile) Cancelled(s dispatch.Session, m *jsonrpc.Message) {
	for _, v := range p.viewsOf(s, false) {
		_ = v.ms.m.D.Notify(v, m)
	}
}

// Detach implements dispatch.Fan.
func (p *Profile) Detach(s dispatch.Session, cause error) {
	views := p.viewsOf(s, true)
	if len(views) == 0 {
		return
	}
	p.mu.Lock()
	for id, r := range p.reqs {
		if r.v.s == s {
			delete(p.reqs, id)
		}
	}
	p.mu.Unlock()
	for _, v := range views {
		v.ms.m.D.Detach(v, cause)
	}
}

// viewsOf returns s's views; forget: s leaves, and its views with it.
func (p *Profile) viewsOf(s dispatch.Session, forget bool) []*view {
	p.mu.Lock()
	fs := p.sessions[s]
	if forget {
		delete(p.sessions, s)
	}
	p.mu.Unlock()
	if fs == nil {
		return nil
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	out := make([]*view, 0, len(fs.views))
	for _, v := range fs.views {
		out = append(out, v)
	}
	if forget {
		clear(fs.views)
	}
	return out
}

var _ dispatch.Fan = (*Profile)(nil)

// view is a client session of the profile as a session of one member.
type view struct {
	p  *Profile
	s  dispatch.Session
	ms *memberSession
	fs *fanSession
	// relate is related, made once (Call.Through takes it per call).
	relate func([]byte) []byte
}

func (v *view) SessionID() string { return v.s.SessionID() }

// User is the client's: the member attributes among its real users.
func (v *view) User() any { return v.s.User() }

// Transient: a view is never a connected user of the member (its
// spontaneous requests go to the child's own session of it).
func (v *view) Transient() bool { return true }

// End: the member ended the view (it failed, or stops); the next call
// attaches a new one. The profile's child hears of it too, and tells the
// clients.
func (v *view) End(error) {
	v.fs.mu.Lock()
	if v.fs.views[v.ms] == v {
		delete(v.fs.views, v.ms)
	}
	v.fs.mu.Unlock()
	v.p.mu.Lock()
	for id, r := range v.p.reqs {
		if r.v == v {
			delete(v.p.reqs, id)
		}
	}
	v.p.mu.Unlock()
}

// Relayed: what the member sends every session (its list changes, …) the
// profile's child hears too, and tells every client of the profile.
func (v *view) Relayed() bool { return true }

// Deliver takes what the member sends the client outside a call's
// stream: its requests under the fan's ids, its withdrawals of them, its
// log lines and progress.
func (v *view) Deliver(msg []byte) bool {
	m, err := jsonrpc.Parse(msg)
	if err != nil {
		return false
	}
	switch {
	case m.Kind() == jsonrpc.KindRequest:
		id := v.p.give(v, m.ID)
		if v.s.Deliver(jsonrpc.AppendRequest(nil, id, m.Method, m.Params)) {
			return true
		}
		v.p.forget(string(id))
		return false
	case m.Kind() != jsonrpc.KindNotification:
		return false
	case m.Method == "notifications/cancelled":
		ours := v.p.find(v, jsonrpc.Member(m.Params, "requestId"))
		if ours == "" {
			return true
		}
		params, err := jsonrpc.Replace(m.Params, "requestId", []byte(ours))
		if err != nil {
			return false
		}
		return v.s.Deliver(jsonrpc.AppendRequest(nil, nil, m.Method, params))
	}
	return v.s.Deliver(msg)
}

// related is what a call of the view's brings its caller: a request of
// the member's under an id of the fan's.
func (v *view) related(msg []byte) []byte {
	m, err := jsonrpc.Parse(msg)
	if err != nil || m.Kind() != jsonrpc.KindRequest {
		return msg
	}
	return jsonrpc.AppendRequest(nil, v.p.give(v, m.ID), m.Method, m.Params)
}

// give records a member's request to v and returns the fan's id of it.
func (p *Profile) give(v *view, theirs json.RawMessage) []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.next++
	id := []byte(`"f` + strconv.FormatUint(p.next, 10) + `"`)
	p.reqs[string(id)] = fanRequest{v: v, id: append(json.RawMessage(nil), theirs...)}
	return id
}

func (p *Profile) forget(id string) {
	p.mu.Lock()
	delete(p.reqs, id)
	p.mu.Unlock()
}

// find forgets v's request the member knows as theirs and returns the
// fan's id of it ("" when none).
func (p *Profile) find(v *view, theirs []byte) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, r := range p.reqs {
		if r.v == v && string(r.id) == string(theirs) {
			delete(p.reqs, id)
			return id
		}
	}
	return ""
}

// fanRoute is the member that m goes to and m's params for it, when the
// child knows the name and the member is attached; nil otherwise (the
// child serves m: it lists, refuses, or attaches first).
func (c *child) fanRoute(m *jsonrpc.Message) (*memberSession, []byte) {
	c.mu.Lock()
	r := c.routes
	stopped := c.stopped
	c.mu.Unlock()
	if stopped {
		return nil, nil
	}
	switch m.Method {
	case "tools/call":
		if r.Tools == nil {
			return nil, nil
		}
	case "prompts/get":
		if r.Prompts == nil {
			return nil, nil
		}
	case "resources/read":
		if r.Resources == nil {
			return nil, nil
		}
	default:
		if r.Prompts == nil || r.Resources == nil {
			return nil, nil
		}
	}
	dest, params, routed, err := r.Route(m.Method, m.Params)
	if !routed || err != nil {
		return nil, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.members {
		if s.m.Name == dest && s.attached {
			return s, params
		}
	}
	return nil, nil
}
