package session

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/stelae-bridge/stelae-bridge/dispatch"
	"github.com/stelae-bridge/stelae-bridge/jsonrpc"
)

// This file is the tasks extension of MCP 2026-07-28
// (io.modelcontextprotocol/tasks, SEP-2663), run by the bridge for children
// that know nothing of it. A modern tools/call of a tool whose definition
// declares execution.taskSupport ("optional" or "required"), from a request
// whose _meta declares the extension, is forwarded as an ordinary call; if
// it has neither answered nor asked its client for input after the
// destination's 'tasks.after' (1 s by default), the bridge answers
// CreateTaskResult and keeps the call as a task:
//
//   - the task's own goroutine waits on the call: the answer makes it
//     completed (a tool error too: isError is a result) or failed (a JSON-RPC
//     error, a crash, the timeout); requests the child sends
//     (elicitation, sampling, roots) make it input_required with them as
//     inputRequests, answered by tasks/update;
//   - tasks/get shows it; tasks/cancel cancels the call at the child
//     (notifications/cancelled) and the task is cancelled;
//   - it is bound to the principal that created it (another gets "unknown
//     task") and kept 'tasks.ttl' (1 h by default) from its creation: the
//     call may run that long, then it is cancelled and the task forgotten.
//
// A call that answers within 'tasks.after' is answered as it is (the
// immediate-result shortcut), and one that asks for input before then asks
// it synchronously (input_required, MRTR): SEP-2663 says such exchanges
// SHOULD be resolved before a task is created. A tool that requires tasks,
// called by a request that did not declare the extension, is refused with
// -32021. Progress and log messages of a task go nowhere: SEP-2663 does not
// carry them.

// Task statuses.
const (
	taskWorking       = "working"
	taskInputRequired = "input_required"
	taskCompleted     = "completed"
	taskFailed        = "failed"
	taskCancelled     = "cancelled"
)

const (
	// maxTasks bounds the tasks one destination keeps; past it
	// task-supporting calls are answered synchronously.
	maxTasks = 1000
	// maxTasksPerPrincipal bounds one principal's (all anonymous clients
	// are one): at it, or with the store full, its oldest ended task is
	// forgotten to make room, else the call is answered synchronously.
	maxTasksPerPrincipal = 100
	// taskPollInterval is the polling interval suggested to clients.
	taskPollInterval = 500 * time.Millisecond
)

// Why task calls end early.
var (
	errTaskCancelled = fmt.Errorf("%w: the client cancelled the task", dispatch.ErrCanceled)
	errTaskExpired   = fmt.Errorf("%w: the task outlived its ttl", dispatch.ErrCanceled)
)

// task is one call kept as a task.
type task struct {
	id        string
	principal Principal
	f         *flight
	created   time.Time
	ttl       time.Duration
	expiry    *time.Timer

	// The fields below are guarded by the store's mu.
	status  string
	message string
	updated time.Time
	// result is the call's result (completed), errObj its JSON-RPC error
	// (failed).
	result, errObj json.RawMessage
	// pending are the child's requests waiting for the client, by
	// inputRequests key; used holds every key ever issued (a key is never
	// reused within a task).
	pending map[string]taskInput
	used    map[string]bool
}

// taskInput is one of the child's requests waiting for a tasks/update.
type taskInput struct {
	childID json.RawMessage
	request json.RawMessage // {"method": …, "params": …}
}

func (t *task) terminal() bool {
	return t.status == taskCompleted || t.status == taskFailed || t.status == taskCancelled
}

// taskStore holds an endpoint's tasks.
type taskStore struct {
	// mu guards live, byPrincipal, closed and every task's mutable
	// fields.
	mu   sync.Mutex
	live map[string]*task
	// byPrincipal counts the live tasks of each principal.
	byPrincipal map[Principal]int
	closed      bool
	// running counts the tasks' goroutines; close waits for them.
	running sync.WaitGroup
}

// hasTasksExtension reports whether client capabilities declare the tasks
// extension.
func hasTasksExtension(caps json.RawMessage) bool {
	v := jsonrpc.Member(jsonrpc.Member(caps, "extensions"), dispatch.TasksExtension)
	return len(v) > 0 && v[0] == '{'
}

// missingTasksExtension answers a request that needs the tasks extension
// its _meta did not declare: 400 / -32021.
func missingTasksExtension(w http.ResponseWriter, id json.RawMessage, why string) int {
	return modernError(w, http.StatusBadRequest, id, jsonrpc.CodeMissingCapability, why,
		map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{dispatch.TasksExtension: struct{}{}}}})
}

// adoptTask makes flight f, started by request m and neither answered nor
// waiting for input after 'tasks.after', a task, and returns its
// CreateTaskResult response; nil when the store is full or closed (the call
// goes on synchronously). The caller is f's driver, which hands the call
// over.
func (ep *Endpoint) adoptTask(f *flight, m *jsonrpc.Message, principal Principal) []byte {
	ts := &ep.sl.tasks
	now := time.Now()
	t := &task{id: uuid.NewString(), principal: principal, f: f, created: now, ttl: ep.opts.TaskTTL,
		status: taskWorking, updated: now, used: map[string]bool{}}
	// Armed before the task is visible: closeTasks stops it.
	t.expiry = time.AfterFunc(t.ttl, func() { ep.expireTask(t) })
	ts.mu.Lock()
	if !ts.closed && (len(ts.live) >= maxTasks || ts.byPrincipal[principal] >= maxTasksPerPrincipal) {
		ts.forgetOldestEndedLocked(principal)
	}
	if ts.closed || len(ts.live) >= maxTasks || ts.byPrincipal[principal] >= maxTasksPerPrincipal {
		full, mine := !ts.closed && len(ts.live) >= maxTasks, !ts.closed && ts.byPrincipal[principal] >= maxTasksPerPrincipal
		ts.mu.Unlock()
		t.expiry.Stop()
		switch {
		case mine:
			ep.log.Debug("a client has its maximum of tasks running; its task-supporting call is answered synchronously", "tasks", maxTasksPerPrincipal)
		case full:
			ep.log.Warn("too many tasks; a task-supporting call is answered synchronously", "tasks", maxTasks)
		}
		return nil
	}
	if ts.live == nil {
		ts.live, ts.byPrincipal = map[string]*task{}, map[Principal]int{}
	}
	ts.live[t.id] = t
	ts.byPrincipal[principal]++
	ts.running.Add(1)
	view := t.view("task")
	ts.mu.Unlock()
	// The call outlives the request, whose body's buffer is reused: it keeps
	// copies of what it refers to, and may run as long as the task is kept.
	f.call.Keep()
	f.caps = bytes.Clone(f.caps)
	f.call.Extend(t.ttl)
	// A 2026 child's input_required answers from now on become the
	// task's inputRequests, answered by tasks/update (taskAsks).
	f.call.TranslateInput()
	ep.log.Debug("call became a task", "task", t.id, "method", f.method)
	go ep.runTask(t)
	return jsonrpc.AppendResponse(nil, m.ID, view, nil)
}

// runTask waits on a task's call until it ends.
func (ep *Endpoint) runTask(t *task) {
	defer ep.sl.tasks.running.Done()
	defer t.f.end()
	for {
		ev := t.f.call.Next(nil)
		if ev.Done {
			ep.settleTask(t, ev)
			return
		}
		if id := jsonrpc.Member(ev.Related, "id"); id != nil {
			ep.taskAsks(t, id, ev.Related)
		}
		// Progress and log messages: a task carries none (SEP-2663).
	}
}

// taskAsks takes a request the child sent during a task's call: it waits
// for the client's tasks/update as one of the task's inputRequests, or is
// refused when the client cannot be asked it.
func (ep *Endpoint) taskAsks(t *task, id json.RawMessage, req []byte) {
	f := t.f
	if res, ok := f.inputs[inputKey(id)]; ok {
		// Answered ahead by the client (inputResponses of an MRTR round).
		delete(f.inputs, inputKey(id))
		if reply, err := jsonrpc.Parse(jsonrpc.AppendResponse(nil, id, res, nil)); err == nil {
			_ = f.d.Respond(f.caller, reply)
		}
		return
	}
	method := jsonrpc.String(jsonrpc.Member(req, "method"))
	need, ok := inputMethods[method]
	if !ok {
		f.refuse(req, method+" is not a request a "+eraModern+" client can be asked")
		return
	}
	if need, ok = clientDeclared(f.caps, need, jsonrpc.Member(req, "params")); !ok {
		f.refuse(req, "the client did not declare the "+need+" capability")
		return
	}
	body, _ := json.Marshal(map[string]json.RawMessage{"method": jsonrpc.AppendString(nil, method), "params": clientParams(jsonrpc.Member(req, "params"))})
	ts := &ep.sl.tasks
	ts.mu.Lock()
	if t.terminal() {
		ts.mu.Unlock()
		f.refuse(req, "the task has ended")
		return
	}
	key := inputKey(id)
	for n := 2; t.used[key]; n++ {
		key = inputKey(id) + "-" + strconv.Itoa(n)
	}
	t.used[key] = true
	if t.pending == nil {
		t.pending = map[string]taskInput{}
	}
	t.pending[key] = taskInput{childID: bytes.Clone(id), request: body}
	t.status, t.message, t.updated = taskInputRequired, "waiting for the client's input (tasks/update)", time.Now()
	ts.mu.Unlock()
}

// clientParams are the params of a child's request as a modern client is
// asked them: without the related-task _meta key a child running the call
// as a task of its own adds (its task id means nothing to the client).
func clientParams(params json.RawMessage) json.RawMessage {
	meta := jsonrpc.Member(params, "_meta")
	if meta == nil || !bytes.Contains(meta, []byte(relatedTaskKey)) {
		return params
	}
	m, err := jsonrpc.Delete(meta, func(k string) bool { return k == relatedTaskKey })
	if err != nil {
		return params
	}
	if string(bytes.TrimSpace(m)) == "{}" {
		out, err := jsonrpc.Delete(params, func(k string) bool { return k == "_meta" })
		if err == nil {
			return out
		}
	}
	out, err := jsonrpc.Replace(params, "_meta", m)
	if err != nil {
		return params
	}
	return out
}

// relatedTaskKey is the _meta key of MCP 2025-11-25 that ties a message to
// a task.
const relatedTaskKey = "io.modelcontextprotocol/related-task"

// settleTask records the end of a task's call.
func (ep *Endpoint) settleTask(t *task, ev dispatch.Event) {
	ts := &ep.sl.tasks
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t.pending = nil
	if t.status == taskCancelled {
		return
	}
	t.updated = time.Now()
	if ev.Err != nil {
		_, msg := statusFor(ep.name, ev.Err)
		t.status, t.message = taskFailed, msg
		t.errObj, _ = json.Marshal(map[string]any{"code": jsonrpc.CodeInternalError, "message": msg})
		return
	}
	resp := dispatch.MarkComplete(ev.Answer, false, dispatch.Cache{}) // -32002 → -32602
	if e := jsonrpc.Member(resp, "error"); e != nil {
		t.status, t.errObj = taskFailed, bytes.Clone(e)
		t.message = "the call ended with a JSON-RPC error"
		return
	}
	result := jsonrpc.Member(ev.Answer, "result")
	if meta := jsonrpc.Member(result, "_meta"); meta != nil {
		// The taskId is the task's own: a related-task key is redundant.
		if m, err := jsonrpc.Delete(meta, func(k string) bool { return k == relatedTaskKey }); err == nil {
			result, _ = jsonrpc.Replace(result, "_meta", m)
		}
	}
	t.status, t.message, t.result = taskCompleted, "", bytes.Clone(result)
}

// expireTask forgets a task at the end of its ttl, cancelling its call if
// it still runs.
func (ep *Endpoint) expireTask(t *task) {
	ts := &ep.sl.tasks
	ts.mu.Lock()
	ts.forgetLocked(t)
	ts.mu.Unlock()
	t.f.cancel(errTaskExpired)
}

// forgetLocked takes t out of the live tasks. ts.mu must be held.
func (ts *taskStore) forgetLocked(t *task) {
	if ts.live[t.id] != t {
		return
	}
	delete(ts.live, t.id)
	if ts.byPrincipal[t.principal]--; ts.byPrincipal[t.principal] <= 0 {
		delete(ts.byPrincipal, t.principal)
	}
}

// forgetOldestEndedLocked forgets principal's oldest task that has ended
// (its result read or not), to make room for a new one. ts.mu must be held.
func (ts *taskStore) forgetOldestEndedLocked(principal Principal) {
	var oldest *task
	for _, t := range ts.live {
		if t.principal == principal && t.terminal() && (oldest == nil || t.updated.Before(oldest.updated)) {
			oldest = t
		}
	}
	if oldest != nil {
		oldest.expiry.Stop()
		ts.forgetLocked(oldest)
	}
}

// closeTasks cancels every task (the bridge is shutting down) and waits,
// until ctx ends, for their calls to end.
func (ep *Endpoint) closeTasks(ctx context.Context) {
	ts := &ep.sl.tasks
	ts.mu.Lock()
	ts.closed = true
	all := make([]*task, 0, len(ts.live))
	for _, t := range ts.live {
		all = append(all, t)
	}
	ts.live = nil
	ts.mu.Unlock()
	for _, t := range all {
		t.expiry.Stop()
		t.f.cancel(errShutdown)
	}
	waitGroup(ctx, &ts.running)
}

// taskView is a task as tasks/get shows it (resultType "complete"), or as
// CreateTaskResult ("task": no result, error or input requests). Called
// under the store's mu.
func (t *task) view(resultType string) json.RawMessage {
	v := struct {
		ResultType     string                     `json:"resultType"`
		TaskID         string                     `json:"taskId"`
		Status         string                     `json:"status"`
		StatusMessage  string                     `json:"statusMessage,omitempty"`
		CreatedAt      string                     `json:"createdAt"`
		LastUpdatedAt  string                     `json:"lastUpdatedAt"`
		TTLMs          int64                      `json:"ttlMs"`
		PollIntervalMs int64                      `json:"pollIntervalMs"`
		Result         json.RawMessage            `json:"result,omitempty"`
		Error          json.RawMessage            `json:"error,omitempty"`
		InputRequests  map[string]json.RawMessage `json:"inputRequests,omitempty"`
	}{ResultType: resultType, TaskID: t.id, Status: t.status, StatusMessage: t.message,
		CreatedAt: timestamp(t.created), LastUpdatedAt: timestamp(t.updated), TTLMs: t.ttl.Milliseconds(), PollIntervalMs: taskPollInterval.Milliseconds()}
	if resultType != "task" {
		v.Result, v.Error = t.result, t.errObj
		if t.status == taskInputRequired {
			v.InputRequests = make(map[string]json.RawMessage, len(t.pending))
			for k, in := range t.pending {
				v.InputRequests[k] = in.request
			}
		}
	}
	b, _ := json.Marshal(v)
	return b
}

func timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// taskMembers are what serveTaskMethod reads of params.
var taskMembers = [...]string{"taskId", "inputResponses"}

// serveTaskMethod answers tasks/get, tasks/update and tasks/cancel.
func (ep *Endpoint) serveTaskMethod(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message, env *envelope, rec *postLog) {
	if !hasTasksExtension(env.caps) {
		rec.status = missingTasksExtension(w, m.ID, m.Method+" needs the "+dispatch.TasksExtension+" extension in the request's "+metaClientCaps)
		return
	}
	// The task and the answers are read as every decoder reads them
	// (and the Mcp-Name header was checked against this taskId).
	var vals [2][]byte
	if err := jsonrpc.ExactMembers(m.Params, taskMembers[:], vals[:]); err != nil {
		rec.status = modernError(w, http.StatusBadRequest, m.ID, jsonrpc.CodeInvalidParams, m.Method+": "+err.Error(), nil)
		return
	}
	id := jsonrpc.String(env.taskID)
	if len(env.taskID) == 0 || env.taskID[0] != '"' {
		rec.status = modernError(w, http.StatusBadRequest, m.ID, jsonrpc.CodeInvalidParams, m.Method+" needs params.taskId (a string)", nil)
		return
	}
	var responses map[string]json.RawMessage
	if m.Method == "tasks/update" {
		if env.inputResponses == nil || json.Unmarshal(env.inputResponses, &responses) != nil || responses == nil {
			rec.status = modernError(w, http.StatusBadRequest, m.ID, jsonrpc.CodeInvalidParams, "tasks/update needs params.inputResponses: each input request's key mapped to its result", nil)
			return
		}
	}
	ts := &ep.sl.tasks
	ts.mu.Lock()
	t := ts.live[id]
	if t == nil || t.principal != PrincipalFrom(r) {
		ts.mu.Unlock()
		rec.status = modernError(w, http.StatusOK, m.ID, jsonrpc.CodeInvalidParams, fmt.Sprintf("unknown task %.80q: it never existed here, belongs to another client, or outlived its ttl", id), nil)
		return
	}
	var result json.RawMessage = json.RawMessage(`{"resultType":"complete"}`)
	var answers, refusals []taskInput
	cancel := false
	switch m.Method {
	case "tasks/get":
		result = t.view("complete")
	case "tasks/update":
		// Keys not outstanding (never issued, answered already) are
		// ignored, as SEP-2663 says.
		for k, res := range responses {
			if in, ok := t.pending[k]; ok {
				delete(t.pending, k)
				answers = append(answers, taskInput{childID: in.childID, request: res})
			}
		}
		if len(answers) > 0 && len(t.pending) == 0 && t.status == taskInputRequired {
			t.status, t.message, t.updated = taskWorking, "", time.Now()
		}
	case "tasks/cancel":
		if !t.terminal() {
			for _, in := range t.pending {
				refusals = append(refusals, in)
			}
			t.pending = nil
			t.status, t.message, t.updated = taskCancelled, "cancelled by the client", time.Now()
			cancel = true
		}
	}
	ts.mu.Unlock()
	for _, a := range answers {
		if reply, err := jsonrpc.Parse(jsonrpc.AppendResponse(nil, a.childID, a.request, nil)); err == nil {
			_ = t.f.d.Respond(t.f.caller, reply)
		}
	}
	if cancel {
		for _, in := range refusals {
			t.f.refuse(append(append([]byte(`{"id":`), in.childID...), '}'), "the task was cancelled")
		}
		t.f.cancel(errTaskCancelled)
	}
	ep.writeResult(w, jsonrpc.AppendResponse(nil, m.ID, result, nil), nil, rec)
}
