package dispatch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/stelae-bridge/stelae-bridge/jsonrpc"
	"github.com/stelae-bridge/stelae-bridge/recycle"
	"github.com/stelae-bridge/stelae-bridge/supervisor"
)

// Call is a request in flight at the child. The caller owns the wait: it
// calls Next for each event of the call (a message that belongs to it, a
// tick of its own, the end) and decides what to do with it — the HTTP
// endpoint streams the messages and sends keepalives; the dispatcher's own
// calls just wait. Calls are pooled with their channels, timer and buffers:
// a call allocates only its answer. Release returns it once its end has
// been read.
type Call struct {
	d    *Dispatcher
	ctx  context.Context
	c    *child
	sess Session // nil for the bridge's own calls
	// clientID aliases the caller's request, which stays alive while the
	// caller waits; for the bridge's own calls it is the upstream id.
	clientID json.RawMessage
	// clientToken is the client's progress token; nil when none was given.
	clientToken json.RawMessage
	up          uint64
	idBuf       [20]byte
	out         []byte     // the request as written to the child
	reply       chan reply // buffer of one; empty when pooled
	// follow: the caller takes the call's related messages (progress,
	// requests from the child) from Next; otherwise they go to the
	// session's GET stream.
	follow bool
	// related holds the messages that wait for the caller (at most
	// relatedQueue), oldest first; relatedReady has a token while related
	// is not empty (but for the moment between Next taking the token and
	// the message). Few calls get any: the queue is grown only for those
	// that do (a channel of relatedQueue made for every call was two
	// thirds of a pooled call's bytes). related is guarded by d.pmu; empty
	// when pooled.
	related      [][]byte
	relatedReady chan struct{} // buffer of one
	timer        *time.Timer
	// end is the call's end once known; Next hands out what is still in
	// related first.
	end   reply
	ended bool
	// turn is the turn the call holds on an interactive destination
	// (turns.go); finish gives it back, unless the call is abandoned and
	// its abandoned entry took it over. Set and read by the call's
	// caller; moved to the abandoned entry only by the path that takes
	// the call out of the pending calls, before it sends the call's end.
	turn turn
	// parked is the turn Park gave up, which Unpark takes back (turns.go).
	parked turn
	// heldBy is when the call stops waiting for other users' parked
	// calls (turns.go): a third of its timeout after it began; zero on
	// destinations whose calls take no turns.
	heldBy time.Time
	// after rewrites the end (a filtered tools/list, a subscription kept
	// only when the child agreed).
	after func([]byte, error) ([]byte, error)
	// relate rewrites the related messages Next returns (Through).
	relate func([]byte) []byte
	// augmented: the request asked the child to run it as a task of its
	// own (MCP 2025-11-25); childTask is that task's id once the child
	// created it, and the call waits for its tasks/result (tasks.go).
	augmented bool
	childTask string
	// ownsTask: the child's answer may create a task of its own, whose
	// owner is this call's user (childtasks.go); read by the reader
	// (routeResponse) while the call is pending.
	ownsTask bool
	// traceEnd ends the span of the call's request to the child (tracing
	// on: Options.TraceChild); finish calls it once.
	traceEnd func(failed bool)
	// inputEnd ends the span of the call's wait for its session's input
	// (Options.TraceWait): set by ask, called by dropInputsLocked, which
	// every way out of the wait goes through; guarded by d.pmu as waiting
	// is.
	inputEnd func(err error)
	// method is the request's method, for a translated call's retry.
	method string
	// translate: the call is a 2025 session's on a 2026 child, whose
	// input_required answers become requests to the session (modern.go);
	// asking holds them. waiting: the call is pending for its session's
	// answers, not at the child (guarded by d.pmu while pending).
	translate bool
	asking    *asking
	waiting   bool
}

// relatedQueue bounds the related messages waiting for their caller; past it
// they go to the session's GET stream instead.
const relatedQueue = 64

// callPool holds calls. Owner: the caller, from Begin until Release; while
// the call is pending the reader goroutine may use it too, under d.pmu,
// and whoever takes it out of the pending calls sends its end. Release
// comes only after the end was read (or abandons the call first, taking
// it out of the pending calls), so nothing refers to a pooled call. Its
// request buffer (out) was lent to the child's WriteMessage, which keeps
// no reference to it; under -race Release poisons it, so a writer that did
// would send garbage (TestProcessWriteQueueModel, the e2e tests).
var callPool = sync.Pool{New: func() any {
	return &Call{reply: make(chan reply, 1), relatedReady: make(chan struct{}, 1)}
}}

// getCall returns a call whose timer fires after timeout.
func (d *Dispatcher) getCall(ctx context.Context, timeout time.Duration) *Call {
	call := callPool.Get().(*Call)
	call.d, call.ctx = d, ctx
	if call.timer == nil {
		call.timer = time.NewTimer(timeout)
	} else {
		call.timer.Reset(timeout)
	}
	return call
}

// Release recycles the call, normally once Next has returned the end (the
// answer stays the caller's). A call released before its end is abandoned
// first: the child is told to cancel it.
func (call *Call) Release() {
	if call.d == nil {
		// Released already: a second Put would hand the call to two
		// users at once.
		panic("dispatch: a Call released twice")
	}
	if !call.ended && call.c != nil {
		// Released before its end (a caller that gave up): take it out of
		// the pending calls first, or its answer could reach the call's
		// next user.
		call.abandon(ErrCanceled, "the caller gave up")
	}
	// Nothing of this call may reach the next one. The call is out of
	// the pending calls (ended or abandoned), so nothing is added to
	// related any more.
	select {
	case <-call.relatedReady:
	default:
	}
	clear(call.related)
	call.related = call.related[:0]
	if cap(call.related) > 8 {
		call.related = nil
	}
	call.timer.Stop()
	call.d, call.ctx, call.c, call.sess, call.clientID, call.clientToken, call.after, call.relate = nil, nil, nil, nil, nil, nil, nil, nil
	call.end, call.ended, call.follow = reply{}, false, false
	call.augmented, call.childTask, call.parked, call.heldBy, call.ownsTask = false, "", noTurn, time.Time{}, false
	call.method, call.translate, call.asking, call.waiting, call.traceEnd, call.inputEnd = "", false, nil, false, nil, nil
	recycle.Poison(call.out)
	call.out = call.out[:0]
	if cap(call.out) > 64<<10 {
		call.out = nil
	}
	callPool.Put(call)
}

// Keep copies what the call still refers to of its caller's request (the
// client's id and progress token), for a caller whose request's bytes are
// about to be reused while the call goes on (a call parked for input
// outlives the HTTP request that started it). Until then the call aliases
// the request: most calls end first, and copy nothing.
//
// The copies are made only where nobody else reads the originals. A
// pending call's are read by the reader only under pmu, after looking it
// up. A call another path took out of the pending calls (its answer, a
// cancellation, its session's end) is read by that path until it sends the
// call's end: Keep takes the end first, as Next would (an answer that
// starts the child's task sends tasks/result, and the call is pending
// again). Copying without that wait once let the reader build an answer
// from a request's bytes while the next POST reused them.
func (call *Call) Keep() {
	d := call.d
	if d == nil {
		return
	}
	for !call.ended {
		d.pmu.Lock()
		if d.pending[call.up] == call {
			call.clientID, call.clientToken = bytes.Clone(call.clientID), bytes.Clone(call.clientToken)
			d.pmu.Unlock()
			return
		}
		d.pmu.Unlock()
		call.end = <-call.reply
		call.took()
	}
	call.clientID, call.clientToken = bytes.Clone(call.clientID), bytes.Clone(call.clientToken)
}

// took ends the call with call.end, the end its taker sent, unless the
// call goes on (received: the child's task, a translated call's input).
func (call *Call) took() {
	if call.received() {
		call.finish(call.end.msg, call.end.err)
	}
}

// Extend gives the call timeout more from now: a call that became a task
// (MCP 2026-07-28's tasks extension) may run as long as the task is kept.
// Only the caller that waits on the call (Next) may extend it.
func (call *Call) Extend(timeout time.Duration) {
	if !call.ended {
		call.timer.Reset(timeout)
	}
}

// reply ends a pending call: the response to write to the client (with the
// client's id restored), or an error; or, with retry, a translated call's
// inputs are all answered (modern.go).
type reply struct {
	msg   []byte
	err   error
	retry bool
}

// childRequest is a request from the child waiting for a client's answer.
type childRequest struct {
	sess Session
}

// Event is one event of a call, as Next returns it: exactly one of Related,
// Tick and Done is set.
type Event struct {
	// Related is a message that belongs to the call: a progress
	// notification for it, or a request the child sent while it was the
	// call in flight.
	Related []byte
	// Tick: the caller's tick came.
	Tick bool
	// Done: the call ended with Answer (the child's response with the
	// client's id restored, or the bridge's own answer) or Err.
	Done   bool
	Answer []byte
	Err    error
}

// Begin starts a client's request and returns the call to wait on.
// initialize, ping and the resources/(un)subscribe reference counts are
// answered by the bridge. The call ends with ErrTimeout after timeout (a
// cancellation is sent to the child) and with the cause of ctx when it
// ends (a session that ends cancels its calls with its reason). With
// Options.ToolAllowed, tools/list answers lose the hidden tools and a
// tools/call of a hidden tool is answered at once with a JSON-RPC error,
// whatever the child's state. Messages that a more lenient decoder could
// read differently are refused (see screen). With follow the caller takes
// the call's related messages from Next.
func (d *Dispatcher) Begin(ctx context.Context, s Session, m *jsonrpc.Message, timeout time.Duration, follow bool) *Call {
	if d.opts.Fan != nil {
		if call := d.opts.Fan.Begin(ctx, d, s, m, timeout, follow); call != nil {
			return call
		}
	}
	call := d.getCall(ctx, timeout)
	call.sess, call.follow = s, follow
	if d.scheduled() {
		call.heldBy = time.Now().Add(timeout / 3)
	}
	task, code, why := d.screen(m, true)
	if code != 0 {
		return call.finish(jsonrpc.ErrorResponse(m.ID, code, why), nil)
	}
	call.ownsTask = task && s != nil
	switch m.Method {
	case "tasks/get", "tasks/result", "tasks/cancel":
		if s != nil {
			if code, why := d.reachTask(s, m); code != 0 {
				return call.finish(jsonrpc.ErrorResponse(m.ID, code, why), nil)
			}
		}
	case "tasks/list":
		if s != nil {
			call.after = d.ownTasksOnly(s.User())
		}
	case "ping":
		return call.finish(jsonrpc.AppendResponse(nil, m.ID, json.RawMessage("{}"), nil), nil)
	case "initialize":
		return call.finish(d.initialize(ctx, call.timer.C, m))
	case "resources/subscribe":
		return d.subscribe(call, s, m)
	case "resources/unsubscribe":
		return d.unsubscribe(call, s, m)
	case "tools/list":
		if d.filter.Load() != nil {
			call.after = d.filterToolList
		}
	}
	return d.forward(call, m)
}

// Do is Begin and a wait for the end, for callers that take no related
// messages and send no keepalives.
func (d *Dispatcher) Do(ctx context.Context, s Session, m *jsonrpc.Message, timeout time.Duration) ([]byte, error) {
	call := d.Begin(ctx, s, m, timeout, false)
	defer call.Release()
	return call.wait()
}

// finish ends the call with its answer: Next returns it.
func (call *Call) finish(msg []byte, err error) *Call {
	call.end, call.ended = reply{msg: msg, err: err}, true
	call.giveTurn()
	if call.traceEnd != nil {
		call.traceEnd(err != nil || jsonrpc.Member(msg, "error") != nil)
		call.traceEnd = nil
	}
	return call
}

// forward sends m to the child under a fresh upstream id. When the write
// fails because the child is exiting (a crash the supervisor has not seen
// yet), the request never reached it: it goes to the next child, once.
func (d *Dispatcher) forward(call *Call, m *jsonrpc.Message) *Call {
	var dead *child
	for {
		c, err := d.running(call)
		if err != nil {
			return call.finish(nil, err)
		}
		if c == dead {
			// The supervisor has not yet moved on from the dead child:
			// look again shortly (this happens only after a failed write).
			if !pause(call, time.After(time.Millisecond)) {
				return call
			}
			continue
		}
		if c.modern {
			switch m.Method {
			case "logging/setLevel":
				if call.sess != nil {
					return call.finish(d.setLevel(call.sess, m), nil)
				}
			case "resources/subscribe", "resources/unsubscribe":
				// The first subscriber of a uri or its last one's
				// leaving (subscribe, unsubscribe): the listen
				// changes (listen.go).
				d.listenAnew(c)
				return call.finish(jsonrpc.AppendResponse(nil, m.ID, json.RawMessage("{}"), nil), nil)
			}
		}
		if !call.hold(d.turnFor(m)) {
			return call
		}
		d.send(call, c, m.ID, m.Method, m.Params)
		if dead != nil || !call.ended || !errors.Is(call.end.err, errWriteFailed) {
			return call
		}
		call.ended, call.end = false, reply{}
		if !pause(call, c.done) {
			return call
		}
		dead = c
	}
}

// running is the call's running child, once it runs (its wait traced).
func (d *Dispatcher) running(call *Call) (*child, error) {
	if d.opts.TraceWait == nil || call.ctx == nil {
		return d.sup.Running(call.ctx, call.timer.C, false)
	}
	if c, ok := d.sup.Current(); ok {
		return c, nil
	}
	end := d.opts.TraceWait(call.ctx, "child "+d.sup.Status().State, time.Now())
	c, err := d.sup.Running(call.ctx, call.timer.C, false)
	end(err)
	return c, err
}

// pause waits for until; false when the call ended first (its timeout or
// its context). (Out of forward, which is on the stack of every call's
// write to its child.)
func pause[T any](call *Call, until <-chan T) bool {
	select {
	case <-until:
		return true
	case <-call.timer.C:
		call.finish(nil, ErrTimeout)
	case <-call.ctx.Done():
		call.finish(nil, supervisor.ContextErr(call.ctx))
	}
	return false
}

// errWriteFailed marks a request that could not be written to the child.
var errWriteFailed = errors.New("write failed")

// send registers call as pending and writes its request to c. clientID nil
// makes it one of the bridge's own calls, answered under its upstream id.
func (d *Dispatcher) send(call *Call, c *child, clientID json.RawMessage, method string, params json.RawMessage) *Call {
	call.c, call.method = c, method
	if c.modern {
		// A 2026 child reads the caller's envelope in every request
		// (modern.go).
		var modern bool
		params, modern = d.childParams(call.sess, params)
		call.translate = call.sess != nil && !modern
	}
	if d.opts.TraceMeta != nil && call.ctx != nil {
		ctx := call.ctx
		if d.opts.TraceChild != nil && call.sess != nil && call.traceEnd == nil {
			target := ""
			if method == "tools/call" || method == "prompts/get" {
				target = jsonrpc.String(jsonrpc.Member(params, "name"))
			}
			ctx, call.traceEnd = d.opts.TraceChild(ctx, method, target)
		}
		params = withTraceMeta(params, d.opts.TraceMeta(ctx))
	}
	call.up = d.seq.Add(1)
	upID := strconv.AppendUint(call.idBuf[:0], call.up, 10)
	if clientID == nil {
		clientID = upID
	}
	call.clientID = clientID
	// A token in an escaped name ("progress\u0054oken") is a token to
	// the child too (the screen refused any other spelling).
	if call.sess != nil && (bytes.Contains(params, []byte(`"progressToken"`)) || bytes.Contains(params, []byte(`\u`))) {
		params, call.clientToken = rewriteProgressToken(params, upID)
	}
	return d.post(call, c, upID, method, params)
}

// post registers call as pending under upstream id upID and writes its
// request to c.
func (d *Dispatcher) post(call *Call, c *child, upID []byte, method string, params json.RawMessage) *Call {
	call.out = jsonrpc.AppendRequest(call.out[:0], upID, method, params)

	// Register before writing: the answer may come before Write returns.
	d.pmu.Lock()
	d.pending[call.up] = call
	d.pmu.Unlock()
	if err := c.conn.WriteMessage(call.out); err != nil {
		return call.writeFailed(err)
	}
	return call
}

// writeFailed ends a call whose request could not be written, unless a
// reply or a cancel took it just now. (Out of send, whose frame is on the
// stack of every call's write.)
func (call *Call) writeFailed(err error) *Call {
	if call.d.takeCall(call.up) == nil {
		return call.finishFromReply()
	}
	return call.finish(nil, fmt.Errorf("%w: %w: %v", ErrChildExited, errWriteFailed, err))
}

// finishFromReply finishes a call that another path took out of the
// pending calls: that path sends (or sent) its end on call.reply.
func (call *Call) finishFromReply() *Call {
	r := <-call.reply
	return call.finish(r.msg, r.err)
}

// endFromReply is finishFromReply for a path that gives the call up (err)
// while another path took it: a translated call whose inputs were just
// answered ends with err, not a retry.
func (call *Call) endFromReply(err error) {
	r := <-call.reply
	if r.retry {
		call.finish(nil, err)
		return
	}
	call.finish(r.msg, r.err)
}

// Next waits for the call's next event: a related message (only when the
// caller follows the call), the caller's tick (nil: none), or the end.
// After the end it returns the end again.
func (call *Call) Next(tick <-chan time.Time) Event {
	for {
		if call.ended {
			// What came for the call before its end goes first.
			select {
			case <-call.relatedReady:
				if msg := call.nextRelated(); msg != nil {
					return call.relatedEvent(msg)
				}
			default:
			}
			if call.after != nil {
				call.end.msg, call.end.err = call.after(call.end.msg, call.end.err)
				call.after = nil
			}
			return Event{Done: true, Answer: call.end.msg, Err: call.end.err}
		}
		d, c := call.d, call.c
		select {
		case call.end = <-call.reply: // (into the call: a copy would be in this frame)
			call.took()
		case <-call.relatedReady:
			if msg := call.nextRelated(); msg != nil {
				return call.relatedEvent(msg)
			}
		case <-tick:
			return Event{Tick: true}
		case <-c.done:
			call.childExited(d, c)
		case <-call.timer.C:
			call.abandon(ErrTimeout, "the bridge's request timeout expired")
		case <-call.ctx.Done():
			call.abandon(supervisor.ContextErr(call.ctx), "the client cancelled the request")
		}
	}
}

// childExited ends the call whose child c exited, with the answer the
// child gave just before, or ErrChildExited. (Out of Next, whose frame a
// waiting call keeps.)
func (call *Call) childExited(d *Dispatcher, c *child) {
	err := fmt.Errorf("%w: destination %q (%s)", ErrChildExited, d.opts.Name, supervisor.ExitStatus(c.conn))
	if d.takeCall(call.up) == nil {
		call.endFromReply(err)
		return
	}
	call.finish(nil, err)
}

// nextRelated takes the oldest message of related, after Next took the
// token that said there is one; it puts the token back while more wait.
func (call *Call) nextRelated() []byte {
	d := call.d
	d.pmu.Lock()
	defer d.pmu.Unlock()
	if len(call.related) == 0 {
		return nil
	}
	msg := call.related[0]
	n := copy(call.related, call.related[1:])
	call.related[n] = nil
	call.related = call.related[:n]
	if n > 0 {
		select {
		case call.relatedReady <- struct{}{}:
		default:
		}
	}
	return msg
}

// wait waits for the end of one of the bridge's own calls.
func (call *Call) wait() ([]byte, error) {
	for {
		if ev := call.Next(nil); ev.Done {
			return ev.Answer, ev.Err
		}
	}
}

// abandon gives up on the call and tells the child, unless the answer has
// just arrived.
func (call *Call) abandon(err error, reason string) {
	taken, atChild := call.d.takeAbandoned(call)
	if !taken {
		call.endFromReply(err)
		return
	}
	if !atChild {
		// It waited for its session's input: the child has nothing of
		// it to cancel.
		call.finish(nil, err)
		return
	}
	if call.childTask != "" {
		// A task is cancelled with tasks/cancel, never
		// notifications/cancelled (MCP 2025-11-25); its tasks/result
		// answer is dropped when it comes.
		call.d.cancelChildTask(call.c, call.childTask)
	} else {
		call.d.sendCancel(call.c, call.up, reason)
	}
	call.d.cancelsWritten(call.c, call.up)
	call.finish(nil, err)
}

// takeCall removes and returns pending call up, or nil when another path
// (reply, cancel, session end) already took it.
func (d *Dispatcher) takeCall(up uint64) *Call {
	d.pmu.Lock()
	call := d.pending[up]
	delete(d.pending, up)
	if call != nil {
		d.dropInputsLocked(call)
	}
	d.pmu.Unlock()
	return call
}

// takeAnswered is takeCall for the child's answer to up (result: a
// result, not an error): when the call was abandoned, the child is done
// with it now.
func (d *Dispatcher) takeAnswered(up uint64, result bool) *Call {
	d.pmu.Lock()
	call := d.pending[up]
	delete(d.pending, up)
	if call != nil {
		d.dropInputsLocked(call) // a child that answers an id twice
	}
	if len(d.abandoned) > 0 || len(d.settled) > 0 {
		d.answeredLocked(up, result)
	}
	d.pmu.Unlock()
	return call
}

// takeAbandoned takes call out of the pending calls as abandoned
// (abandoned.go); taken is false when another path took it first, atChild
// when the child has nothing of it to cancel (it waited for its session's
// input).
func (d *Dispatcher) takeAbandoned(call *Call) (taken, atChild bool) {
	d.pmu.Lock()
	defer d.pmu.Unlock()
	if d.pending[call.up] != call {
		return false, false
	}
	delete(d.pending, call.up)
	return true, d.abandonLocked(call, time.Now())
}

// cancelParams builds the params of a notifications/cancelled for upstream
// request up; reason is raw JSON (nil for none).
func cancelParams(up uint64, reason []byte) []byte {
	params := strconv.AppendUint(append(make([]byte, 0, 64), `{"requestId":`...), up, 10)
	if reason != nil {
		params = append(append(params, `,"reason":`...), reason...)
	}
	return append(params, '}')
}

// sendCancel tells the child to stop working on upstream request up.
func (d *Dispatcher) sendCancel(c *child, up uint64, reason string) {
	params := cancelParams(up, jsonrpc.AppendString(nil, reason))
	if err := c.conn.WriteMessage(jsonrpc.AppendRequest(nil, nil, "notifications/cancelled", params)); err != nil {
		d.log.Debug("could not send cancellation to the child", "error", err)
	}
}

// fireAndForget sends a request whose answer nobody waits for.
func (d *Dispatcher) fireAndForget(c *child, method string, params json.RawMessage) {
	up := strconv.AppendUint(nil, d.seq.Add(1), 10)
	if err := c.conn.WriteMessage(jsonrpc.AppendRequest(nil, up, method, params)); err != nil {
		d.log.Debug("could not write to the child", "method", method, "error", err)
	}
}

// rewriteProgressToken replaces params._meta.progressToken with token and
// returns the new params and the client's token. Every other byte of
// params stays as the client sent it.
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

// initialize answers a session's initialize from the cached handshake,
// starting the child (or retrying a failed one) when needed. The caller has
// validated m's params (ValidateInitialize).
func (d *Dispatcher) initialize(ctx context.Context, timeout <-chan time.Time, m *jsonrpc.Message) ([]byte, error) {
	if _, err := d.sup.Running(ctx, timeout, true); err != nil {
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

// Notify forwards a client's notification. notifications/initialized is the
// bridge's business and is dropped; notifications/cancelled is mapped to the
// upstream id.
func (d *Dispatcher) Notify(s Session, m *jsonrpc.Message) error {
	if _, code, why := d.screen(m, false); code != 0 {
		return fmt.Errorf("%w: %s", ErrRefused, why)
	}
	switch m.Method {
	case "notifications/initialized":
		return nil
	case "notifications/cancelled":
		if d.opts.Fan != nil {
			d.opts.Fan.Cancelled(s, m)
		}
		return d.clientCancel(s, m)
	case "notifications/roots/list_changed":
		if d.opts.Roots != nil {
			return nil // the bridge answers roots/list from the configuration
		}
	}
	c := d.current()
	if c == nil {
		d.log.Debug("notification dropped: child not running", "method", m.Method)
		return nil
	}
	if c.modern {
		// A 2026-07-28 child takes no notification but cancellations
		// (roots come with the calls that need them).
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
	for up, call := range d.pending {
		if call.sess == s && bytes.Equal(call.clientID, reqID) && up > found {
			found = up
		}
	}
	call := d.pending[found]
	atChild := false
	if call != nil {
		delete(d.pending, found)
		atChild = d.abandonLocked(call, time.Now())
	}
	d.pmu.Unlock()
	if call == nil {
		return nil
	}
	call.reply <- reply{msg: jsonrpc.ErrorResponse(call.clientID, jsonrpc.CodeRequestCancelled, "request cancelled by the client")}
	if c := d.current(); c != nil && atChild {
		err := c.conn.WriteMessage(jsonrpc.AppendRequest(nil, nil, "notifications/cancelled", cancelParams(found, jsonrpc.Member(m.Params, "reason"))))
		d.cancelsWritten(c, found)
		return err
	}
	return nil
}

// Respond forwards a client's answer to a request the child sent it.
func (d *Dispatcher) Respond(s Session, m *jsonrpc.Message) error {
	if d.opts.Fan != nil {
		if ours, err := d.opts.Fan.Respond(s, m); ours {
			return err
		}
	}
	if d.answerInput(s, m) {
		return nil
	}
	key := string(m.ID)
	d.pmu.Lock()
	cr, ok := d.childReqs[key]
	if ok && cr.sess == s {
		delete(d.childReqs, key)
	}
	d.pmu.Unlock()
	if !ok || cr.sess != s {
		d.log.Warn("client answered a request the child is not waiting for; dropped", "session", s.SessionID(), "id", truncate(m.ID, 100))
		return nil
	}
	c := d.current()
	if c == nil {
		return fmt.Errorf("%w: destination %q is restarting; the child's request was lost", ErrUnavailable, d.opts.Name)
	}
	return c.conn.WriteMessage(jsonrpc.AppendResponse(nil, m.ID, m.Result, m.Error))
}
