package dispatch

import (
	"encoding/json"

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
