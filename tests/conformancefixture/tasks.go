package conformancefixture

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"
)

// This file is the fixture's tools for the tasks extension scenarios
// (io.modelcontextprotocol/tasks, SEP-2663) of conformance 0.2.0: a stdio
// server of the 2025 era that only declares, in its tool list, which tools
// may run as tasks (execution.taskSupport, MCP 2025-11-25). The tasks
// themselves are the bridge's: it runs these tools as ordinary calls and
// makes a call a task when it has run longer than the destination's
// 'tasks.after' (the conformance tests set 250 ms).
//
// Timing is what tells the bridge whether a call is a task, so the tools
// keep well clear of 'tasks.after': the ones that must become tasks work at
// least a second before they answer or ask for input; test_tool_with_task,
// whose first round must be a synchronous input_required (MRTR), asks at
// once.

// taskStart is how long the task tools that ask for input work first.
const taskStart = 2 * time.Second

func tasksTools() []obj {
	exec := func(support string) obj { return obj{"taskSupport": support} }
	return []obj{
		{"name": "greet", "description": "Greets someone (never a task)", "inputSchema": nameSchema("name"), "execution": exec("forbidden")},
		{"name": "slow_compute", "description": "Works for the given number of seconds, then answers", "execution": exec("optional"), "inputSchema": obj{
			"type": "object", "properties": obj{"seconds": obj{"type": "number"}, "label": obj{"type": "string"}}}},
		{"name": "failing_job", "description": "Fails (a tool error) after 1.5 s; runs only as a task", "inputSchema": emptySchema(), "execution": exec("required")},
		{"name": "protocol_error_job", "description": "Ends in a JSON-RPC error after 1.5 s", "inputSchema": emptySchema(), "execution": exec("optional")},
		{"name": "confirm_delete", "description": "Asks for a confirmation after 2 s, then deletes", "execution": exec("optional"), "inputSchema": obj{
			"type": "object", "properties": obj{"filename": obj{"type": "string"}}}},
		{"name": "multi_input", "description": "Asks two things at once after 2 s", "inputSchema": emptySchema(), "execution": exec("optional")},
		{"name": "test_tool_with_task", "description": "Asks for a name at once, then works 2 s; runs only as a task", "inputSchema": emptySchema(), "execution": exec("required")},
	}
}

// tasksTool runs one of the tools above; ok is false for any other name.
func (s *server) tasksTool(ctx context.Context, name string, args json.RawMessage) (any, *rpcError, bool) {
	var a struct {
		Name     string  `json:"name"`
		Seconds  float64 `json:"seconds"`
		Label    string  `json:"label"`
		Filename string  `json:"filename"`
	}
	_ = json.Unmarshal(args, &a)
	confirm := obj{"type": "object", "properties": obj{"confirm": obj{"type": "boolean"}}, "required": []string{"confirm"}}
	switch name {
	case "greet":
		return content(text("Hello, " + a.Name + "!")), nil, true
	case "slow_compute":
		if !sleep(ctx, time.Duration(a.Seconds*float64(time.Second))) {
			return nil, nil, true // cancelled: the fixture does not answer
		}
		return content(text(fmt.Sprintf("computed %s after %gs", a.Label, a.Seconds))), nil, true
	case "failing_job":
		sleep(ctx, 1500*time.Millisecond)
		return toolError("the job failed"), nil, true
	case "protocol_error_job":
		sleep(ctx, 1500*time.Millisecond)
		return nil, &rpcError{Code: codeInternal, Message: "the job crashed"}, true
	case "confirm_delete":
		if !sleep(ctx, taskStart) {
			return nil, nil, true
		}
		res, err := s.call(ctx, "elicitation/create", obj{"message": "Delete " + a.Filename + "?", "requestedSchema": confirm})
		if err != nil {
			return toolError(err.Error()), nil, true
		}
		return content(text("deleted " + a.Filename + " (" + string(res) + ")")), nil, true
	case "multi_input":
		if !sleep(ctx, taskStart) {
			return nil, nil, true
		}
		var wg sync.WaitGroup
		answers := make([]string, 2)
		for i, q := range []string{"First name?", "Confirm?"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := s.call(ctx, "elicitation/create", obj{"message": q, "requestedSchema": nameSchema("name")})
				if err != nil {
					answers[i] = "refused"
					return
				}
				answers[i] = string(res)
			}()
		}
		wg.Wait()
		return content(text("answers: " + answers[0] + ", " + answers[1])), nil, true
	case "test_tool_with_task":
		res, err := s.call(ctx, "elicitation/create", obj{"message": "What is your name?", "requestedSchema": nameSchema("name")})
		if err != nil {
			return toolError(err.Error()), nil, true
		}
		var r struct {
			Content struct {
				Name string `json:"name"`
			} `json:"content"`
		}
		_ = json.Unmarshal(res, &r)
		if !sleep(ctx, taskStart) {
			return nil, nil, true
		}
		return content(text("Hello, " + r.Content.Name + ", from a task")), nil, true
	}
	return nil, nil, false
}
