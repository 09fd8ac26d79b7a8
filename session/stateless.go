package session

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"github.com/stelae-bridge/stelae-bridge/httpx"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/stelae-bridge/stelae-bridge/dispatch"
	"github.com/stelae-bridge/stelae-bridge/jsonrpc"
	"github.com/stelae-bridge/stelae-bridge/telemetry"
)

// This file serves MCP 2026-07-28 ("modern") requests beside the 2025
// sessions, on the same shared child: a request is modern when its
// params._meta carries the protocol version (classified by envelope, never
// by method name). It has no session; it is validated, then answered
// (server/discover) or forwarded, its result marked complete.

// The reserved _meta keys of a modern request.
const (
	metaProtocolVersion = "io.modelcontextprotocol/protocolVersion"
	metaClientInfo      = "io.modelcontextprotocol/clientInfo"
	metaClientCaps      = "io.modelcontextprotocol/clientCapabilities"
	metaLogLevel        = "io.modelcontextprotocol/logLevel"
)

// logLevels are MCP's log levels (syslog's), least severe first.
var logLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// logSeverity is a level's rank in logLevels, or -1 when it is none of them.
func logSeverity(level string) int { return slices.Index(logLevels, level) }

// Values of Options.Sessionless.
const (
	SessionlessServe  = "serve"
	SessionlessReject = "reject"
)

// Eras are the values of Options.ProtocolEras.
const (
	ErasBoth   = "both"
	Eras2025   = "2025"
	eraModern  = dispatch.ModernVersion
	base64Head = "=?base64?"
)

// modernMethods are the methods a modern request may name; the removed ones
// (initialize, ping, logging/setLevel, resources/subscribe|unsubscribe) and
// any other get 404 / -32601.
var modernMethods = []string{"server/discover", "tools/list", "tools/call", "resources/list", "resources/templates/list",
	"resources/read", "prompts/list", "prompts/get", "completion/complete", "subscriptions/listen",
	"tasks/get", "tasks/update", "tasks/cancel"}

// envelope is what the bridge reads of a request's params to classify,
// validate and serve it as a modern one, found in one walk over params and
// one over its _meta. The fields alias the request.
type envelope struct {
	meta, version, caps, logLevel, clientInfo json.RawMessage
	inputResponses, requestState              json.RawMessage
	// name is params.name (tools/call, prompts/get), uri params.uri
	// (resources/read), taskID params.taskId (tasks/*).
	name, uri, taskID json.RawMessage
}

// dispatchEnvelope is what a 2026 child is to read of the request (the
// dispatcher copies it).
func (e *envelope) dispatchEnvelope() dispatch.Envelope {
	return dispatch.Envelope{ClientInfo: e.clientInfo, Capabilities: e.caps, LogLevel: jsonrpc.String(e.logLevel)}
}

// readEnvelope reads the envelope of params (validated with the message).
func readEnvelope(params json.RawMessage) (e envelope) {
	jsonrpc.EachMemberRaw(params, func(k []byte, start, end int) bool {
		v := params[start:end:end]
		switch {
		case jsonrpc.KeyIs(k, "_meta"):
			e.meta = v
		case jsonrpc.KeyIs(k, "name"):
			e.name = v
		case jsonrpc.KeyIs(k, "uri"):
			e.uri = v
		case jsonrpc.KeyIs(k, "taskId"):
			e.taskID = v
		case jsonrpc.KeyIs(k, "inputResponses"):
			e.inputResponses = v
		case jsonrpc.KeyIs(k, "requestState"):
			e.requestState = v
		}
		return true
	})
	jsonrpc.EachMemberRaw(e.meta, func(k []byte, start, end int) bool {
		v := e.meta[start:end:end]
		switch {
		case jsonrpc.KeyIs(k, metaProtocolVersion):
			e.version = v
		case jsonrpc.KeyIs(k, metaClientCaps):
			e.caps = v
		case jsonrpc.KeyIs(k, metaLogLevel):
			e.logLevel = v
		case jsonrpc.KeyIs(k, metaClientInfo):
			e.clientInfo = v
		}
		return true
	})
	return e
}

// isModern reports whether a request is one of the modern era: it carries
// the modern envelope (params._meta's protocol version), or — so that a
// malformed one is told what is wrong rather than that it lacks a session —
// it names the modern version in its MCP-Protocol-Version header and has no
// session.
func isModern(r *http.Request, m *jsonrpc.Message, env *envelope) bool {
	if m.Kind() != jsonrpc.KindRequest {
		return false
	}
	if env.version != nil {
		return true
	}
	return httpx.Header(r.Header, httpx.HeaderProtocolVersion) == eraModern && httpx.Header(r.Header, httpx.HeaderSessionID) == ""
}

// modernError answers a modern request with a JSON-RPC error carrying its
// id (and data when set).
func modernError(w http.ResponseWriter, status int, id json.RawMessage, code int, msg string, data any) int {
	body := struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Data    any    `json:"data,omitempty"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id}
	body.Error.Code, body.Error.Message, body.Error.Data = httpx.EraCode(true, status, code), msg, data
	b, _ := json.Marshal(body)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(b)
	return status
}

// paramHeadersMismatch checks a tools/call's Mcp-Param-* headers against
// its arguments (SEP-2243): each parameter the tool mirrors into a header
// must be sent with it when the arguments hold a value, not sent when they
// do not, and match it (Base64 sentinel form decoded; plain values must be
// visible ASCII, space or tab). It says what is wrong, or "".
func paramHeadersMismatch(h http.Header, params []dispatch.ParamHeader, args json.RawMessage) string {
	for _, p := range params {
		// Read as every decoder reads it: the child must act on the value
		// the header carries to intermediaries (jsonrpc.ExactMember).
		val := args
		for _, k := range p.Path {
			if len(val) == 0 || val[0] != '{' {
				val = nil
				break
			}
			v, err := jsonrpc.ExactMember(val, k)
			if err != nil {
				return fmt.Sprintf("arguments.%s is mirrored into the %s header: %v", strings.Join(p.Path, "."), p.Header, err)
			}
			val = v
		}
		sent, has := h[p.Header] // canonical: Mcp-Param-Region
		switch {
		case val == nil && !has:
			continue
		case val == nil:
			return fmt.Sprintf("the %s header was sent, but the arguments have no %s", p.Header, strings.Join(p.Path, "."))
		case !has:
			return fmt.Sprintf("the tool mirrors %s into the %s header, which is missing", strings.Join(p.Path, "."), p.Header)
		case len(sent) != 1:
			return fmt.Sprintf("the %s header was sent %d times", p.Header, len(sent))
		}
		got, ok := paramHeaderValue(sent[0])
		if !ok {
			return fmt.Sprintf("the %s header is not a valid value: visible ASCII, or =?base64?…?= with valid Base64", p.Header)
		}
		var want string
		switch p.Type {
		case "string":
			if len(val) == 0 || val[0] != '"' {
				return fmt.Sprintf("%s must be a string: it is mirrored into %s", strings.Join(p.Path, "."), p.Header)
			}
			want = jsonrpc.String(val)
		case "integer":
			n, err := strconv.ParseInt(string(val), 10, 64)
			if err != nil {
				return fmt.Sprintf("%s must be an integer: it is mirrored into %s", strings.Join(p.Path, "."), p.Header)
			}
			want = strconv.FormatInt(n, 10)
		default:
			want = string(val)
		}
		if got != want {
			return fmt.Sprintf("the %s header (%q) differs from arguments.%s (%q)", p.Header, got, strings.Join(p.Path, "."), want)
		}
	}
	return ""
}

// paramHeaderValue decodes an Mcp-Param-* value: the Base64 sentinel form
// strictly (padding and alphabet), a plain value only when it is visible
// ASCII, space or tab.
func paramHeaderValue(v string) (string, bool) {
	if strings.HasPrefix(v, base64Head) && strings.HasSuffix(v, "?=") && len(v) >= len(base64Head)+2 {
		b, err := base64.StdEncoding.Strict().DecodeString(v[len(base64Head) : len(v)-2])
		return string(b), err == nil
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < 0x20 || c > 0x7e) && c != '\t' {
			return "", false
		}
	}
	return v, true
}

// headerValue decodes a header in the base64 sentinel form (=?base64?…?=).
func headerValue(v string) string {
	if strings.HasPrefix(v, base64Head) && strings.HasSuffix(v, "?=") && len(v) >= len(base64Head)+2 {
		if b, err := base64.StdEncoding.DecodeString(v[len(base64Head) : len(v)-2]); err == nil {
			return string(b)
		}
	}
	return v
}

// validateModern is the validation ladder; it writes the error and returns
// its status, or returns 0 and the request's client capabilities.
func (ep *Endpoint) validateModern(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message, env *envelope) int {
	if ep.opts.ProtocolEras == Eras2025 {
		// Answered as a legacy server must, so that every client falls
		// back to initialize: 4xx, the request's id, -32601.
		return modernError(w, http.StatusNotFound, m.ID, jsonrpc.CodeMethodNotFound, "this endpoint serves MCP 2025 sessions only: send initialize", nil)
	}
	// The body is valid JSON (jsonrpc.ParseInto): only shapes are checked.
	version := jsonrpc.String(env.version)
	if version == "" || len(env.caps) == 0 || env.caps[0] != '{' {
		return modernError(w, http.StatusBadRequest, m.ID, jsonrpc.CodeInvalidParams,
			"a "+eraModern+" request's params._meta needs "+metaProtocolVersion+" (a string) and "+metaClientCaps+" (an object); "+metaClientInfo+" is recommended", nil)
	}
	if h := httpx.Header(r.Header, httpx.HeaderProtocolVersion); h != version {
		return modernError(w, http.StatusBadRequest, m.ID, jsonrpc.CodeHeaderMismatch,
			fmt.Sprintf("the MCP-Protocol-Version header (%q) differs from the request's protocol version (%q)", h, version), nil)
	}
	if h := httpx.Header(r.Header, "Mcp-Method"); headerValue(h) != m.Method {
		return modernError(w, http.StatusBadRequest, m.ID, jsonrpc.CodeHeaderMismatch,
			fmt.Sprintf("the Mcp-Method header (%q) differs from the request's method (%q)", h, m.Method), nil)
	}
	if m.Method == "tools/call" || m.Method == "prompts/get" || m.Method == "resources/read" || isTaskMethod(m.Method) {
		field, name := "name", jsonrpc.String(env.name)
		switch {
		case m.Method == "resources/read":
			field, name = "uri", jsonrpc.String(env.uri)
		case isTaskMethod(m.Method):
			// SEP-2663: Mcp-Name carries the task id, for routing.
			field, name = "taskId", jsonrpc.String(env.taskID)
		}
		if h := httpx.Header(r.Header, "Mcp-Name"); headerValue(h) != name {
			return modernError(w, http.StatusBadRequest, m.ID, jsonrpc.CodeHeaderMismatch,
				fmt.Sprintf("the Mcp-Name header (%q) differs from params.%s (%q)", h, field, name), nil)
		}
		if m.Method == "tools/call" && ep.shared != nil {
			if why := paramHeadersMismatch(r.Header, ep.shared.ToolHeaders(name), jsonrpc.Member(m.Params, "arguments")); why != "" {
				return modernError(w, http.StatusBadRequest, m.ID, jsonrpc.CodeHeaderMismatch, why, nil)
			}
		}
	}
	if version != eraModern {
		return modernError(w, http.StatusBadRequest, m.ID, jsonrpc.CodeUnsupportedVersion,
			fmt.Sprintf("protocol version %q is not supported in a request's _meta; this bridge speaks %s per request, and %s with initialize", version, eraModern, strings.Join(dispatch.Versions(), ", ")),
			map[string]any{"supported": append(dispatch.Versions(), eraModern), "requested": version})
	}
	if ir := env.inputResponses; ir != nil {
		var responses map[string]json.RawMessage
		bad := json.Unmarshal(ir, &responses) != nil
		for _, v := range responses {
			bad = bad || len(v) == 0 || v[0] != '{'
		}
		if bad {
			return modernError(w, http.StatusBadRequest, m.ID, jsonrpc.CodeInvalidParams, "inputResponses must map each input request's key to its result object", nil)
		}
	}
	if lv := env.logLevel; lv != nil && logSeverity(jsonrpc.String(lv)) < 0 {
		return modernError(w, http.StatusBadRequest, m.ID, jsonrpc.CodeInvalidParams,
			fmt.Sprintf("%s must be one of %s, not %.60s", metaLogLevel, strings.Join(logLevels, ", "), lv), nil)
	}
	if !slices.Contains(modernMethods, m.Method) {
		return modernError(w, http.StatusNotFound, m.ID, jsonrpc.CodeMethodNotFound, fmt.Sprintf("method %q is not available to %s requests", m.Method, eraModern), nil)
	}
	return 0
}

// isTaskMethod reports whether method is one of the tasks extension's.
func isTaskMethod(method string) bool {
	return method == "tasks/get" || method == "tasks/update" || method == "tasks/cancel"
}

// cache are the destination's caching hints for modern clients.
func (ep *Endpoint) cache() dispatch.Cache {
	return dispatch.Cache{TTL: ep.opts.CacheTTL, Scope: ep.opts.CacheScope}
}

// cacheable reports whether a method's results carry caching hints
// (ttlMs, cacheScope).
func cacheable(method string) bool {
	switch method {
	case "tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read":
		return true
	}
	return false
}

// stateless is what an endpoint keeps for the requests that have no
// session (the 2026-07-28 era, and 2025 requests sent without one): the
// rooms of that era (package doc) keep their state here, apart from the
// sessions', and Endpoint.Shutdown ends it.
type stateless struct {
	// mrtr holds the calls parked for their client's input (mrtr.go).
	mrtr mrtr
	// tasks are the calls kept as tasks (tasks.go).
	tasks taskStore
	// keeper keeps the shared child up between requests (keeper.go).
	keeper keeper
}

// statelessCaller is a modern request as the dispatcher sees a session: it
// lives as long as the request.
type statelessCaller struct {
	// kind and seq name it in logs ("stateless-12", "listen-3").
	kind   string
	seq    uint64
	cancel context.CancelCauseFunc
	// principal is the request's (zero when auth is off).
	principal Principal
}

var modernSeq atomic.Uint64

func (c *statelessCaller) SessionID() string {
	if c.seq == 0 {
		return c.kind
	}
	return c.kind + "-" + strconv.FormatUint(c.seq, 10)
}

// User implements dispatch.Session: the request's principal when auth is
// on, else the request itself.
func (c *statelessCaller) User() any { return userOf(c.principal, c) }

// Transient: it has no stream of its own for what the child sends to
// sessions (dispatch.Transient).
func (c *statelessCaller) Transient() bool { return true }

// Deliver drops what the child sends to sessions: a modern request has no
// stream for unrelated notifications.
func (c *statelessCaller) Deliver([]byte) bool { return false }
func (c *statelessCaller) End(reason error)    { c.cancel(reason) }

// serveModern answers a modern request.
func (ep *Endpoint) serveModern(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message, env *envelope, rec *postLog) {
	if status := ep.validateModern(w, r, m, env); status != 0 {
		rec.status = status
		return
	}
	caps := env.caps
	if ep.shared == nil {
		rec.status = modernError(w, http.StatusBadRequest, m.ID, jsonrpc.CodeMethodNotFound, fmt.Sprintf("destination %q gives each session a child of its own ('isolation: session'): use a 2025 session (initialize)", ep.name), nil)
		return
	}
	d := ep.shared
	if m.Method == "subscriptions/listen" {
		ep.serveListen(w, r, m, caps, rec)
		return
	}
	if m.Method == "server/discover" {
		ep.sl.keeper.touch(d)
		resp, err := d.Discover(r.Context(), m.ID, ep.opts.RequestTimeout, ep.cache())
		ep.writeResult(w, resp, err, rec)
		return
	}
	if isTaskMethod(m.Method) {
		ep.serveTaskMethod(w, r, m, env, rec)
		return
	}
	var taskAfter time.Duration
	augment := false // the child runs the call as a task of its own
	if m.Method == "tools/call" {
		// A catalogue not known yet (a child just started) is read again
		// when the call could become a task (drive).
		switch support, known := d.ToolTaskSupport(jsonrpc.String(env.name)); {
		case support == "" && known:
		case hasTasksExtension(caps):
			taskAfter = ep.opts.TaskAfter
			// A child that declares a tool task-required refuses to run it
			// otherwise (MCP 2025-11-25).
			augment = support == dispatch.TaskRequired && d.ChildRunsToolTasks()
		case support == "":
		case support == dispatch.TaskRequired:
			rec.status = missingTasksExtension(w, m.ID, fmt.Sprintf("tool %q runs only as a task: declare the %s extension in the request's %s", jsonrpc.String(env.name), dispatch.TasksExtension, metaClientCaps))
			return
		}
	}
	if env.requestState != nil {
		ep.resumeModern(w, r, m, caps, env.requestState, taskAfter, rec)
		return
	}
	fwd := *m
	fwd.Params = dispatch.ModernParams(m.Params)
	if d.SpeaksModern() && env.inputResponses != nil {
		// A 2026 child reads the client's answers itself (the retry of
		// a child that keeps no requestState).
		var resume [2][]byte
		if err := jsonrpc.ExactMembers(m.Params, resumeMembers[:], resume[:]); err != nil {
			rec.status = modernError(w, http.StatusBadRequest, m.ID, jsonrpc.CodeInvalidParams, "a retry's "+err.Error(), nil)
			return
		}
		if p, err := jsonrpc.Replace(fwd.Params, "inputResponses", resume[1]); err == nil {
			fwd.Params = p
		}
	}
	if augment {
		task := strconv.AppendInt([]byte(`{"ttl":`), ep.opts.TaskTTL.Milliseconds(), 10)
		if p, err := jsonrpc.Replace(fwd.Params, "task", append(task, '}')); err == nil {
			fwd.Params = p
		} else {
			augment = false
		}
	}
	f := ep.startFlight(d, r, &fwd, env.dispatchEnvelope(), true, augment)
	f.taskAfter, f.tool = taskAfter, jsonrpc.String(env.name)
	f.logLevel = logSeverity(jsonrpc.String(env.logLevel))
	if env.inputResponses != nil {
		_ = json.Unmarshal(env.inputResponses, &f.inputs)
	}
	ep.drive(w, r, f, m, rec)
}

// serveSessionless serves a 2025-style request that came without
// Mcp-Session-Id (ChatGPT has been seen dropping it on its second POST, and
// stateless 2025 clients exist) on the destination's initialized child,
// its related messages on its own POST stream. The auth layer has already
// let it in.
func (ep *Endpoint) serveSessionless(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message, rec *postLog) {
	f := ep.startFlight(ep.shared, r, m, dispatch.Envelope{Capabilities: json.RawMessage(`{}`)}, false, false)
	f.logLevel = 0 // a 2025 client takes every log line the child sends it
	ep.drive(w, r, f, m, rec)
}

// flight is one forwarded request without a session: its call, its caller
// (a session of the dispatcher for as long as the call lives) and its
// context, which outlives the HTTP request that started it when the call
// is parked for input (MRTR).
type flight struct {
	d      *dispatch.Dispatcher
	caller *statelessCaller
	call   *dispatch.Call
	cancel context.CancelCauseFunc
	method string
	// caps are the client capabilities the request's _meta declared.
	caps   json.RawMessage
	modern bool
	// inputs are answers the client gave ahead (inputResponses), by key:
	// a child request with that key is answered from them at once.
	inputs map[string]json.RawMessage
	// cache are the destination's caching hints.
	cache dispatch.Cache
	// taskAfter, when set, is how long the call may run before it becomes
	// a task (tasks.go), if tool (tools/call's name) supports tasks.
	taskAfter time.Duration
	tool      string
	// logLevel is the least severity (logSeverity) of the child's log
	// messages the request takes on its stream; -1 takes none (a modern
	// request takes them only when its _meta names a level).
	logLevel int
	// endCause, when set, is why the call is ended before its answer
	// (end): the child's requests still waiting are answered with it,
	// after the call's cancellation (dispatch.Dispatcher.Detach).
	endCause error
}

// startFlight begins forwarding m, a request of r's principal (its
// context gives the call only its trace span); with childTask, as a task
// the child runs (dispatch.BeginChildTask).
func (ep *Endpoint) startFlight(d *dispatch.Dispatcher, r *http.Request, m *jsonrpc.Message, denv dispatch.Envelope, modern, childTask bool) *flight {
	caps, principal := denv.Capabilities, PrincipalFrom(r)
	ep.sl.keeper.touch(d)
	// The request's bytes (m, caps) alias its body's buffer, which goes
	// back to the pool when its HTTP request ends: a call parked for input
	// outlives that, and copies what it keeps (park).
	parent := context.Background()
	if ep.opts.Tracing != nil {
		parent = telemetry.Detached(r.Context())
	}
	ctx, cancel := context.WithCancelCause(parent)
	f := &flight{d: d, cancel: cancel, method: m.Method, caps: caps, modern: modern, logLevel: -1, cache: ep.cache()}
	f.caller = &statelessCaller{kind: "stateless", seq: modernSeq.Add(1), cancel: cancel, principal: principal}
	// To the dispatcher a modern caller can answer anything, so that the
	// child's requests reach it; what this request declared is enforced
	// per request (park: -32021, or the child gets an error). A
	// sessionless 2025 request can answer nothing: it has no way to.
	if modern {
		d.AttachModern(f.caller, denv)
	} else {
		d.AttachCaller(f.caller, false)
	}
	if childTask {
		f.call = d.BeginChildTask(ctx, f.caller, m, ep.opts.RequestTimeout)
	} else {
		f.call = d.Begin(ctx, f.caller, m, ep.opts.RequestTimeout, true)
	}
	return f
}

// end releases the flight.
func (f *flight) end() {
	f.call.Release()
	f.d.Detach(f.caller, f.endCause)
	f.cancel(nil)
}

// errClientGone cancels a call whose client closed its response.
var errClientGone = fmt.Errorf("%w: the client closed the response stream", dispatch.ErrCanceled)

// drive answers request m (the one that started f, or a retry resuming it)
// from f's events (requestAnswer): JSON, or — once the call sends progress
// and the client accepts a stream — an SSE stream scoped to the request,
// carrying its progress and then its answer. A client that closes the
// response cancels the call (the child gets notifications/cancelled). A
// request the child sends during the call parks it and answers m with
// input_required (MRTR).
func (ep *Endpoint) drive(w http.ResponseWriter, r *http.Request, f *flight, m *jsonrpc.Message, rec *postLog) {
	accept := httpx.Header(r.Header, "Accept")
	ra := &requestAnswer{ep: ep, w: w, r: r, f: f, m: m, rec: rec, sseOK: accept != "" && httpx.Accepts(accept, "text/event-stream")}
	ep.calls.Add(1)
	defer ep.calls.Add(-1)
	// The client's going away cancels the call, unless it was parked.
	stop := context.AfterFunc(r.Context(), func() { f.cancel(errClientGone) })
	defer func() {
		stop()
		if ra.ticker != nil {
			ra.ticker.Stop()
		}
		if ra.grace != nil {
			ra.grace.Stop()
		}
		if !ra.handedOver {
			f.end()
		}
	}()
	if f.taskAfter > 0 {
		// The grace runs while the call may still become a task: its tick
		// is the moment it does.
		ra.grace = time.NewTimer(f.taskAfter)
		ra.tick = ra.grace.C
	}
	await(f.call, ra)
}

// requestAnswer is the form of the answer of a request without a session
// (answering): JSON until the call sends something the client takes on a
// stream, then an SSE stream scoped to the request (not resumable).
type requestAnswer struct {
	ep    *Endpoint
	w     http.ResponseWriter
	r     *http.Request
	f     *flight
	m     *jsonrpc.Message
	rec   *postLog
	sseOK bool
	sw    *sseWriter // set once the answer is a stream
	// tick is grace's channel while the call may become a task, then the
	// keepalive ticker's once the answer is a stream.
	tick   <-chan time.Time
	ticker *time.Ticker
	grace  *time.Timer
	// handedOver: the call is no longer the request's (parked for input,
	// or a task): the flight does not end with it.
	handedOver bool
}

func (ra *requestAnswer) ticks() <-chan time.Time { return ra.tick }

// ticked sends a keepalive, or ends the grace: the call becomes a task if
// its tool supports tasks, else it goes on here.
func (ra *requestAnswer) ticked() bool {
	if ra.grace == nil {
		ra.sw.comment()
		return true
	}
	ra.grace = nil
	// The catalogue is read again: it may not have been known when the
	// call came (a child just started).
	f := ra.f
	if support, _ := f.d.ToolTaskSupport(f.tool); support != "" {
		if resp := ra.ep.adoptTask(f, ra.m, PrincipalFrom(ra.r)); resp != nil {
			ra.handedOver = true // the task has the call now
			ra.write(resp, nil)
			return false
		}
	}
	ra.tick = nil
	if ra.sw != nil {
		ra.keepAlive()
	}
	return true
}

// keepAlive starts the stream's keepalives.
func (ra *requestAnswer) keepAlive() {
	ra.ticker = time.NewTicker(ra.ep.opts.KeepAlive)
	ra.tick = ra.ticker.C
}

// related takes a message the child sent for the call: a request of its
// own is answered from the client's inputResponses, parks the call
// (MRTR) or is refused; progress, and the log lines the request asked
// for, go on the request's stream.
func (ra *requestAnswer) related(rel []byte) bool {
	f := ra.f
	method := jsonrpc.String(jsonrpc.Member(rel, "method"))
	if id := jsonrpc.Member(rel, "id"); id != nil {
		if res, ok := f.inputs[inputKey(id)]; ok && f.modern {
			// Answered ahead by the client.
			delete(f.inputs, inputKey(id))
			if reply, err := jsonrpc.Parse(jsonrpc.AppendResponse(nil, id, res, nil)); err == nil {
				_ = f.d.Respond(f.caller, reply)
			}
			return true
		}
		if ra.sw != nil || !f.modern || !canAskInput(f.method) {
			// No way to ask this client now: the child gets an error at
			// once.
			why := method + " cannot be relayed to this client"
			if !f.modern {
				why += ": a request without a session cannot be asked anything (start a session with initialize, or send MCP 2026-07-28 requests, which take input_required)"
			}
			f.refuse(rel, why)
			return true
		}
		switch ra.ep.park(ra.w, ra.r, f, ra.m, rel, ra.rec) {
		case parkedForInput:
			ra.handedOver = true
			return false
		case parkEnded:
			return false
		}
		return true // parkGoOn: nothing could be asked; the call goes on
	}
	if !ra.sseOK || (method != "notifications/progress" && !f.wantsLog(method, rel)) {
		return true
	}
	if ra.sw == nil {
		ra.sw = ra.ep.newSSEWriter(ra.w)
		httpx.SetSSEHeaders(ra.w.Header())
		ra.w.WriteHeader(http.StatusOK)
		ra.rec.status = http.StatusOK
		if ra.grace == nil { // until then, grace has the tick
			ra.keepAlive()
		}
	}
	ra.sw.write(modernEvent(rel))
	return true
}

// done writes the call's answer: a 2026 child's input_required goes to a
// modern client with its requestState bound to the client (sealChild).
func (ra *requestAnswer) done(ev dispatch.Event) {
	resp, err := ra.f.answer(ev, ra.m)
	if err == nil && ra.f.modern && dispatch.InputRequired(resp) {
		resp = ra.ep.sealChild(resp, ra.f.caller.principal, ra.m)
	}
	ra.write(resp, err)
}

// write writes the request's answer: as JSON, or as the last event of its
// stream.
func (ra *requestAnswer) write(resp []byte, err error) {
	if st := childRefusal(resp); ra.sw == nil && err == nil && ra.f.modern && st != 0 {
		h := ra.w.Header()
		h["Content-Type"] = jsonContentType
		ra.w.WriteHeader(st)
		_, _ = ra.w.Write(resp)
		ra.rec.status = st
		return
	}
	if ra.sw == nil {
		ra.ep.writeResult(ra.w, resp, err, ra.rec)
		return
	}
	out := ra.ep.streamedAnswer(ra.m.ID, resp, err, true)
	ra.rec.noteAnswer(out)
	ra.sw.write(modernEvent(out))
	if ra.ep.keepsAnswers() && ra.rec != nil {
		ra.rec.respBody = out // what the client got, as a JSON answer's is
	}
}

// childRefusal is the HTTP status of a 2026 child's own refusal of a
// request by the 2026-07-28 validation ladder (a header mismatch, an
// undeclared capability, an unsupported version): 400, as the bridge's
// own; 0 for any other answer.
func childRefusal(resp []byte) int {
	e := jsonrpc.Member(resp, "error")
	if e == nil {
		return 0
	}
	switch string(jsonrpc.Member(e, "code")) {
	case "-32020", "-32021", "-32022":
		return http.StatusBadRequest
	}
	return 0
}

// answer is the final answer to m (the request, or the retry, being
// answered): under m's id, marked complete for a modern client.
func (f *flight) answer(ev dispatch.Event, m *jsonrpc.Message) ([]byte, error) {
	resp, err := ev.Answer, ev.Err
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(jsonrpc.Member(resp, "id"), m.ID) {
		resp, _ = jsonrpc.Replace(resp, "id", m.ID)
	}
	if f.modern {
		resp = dispatch.MarkComplete(resp, cacheable(f.method), f.cache)
	}
	return resp, nil
}

// wantsLog reports whether rel, a related message of method method, is a
// log message the request takes.
func (f *flight) wantsLog(method string, rel []byte) bool {
	if method != "notifications/message" || f.logLevel < 0 {
		return false
	}
	return logSeverity(jsonrpc.String(jsonrpc.Member(jsonrpc.Member(rel, "params"), "level"))) >= f.logLevel
}

// canAskInput reports whether a method's answer may be input_required
// (MRTR): tools/call, prompts/get and resources/read only.
func canAskInput(method string) bool {
	return method == "tools/call" || method == "prompts/get" || method == "resources/read"
}

// refuse answers a request of the child's with an error.
func (f *flight) refuse(req []byte, why string) {
	if reply, err := jsonrpc.Parse(jsonrpc.ErrorResponse(jsonrpc.Member(req, "id"), jsonrpc.CodeInternalError, why)); err == nil {
		_ = f.d.Respond(f.caller, reply)
	}
}

// modernEvent is an SSE event without an id: modern streams are not
// resumable.
func modernEvent(data []byte) []byte {
	out := make([]byte, 0, len(data)+24)
	out = append(out, "event: message\ndata: "...)
	out = append(out, data...)
	return append(out, "\n\n"...)
}
