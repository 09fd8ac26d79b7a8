package session

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/stelae-bridge/stelae-bridge/dispatch"
	"github.com/stelae-bridge/stelae-bridge/jsonrpc"
)

// This file is Multi Round-Trip Requests (MCP 2026-07-28) for a stdio
// child of the 2025 era: when the child sends sampling/createMessage,
// elicitation/create or roots/list during a modern request's call, the
// bridge parks the child's request (the child keeps waiting) and answers
// the modern request with resultType "input_required": the child's
// requests as inputRequests (keyed by the child's own request ids) and a
// requestState. The retry (a new id, inputResponses, the requestState
// echoed) is checked, the child gets its answers, and the rest of the call
// goes on the retry's response. requestState is integrity-protected (HMAC
// with a key that rotates), bound to the principal, the method and its
// params' digest, expires, and works once.

// inputMethods are the child's requests that become input requests, with
// the client capability each needs.
var inputMethods = map[string]string{"sampling/createMessage": "sampling", "elicitation/create": "elicitation", "roots/list": "roots"}

// ambientInputs are the capabilities of the client's surroundings, not of
// a call's work: a child asks for roots of its own accord (the reference
// server right after its start) and must do without them when a client
// has none. An undeclared one is refused to the child and the call goes
// on, as is a request marked dispatch.OptionalMeta; any other ends the
// call with -32021.
var ambientInputs = map[string]bool{"roots": true}

// parkedCall is a call waiting for its client's input.
type parkedCall struct {
	f *flight
	// keys are the inputRequests keys → the child's request ids.
	keys      map[string]json.RawMessage
	principal Principal
	digest    [32]byte
	timer     *time.Timer
	// waitEnd ends the span of the park (tracing on), by whoever takes
	// the call out of the parked calls (unparkLocked's caller).
	waitEnd func(err error)
}

// unparked ends the park's span: err is why the call will not go on
// (nil: its retry came).
func (pc *parkedCall) unparked(err error) {
	if pc.waitEnd != nil {
		pc.waitEnd(err)
	}
}

// Bounds of the calls waiting for their clients' input: each holds a call
// on the child (whose handler waits too) for up to -input-wait.
const (
	// maxParked bounds them per destination.
	maxParked = 1024
	// maxParkedPerPrincipal bounds one principal's (all anonymous
	// clients are one).
	maxParkedPerPrincipal = 64
)

// mrtr holds an endpoint's parked calls and its requestState keys.
type mrtr struct {
	// mu guards every field below.
	mu     sync.Mutex
	parked map[string]*parkedCall
	// n counts the parked calls and those about to park (their places
	// taken), byPrincipal the same per principal.
	n           int
	byPrincipal map[Principal]int
	key         []byte
	prevKey     []byte
	keyAt       time.Time
	// closed: the endpoint shut down (endParked); nothing parks any more.
	closed bool
}

// keys returns the current key (rotated hourly) and the previous one.
func (x *mrtr) keys() ([]byte, []byte) {
	if x.key == nil || time.Since(x.keyAt) > time.Hour {
		x.prevKey, x.key, x.keyAt = x.key, make([]byte, 32), time.Now()
		if _, err := rand.Read(x.key); err != nil {
			panic(err)
		}
	}
	return x.key, x.prevKey
}

// stateBody is what a requestState carries; its MAC covers it all.
type stateBody struct {
	// ID names a parked call; Child is instead a 2026 child's own
	// requestState, which the client gets sealed (sealChild).
	ID        string `json:"i,omitempty"`
	Child     string `json:"c,omitempty"`
	Expires   int64  `json:"e"`
	Principal []byte `json:"p"`
	Digest    []byte `json:"d"`
}

func sign(key, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(body)
	return m.Sum(nil)
}

// paramsDigest is the digest of what a request asks for — its method and
// the params that name the work (name, arguments, uri) — so that a retry
// must ask for the same thing; anything else (_meta, inputResponses,
// requestState, members it does not know) may differ. The members are
// read as every decoder reads them (jsonrpc.ExactMembers: the dispatcher's
// screen refused the request otherwise), never by a second decoder with
// other rules; params read otherwise get a digest no retry matches.
func paramsDigest(method string, params json.RawMessage) [32]byte {
	var vals [3][]byte
	if err := jsonrpc.ExactMembers(params, digestMembers[:], vals[:]); err != nil {
		var none [32]byte
		_, _ = rand.Read(none[:])
		return none
	}
	var canon struct {
		Name, Arguments, URI any
	}
	for i, v := range []*any{&canon.Name, &canon.Arguments, &canon.URI} {
		if vals[i] != nil {
			_ = json.Unmarshal(vals[i], v)
		}
	}
	b, _ := json.Marshal(canon) // key order and spacing do not matter
	return sha256.Sum256(append([]byte(method+"\x00"), b...))
}

// digestMembers are the params paramsDigest binds, in canon's order.
var digestMembers = [...]string{"name", "arguments", "uri"}

// resumeMembers are what a retry resumes a parked call by.
var resumeMembers = [...]string{"requestState", "inputResponses"}

// parkOutcome is what park made of a call.
type parkOutcome uint8

const (
	// parkedForInput: m was answered input_required; the call waits for
	// the retry (the parked calls own it).
	parkedForInput parkOutcome = iota
	// parkEnded: m was answered (the call's own answer came, or an
	// error): the flight ends with the drive.
	parkEnded
	// parkGoOn: nothing the child asked can be asked of this client; its
	// requests were refused and the drive goes on.
	parkGoOn
)

// park answers m with input_required for the child's request first (and any
// others it sent with it), and keeps the call for the retry.
func (ep *Endpoint) park(w http.ResponseWriter, r *http.Request, f *flight, m *jsonrpc.Message, first []byte, rec *postLog) parkOutcome {
	reqs := [][]byte{first}
	// The child may ask several things at once: take what follows at once.
	for settle := time.NewTimer(20 * time.Millisecond); ; {
		ev := f.call.Next(settle.C)
		if ev.Done {
			// It answered after all: nothing to park.
			settle.Stop()
			resp, err := f.answer(ev, m)
			ep.writeResult(w, resp, err, rec)
			return parkEnded
		}
		if ev.Tick {
			break
		}
		if jsonrpc.Member(ev.Related, "id") != nil {
			reqs = append(reqs, ev.Related)
		}
	}
	inputs := map[string]json.RawMessage{}
	keys := map[string]json.RawMessage{}
	var missing []string
	// refused are the child's requests this client cannot be asked, with
	// why: answered at once if the call goes on; if it ends, its end
	// answers them after the cancellation (flight.endCause).
	type refusal struct {
		req []byte
		why string
	}
	var refused []refusal
	for _, req := range reqs {
		method := jsonrpc.String(jsonrpc.Member(req, "method"))
		need, ok := inputMethods[method]
		if !ok {
			refused = append(refused, refusal{req, method + " is not a request a " + eraModern + " client can be asked"})
			continue
		}
		if need, ok = clientDeclared(f.caps, need, jsonrpc.Member(req, "params")); !ok {
			refused = append(refused, refusal{req, "the client did not declare the " + need + " capability"})
			if !ambientInputs[need] && !optionalInput(req) {
				missing = append(missing, need)
			}
			continue
		}
		id := jsonrpc.Member(req, "id")
		key := inputKey(id)
		keys[key] = id
		body, _ := json.Marshal(map[string]json.RawMessage{"method": json.RawMessage(jsonrpc.AppendString(nil, method)), "params": clientParams(jsonrpc.Member(req, "params"))})
		inputs[key] = body
	}
	if len(missing) > 0 && len(inputs) == 0 {
		// Nothing it needs can be asked of this client.
		why := "the tool needs client capabilities this request did not declare: " + strings.Join(missing, ", ")
		f.endCause = fmt.Errorf("%w: %s", dispatch.ErrCanceled, why)
		rec.status = modernError(w, http.StatusBadRequest, m.ID, jsonrpc.CodeMissingCapability, why, map[string]any{"requiredCapabilities": capsObject(missing)})
		return parkEnded
	}
	if len(inputs) == 0 {
		for _, rf := range refused {
			f.refuse(rf.req, rf.why)
		}
		return parkGoOn
	}
	principal := PrincipalFrom(r)
	ep.sl.mrtr.mu.Lock()
	full, mine := ep.sl.mrtr.n >= maxParked, ep.sl.mrtr.byPrincipal[principal] >= maxParkedPerPrincipal
	if !full && !mine {
		if ep.sl.mrtr.parked == nil {
			ep.sl.mrtr.parked, ep.sl.mrtr.byPrincipal = map[string]*parkedCall{}, map[Principal]int{}
		}
		ep.sl.mrtr.n++ // its place, taken before it parks
		ep.sl.mrtr.byPrincipal[principal]++
	}
	ep.sl.mrtr.mu.Unlock()
	if full || mine {
		// The call ends; its end answers the child's requests.
		f.endCause = fmt.Errorf("%w: too many calls are waiting for their clients' input", dispatch.ErrCanceled)
		why := fmt.Sprintf("%d calls of destination %q are waiting for their clients' input, its maximum; try again shortly", maxParked, ep.name)
		if mine {
			why = fmt.Sprintf("this client already has %d calls waiting for its input, its maximum: answer or drop those (their requestState) first", maxParkedPerPrincipal)
		}
		w.Header().Set("Retry-After", "5")
		rec.status = modernError(w, http.StatusServiceUnavailable, m.ID, jsonrpc.CodeServerError, why, nil)
		return parkEnded
	}
	// The call outlives this request, whose body's buffer is reused when
	// it ends: the call keeps copies of what it refers to. While it waits
	// for the retry, calls that run together may go (dispatch.Call.Park).
	for _, rf := range refused {
		f.refuse(rf.req, rf.why) // the call goes on
	}
	f.call.Keep()
	f.call.Park()
	// The park's own timer (InputWait) bounds the wait, not the request
	// timeout: a person answering may take longer.
	f.call.Extend(ep.opts.InputWait + ep.opts.RequestTimeout)
	f.caps = bytes.Clone(f.caps)
	id := newParkID()
	pc := &parkedCall{f: f, keys: keys, principal: principal, digest: paramsDigest(m.Method, m.Params)}
	if ep.opts.Tracing != nil {
		pc.waitEnd = ep.opts.Tracing.Wait(r.Context(), "input", time.Now())
	}
	ep.sl.mrtr.mu.Lock()
	if ep.sl.mrtr.closed {
		// The endpoint shut down since this call took its place.
		ep.sl.mrtr.n--
		if ep.sl.mrtr.byPrincipal[principal]--; ep.sl.mrtr.byPrincipal[principal] <= 0 {
			delete(ep.sl.mrtr.byPrincipal, principal)
		}
		ep.sl.mrtr.mu.Unlock()
		f.endCause = errShutdownParked
		w.Header().Set("Retry-After", "5")
		rec.status = modernError(w, http.StatusServiceUnavailable, m.ID, jsonrpc.CodeServerError, "the bridge is shutting down; try again shortly", nil)
		return parkEnded
	}
	key, _ := ep.sl.mrtr.keys()
	ep.sl.mrtr.parked[id] = pc
	ep.sl.mrtr.mu.Unlock()
	// A parked call is in flight on the child: counted as one, and as
	// parked, until unparkLocked.
	ep.m.Inflight.Inc()
	ep.m.Parked.Inc()
	pc.timer = time.AfterFunc(ep.opts.InputWait, func() { ep.expire(id) })
	body, _ := json.Marshal(stateBody{ID: id, Expires: time.Now().Add(ep.opts.InputWait).Unix(), Principal: pc.principal[:], Digest: pc.digest[:]})
	state := base64.RawURLEncoding.EncodeToString(body) + "." + base64.RawURLEncoding.EncodeToString(sign(key, body))
	result, _ := json.Marshal(map[string]any{"resultType": "input_required", "inputRequests": inputs, "requestState": state})
	ep.writeResult(w, jsonrpc.AppendResponse(nil, m.ID, result, nil), nil, rec)
	return parkedForInput
}

// unparkLocked takes parked call id (nil: none) out of the parked calls
// and their counts. ep.sl.mrtr.mu must be held.
func (ep *Endpoint) unparkLocked(id string) *parkedCall {
	pc := ep.sl.mrtr.parked[id]
	if pc == nil {
		return nil
	}
	delete(ep.sl.mrtr.parked, id)
	ep.sl.mrtr.n--
	if ep.sl.mrtr.byPrincipal[pc.principal]--; ep.sl.mrtr.byPrincipal[pc.principal] <= 0 {
		delete(ep.sl.mrtr.byPrincipal, pc.principal)
	}
	ep.m.Inflight.Dec()
	ep.m.Parked.Dec()
	return pc
}

func newParkID() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// errNoRetry ends a parked call whose retry did not come; errShutdownParked
// one the bridge's shutdown ends.
var (
	errNoRetry        = fmt.Errorf("%w: the client did not answer in time", dispatch.ErrCanceled)
	errShutdownParked = fmt.Errorf("%w: the bridge is shutting down", dispatch.ErrCanceled)
)

// endParked ends every parked call (the endpoint shuts down: the parked
// calls are the endpoint's, and their timers with them), and parks no more.
func (ep *Endpoint) endParked() {
	ep.sl.mrtr.mu.Lock()
	ep.sl.mrtr.closed = true
	var ended []*parkedCall
	for id := range ep.sl.mrtr.parked {
		ended = append(ended, ep.unparkLocked(id))
	}
	ep.sl.mrtr.mu.Unlock()
	for _, pc := range ended {
		pc.timer.Stop()
		pc.unparked(errShutdownParked)
		pc.f.endCause = errShutdownParked
		pc.f.end()
	}
}

// expire ends a call whose retry did not come: the call is cancelled, and
// then the child's requests get an error (flight.endCause).
func (ep *Endpoint) expire(id string) {
	ep.sl.mrtr.mu.Lock()
	pc := ep.unparkLocked(id)
	ep.sl.mrtr.mu.Unlock()
	if pc == nil {
		return
	}
	pc.unparked(errNoRetry)
	pc.f.endCause = errNoRetry
	pc.f.end()
}

// resumeModern handles a retry carrying requestState.
func (ep *Endpoint) resumeModern(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message, caps json.RawMessage, rawState json.RawMessage, taskAfter time.Duration, rec *postLog) {
	invalid := func(why string) {
		rec.status = modernError(w, http.StatusBadRequest, m.ID, jsonrpc.CodeInvalidParams, "requestState "+why+"; send the original request again without it", nil)
	}
	// Which call resumes, and with what answers, is read as every decoder
	// reads it: one requestState, one inputResponses.
	var resume [2][]byte
	if err := jsonrpc.ExactMembers(m.Params, resumeMembers[:], resume[:]); err != nil {
		rec.status = modernError(w, http.StatusBadRequest, m.ID, jsonrpc.CodeInvalidParams, "a retry's "+err.Error(), nil)
		return
	}
	state := jsonrpc.String(rawState)
	bodyPart, macPart, ok := strings.Cut(state, ".")
	body, err1 := base64.RawURLEncoding.DecodeString(bodyPart)
	mac, err2 := base64.RawURLEncoding.DecodeString(macPart)
	if !ok || err1 != nil || err2 != nil {
		invalid("is malformed")
		return
	}
	ep.sl.mrtr.mu.Lock()
	cur, prev := ep.sl.mrtr.keys()
	ep.sl.mrtr.mu.Unlock()
	if !hmac.Equal(mac, sign(cur, body)) && (prev == nil || !hmac.Equal(mac, sign(prev, body))) {
		invalid("was not issued by this bridge or was altered")
		return
	}
	var sb stateBody
	if json.Unmarshal(body, &sb) != nil {
		invalid("is malformed")
		return
	}
	if code, why := ep.shared.Screen(m); code != 0 {
		// A retry is screened as the request it repeats was.
		rec.status = modernError(w, http.StatusBadRequest, m.ID, code, why, nil)
		return
	}
	principal, digest := PrincipalFrom(r), paramsDigest(m.Method, m.Params)
	switch {
	case time.Now().Unix() > sb.Expires:
		invalid("has expired")
		return
	case !hmac.Equal(sb.Principal, principal[:]):
		invalid("belongs to another client")
		return
	case !hmac.Equal(sb.Digest, digest[:]):
		invalid("was issued for another request (method or params differ)")
		return
	}
	if sb.ID == "" {
		ep.resumeChild(w, r, m, sb.Child, resume[1], taskAfter, rec)
		return
	}
	ep.sl.mrtr.mu.Lock()
	pc := ep.unparkLocked(sb.ID)
	ep.sl.mrtr.mu.Unlock()
	if pc == nil {
		invalid("was already used, or its call ended")
		return
	}
	pc.timer.Stop()
	pc.unparked(nil)
	var responses map[string]json.RawMessage
	_ = json.Unmarshal(resume[1], &responses)
	pc.f.inputs = map[string]json.RawMessage{}
	for k, v := range responses {
		if _, asked := pc.keys[k]; !asked {
			pc.f.inputs[k] = v // answers ahead for later rounds
		}
	}
	// The retry's capabilities are the call's from now on: a later round
	// asks only what this request declared (park copies them if it parks
	// again, as they alias this request's body).
	pc.f.caps = caps
	// The rest of the call has the request timeout, from the retry; it
	// runs alone again (on an interactive destination) before the child
	// gets its answers and goes on.
	pc.f.call.Extend(ep.opts.RequestTimeout)
	unparked := pc.f.call.Unpark()
	for key, childID := range pc.keys {
		res, ok := responses[key]
		if !unparked {
			pc.f.refuse(append(append([]byte(`{"id":`), childID...), '}'), "the call waited too long for its turn")
			continue
		}
		if !ok {
			pc.f.refuse(append(append([]byte(`{"id":`), childID...), '}'), "the client gave no answer for "+key)
			continue
		}
		reply, err := jsonrpc.Parse(jsonrpc.AppendResponse(nil, childID, res, nil))
		if err == nil {
			_ = pc.f.d.Respond(pc.f.caller, reply)
		}
	}
	// The retry's own _meta says which log lines it takes, and whether the
	// call may become a task.
	pc.f.taskAfter = taskAfter
	pc.f.logLevel = logSeverity(jsonrpc.String(jsonrpc.Member(jsonrpc.Member(m.Params, "_meta"), metaLogLevel)))
	ep.drive(w, r, pc.f, m, rec)
}

// sealChild gives a 2026 child's requestState in an input_required answer
// to m to the client sealed: bound to the client (principal), to what m
// asks (its method and params' digest) and to a time (InputWait), under the
// bridge's MAC, so that no other client can resume the call with it and
// nobody can alter it. The child's own protection of its state is its own.
func (ep *Endpoint) sealChild(resp []byte, principal Principal, m *jsonrpc.Message) []byte {
	result := jsonrpc.Member(resp, "result")
	st := jsonrpc.Member(result, "requestState")
	if len(st) == 0 || st[0] != '"' {
		return resp // no state: the retry carries only inputResponses
	}
	digest := paramsDigest(m.Method, m.Params)
	body, _ := json.Marshal(stateBody{Child: jsonrpc.String(st), Expires: time.Now().Add(ep.opts.InputWait).Unix(), Principal: principal[:], Digest: digest[:]})
	ep.sl.mrtr.mu.Lock()
	key, _ := ep.sl.mrtr.keys()
	ep.sl.mrtr.mu.Unlock()
	sealed := base64.RawURLEncoding.EncodeToString(body) + "." + base64.RawURLEncoding.EncodeToString(sign(key, body))
	result, err := jsonrpc.Replace(result, "requestState", jsonrpc.AppendString(nil, sealed))
	if err != nil {
		return jsonrpc.ErrorResponse(m.ID, jsonrpc.CodeInternalError, "the server's input_required answer could not be read")
	}
	out, err := jsonrpc.Replace(resp, "result", result)
	if err != nil {
		return jsonrpc.ErrorResponse(m.ID, jsonrpc.CodeInternalError, "the server's input_required answer could not be read")
	}
	return out
}

// resumeChild forwards the retry m of a 2026 child's call, whose sealed
// requestState resumeModern checked: the child gets its own requestState
// back, with the client's inputResponses.
func (ep *Endpoint) resumeChild(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message, childState string, responses []byte, taskAfter time.Duration, rec *postLog) {
	env := readEnvelope(m.Params)
	fwd := *m
	fwd.Params = dispatch.ModernParams(m.Params)
	p, err := jsonrpc.Replace(fwd.Params, "requestState", jsonrpc.AppendString(nil, childState))
	if err == nil && responses != nil {
		p, err = jsonrpc.Replace(p, "inputResponses", responses)
	}
	if err != nil {
		rec.status = modernError(w, http.StatusBadRequest, m.ID, jsonrpc.CodeInvalidParams, "the retry's params could not be read: "+err.Error(), nil)
		return
	}
	fwd.Params = p
	f := ep.startFlight(ep.shared, r, &fwd, env.dispatchEnvelope(), true, false)
	f.taskAfter, f.tool = taskAfter, jsonrpc.String(env.name)
	f.logLevel = logSeverity(jsonrpc.String(env.logLevel))
	ep.drive(w, r, f, m, rec)
}

// clientDeclared reports whether a modern request's client capabilities
// (caps) include need, the capability a child's request with params needs
// (inputMethods); an elicitation needs the mode it asks in (MCP 2025-11-25:
// "elicitation.url", or "elicitation.form" of a client that declared URL
// mode alone), read as the dispatcher reads a session's. It returns the
// capability it checked.
func clientDeclared(caps json.RawMessage, need string, params json.RawMessage) (string, bool) {
	c := jsonrpc.Member(caps, need)
	if len(c) == 0 || c[0] != '{' {
		return need, false
	}
	if need != "elicitation" {
		return need, true
	}
	form, url := dispatch.ElicitationModes(c)
	switch mode := dispatch.ElicitationMode(params); {
	case mode == "url" && !url, mode == "form" && !form:
		return need + "." + mode, false
	}
	return need, true
}

// optionalInput reports whether the child's request says the call can do
// without it (dispatch.OptionalMeta).
func optionalInput(req []byte) bool {
	return string(jsonrpc.Member(jsonrpc.Member(jsonrpc.Member(req, "params"), "_meta"), dispatch.OptionalMeta)) == "true"
}

// capsObject is ClientCapabilities naming caps ({"sampling": {}}); a
// mode of one ("elicitation.url") is its member ({"elicitation":
// {"url": {}}}).
func capsObject(caps []string) map[string]map[string]struct{} {
	out := map[string]map[string]struct{}{}
	for _, c := range caps {
		name, mode, _ := strings.Cut(c, ".")
		if out[name] == nil {
			out[name] = map[string]struct{}{}
		}
		if mode != "" {
			out[name][mode] = struct{}{}
		}
	}
	return out
}

// inputKey is the inputRequests key of a child request: its id when that is
// a string, else "request-" and the number.
func inputKey(id json.RawMessage) string {
	if len(id) > 0 && id[0] == '"' {
		return jsonrpc.String(id)
	}
	return "request-" + string(id)
}
