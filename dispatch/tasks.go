package dispatch

import (
	"context"
	"encoding/json"
	"time"

	"github.com/stelae-bridge/stelae-bridge/jsonrpc"
)

// MCP 2026-07-28 made tasks an extension (io.modelcontextprotocol/tasks,
// SEP-2663) that the server offers and runs: a tools/call may be answered
// with a task the client polls. The bridge offers it for every child — the
// tasks live in the bridge (session/tasks.go), the child just runs an
// ordinary call — and takes from the child's tool list which tools may
// become tasks: those whose definition declares execution.taskSupport
// (MCP 2025-11-25) "optional" or "required".

// TasksExtension is the tasks extension's identifier.
const TasksExtension = "io.modelcontextprotocol/tasks"

// Values of a tool's execution.taskSupport that make its calls tasks.
const (
	TaskOptional = "optional"
	TaskRequired = "required"
)

// ToolTaskSupport is tool name's declared task support: TaskOptional,
// TaskRequired, or "" (none, or "forbidden"); known is false while the
// catalogue is not known yet (the child has not run, or its tool list is
// being read right after its handshake).
func (d *Dispatcher) ToolTaskSupport(name string) (support string, known bool) {
	d.tools.mu.Lock()
	defer d.tools.mu.Unlock()
	return d.tools.tasks[name], d.tools.known
}

// toolTasks reads the catalogue's execution.taskSupport declarations.
func toolTasks(tools []json.RawMessage) map[string]string {
	var out map[string]string
	for _, tool := range tools {
		support := jsonrpc.String(jsonrpc.Member(jsonrpc.Member(tool, "execution"), "taskSupport"))
		if support != TaskOptional && support != TaskRequired {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[toolName(tool)] = support
	}
	return out
}

// ChildRunsToolTasks reports whether the child declared, in its handshake,
// that it runs tools/call as tasks of its own (MCP 2025-11-25:
// capabilities.tasks.requests.tools.call).
func (d *Dispatcher) ChildRunsToolTasks() bool {
	d.mu.RLock()
	defer d.mu.RUnlock()
	caps := jsonrpc.Member(d.initResult, "capabilities")
	v := jsonrpc.Member(jsonrpc.Member(jsonrpc.Member(jsonrpc.Member(caps, "tasks"), "requests"), "tools"), "call")
	return len(v) > 0 && v[0] == '{'
}

// BeginChildTask is Begin for a tools/call the child runs as a task of its
// own (m's params carry the 2025-11-25 "task" member): a tool that declares
// taskSupport "required" refuses to run otherwise. When the child answers
// with the task it created, the call asks for the task's result
// (tasks/result, which the child answers when the task ends) and that is
// its answer; requests the child sends meanwhile reach the caller as the
// call's, as usual. A call abandoned (cancelled, timed out) cancels the
// child's task too (tasks/cancel).
func (d *Dispatcher) BeginChildTask(ctx context.Context, s Session, m *jsonrpc.Message, timeout time.Duration) *Call {
	call := d.getCall(ctx, timeout)
	call.sess, call.follow, call.augmented, call.ownsTask = s, true, true, s != nil
	if _, code, why := d.screen(m, true); code != 0 {
		return call.finish(jsonrpc.ErrorResponse(m.ID, code, why), nil)
	}
	return d.forward(call, m)
}

// awaitChildTask takes the child's answer r to an augmented call: when it
// is the task the child created (a CreateTaskResult of 2025-11-25, with
// result.task.taskId), the call goes on with tasks/result for it and
// awaitChildTask reports true.
func (call *Call) awaitChildTask(r reply) bool {
	call.augmented, call.ownsTask = false, false
	if r.err != nil {
		return false
	}
	id := jsonrpc.Member(jsonrpc.Member(jsonrpc.Member(r.msg, "result"), "task"), "taskId")
	if len(id) == 0 || id[0] != '"' {
		return false
	}
	call.childTask = jsonrpc.String(id)
	params := append(append([]byte(`{"taskId":`), id...), '}')
	call.d.send(call, call.c, call.clientID, "tasks/result", params)
	return true
}

// cancelChildTask asks the child to cancel a task of its own.
func (d *Dispatcher) cancelChildTask(c *child, taskID string) {
	d.fireAndForget(c, "tasks/cancel", append(jsonrpc.AppendString([]byte(`{"taskId":`), taskID), '}'))
}
