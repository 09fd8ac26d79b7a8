package dispatch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/stelae-bridge/stelae-bridge/jsonrpc"
)

// This file is the MCP 2026-07-28 dialect spoken to a child that speaks it
// (issue 38). Such a child has no initialize and no session: every request
// carries the _meta envelope (protocol version, client info, client
// capabilities, log level), and what the child needs of the client during a
// call comes back as the call's answer — resultType "input_required" with
// its inputRequests and an opaque requestState (MRTR) — never as a request
// of its own on stdout. What it needs therefore belongs to exactly the call
// that got it: on a shared 2026 child no request for input is ever
// attributed by guessing, and none is refused for want of knowing whose it
// is.
//
//   - The envelope of every request is the bridge's: whatever a client put
//     under io.modelcontextprotocol/* in _meta is dropped, and the members
//     the bridge read of the caller (its initialize, or its own 2026
//     envelope, checked by the session layer) are written instead
//     (childParams). What the child reads is what the bridge checked.
//   - A 2026-07-28 caller takes input_required itself (the session layer
//     binds the child's requestState to the caller: session/mrtr.go).
//   - A 2025 session cannot: its call is translated (ask): each embedded
//     request becomes a request to that session, under an id the bridge
//     mints, on the call's own stream (or the session's GET stream); the
//     session's answers go back to the child as the call's retry, with
//     the child's requestState, under a fresh upstream id (retryInput).
//     The call waits for its answers as it waits for the child: its
//     timeout, its cancellation and its session's end apply.

// Values of Options.Era (the destinations file's words; "" is EraAuto).
const (
	EraAuto   = "auto"
	Era2025   = "2025"
	EraModern = "2026"
)

// modernEnvelope returns the _meta members (without braces) a 2026 child
// reads in each request of one caller.
func modernEnvelope(clientInfo, caps json.RawMessage, logLevel string) []byte {
	if !declared(clientInfo) {
		clientInfo = json.RawMessage(`{"name":"unknown","version":"unknown"}`)
	}
	if !declared(caps) {
		caps = json.RawMessage(`{}`)
	}
	b := make([]byte, 0, 128+len(clientInfo)+len(caps))
	b = append(b, `"io.modelcontextprotocol/protocolVersion":"`+ModernVersion+`","io.modelcontextprotocol/clientInfo":`...)
	b = appendCompact(b, clientInfo)
	b = append(b, `,"io.modelcontextprotocol/clientCapabilities":`...)
	b = appendCompact(b, caps)
	if logLevel != "" {
		b = jsonrpc.AppendString(append(b, `,"io.modelcontextprotocol/logLevel":`...), logLevel)
	}
	return b
}

// appendCompact appends v without insignificant whitespace: a line to the
// child holds no newline.
func appendCompact(dst []byte, v json.RawMessage) []byte {
	var buf bytes.Buffer
	if json.Compact(&buf, v) != nil {
		return append(dst, `{}`...)
	}
	return append(dst, buf.Bytes()...)
}

// ownEnvelope is the envelope of the bridge's own requests (the tool
// catalogue's fetch): its own client info and every capability it routes.
func (d *Dispatcher) ownEnvelope() []byte {
	version := d.opts.BridgeVersion
	if version == "" {
		version = "unknown"
	}
	info, _ := json.Marshal(map[string]string{"name": "stelae-bridge", "version": version})
	return modernEnvelope(info, json.RawMessage(bridgeCapabilities), "")
}

// callerEnvelope is what a 2026 child reads of s's requests, and whether s
// takes input_required itself (a 2026-07-28 caller).
func (d *Dispatcher) callerEnvelope(s Session) ([]byte, bool) {
	if s == nil {
		return d.ownEnvelope(), false
	}
	d.mu.RLock()
	caps, ok := d.sessions[s]
	d.mu.RUnlock()
	if !ok || caps.envelope == nil {
		// Not attached (it could not be asked anything): no capabilities.
		return modernEnvelope(nil, nil, ""), false
	}
	return caps.envelope, caps.modern
}

// childParams are a request's params as a 2026 child gets them: the
// caller's envelope in _meta in place of any io.modelcontextprotocol/*
// member the client wrote; inputResponses and requestState only from a
// 2026-07-28 caller (whose session layer checked them) or the bridge's own
// retry (retryInput), never from a 2025 client.
func (d *Dispatcher) childParams(s Session, params json.RawMessage) (json.RawMessage, bool) {
	env, modern := d.callerEnvelope(s)
	return withEnvelope(params, env, modern), modern
}

// withEnvelope is childParams for envelope members env, written in one
// pass into one buffer: the call path of every request to a 2026 child.
func withEnvelope(params json.RawMessage, env []byte, keepMRTR bool) json.RawMessage {
	out := make([]byte, 0, len(params)+len(env)+16)
	out = append(out, '{')
	n, hasMeta := 0, false
	if i := skipSpace(params); i < len(params) && params[i] == '{' {
		// (Not an object, or none: the child gets the envelope alone,
		// and refuses the rest itself.)
		jsonrpc.EachMemberRaw(params, func(k []byte, start, end int) bool {
			v := params[start:end]
			if !keepMRTR && (jsonrpc.KeyIs(k, "inputResponses") || jsonrpc.KeyIs(k, "requestState")) {
				return true
			}
			if n > 0 {
				out = append(out, ',')
			}
			n++
			out = append(append(out, k...), ':')
			if jsonrpc.KeyIs(k, "_meta") {
				hasMeta = true
				out = appendMeta(out, v, env)
			} else {
				out = append(out, v...)
			}
			return true
		})
	}
	if !hasMeta {
		if n > 0 {
			out = append(out, ',')
		}
		out = append(append(append(out, `"_meta":{`...), env...), '}')
	}
	return append(out, '}')
}

// appendMeta appends a request's _meta (meta) as a 2026 child gets it: its
// members but the io.modelcontextprotocol/* ones, then the envelope env.
func appendMeta(out, meta, env []byte) []byte {
	out = append(out, '{')
	if i := skipSpace(meta); i < len(meta) && meta[i] == '{' {
		jsonrpc.EachMemberRaw(meta, func(k []byte, start, end int) bool {
			if !jsonrpc.KeyHasPrefix(k, "io.modelcontextprotocol/") {
				out = append(append(append(out, k...), ':'), meta[start:end]...)
				out = append(out, ',')
			}
			return true
		})
	}
	return append(append(out, env...), '}')
}

func skipSpace(b []byte) int {
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// modernInitResult is the initialize result a 2025 session is answered
// with for a 2026 child, made from its server/discover result: its
// capabilities, server info and instructions, at the newest 2025 version
// (each session then gets the version it asked for: negotiate).
func modernInitResult(discovered json.RawMessage, name string) json.RawMessage {
	caps := jsonrpc.Member(discovered, "capabilities")
	if !declared(caps) {
		caps = json.RawMessage(`{}`)
	}
	info := jsonrpc.Member(jsonrpc.Member(discovered, "_meta"), "io.modelcontextprotocol/serverInfo")
	if !declared(info) {
		info, _ = json.Marshal(map[string]string{"name": name, "version": "unknown"})
	}
	r := struct {
		ProtocolVersion string          `json:"protocolVersion"`
		Capabilities    json.RawMessage `json:"capabilities"`
		ServerInfo      json.RawMessage `json:"serverInfo"`
		Instructions    json.RawMessage `json:"instructions,omitempty"`
	}{LatestVersion, caps, info, nil}
	if in := jsonrpc.Member(discovered, "instructions"); len(in) > 0 && in[0] == '"' {
		r.Instructions = in
	}
	b, err := json.Marshal(r)
	if err != nil {
		return json.RawMessage(`{"protocolVersion":"` + LatestVersion + `","capabilities":{},"serverInfo":{"name":"unknown","version":"unknown"}}`)
	}
	return b
}

// SpeaksModern reports whether the destination's child (the running one,
// or the last one) speaks MCP 2026-07-28 and is spoken to in it.
func (d *Dispatcher) SpeaksModern() bool {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.discovered != nil
}

// logLevels are the log levels, least severe first.
var logLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// setLevel answers a 2025 session's logging/setLevel for a 2026 child,
// which has no such method: the level goes in the envelope of the
// session's requests from now on.
func (d *Dispatcher) setLevel(s Session, m *jsonrpc.Message) []byte {
	v, err := jsonrpc.ExactMember(m.Params, "level")
	level := jsonrpc.String(v)
	if err != nil || len(v) == 0 || v[0] != '"' || !slices.Contains(logLevels, level) {
		return jsonrpc.ErrorResponse(m.ID, jsonrpc.CodeInvalidParams, `logging/setLevel needs "level", one of `+strings.Join(logLevels, ", "))
	}
	d.mu.Lock()
	if caps, ok := d.sessions[s]; ok && caps.envelope != nil {
		env := caps.envelope[:caps.envelopeBase:caps.envelopeBase]
		caps.envelope = jsonrpc.AppendString(append(env, `,"io.modelcontextprotocol/logLevel":`...), level)
		caps.logLevel = level
		d.sessions[s] = caps
	}
	d.mu.Unlock()
	return jsonrpc.AppendResponse(nil, m.ID, json.RawMessage(`{}`), nil)
}

// routeModernLog sends a 2026 child's log line to the one user it can be
// theirs: a 2026 server sends log lines only for requests whose envelope
// names a level (and at that level or above), so the candidates are the
// calls in flight whose callers asked for it — with the calls given up on
// that the child may still work on (abandoned.go), whose users count as
// candidates too. One user: the newest such call's; none, or several: as
// Options.Logs says for a line not attributable (fanout gives it to every
// session, else it is dropped and counted).
func (d *Dispatcher) routeModernLog(line []byte, level string) {
	sev := slices.Index(logLevels, level)
	msg := append([]byte(nil), line...)
	d.mu.RLock()
	defer d.mu.RUnlock()
	d.pmu.Lock()
	var seen userSet
	var newest *Call
	var up uint64
	for u, q := range d.pending {
		if q.sess == nil || q.waiting {
			continue
		}
		caps := d.sessions[q.sess]
		if caps.logLevel == "" || slices.Index(logLevels, caps.logLevel) > sev {
			continue
		}
		seen.see(q.sess.User())
		if u > up {
			up, newest = u, q
		}
	}
	d.expireAbandoned(time.Now())
	for _, a := range d.abandoned {
		seen.see(a.user)
	}
	if seen.n == 1 && newest != nil && newest.sess.User() == seen.owner {
		if !d.toCaller(newest, msg) && !newest.sess.Deliver(msg) {
			d.logsDropped.Add(1)
		}
		d.pmu.Unlock()
		return
	}
	d.pmu.Unlock()
	if d.opts.Logs == LogsFanout {
		for s := range d.sessions {
			if !relayed(s) {
				d.deliver(s, msg)
			}
		}
		return
	}
	d.logsDropped.Add(1)
}

// maxInputRounds bounds how many times one call of a 2025 session may be
// answered input_required: a child that never stops asking ends the call.
const maxInputRounds = 16

// asking is what a translated call (a 2025 session's, on a 2026 child)
// holds while its session answers the child's input requests. Owner: the
// call's caller, but for answers and left, which Respond writes under
// d.pmu while the call waits (Call.waiting).
type asking struct {
	// params are the call's params as last written to the child, without
	// inputResponses and requestState.
	params json.RawMessage
	// state is the child's requestState (JSON), nil when it gave none.
	state json.RawMessage
	// ids are the d.inputs keys of this round's requests.
	ids []string
	// answers are the session's results, by inputRequests key; left
	// counts those still awaited.
	answers map[string]json.RawMessage
	left    int
	rounds  int
}

// inputWait is one request of a child's, sent to a 2025 session under an
// id the bridge minted, whose answer call waits for.
type inputWait struct {
	call   *Call
	key    string
	method string
}

// inputIDPrefix starts the ids of the requests the bridge sends a 2025
// session for a 2026 child: they never look like a child's own.
const inputIDPrefix = "stelae-input-"

// InputRequired reports whether an answer is a result of resultType
// input_required.
func InputRequired(msg []byte) bool {
	result := jsonrpc.Member(msg, "result")
	return result != nil && jsonrpc.String(jsonrpc.Member(result, "resultType")) == "input_required"
}

// received takes the end a path sent on call.reply: false when the call
// goes on (its child task's result, its inputs' retry, its input asked).
func (call *Call) received() bool {
	switch {
	case call.end.retry:
		return !call.retryInput()
	case call.augmented && call.awaitChildTask(call.end):
		return false
	case call.translate && call.end.err == nil && InputRequired(call.end.msg):
		return !call.ask()
	}
	return true
}

// ask sends the child's input requests in call's answer to the call's
// session and makes the call wait for the answers (true); false when the
// call ends instead, with call.end saying why.
func (call *Call) ask() bool {
	d := call.d
	a := call.asking
	if a == nil {
		a = &asking{}
		call.asking = a
	}
	a.rounds++
	result := jsonrpc.Member(call.end.msg, "result")
	fail := func(why string) bool {
		call.end = reply{msg: jsonrpc.ErrorResponse(call.clientID, jsonrpc.CodeInternalError, why)}
		return false
	}
	if a.rounds > maxInputRounds {
		return fail(fmt.Sprintf("the server asked this call for input %d times without answering it; the bridge gave up on the call", maxInputRounds))
	}
	params := jsonrpc.Member(call.out, "params")
	a.params = jsonrpc.Rewrite(bytes.Clone(params), func(k, v []byte) []byte {
		if jsonrpc.KeyIs(k, "inputResponses") || jsonrpc.KeyIs(k, "requestState") {
			return nil
		}
		return v
	})
	a.state = nil
	if st := jsonrpc.Member(result, "requestState"); len(st) > 0 && st[0] == '"' {
		a.state = bytes.Clone(st)
	}
	d.mu.RLock()
	caps := d.sessions[call.sess]
	d.mu.RUnlock()
	a.answers, a.ids, a.left = map[string]json.RawMessage{}, a.ids[:0], 0
	type ask struct {
		id  string
		msg []byte
		w   inputWait
	}
	var asks []ask
	reqs := jsonrpc.Member(result, "inputRequests")
	why := ""
	jsonrpc.EachMember(reqs, func(key string, val []byte) bool {
		method := jsonrpc.String(jsonrpc.Member(val, "method"))
		p := jsonrpc.Member(val, "params")
		if method == "roots/list" && d.opts.Roots != nil {
			a.answers[key] = d.opts.Roots
			return true
		}
		n := capabilityFor(&jsonrpc.Message{Method: method, Params: p})
		if n.name == "" {
			why = fmt.Sprintf("the server asked the client %q, which is not a request a server may send (sampling/createMessage, elicitation/create, roots/list)", method)
			return false
		}
		if !n.met(caps) {
			why = fmt.Sprintf("the server needs the client's %s (%s), which this client did not declare in its initialize", n.name, method)
			return false
		}
		id := strconv.Quote(inputIDPrefix + strconv.FormatUint(d.seq.Add(1), 10))
		asks = append(asks, ask{id, jsonrpc.AppendRequest(nil, []byte(id), method, p), inputWait{call: call, key: key, method: method}})
		return true
	})
	if why != "" {
		return fail(why)
	}
	if len(asks) == 0 && a.state == nil && len(a.answers) == 0 {
		return fail("the server answered input_required with neither inputRequests nor requestState")
	}
	if len(asks) == 0 {
		// Nothing to ask (load shedding, or roots the bridge answers):
		// the retry goes at once.
		return call.retryInput()
	}
	a.left = len(asks)
	var deliver [][]byte
	if d.opts.TraceWait != nil && call.ctx != nil && call.inputEnd == nil {
		call.inputEnd = d.opts.TraceWait(call.ctx, "input", time.Now())
	}
	d.pmu.Lock()
	d.pending[call.up] = call
	call.waiting = true
	for _, q := range asks {
		a.ids = append(a.ids, q.id)
		d.inputs[q.id] = q.w
		if !d.toCaller(call, q.msg) {
			deliver = append(deliver, q.msg)
		}
	}
	d.pmu.Unlock()
	for _, msg := range deliver {
		if !call.sess.Deliver(msg) {
			// Nowhere to ask: the call ends, unless another path took it.
			if d.takeCall(call.up) == nil {
				call.end = <-call.reply
				return !call.received()
			}
			return fail("the server needs input from the client and the session has no stream open to ask it on (open the session's GET stream, or accept text/event-stream on the POST)")
		}
	}
	return true
}

// retryInput sends a translated call again with its session's answers and
// the child's requestState, under a fresh upstream id (false: the call
// ended, its end says why).
func (call *Call) retryInput() bool {
	d, a := call.d, call.asking
	answers, err := json.Marshal(a.answers)
	params := a.params
	if err == nil {
		params, err = jsonrpc.Replace(params, "inputResponses", answers)
	}
	if err == nil && a.state != nil {
		params, err = jsonrpc.Replace(params, "requestState", a.state)
	}
	if err != nil {
		call.end = reply{msg: jsonrpc.ErrorResponse(call.clientID, jsonrpc.CodeInternalError, "the bridge could not build the call's retry with the client's answers: "+err.Error())}
		return false
	}
	call.up = d.seq.Add(1)
	upID := strconv.AppendUint(call.idBuf[:0], call.up, 10)
	if call.clientToken != nil {
		// The token the child reports progress with is the upstream id.
		params, _ = rewriteProgressToken(params, upID)
	}
	d.post(call, call.c, upID, call.method, params)
	if call.ended {
		return false
	}
	return true
}

// TranslateInput makes a 2026-07-28 caller's call on a 2026 child take the
// child's input_required answers as a 2025 session's are (ask): as
// requests among its related messages, answered with Respond. The tasks
// extension's task that holds a call does, so that its inputs wait for
// tasks/update. Only the call's caller may call it; a call on a 2025 child
// is unchanged.
func (call *Call) TranslateInput() {
	if call.c != nil && call.c.modern && call.sess != nil {
		call.translate = true
	}
}

// answerInput takes a 2025 session's answer to a request the bridge sent
// it for a 2026 child's call (ours: the id is one the bridge minted).
func (d *Dispatcher) answerInput(s Session, m *jsonrpc.Message) bool {
	key := string(m.ID)
	if len(key) < len(inputIDPrefix)+1 || key[1:1+len(inputIDPrefix)] != inputIDPrefix {
		return false
	}
	d.pmu.Lock()
	defer d.pmu.Unlock()
	w, ok := d.inputs[key]
	if !ok || w.call.sess != s {
		// Unknown, answered already, ended, or another session's: the
		// answer is dropped (another session never answers a call that
		// is not its own).
		if ok {
			d.log.Warn("a session answered another session's input request; dropped", "session", s.SessionID())
		}
		return true
	}
	delete(d.inputs, key)
	call := w.call
	if d.pending[call.up] != call || !call.waiting {
		return true
	}
	a := call.asking
	if m.Error != nil {
		d.takeWaitingLocked(call)
		msg := jsonrpc.String(jsonrpc.Member(m.Error, "message"))
		call.reply <- reply{msg: jsonrpc.ErrorResponse(call.clientID, jsonrpc.CodeInternalError, fmt.Sprintf("the server's %s was answered with an error: %s", w.method, msg))}
		return true
	}
	a.answers[w.key] = bytes.Clone(m.Result)
	a.left--
	if a.left == 0 {
		d.takeWaitingLocked(call)
		call.reply <- reply{retry: true}
	}
	return true
}

// takeWaitingLocked takes a call that waits for its session's input out of
// the pending calls and forgets its requests. d.pmu must be held.
func (d *Dispatcher) takeWaitingLocked(call *Call) {
	delete(d.pending, call.up)
	d.dropInputsLocked(call)
}

// dropInputsLocked forgets the input requests call waits for, if any: a
// call taken out of the pending calls no longer waits. d.pmu must be held.
func (d *Dispatcher) dropInputsLocked(call *Call) {
	if !call.waiting {
		return
	}
	call.waiting = false
	for _, id := range call.asking.ids {
		delete(d.inputs, id)
	}
	if call.inputEnd != nil {
		call.inputEnd(nil)
		call.inputEnd = nil
	}
}
