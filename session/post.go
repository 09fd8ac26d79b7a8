package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"time"

	"github.com/stelae-bridge/stelae-bridge/dispatch"
	"github.com/stelae-bridge/stelae-bridge/jsonrpc"
)

// postLog collects what the access log says of one POST.
type postLog struct {
	status   int
	method   string
	rpcID    json.RawMessage
	session  string
	reqBody  []byte
	respBody []byte
	// ended is when the POST was answered, read once (end) for the
	// metrics, the session's last use and the access log: the clock is
	// among the costliest calls of a POST here.
	ended time.Time
}

// end is when the POST was answered (the first call reads the clock).
func (rec *postLog) end() time.Time {
	if rec.ended.IsZero() {
		rec.ended = time.Now()
	}
	return rec.ended
}

// servePost handles one POSTed JSON-RPC message.
func (ep *Endpoint) servePost(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	var bb *bodyBuf
	// The parsed message aliases the body: it goes back to the pool last,
	// after the access log has been written.
	defer func() {
		if bb != nil {
			ep.releaseBody(bb)
		}
	}()
	rec := postLog{status: http.StatusOK}
	defer ep.logPost(&rec, start)

	if ct := Header(r.Header, "Content-Type"); ct != "" && ct != "application/json" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			rec.status = WriteError(w, http.StatusUnsupportedMediaType, codeServer, fmt.Sprintf("Content-Type %q is not supported: POST a JSON-RPC message as application/json", ct))
			return
		}
	}
	accept := Header(r.Header, "Accept")
	sseOK := accept != "" && accepts(accept, "text/event-stream")
	jsonOK := accept == "" || accepts(accept, "application/json")
	if !sseOK && !jsonOK {
		rec.status = WriteError(w, http.StatusNotAcceptable, codeServer, fmt.Sprintf("Accept %q allows neither application/json nor text/event-stream, the two forms an MCP answer can take", accept))
		return
	}
	var err error
	if bb, err = ep.readBody(w, r, start); err != nil {
		var be *bodyError
		errors.As(err, &be)
		if be.status == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", "2")
		} else {
			// The rest of the body is not read: the connection cannot
			// carry another request.
			w.Header().Set("Connection", "close")
		}
		rec.status = WriteError(w, be.status, codeServer, be.msg)
		return
	}
	body := bb.b
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
	var m jsonrpc.Message
	if err := jsonrpc.ParseInto(body, &m); err != nil {
		if errors.Is(err, jsonrpc.ErrBatch) {
			rec.status = WriteError(w, http.StatusBadRequest, codeInvalidRequest, "batching is not supported: send one JSON-RPC message per POST")
			return
		}
		rec.status = WriteError(w, http.StatusBadRequest, codeParse, "the body is not a JSON-RPC message: "+err.Error())
		return
	}
	rec.method, rec.rpcID = m.Method, m.ID
	kind := m.Kind()
	if kind == jsonrpc.KindInvalid {
		rec.status = WriteError(w, http.StatusBadRequest, codeInvalidRequest, `not a valid JSON-RPC 2.0 request, notification or response: a request needs "method" and a string or number "id"; a response needs "id" and "result" or "error"`)
		return
	}
	env := readEnvelope(m.Params)
	if isModern(r, &m, &env) {
		defer func() { ep.m.observeCall(rec.status, rec.end().Sub(start)) }()
		ep.serveModern(w, r, &m, &env, &rec)
		return
	}
	if kind == jsonrpc.KindRequest && m.Method == "initialize" && Header(r.Header, headerSessionID) == "" {
		defer func() { ep.m.observeCall(rec.status, rec.end().Sub(start)) }()
		ep.initialize(w, r, &m, &rec, jsonOK)
		return
	}
	if Header(r.Header, headerSessionID) == "" && kind == jsonrpc.KindRequest && ep.opts.Sessionless != SessionlessReject && ep.shared != nil {
		defer func() { ep.m.observeCall(rec.status, rec.end().Sub(start)) }()
		ep.serveSessionless(w, r, &m, &rec)
		return
	}
	if Header(r.Header, headerSessionID) == "" && kind == jsonrpc.KindNotification && ep.shared != nil &&
		((Header(r.Header, headerProtocolVersion) == eraModern && ep.opts.ProtocolEras != Eras2025) || ep.opts.Sessionless != SessionlessReject) {
		// A notification without a session (a 2026-07-28 client's, or a
		// stateless 2025 client's notifications/initialized) concerns no
		// call the bridge could map it to: accepted, not forwarded. A
		// modern client cancels by closing the request's stream.
		rec.status = http.StatusAccepted
		w.WriteHeader(http.StatusAccepted)
		return
	}
	s, errStatus := ep.sessionFor(w, r)
	if s == nil {
		rec.status = errStatus
		return
	}
	rec.session = s.id
	w.Header()[headerSessionID] = s.idHeader
	s.inflight.Add(1)
	defer func() {
		s.inflight.Add(-1)
		s.touchAt(rec.end())
	}()
	if ep.reg.get(s.id) != s {
		// Evicted between the lookup and inflight: the evictor saw the
		// session idle, so this request must not use it.
		rec.status = WriteError(w, http.StatusNotFound, codeSessionNotFound, errSessionGone)
		return
	}

	switch kind {
	case jsonrpc.KindNotification, jsonrpc.KindResponse:
		var err error
		if kind == jsonrpc.KindNotification {
			err = s.d.Notify(s, &m)
		} else {
			err = s.d.Respond(s, &m)
		}
		if errors.Is(err, dispatch.ErrRefused) {
			rec.status = WriteError(w, http.StatusBadRequest, codeInvalidRequest, err.Error())
			return
		}
		if err != nil {
			st, msg := statusFor(ep.name, err)
			rec.status = WriteError(w, st, codeServer, msg)
			return
		}
		rec.status = http.StatusAccepted
		w.WriteHeader(http.StatusAccepted)
		return
	}

	ep.m.Inflight.Inc()
	defer func() {
		ep.m.Inflight.Dec()
		ep.m.observeCall(rec.status, rec.end().Sub(start))
	}()
	// A dropped connection does not cancel the call: its answer stays in the
	// session's event log for a client that resumes the stream.
	pw := ep.newWatcher(w, s, sseOK, jsonOK)
	defer putWatcher(pw)
	if pw.sseOK && (ep.opts.ResponseMode == ModeSSE || !jsonOK) {
		pw.switchSSE()
	}
	// The call ends with the session (its cause is the call's error), not
	// with the connection: a client that lost it resumes the stream. This
	// handler owns the wait: it streams what belongs to the call and sends
	// keepalives, which switch a slow call to a stream.
	call := s.d.Begin(s.ctx, s, &m, ep.opts.RequestTimeout, true)
	defer call.Release()
	tick := pw.tick()
	var resp []byte
	for {
		ev := call.Next(tick)
		if ev.Done {
			resp, err = ev.Answer, ev.Err
			break
		}
		if ev.Related != nil {
			pw.related(ev.Related)
		} else {
			pw.ticked()
		}
	}
	if pw.sw == nil {
		ep.writeResult(w, resp, err, &rec)
		return
	}
	if err != nil {
		_, text := statusFor(ep.name, err)
		resp = jsonrpc.ErrorResponse(m.ID, codeServer, text)
	}
	pw.sw.event(s.emitPost(pw.stream, resp, true))
	if ep.opts.AuditBodies {
		rec.respBody = resp
	}
}

// initialize creates a session and answers from the child's cached
// handshake. A malformed initialize is refused before any session or child
// exists: the child's handshake is the bridge's own, so no client can make
// it fail for the others.
func (ep *Endpoint) initialize(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message, rec *postLog, jsonOK bool) {
	if err := dispatch.ValidateInitialize(m.Params); err != nil {
		ep.m.Refused.WithLabelValues("invalid_initialize").Inc()
		rec.status = writeRPCError(w, http.StatusBadRequest, m.ID, codeInvalidParams, err.Error())
		return
	}
	s, evicted, err := ep.reg.create(ep, PrincipalFrom(r))
	if err != nil {
		ep.m.Refused.WithLabelValues("session_cap").Inc()
		w.Header().Set("Retry-After", "5")
		rec.status = WriteError(w, http.StatusServiceUnavailable, codeServer, fmt.Sprintf("destination %q has its maximum of %d sessions and every one is busy (a call in flight or a stream open); retry later, close unused clients, or raise MAX_STDIO_CONNECTIONS (-max-sessions)", ep.name, ep.opts.MaxSessions))
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
	rec.session = s.id
	s.inflight.Add(1)
	resp, err := s.d.Do(s.ctx, s, m, ep.opts.RequestTimeout)
	s.inflight.Add(-1)
	s.touch()
	if err != nil {
		ep.endSession(s, err)
		ep.writeResult(w, nil, err, rec)
		return
	}
	var negotiated struct {
		Result struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"result"`
	}
	_ = json.Unmarshal(resp, &negotiated)
	s.setVersion(negotiated.Result.ProtocolVersion)
	w.Header().Set(headerSessionID, s.id)
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
		rec.status = WriteError(w, st, codeServer, msg)
		return
	}
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
	if ep.opts.AuditBodies {
		rec.respBody = resp
	}
}

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
