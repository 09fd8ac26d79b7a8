package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/stelae-bridge/stelae-bridge/httpx"
	"mime"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/stelae-bridge/stelae-bridge/dispatch"
	"github.com/stelae-bridge/stelae-bridge/jsonrpc"
	"github.com/stelae-bridge/stelae-bridge/telemetry"
)

// postLog collects what the access log says of one POST.
type postLog struct {
	status   int
	method   string
	rpcID    json.RawMessage
	session  string
	reqBody  []byte
	respBody []byte
	// era is how the POST was served, and client the client's "name
	// version" (with a tail), for the tail (tail.go).
	era, client string
	// ended is when the POST was answered, read once (end) for the
	// metrics, the session's last use and the access log: the clock is
	// among the costliest calls of a POST here.
	ended time.Time
	// span is the request's server span (nil: tracing off, or not a
	// request); rpcCode and toolError what its answer was (noteAnswer).
	span      *telemetry.Span
	rpcCode   int
	toolError bool
}

// noteAnswer notes, for the request's span and its operation's series,
// what its answer says: a JSON-RPC error's code, or a tool result marked
// isError. An answer over noteWhole bytes is read only for an error at its
// head, where the bridge writes it (jsonrpc.AppendResponse): reading a
// MiB result through again would cost more than the series are worth.
func (rec *postLog) noteAnswer(resp []byte) {
	if len(resp) > noteWhole && rec.span == nil {
		if bytes.Contains(resp[:min(len(resp), 512)], []byte(`,"error":{`)) {
			rec.rpcCode = jsonrpc.CodeInternalError
		}
		return
	}
	if e := jsonrpc.Member(resp, "error"); e != nil {
		rec.rpcCode, _ = strconv.Atoi(string(jsonrpc.Member(e, "code")))
		if rec.rpcCode == 0 {
			rec.rpcCode = jsonrpc.CodeInternalError
		}
		return
	}
	rec.toolError = string(jsonrpc.Member(jsonrpc.Member(resp, "result"), "isError")) == "true"
}

// end is when the POST was answered (the first call reads the clock).
func (rec *postLog) end() time.Time {
	if rec.ended.IsZero() {
		rec.ended = time.Now()
	}
	return rec.ended
}

// post is one POST's state: its body, the message parsed from it (which
// aliases the body) and what the access log says of it. It is pooled, and
// it lives on the heap rather than in the handler's frames: a call waiting
// for its answer keeps every frame from the connection's loop down to the
// wait on its goroutine's stack, and with these few hundred bytes and the
// parsing's temporaries out of them that stack stays within the runtime's
// first 4 KiB (it was 5 KiB, so each connection with a call in flight held
// an 8 KiB stack). TestStackPerWaitingCall (tests/stack_test.go) pins it on
// the shipped binary; 1 KiB more in one frame of the path fails it.
type post struct {
	body  bodyBuf
	m     jsonrpc.Message
	env   envelope
	rec   postLog
	start time.Time
	kind  jsonrpc.Kind
	// sseOK and jsonOK: the forms of answer the client's Accept allows.
	sseOK, jsonOK bool
	// principal and user are the request's, and traceparent its header,
	// read only for the tail (tail.go).
	principal   Principal
	user        User
	traceparent string
	// observe: the POST counts in the call metrics (a request that reached
	// the handshake, a session's call or a sessionless one).
	observe bool
}

// postPool holds the POSTs' state. Owner: servePost, from Get until
// endPost puts it back: its body buffer is released (poisoned under -race,
// body.go) and every other field zeroed, so nothing of one POST reaches
// the next.
var postPool = sync.Pool{New: func() any { return new(post) }}

// servePost handles one POSTed JSON-RPC message. Its frame and those of
// the functions that wait for an answer (sessionPost, dispatch's Next) are
// kept small: see post.
func (ep *Endpoint) servePost(w http.ResponseWriter, r *http.Request) {
	p := postPool.Get().(*post)
	p.start, p.rec.status = time.Now(), http.StatusOK
	defer ep.endPost(p)
	if !ep.readPost(w, r, p) {
		return
	}
	if ep.opts.Tail != nil {
		p.principal, p.user = PrincipalFrom(r), UserFrom(r)
		if ep.opts.Tracing == nil {
			p.traceparent = httpx.Header(r.Header, "Traceparent")
		}
	}
	if ep.opts.Tracing != nil && p.kind == jsonrpc.KindRequest {
		r = ep.startSpan(r, p)
	}
	switch sid := httpx.Header(r.Header, httpx.HeaderSessionID); {
	case isModern(r, &p.m, &p.env):
		p.observe, p.rec.era = true, EraStateless
		if ep.opts.Tail != nil {
			p.rec.client = clientLabel(p.env.clientInfo)
		}
		ep.serveModern(w, r, &p.m, &p.env, &p.rec)
	case p.kind == jsonrpc.KindRequest && p.m.Method == "initialize" && sid == "":
		p.observe, p.rec.era = true, EraSession
		ep.initialize(w, r, &p.m, &p.rec, p.jsonOK)
	case sid == "" && p.kind == jsonrpc.KindRequest && ep.opts.Sessionless != SessionlessReject && ep.shared != nil:
		p.observe, p.rec.era = true, EraSessionless
		ep.serveSessionless(w, r, &p.m, &p.rec)
	case sid == "" && p.kind == jsonrpc.KindNotification && ep.shared != nil &&
		((httpx.Header(r.Header, httpx.HeaderProtocolVersion) == eraModern && ep.opts.ProtocolEras != Eras2025) || ep.opts.Sessionless != SessionlessReject):
		// A notification without a session (a 2026-07-28 client's, or a
		// stateless 2025 client's notifications/initialized) concerns no
		// call the bridge could map it to: accepted, not forwarded. A
		// modern client cancels by closing the request's stream.
		p.rec.status, p.rec.era = http.StatusAccepted, EraSessionless
		w.WriteHeader(http.StatusAccepted)
	default:
		p.rec.era = EraSession
		ep.sessionPost(w, r, p)
	}
}

// endPost ends a POST: its metrics, its access log line, and its body and
// state back to their pools (the parsed message aliases the body, so it
// goes last).
func (ep *Endpoint) endPost(p *post) {
	p.rec.span.End(p.rec.status, p.rec.rpcCode, p.rec.toolError)
	if p.observe {
		elapsed := p.rec.end().Sub(p.start)
		ep.m.observeCall(p.rec.status, elapsed)
		tool := ""
		if p.m.Method == "tools/call" {
			tool = jsonrpc.String(p.env.name)
		}
		ep.m.observeOperation(p.m.Method, tool, p.rec.errorType(), elapsed)
	}
	ep.logPost(&p.rec, p.start)
	if ep.opts.Tail != nil {
		ep.tail(p)
	}
	ep.releaseBody(&p.body)
	*p = post{body: p.body}
	postPool.Put(p)
}

// readPost checks a POST's headers, reads its body and parses the message
// into p; false when it has answered the POST with an error.
func (ep *Endpoint) readPost(w http.ResponseWriter, r *http.Request, p *post) bool {
	rec := &p.rec
	if ct := httpx.Header(r.Header, "Content-Type"); ct != "" && ct != "application/json" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			rec.status = httpx.WriteErrorFor(w, r, http.StatusUnsupportedMediaType, codeServer, fmt.Sprintf("Content-Type %q is not supported: POST a JSON-RPC message as application/json", ct))
			return false
		}
	}
	accept := httpx.Header(r.Header, "Accept")
	p.sseOK = accept != "" && httpx.Accepts(accept, "text/event-stream")
	p.jsonOK = accept == "" || httpx.Accepts(accept, "application/json")
	if !p.sseOK && !p.jsonOK {
		rec.status = httpx.WriteErrorFor(w, r, http.StatusNotAcceptable, codeServer, fmt.Sprintf("Accept %q allows neither application/json nor text/event-stream, the two forms an MCP answer can take", accept))
		return false
	}
	if err := ep.readBody(w, r, &p.body, p.start); err != nil {
		var be *bodyError
		errors.As(err, &be)
		if be.status == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", "2")
		} else {
			// The rest of the body is not read: the connection cannot
			// carry another request.
			w.Header().Set("Connection", "close")
		}
		rec.status = httpx.WriteErrorFor(w, r, be.status, codeServer, be.msg)
		return false
	}
	body := p.body.b
	ep.m.BytesIn.Add(float64(len(body)))
	// Messages go to the child as single lines: compact pretty-printed input.
	if bytes.IndexByte(body, '\n') >= 0 || bytes.IndexByte(body, '\r') >= 0 { // (IndexByte is vectorized; ContainsAny is not)
		var c bytes.Buffer
		if err := json.Compact(&c, body); err == nil {
			body = c.Bytes()
		}
	}
	if ep.opts.AuditBodies {
		rec.reqBody = append([]byte(nil), body...)
	}
	m := &p.m
	if err := jsonrpc.ParseInto(body, m); err != nil {
		if errors.Is(err, jsonrpc.ErrBatch) {
			rec.status = httpx.WriteError(w, http.StatusBadRequest, codeInvalidRequest, "batching is not supported: send one JSON-RPC message per POST")
			return false
		}
		rec.status = httpx.WriteError(w, http.StatusBadRequest, codeParse, "the body is not a JSON-RPC message: "+err.Error())
		return false
	}
	rec.method, rec.rpcID = m.Method, m.ID
	p.kind = m.Kind()
	if p.kind == jsonrpc.KindInvalid {
		rec.status = httpx.WriteError(w, http.StatusBadRequest, codeInvalidRequest, `not a valid JSON-RPC 2.0 request, notification or response: a request needs "method" and a string or number "id"; a response needs "id" and "result" or "error"`)
		return false
	}
	p.env = readEnvelope(m.Params)
	return true
}

// sessionPost serves a POST within a session: a request (the client waits
// for its answer here), a notification or a response.
func (ep *Endpoint) sessionPost(w http.ResponseWriter, r *http.Request, p *post) {
	s := ep.enterSession(w, r, p)
	if s == nil {
		return
	}
	defer s.leave(p)
	if ep.opts.Tail != nil {
		s.mu.Lock()
		p.rec.client = s.client
		s.mu.Unlock()
	}
	if p.kind != jsonrpc.KindRequest {
		ep.forward(w, s, p)
		return
	}

	p.observe = true
	ep.m.Inflight.Inc()
	ep.calls.Add(1)
	defer ep.callDone()
	// A dropped connection does not cancel the call: its answer stays in the
	// session's event log for a client that resumes the stream.
	pw := ep.newPostAnswer(w, s, p)
	defer putPostAnswer(pw)
	// The call ends with the session (its cause is the call's error), not
	// with the connection: a client that lost it resumes the stream. This
	// handler owns the wait: it streams what belongs to the call and sends
	// keepalives, which switch a slow call to a stream.
	call := s.d.Begin(telemetry.With(s.ctx, p.rec.span), s, &p.m, ep.opts.RequestTimeout, true)
	defer call.Release()
	await(call, pw)
}

// enterSession resolves the session of a POST and counts the POST in
// flight in it (the caller then leaves it); nil when it has answered the
// POST with an error.
func (ep *Endpoint) enterSession(w http.ResponseWriter, r *http.Request, p *post) *Session {
	s, errStatus := ep.sessionFor(w, r)
	if s == nil {
		p.rec.status = errStatus
		return nil
	}
	p.rec.session = s.id
	w.Header()[httpx.HeaderSessionID] = s.idHeader
	s.inflight.Add(1)
	if ep.reg.get(s.id) != s {
		// Evicted between the lookup and inflight: the evictor saw the
		// session idle, so this request must not use it.
		p.rec.status = httpx.WriteError(w, http.StatusNotFound, codeSessionNotFound, errSessionGone)
		s.leave(p)
		return nil
	}
	return s
}

// leave ends a POST's time in flight in s.
func (s *Session) leave(p *post) {
	s.inflight.Add(-1)
	s.touchAt(p.rec.end())
}

// forward passes a client's notification or response to the child.
func (ep *Endpoint) forward(w http.ResponseWriter, s *Session, p *post) {
	var err error
	if p.kind == jsonrpc.KindNotification {
		err = s.d.Notify(s, &p.m)
	} else {
		err = s.d.Respond(s, &p.m)
	}
	if errors.Is(err, dispatch.ErrRefused) {
		p.rec.status = httpx.WriteError(w, http.StatusBadRequest, codeInvalidRequest, err.Error())
		return
	}
	if err != nil {
		st, msg := statusFor(ep.name, err)
		p.rec.status = httpx.WriteError(w, st, codeServer, msg)
		return
	}
	p.rec.status = http.StatusAccepted
	w.WriteHeader(http.StatusAccepted)
}

// initialize creates a session and answers from the child's cached
// handshake. A malformed initialize is refused before any session or child
// exists: the child's handshake is the bridge's own, so no client can make
// it fail for the others.
func (ep *Endpoint) initialize(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message, rec *postLog, jsonOK bool) {
	if err := dispatch.ValidateInitialize(m.Params); err != nil {
		ep.m.Refused.WithLabelValues("invalid_initialize").Inc()
		rec.status = httpx.WriteRPCError(w, http.StatusBadRequest, m.ID, codeInvalidParams, err.Error())
		return
	}
	s, evicted, err := ep.reg.create(ep, PrincipalFrom(r))
	if err != nil {
		ep.m.Refused.WithLabelValues("session_cap").Inc()
		w.Header().Set("Retry-After", "5")
		rec.status = httpx.WriteError(w, http.StatusServiceUnavailable, codeServer, fmt.Sprintf("destination %q has its maximum of %d sessions and every one this client could replace is busy (a call in flight or a stream open; another token's sessions are never evicted for it); retry later, close unused clients, or raise MAX_STDIO_CONNECTIONS (-max-sessions)", ep.name, ep.opts.MaxSessions))
		return
	}
	// Attach before the evicted session detaches, so a shared child is not
	// stopped for lack of sessions.
	s.d.Attach(s, m.Params)
	if evicted != nil {
		ep.m.Evicted.Inc()
		ep.log.Info("least recently used session evicted to make room", "session", evicted.id)
		ep.endSession(evicted, errEvicted)
	}
	if ep.perSession != nil {
		if ok, why := ep.admitChild(r.Context(), min(ep.opts.RequestTimeout/2, 10*time.Second)); !ok {
			ep.endSession(s, errChildRoom)
			ep.m.Refused.WithLabelValues("child_cap").Inc()
			w.Header().Set("Retry-After", "2")
			rec.status = httpx.WriteError(w, http.StatusServiceUnavailable, codeServer, why)
			return
		}
	}
	s.inflight.Add(1)
	ep.calls.Add(1)
	resp, err := s.d.Do(s.ctx, s, m, ep.opts.RequestTimeout)
	ep.calls.Add(-1)
	s.inflight.Add(-1)
	s.touch()
	if err != nil {
		// The client gets no session: the log names none.
		ep.endSession(s, err)
		ep.writeResult(w, nil, err, rec)
		return
	}
	rec.session = s.id
	var negotiated struct {
		Result struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"result"`
	}
	_ = json.Unmarshal(resp, &negotiated)
	s.setVersion(negotiated.Result.ProtocolVersion)
	s.mu.Lock()
	s.initParams = bytes.Clone(m.Params) // m aliases the body's buffer
	s.client = clientLabel(jsonrpc.Member(m.Params, "clientInfo"))
	s.mu.Unlock()
	rec.client = s.client
	ep.persist(s)
	w.Header().Set(httpx.HeaderSessionID, s.id)
	ep.log.Info("session started", "session", s.id, "protocol_version", negotiated.Result.ProtocolVersion)
	if !jsonOK {
		// The client takes SSE only: one event with the answer.
		sw := ep.newSSEWriter(w)
		if sw.start(w, s.id) {
			sw.event(s.emitPost(s.openPost(), resp, true))
		}
		return
	}
	ep.writeResult(w, resp, nil, rec)
}

func (ep *Endpoint) writeResult(w http.ResponseWriter, resp []byte, err error, rec *postLog) {
	if err != nil {
		st, msg := statusFor(ep.name, err)
		if st == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", "5")
		}
		rec.status = httpx.WriteError(w, st, httpx.EraCode(rec.era == EraStateless, st, codeServer), msg)
		return
	}
	rec.noteAnswer(resp)
	h := w.Header()
	h["Content-Type"] = jsonContentType
	if len(resp) > 2048 {
		// net/http sends a longer body chunked unless told its length; a
		// shorter one it measures itself (one write for headers and body).
		h.Set("Content-Length", strconv.Itoa(len(resp)))
	}
	w.WriteHeader(http.StatusOK)
	n, _ := w.Write(resp)
	ep.m.BytesOut.Add(float64(n))
	if ep.keepsAnswers() {
		rec.respBody = resp
	}
}

// keepsAnswers reports whether a POST keeps its answer until it ends: for
// the audit of bodies, or the tail's results.
func (ep *Endpoint) keepsAnswers() bool { return ep.opts.AuditBodies || ep.opts.TailBodies > 0 }

func (ep *Endpoint) logPost(rec *postLog, start time.Time) {
	if !ep.log.IsInfo() {
		return
	}
	if ep.access != nil && !ep.opts.AuditBodies && ep.access.write(rec.end(), field(rec.method), field(string(rec.rpcID)), rec.status, msBetween(start, rec.end()), rec.session) {
		return
	}
	args := []any{"mcp_method", field(rec.method), "rpc_id", field(string(rec.rpcID)), "status_code", rec.status, "latency_ms", msBetween(start, rec.end())}
	if rec.session != "" {
		args = append(args, "session", rec.session)
	}
	if ep.opts.AuditBodies {
		args = append(args, "request_body", string(redact(rec.reqBody)), "response_body", string(redact(rec.respBody)))
	}
	ep.log.Info("POST", args...)
}

// noteWhole is the longest answer noteAnswer reads whole.
const noteWhole = 64 << 10

// errorType is the error.type of the request's operation: "" when it
// succeeded; the JSON-RPC error's code; tool_error for an isError result;
// else the HTTP outcome (stelae_calls_total's).
func (rec *postLog) errorType() string {
	switch {
	case rec.rpcCode != 0:
		return strconv.Itoa(rec.rpcCode)
	case rec.toolError:
		return "tool_error"
	case rec.status >= 300:
		return outcome(rec.status)
	}
	return ""
}
