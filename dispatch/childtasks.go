package dispatch

import (
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/stelae-bridge/stelae-bridge/jsonrpc"
)

// The child's own tasks (MCP 2025-11-25): a client's tools/call that
// carries "task" is answered with a task the child runs, which the client
// then polls (tasks/get), reads (tasks/result), cancels (tasks/cancel) and
// lists (tasks/list), and the child reports its changes
// (notifications/tasks/status). On a shared child every task is the
// child's, whoever asked for it: the child would show any client every
// task and give it any task's result (a second user read the first's
// research report by its id). The bridge remembers whose each task is —
// the user whose call the child answered with it (a 2026-07-28 call the
// bridge runs as a child task, BeginChildTask, too) — and:
//
//   - answers a tasks/get, tasks/result or tasks/cancel naming a task that
//     is not the caller's user's with the error an unknown task gets;
//   - keeps only the caller's user's tasks in a tasks/list answer;
//   - sends notifications/tasks/status to the session that made the task,
//     and drops it when it is nobody's it knows.
//
// The record is bounded (maxChildTasks, the oldest forgotten first; a
// forgotten task is unknown to everyone) and kept for the task's ttl (a
// day when it has none or a longer one); it is cleared when the child
// exits (its tasks end with it).

// maxChildTasks bounds the tasks the bridge remembers the owners of.
const maxChildTasks = 10000

// maxTaskKeep is the longest a task's owner is remembered.
const maxTaskKeep = 24 * time.Hour

// taskOwner is whose a task of the child's is.
type taskOwner struct {
	user  any
	sess  Session
	until time.Time
}

// childTasks are the owners of the child's tasks. The zero value is ready.
type childTasks struct {
	// mu guards byID and order.
	mu   sync.Mutex
	byID map[string]taskOwner
	// order holds the ids in the order they were recorded (the oldest is
	// forgotten first at the bound); ids already forgotten are skipped.
	order []string
}

// record notes that the child's result to s's call created a task
// (result.task.taskId), with its ttl (milliseconds) when it has one.
func (ct *childTasks) record(s Session, result []byte, now time.Time) {
	task := jsonrpc.Member(result, "task")
	id := jsonrpc.Member(task, "taskId")
	if len(id) == 0 || id[0] != '"' {
		return
	}
	keep := maxTaskKeep
	if ms, err := strconv.ParseInt(string(jsonrpc.Member(task, "ttl")), 10, 64); err == nil && ms > 0 && time.Duration(ms)*time.Millisecond < maxTaskKeep {
		keep = time.Duration(ms)*time.Millisecond + time.Minute
	}
	key := jsonrpc.String(id)
	ct.mu.Lock()
	defer ct.mu.Unlock()
	if ct.byID == nil {
		ct.byID = map[string]taskOwner{}
	}
	if _, ok := ct.byID[key]; !ok {
		ct.order = append(ct.order, key)
	}
	ct.byID[key] = taskOwner{user: s.User(), sess: s, until: now.Add(keep)}
	for len(ct.byID) > maxChildTasks && len(ct.order) > 0 {
		delete(ct.byID, ct.order[0])
		ct.order = ct.order[1:]
	}
	if len(ct.order) > 2*maxChildTasks {
		ct.compactLocked()
	}
}

// compactLocked drops the forgotten ids from order. ct.mu must be held.
func (ct *childTasks) compactLocked() {
	kept := ct.order[:0]
	for _, id := range ct.order {
		if _, ok := ct.byID[id]; ok {
			kept = append(kept, id)
		}
	}
	ct.order = kept
}

// owner is whose task id is (false when the bridge knows of no such task
// or its time has passed).
func (ct *childTasks) owner(id string, now time.Time) (taskOwner, bool) {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	o, ok := ct.byID[id]
	if ok && now.After(o.until) {
		delete(ct.byID, id)
		return taskOwner{}, false
	}
	return o, ok
}

// clear forgets every task (the child exited: its tasks ended with it).
func (ct *childTasks) clear() {
	ct.mu.Lock()
	clear(ct.byID)
	ct.order = ct.order[:0]
	ct.mu.Unlock()
}

// reach refuses (with the code and message an unknown task gets) a client
// request naming a task of the child's that is not s's user's: tasks/get,
// tasks/result and tasks/cancel. The task id is read as every decoder
// reads it (jsonrpc.ExactMember).
func (d *Dispatcher) reachTask(s Session, m *jsonrpc.Message) (code int, why string) {
	id, err := jsonrpc.ExactMember(m.Params, "taskId")
	switch {
	case err != nil:
		return jsonrpc.CodeInvalidParams, m.Method + ": " + err.Error()
	case len(id) == 0 || id[0] != '"':
		return jsonrpc.CodeInvalidParams, m.Method + ` needs "params.taskId", the task's id as a string`
	}
	if o, ok := d.tasks.owner(jsonrpc.String(id), time.Now()); ok && o.user == s.User() {
		return 0, ""
	}
	return jsonrpc.CodeInvalidParams, fmt.Sprintf("unknown task %.80s: no task of yours has that id (it may have expired)", id)
}

// ownTasksOnly keeps, in a tasks/list answer, the tasks of user.
func (d *Dispatcher) ownTasksOnly(user any) func([]byte, error) ([]byte, error) {
	return func(resp []byte, err error) ([]byte, error) {
		if err != nil {
			return resp, err
		}
		result := jsonrpc.Member(resp, "result")
		tasks := jsonrpc.Member(result, "tasks")
		if len(tasks) == 0 || tasks[0] != '[' {
			return resp, nil
		}
		now := time.Now()
		kept := []byte{'['}
		jsonrpc.EachElement(tasks, func(task []byte) {
			id := jsonrpc.Member(task, "taskId")
			if len(id) == 0 || id[0] != '"' {
				return
			}
			if o, ok := d.tasks.owner(jsonrpc.String(id), now); !ok || o.user != user {
				return
			}
			if len(kept) > 1 {
				kept = append(kept, ',')
			}
			kept = append(kept, task...)
		})
		kept = append(kept, ']')
		result, rerr := jsonrpc.Replace(result, "tasks", kept)
		if rerr != nil {
			return resp, nil
		}
		out, rerr := jsonrpc.Replace(resp, "result", json.RawMessage(result))
		if rerr != nil {
			return resp, nil
		}
		return out, nil
	}
}

// routeTaskStatus sends notifications/tasks/status to the session that
// made the task; nobody else gets it.
func (d *Dispatcher) routeTaskStatus(m *jsonrpc.Message, line []byte) {
	id := jsonrpc.Member(m.Params, "taskId")
	if len(id) == 0 || id[0] != '"' {
		return
	}
	o, ok := d.tasks.owner(jsonrpc.String(id), time.Now())
	if !ok {
		d.log.Debug("status of a task the bridge knows no owner of; dropped", "task", truncate(id, 80))
		return
	}
	d.mu.RLock()
	_, attached := d.sessions[o.sess]
	d.mu.RUnlock()
	if attached {
		d.deliver(o.sess, append([]byte(nil), line...))
	}
}
