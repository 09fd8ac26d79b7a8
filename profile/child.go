package profile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/stelae-bridge/stelae-bridge/dispatch"
	"github.com/stelae-bridge/stelae-bridge/jsonrpc"
)

// This file is the profile's child: an MCP server in the bridge's own
// process that the profile's dispatcher runs as it runs a destination's
// child (a supervisor.Child of messages, no process), and that serves each
// request from the members' shared dispatchers. Everything a client of a
// destination has — sessions of both eras, streams, MRTR, listen, auth,
// limits, the access log — the profile's endpoint and dispatcher give it
// as they give any destination; this child only merges the members' lists
// and routes by name — and once it knows the names, the calls they route
// pass it by, through the profile's fan (fan.go).
//
// To each member it is one session (memberSession): what a member's child
// sends for it (progress, a sampling request, a log line) comes to it and
// goes on to the profile's dispatcher, whose attribution decides whose it
// is among the profile's sessions — over every call in flight in the
// profile, so it is never less strict than a member's own.

// MemberDest is a destination a profile combines: its name, the prefix of
// its tools' and prompts' names, and its shared dispatcher — or, for a
// destination with a child per session ('isolation: session'), New, which
// makes a dispatcher of its own for each run of the profile's child (the
// profile is then served with a child per session too, so each of its
// sessions has its own child of that member).
type MemberDest struct {
	Name, Prefix string
	D            *dispatch.Dispatcher
	New          func() *dispatch.Dispatcher
}

// Options configure a profile's child.
type Options struct {
	// Name is the profile's.
	Name string
	// Members in the profile's order.
	Members []MemberDest
	// Tools, Prompts and Resources hide by exposed name (URI for
	// resources); nil hides none.
	Tools, Prompts, Resources func(string) bool
	// Timeout bounds each call to a member (the bridge's request timeout).
	Timeout time.Duration
	// Version is the bridge's, in the profile's serverInfo.
	Version string
	// Report, when set, gets what the lists found (collisions, the
	// number of tools).
	Report *Report
	Logger hclog.Logger
}

// errStopped answers what comes once the child stopped.
var errStopped = errors.New("the profile's child has stopped")

// childQueue bounds the messages waiting for the profile's dispatcher;
// past it a member's notification is dropped (and counted: Report).
const childQueue = 1024

// maxListPages bounds the pages of one member's list.
const maxListPages = 100

// child is one run of a profile's child.
type child struct {
	o   Options
	log hclog.Logger
	// out carries the messages for the profile's dispatcher (ReadMessage);
	// each is a slice of its own, handed over with it.
	out    chan []byte
	stop   chan struct{}
	exited chan struct{}
	once   sync.Once
	// ctx ends the members' calls on Stop.
	ctx    context.Context
	cancel context.CancelFunc
	// work counts the goroutines serving messages; Stop waits for them.
	work sync.WaitGroup
	// own are the dispatchers this run made for its members with a child
	// per session; Stop closes them.
	own []*dispatch.Dispatcher

	// mu guards everything below.
	mu      sync.Mutex
	stopped bool
	members []*memberSession
	// routes are the names as last listed (nil parts: list again).
	routes Routes
	// calls are the member calls in flight by the profile's request id,
	// for its cancellation.
	calls map[string]context.CancelFunc
	// childReqs are the members' requests sent on, by the id the child
	// gave them (members' ids may collide).
	childReqs map[string]childRequest
	nextID    uint64
	// initParams are the profile's handshake params, given to members the
	// child attaches to.
	initParams json.RawMessage
	// onStop, when set, is called once the child stopped (its Profile's
	// fan routes by it no more).
	onStop func()
}

// childRequest is a member's request the child sent on: the member and
// its id.
type childRequest struct {
	m  *memberSession
	id json.RawMessage
}

func newChild(o Options) *child {
	c := &child{o: o, log: o.Logger.Named("profile").With("profile", o.Name), out: make(chan []byte, childQueue), stop: make(chan struct{}), exited: make(chan struct{}),
		calls: map[string]context.CancelFunc{}, childReqs: map[string]childRequest{}}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	for _, m := range o.Members {
		if m.D == nil && m.New != nil {
			m.D = m.New()
			c.own = append(c.own, m.D)
		}
		c.members = append(c.members, &memberSession{c: c, m: &m})
	}
	return c
}

// memberSession is the child as one session of a member.
type memberSession struct {
	c *child
	m *MemberDest
	// attached (guarded by c.mu): the child is attached to the member
	// (not yet, or no more: the member ended it, failed or gone; the next
	// use attaches again, and its dispatcher decides whether it starts).
	attached bool
	// wasDown (guarded by c.mu): the member ended the child; attaching
	// again tells the profile's clients it is back.
	wasDown bool
}

func (s *memberSession) SessionID() string { return "profile " + s.c.o.Name }

// User: every profile session is one user to a member; the profile's
// dispatcher attributes among them.
func (s *memberSession) User() any { return s.c }

func (s *memberSession) End(reason error) {
	c := s.c
	c.mu.Lock()
	s.attached, s.wasDown = false, true
	c.routes = Routes{}
	c.mu.Unlock()
	c.log.Warn("a member of the profile is down: its tools, prompts and resources leave the lists", "destination", s.m.Name, "reason", reason)
	c.listsChanged()
}

// Deliver takes what a member's child sends the profile outside a call's
// own stream: list changes (the profile's lists change with them),
// resource updates, log lines, and its requests.
func (s *memberSession) Deliver(msg []byte) bool {
	m, err := jsonrpc.Parse(msg)
	if err != nil {
		return false
	}
	switch m.Kind() {
	case jsonrpc.KindRequest:
		return s.c.sendRequest(s, m, false)
	case jsonrpc.KindNotification:
		c := s.c
		switch m.Method {
		case "notifications/cancelled":
			// The member withdraws a request the child sent on: under
			// the id the child gave it.
			return c.withdraw(s, m)
		case "notifications/tools/list_changed":
			c.mu.Lock()
			c.routes.Tools = nil
			c.mu.Unlock()
		case "notifications/prompts/list_changed":
			c.mu.Lock()
			c.routes.Prompts = nil
			c.mu.Unlock()
		case "notifications/resources/list_changed":
			c.mu.Lock()
			c.routes.Resources = nil
			c.mu.Unlock()
		}
		return c.send(append([]byte(nil), msg...), false)
	}
	return false
}

var _ dispatch.Session = (*memberSession)(nil)

// send hands msg to the profile's dispatcher; wait: until it can, or the
// child stops (else false when the queue is full).
func (c *child) send(msg []byte, wait bool) bool {
	if wait {
		select {
		case c.out <- msg:
			return true
		case <-c.stop:
			return false
		}
	}
	select {
	case c.out <- msg:
		return true
	default:
		// Counted (/healthz?verbose); the first is a warning, the rest
		// would flood the log as the member floods the profile.
		if c.o.Report.drop() {
			c.log.Warn("a member's message for the profile's clients dropped: its queue is full (counted as dropped in /healthz?verbose; later drops are logged at debug)", "bytes", len(msg))
		} else {
			c.log.Debug("a member's message for the profile's clients dropped: its queue is full", "bytes", len(msg))
		}
		return false
	}
}

// sendRequest sends a member's request on under an id of the child's own.
// One that cannot be sent (the queue is full, the child stopped) is
// forgotten: false tells the member's dispatcher, which answers its child
// with an error (Deliver's contract), or the member's Detach at the
// child's Stop does.
func (c *child) sendRequest(s *memberSession, m *jsonrpc.Message, wait bool) bool {
	c.mu.Lock()
	c.nextID++
	id := []byte(`"r` + strconv.FormatUint(c.nextID, 10) + `"`)
	c.childReqs[string(id)] = childRequest{m: s, id: append(json.RawMessage(nil), m.ID...)}
	c.mu.Unlock()
	if c.send(jsonrpc.AppendRequest(nil, id, m.Method, m.Params), wait) {
		return true
	}
	c.mu.Lock()
	delete(c.childReqs, string(id))
	c.mu.Unlock()
	return false
}

// withdraw passes on a member's cancellation of a request the child sent
// on, under the child's id for it.
func (c *child) withdraw(s *memberSession, m *jsonrpc.Message) bool {
	theirs := string(jsonrpc.Member(m.Params, "requestId"))
	c.mu.Lock()
	var ours string
	for id, cr := range c.childReqs {
		if cr.m == s && string(cr.id) == theirs {
			ours = id
			delete(c.childReqs, id)
			break
		}
	}
	c.mu.Unlock()
	if ours == "" {
		return true
	}
	params, err := jsonrpc.Replace(m.Params, "requestId", []byte(ours))
	if err != nil {
		return false
	}
	return c.send(jsonrpc.AppendRequest(nil, nil, m.Method, params), false)
}

// ReadMessage implements supervisor.Child.
func (c *child) ReadMessage() ([]byte, error) {
	select {
	case msg := <-c.out:
		return msg, nil
	case <-c.stop:
		return nil, io.EOF
	}
}

// WriteMessage implements supervisor.Child: the message is served on a
// goroutine of its own (Stop waits for it); a cancellation at once.
func (c *child) WriteMessage(msg []byte) error {
	m, err := jsonrpc.Parse(append([]byte(nil), msg...))
	if err != nil {
		return nil // the dispatcher writes JSON-RPC; nothing else comes
	}
	if m.Kind() == jsonrpc.KindNotification && m.Method == "notifications/cancelled" {
		c.mu.Lock()
		cancel := c.calls[string(jsonrpc.Member(m.Params, "requestId"))]
		c.mu.Unlock()
		if cancel != nil {
			cancel()
		}
		return nil
	}
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return errStopped
	}
	c.work.Add(1)
	var ctx context.Context
	if m.Kind() == jsonrpc.KindRequest {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(c.ctx)
		c.calls[string(m.ID)] = cancel
	}
	c.mu.Unlock()
	go func() {
		defer c.work.Done()
		c.serve(ctx, m)
	}()
	return nil
}

// Enqueue implements supervisor.Child: WriteMessage never waits.
func (c *child) Enqueue(msg []byte) error { return c.WriteMessage(msg) }

func (c *child) Exited() <-chan struct{} { return c.exited }

func (c *child) ExitStatus() string {
	select {
	case <-c.exited:
		return "stopped"
	default:
		return ""
	}
}

// PID is the bridge's own: the profile's child runs in it.
func (c *child) PID() int { return os.Getpid() }

// Stop implements supervisor.Child: the members' calls end, the child
// leaves the members, and its goroutines are waited for.
func (c *child) Stop(ctx context.Context) error {
	c.once.Do(func() {
		c.mu.Lock()
		c.stopped = true
		members := c.members
		c.mu.Unlock()
		close(c.stop)
		if c.onStop != nil {
			c.onStop()
		}
		c.cancel()
		for _, s := range members {
			s.m.D.Detach(s, errStopped)
		}
		done := make(chan struct{})
		go func() { c.work.Wait(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
			c.log.Warn("the profile's calls did not end in time")
		}
		for _, d := range c.own {
			if err := d.Close(ctx); err != nil {
				c.log.Warn("a member's own child did not stop in time", "destination", d.Name(), "error", err)
			}
		}
		close(c.exited)
	})
	return nil
}

// serve serves one message of the profile's dispatcher.
func (c *child) serve(ctx context.Context, m *jsonrpc.Message) {
	switch m.Kind() {
	case jsonrpc.KindResponse:
		c.respond(m)
		return
	case jsonrpc.KindNotification:
		if m.Method == "notifications/roots/list_changed" {
			for _, s := range c.live(false) {
				_ = s.m.D.Notify(s, m)
			}
		}
		return
	}
	defer func() {
		// The call's context goes with it (its parent, c.ctx, would
		// otherwise hold every call's until the child stops).
		c.mu.Lock()
		cancel := c.calls[string(m.ID)]
		delete(c.calls, string(m.ID))
		c.mu.Unlock()
		if cancel != nil {
			cancel()
		}
	}()
	var result json.RawMessage
	var err error
	switch m.Method {
	case "initialize":
		result, err = c.initialize(ctx, m)
	case "ping":
		result = json.RawMessage(`{}`)
	case "tools/list":
		result, err = c.listTools(ctx)
	case "prompts/list":
		result, err = c.listPrompts(ctx)
	case "resources/list", "resources/templates/list":
		result, err = c.listResources(ctx, m.Method)
	case "logging/setLevel":
		for _, s := range c.live(false) {
			_, _ = s.m.D.Do(ctx, s, m, c.o.Timeout)
		}
		result = json.RawMessage(`{}`)
	default:
		c.forward(ctx, m)
		return
	}
	if err != nil {
		c.send(jsonrpc.ErrorResponse(m.ID, jsonrpc.CodeInternalError, err.Error()), true)
		return
	}
	c.send(jsonrpc.AppendResponse(nil, m.ID, result, nil), true)
}

// respond gives a member the answer to the request the child sent on.
func (c *child) respond(m *jsonrpc.Message) {
	c.mu.Lock()
	cr, ok := c.childReqs[string(m.ID)]
	delete(c.childReqs, string(m.ID))
	c.mu.Unlock()
	if !ok {
		return
	}
	m.ID = cr.id
	if err := cr.m.m.D.Respond(cr.m, m); err != nil {
		c.log.Debug("a member's request could not be answered", "destination", cr.m.m.Name, "error", err)
	}
}

// live returns the members the child is attached to; with attach it
// first attaches to those it is not (after a start, or a member that went
// down: its dispatcher decides whether it starts again, and "the next
// client tries again" means a list or a handshake, never every call). A
// member that comes back empties the routes (list again) and the
// profile's clients are told its lists changed.
func (c *child) live(attach bool) []*memberSession {
	c.mu.Lock()
	var out []*memberSession
	back := false
	for _, s := range c.members {
		if attach && !s.attached && !c.stopped && c.initParams != nil {
			s.m.D.Attach(s, c.initParams)
			s.attached, back = true, back || s.wasDown
			s.wasDown = false
		}
		if s.attached {
			out = append(out, s)
		}
	}
	if back {
		c.routes = Routes{}
	}
	c.mu.Unlock()
	if back {
		c.listsChanged()
	}
	return out
}

// member is the member dest, attached (again, when it went down: a call
// to it is its next client); nil when the child cannot attach.
func (c *child) member(dest string) *memberSession {
	c.mu.Lock()
	var s *memberSession
	for _, ms := range c.members {
		if ms.m.Name == dest {
			s = ms
		}
	}
	back := false
	if s != nil && !s.attached && !c.stopped && c.initParams != nil {
		s.m.D.Attach(s, c.initParams)
		s.attached, back, s.wasDown = true, s.wasDown, false
	}
	if back {
		c.routes = Routes{}
	}
	attached := s != nil && s.attached
	c.mu.Unlock()
	if back {
		c.listsChanged()
	}
	if !attached {
		return nil
	}
	return s
}

// listsChanged tells the profile's clients its lists changed.
func (c *child) listsChanged() {
	for _, kind := range []string{"tools", "prompts", "resources"} {
		c.send([]byte(`{"jsonrpc":"2.0","method":"notifications/`+kind+`/list_changed"}`), false)
	}
}

// initialize is the profile's handshake: the child attaches to every
// member and answers with what they have together.
func (c *child) initialize(ctx context.Context, m *jsonrpc.Message) (json.RawMessage, error) {
	var p struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	_ = json.Unmarshal(m.Params, &p)
	c.mu.Lock()
	c.initParams = append(json.RawMessage(nil), m.Params...)
	c.mu.Unlock()
	var caps []json.RawMessage
	var members []Member
	var instructions []string
	for _, s := range c.live(true) {
		resp, err := s.m.D.Do(ctx, s, &jsonrpc.Message{ID: json.RawMessage(`"init"`), Method: "initialize", Params: m.Params}, c.o.Timeout)
		var r *jsonrpc.Message
		if err == nil {
			r, err = jsonrpc.Parse(resp)
		}
		if err == nil && len(r.Error) > 0 {
			err = fmt.Errorf("%s", r.Error)
		}
		if err != nil {
			c.log.Warn("a member of the profile did not start; the profile serves the others", "destination", s.m.Name, "error", err)
			s.m.D.Detach(s, nil)
			c.mu.Lock()
			s.attached, s.wasDown = false, true
			c.mu.Unlock()
			continue
		}
		caps = append(caps, jsonrpc.Member(r.Result, "capabilities"))
		instr, _ := stringMember(r.Result, "instructions")
		members = append(members, Member{Destination: s.m.Name, Prefix: s.m.Prefix})
		instructions = append(instructions, instr)
	}
	if len(caps) == 0 {
		return nil, fmt.Errorf("no member of profile %q could start", c.o.Name)
	}
	out := map[string]any{
		"protocolVersion": p.ProtocolVersion,
		"capabilities":    Capabilities(caps),
		"serverInfo":      map[string]string{"name": "stelae-bridge profile " + c.o.Name, "version": c.o.Version},
	}
	if text := Instructions(members, instructions); text != "" {
		out["instructions"] = text
	}
	return json.Marshal(out)
}

// list gathers one kind of list from every live member, all pages.
func (c *child) list(ctx context.Context, method, key string) []Listing {
	var out []Listing
	for _, s := range c.live(true) {
		out = append(out, c.listOne(ctx, s, method, key))
	}
	return out
}

// listOne asks member s for one kind of list, all pages: what it has
// (nothing, when it has no such list or fails: the others are listed).
func (c *child) listOne(ctx context.Context, s *memberSession, method, key string) Listing {
	l := Listing{Destination: s.m.Name, Prefix: s.m.Prefix}
	var cursor json.RawMessage
	for page := 0; page < maxListPages; page++ {
		params := json.RawMessage(`{}`)
		if cursor != nil {
			params = append(append(json.RawMessage(`{"cursor":`), cursor...), '}')
		}
		resp, err := s.m.D.Do(ctx, s, &jsonrpc.Message{ID: json.RawMessage(`"list"`), Method: method, Params: params}, c.o.Timeout)
		var r *jsonrpc.Message
		if err == nil {
			r, err = jsonrpc.Parse(resp)
		}
		if err != nil || len(r.Error) > 0 {
			break
		}
		jsonrpc.EachElement(jsonrpc.Member(r.Result, key), func(item []byte) {
			l.Items = append(l.Items, append(json.RawMessage(nil), item...))
		})
		next := jsonrpc.Member(r.Result, "nextCursor")
		if len(next) == 0 || string(next) == "null" || string(next) == `""` || string(next) == string(cursor) {
			break
		}
		cursor = next
	}
	return l
}

// listTools lists the members' tools from their dispatchers' catalogues
// (kept current by each member's dispatcher: after every start of its
// child and on its list changes), asking a member only when its catalogue
// is not known yet (its child never ran: the list starts it).
func (c *child) listTools(ctx context.Context) (json.RawMessage, error) {
	var listings []Listing
	for _, s := range c.live(true) {
		if tools, known := s.m.D.Tools(); known {
			listings = append(listings, Listing{Destination: s.m.Name, Prefix: s.m.Prefix, Items: tools})
			continue
		}
		listings = append(listings, c.listOne(ctx, s, "tools/list", "tools"))
	}
	items, names := c.toolRoutes(listings)
	for i, it := range items {
		// The members run their own tasks; the profile runs none.
		if trimmed, err := jsonrpc.Delete(it, func(k string) bool { return k == "execution" }); err == nil {
			items[i] = trimmed
		}
	}
	c.collisions("tool", names.Collisions)
	if before := c.o.Report.Tools(); len(items) != before {
		for _, w := range ToolCountWarnings(len(items)) {
			c.log.Warn("the profile lists more tools than some clients take: " + w)
		}
	}
	c.o.Report.listed(len(items))
	return listResult("tools", items)
}

// toolRoutes merges tool listings and keeps their names as the routes.
func (c *child) toolRoutes(listings []Listing) ([]json.RawMessage, *Names) {
	items, names := MergeNamed(listings, c.o.Tools)
	c.mu.Lock()
	c.routes.Tools = names
	c.mu.Unlock()
	return items, names
}

// catalogueRoutes makes the tool routes again from the members'
// catalogues alone (nothing is asked of a child: cheap enough for a call
// whose name the routes do not have — a member that restarted since the
// last list has its catalogue again).
func (c *child) catalogueRoutes() {
	c.mu.Lock()
	members := c.members
	c.mu.Unlock()
	var listings []Listing
	for _, s := range members { // a member that is down too: a call to it is its next client
		tools, _ := s.m.D.Tools()
		listings = append(listings, Listing{Destination: s.m.Name, Prefix: s.m.Prefix, Items: tools})
	}
	c.toolRoutes(listings)
}

func (c *child) listPrompts(ctx context.Context) (json.RawMessage, error) {
	items, names := MergeNamed(c.list(ctx, "prompts/list", "prompts"), c.o.Prompts)
	c.collisions("prompt", names.Collisions)
	c.mu.Lock()
	c.routes.Prompts = names
	c.mu.Unlock()
	return listResult("prompts", items)
}

func (c *child) listResources(ctx context.Context, method string) (json.RawMessage, error) {
	res, tpls, r := MergeResources(c.list(ctx, "resources/list", "resources"), c.list(ctx, "resources/templates/list", "resourceTemplates"), c.o.Resources)
	c.collisions("resource", r.Collisions)
	c.mu.Lock()
	c.routes.Resources = r
	c.mu.Unlock()
	if method == "resources/list" {
		return listResult("resources", res)
	}
	return listResult("resourceTemplates", tpls)
}

// collisions reports the names two members met on, and warns of each
// once per configuration of the profile (every list found them again).
func (c *child) collisions(noun string, cs []Collision) {
	for _, col := range c.o.Report.collided(noun, cs) {
		c.log.Warn("two members of the profile expose the same "+noun+" name (said once; /healthz?verbose lists them)", "collision", col.String())
	}
}

func listResult(key string, items []json.RawMessage) (json.RawMessage, error) {
	if items == nil {
		items = []json.RawMessage{}
	}
	return json.Marshal(map[string][]json.RawMessage{key: items})
}

// forward serves a request routed by name (or refuses it) on its member:
// what the member's call brings (progress, its child's requests) and its
// answer go to the profile's dispatcher.
func (c *child) forward(ctx context.Context, m *jsonrpc.Message) {
	dest, params, routed, err := c.route(ctx, m)
	if !routed {
		c.send(jsonrpc.ErrorResponse(m.ID, jsonrpc.CodeMethodNotFound, fmt.Sprintf("method %q is not served by a profile", m.Method)), true)
		return
	}
	var re *RouteError
	if errors.As(err, &re) {
		c.send(jsonrpc.ErrorResponse(m.ID, re.Code, re.Message), true)
		return
	}
	s := c.member(dest)
	if s == nil {
		c.send(jsonrpc.ErrorResponse(m.ID, jsonrpc.CodeServerError, fmt.Sprintf("destination %q of this profile is down; its tools come back when it does", dest)), true)
		return
	}
	call := s.m.D.Begin(ctx, s, &jsonrpc.Message{ID: m.ID, Method: m.Method, Params: params}, c.o.Timeout, true)
	defer call.Release()
	for {
		ev := call.Next(nil)
		switch {
		case ev.Related != nil:
			r, err := jsonrpc.Parse(ev.Related)
			if err == nil && r.Kind() == jsonrpc.KindRequest {
				c.sendRequest(s, r, true)
			} else {
				c.send(append([]byte(nil), ev.Related...), true)
			}
		case ev.Done:
			if ev.Err != nil {
				c.send(jsonrpc.ErrorResponse(m.ID, jsonrpc.CodeServerError, fmt.Sprintf("destination %q: %s", dest, dispatch.PublicReason(ev.Err))), true)
				return
			}
			c.send(append([]byte(nil), ev.Answer...), true)
			return
		}
	}
}

// route finds the member of a request routed by name. The names it
// needs are listed first when the child has none (its first call, or a
// member's list changed since). A name the current lists do not have is
// never a reason to ask the members again (a client naming unknown tools
// must not make every member list per request): a tool's routes are made
// again from the members' catalogues, which their dispatchers keep, and
// a prompt or resource is refused.
func (c *child) route(ctx context.Context, m *jsonrpc.Message) (string, []byte, bool, error) {
	r := c.routesNow()
	switch {
	case m.Method == "tools/call" && r.Tools == nil:
		_, _ = c.listTools(ctx)
	case m.Method == "prompts/get" && r.Prompts == nil:
		_, _ = c.listPrompts(ctx)
	case m.Method == "completion/complete" && (r.Prompts == nil || r.Resources == nil):
		_, _ = c.listPrompts(ctx)
		_, _ = c.listResources(ctx, "resources/list")
	case strings.HasPrefix(m.Method, "resources/") && r.Resources == nil:
		_, _ = c.listResources(ctx, "resources/list")
	default:
		dest, params, routed, err := r.Route(m.Method, m.Params)
		if m.Method == "tools/call" && err != nil {
			c.catalogueRoutes()
			return c.routesNow().Route(m.Method, m.Params)
		}
		return dest, params, routed, err
	}
	return c.routesNow().Route(m.Method, m.Params)
}

// routesNow is a copy of the routes as they are.
func (c *child) routesNow() *Routes {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.routes
	return &r
}
