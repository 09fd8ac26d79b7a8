package conformancefixture

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
)

// This file is the fixture's tools for the MCP 2026-07-28 scenarios
// (conformance 0.2.0): a stdio server of the 2025 era that sends REAL
// elicitation/create, sampling/createMessage and roots/list requests to its
// client (the bridge), which turns them into input_required results (MRTR)
// for modern clients. The requests carry the ids the scenarios expect as
// inputRequests keys; the bridge keys input requests by the child's ids.

func mrtrTools() []obj {
	none := emptySchema()
	return []obj{
		{"name": "test_input_required_result_elicitation", "description": "Asks the client for a name (elicitation)", "inputSchema": none},
		{"name": "test_input_required_result_sampling", "description": "Asks the client's model a question (sampling)", "inputSchema": none},
		{"name": "test_input_required_result_list_roots", "description": "Asks the client for its roots", "inputSchema": none},
		{"name": "test_input_required_result_request_state", "description": "Asks for a confirmation", "inputSchema": none},
		{"name": "test_input_required_result_multiple_inputs", "description": "Asks three things at once", "inputSchema": none},
		{"name": "test_input_required_result_multi_round", "description": "Asks two things, one after the other", "inputSchema": none},
		{"name": "test_input_required_result_tampered_state", "description": "Asks for a confirmation", "inputSchema": none},
		{"name": "test_input_required_result_capabilities", "description": "Asks for an elicitation and a sampling at once", "inputSchema": none},
		{"name": "test_missing_capability", "description": "Needs sampling from the client", "inputSchema": none},
		{"name": "test_streaming_elicitation", "description": "Reports progress, then asks the client", "inputSchema": none},
		{"name": "test_logging_tool", "description": "Logs a message, then answers", "inputSchema": none},
		{"name": "test_trigger_tool_change", "description": "Announces that the tool list changed", "inputSchema": none},
		{"name": "test_trigger_prompt_change", "description": "Announces that the prompt list changed", "inputSchema": none},
	}
}

func nameSchema(prop string) obj {
	return obj{"type": "object", "properties": obj{prop: obj{"type": "string"}}, "required": []string{prop}}
}

// mrtrTool runs one of the tools above; ok is false for any other name.
func (s *server) mrtrTool(ctx context.Context, name string) (any, *rpcError, bool) {
	fail := func(err error) (any, *rpcError, bool) {
		return toolError(err.Error()), nil, true
	}
	switch name {
	case "test_input_required_result_elicitation":
		res, err := s.callID(ctx, "user_name", "elicitation/create", obj{"message": "What is your name?", "requestedSchema": nameSchema("name")})
		if err != nil {
			return fail(err)
		}
		var r struct {
			Content struct {
				Name string `json:"name"`
			} `json:"content"`
		}
		_ = json.Unmarshal(res, &r)
		return content(text("Hello, " + r.Content.Name + "!")), nil, true
	case "test_input_required_result_sampling":
		res, err := s.callID(ctx, "capital_question", "sampling/createMessage", obj{"messages": []obj{{"role": "user", "content": text("What is the capital of France?")}}, "maxTokens": 100})
		if err != nil {
			return fail(err)
		}
		var r struct {
			Content json.RawMessage `json:"content"`
		}
		_ = json.Unmarshal(res, &r)
		return content(text("The model said: " + samplingText(r.Content))), nil, true
	case "test_input_required_result_list_roots":
		res, err := s.callID(ctx, "client_roots", "roots/list", obj{})
		if err != nil {
			return fail(err)
		}
		return content(text("The client's roots: " + string(res))), nil, true
	case "test_input_required_result_request_state", "test_input_required_result_tampered_state":
		if _, err := s.callID(ctx, "confirm", "elicitation/create", obj{"message": "Please confirm", "requestedSchema": obj{"type": "object", "properties": obj{"ok": obj{"type": "boolean"}}, "required": []string{"ok"}}}); err != nil {
			return fail(err)
		}
		// The bridge checked the requestState before the answer reached
		// here.
		return content(text("Confirmed: state-ok")), nil, true
	case "test_input_required_result_multiple_inputs":
		var wg sync.WaitGroup
		var mu sync.Mutex
		var errs []string
		ask := func(id, method string, params obj) {
			defer wg.Done()
			if _, err := s.callID(ctx, id, method, params); err != nil {
				mu.Lock()
				errs = append(errs, err.Error())
				mu.Unlock()
			}
		}
		wg.Add(3)
		go ask("user_name", "elicitation/create", obj{"message": "What is your name?", "requestedSchema": nameSchema("name")})
		go ask("greeting", "sampling/createMessage", obj{"messages": []obj{{"role": "user", "content": text("Generate a greeting")}}, "maxTokens": 50})
		go ask("client_roots", "roots/list", obj{})
		wg.Wait()
		if len(errs) > 0 {
			return toolError(strings.Join(errs, "; ")), nil, true
		}
		return content(text("All three answers received")), nil, true
	case "test_input_required_result_multi_round":
		if _, err := s.callID(ctx, "step1", "elicitation/create", obj{"message": "Step 1: What is your name?", "requestedSchema": nameSchema("name")}); err != nil {
			return fail(err)
		}
		if _, err := s.callID(ctx, "step2", "elicitation/create", obj{"message": "Step 2: What is your favorite color?", "requestedSchema": nameSchema("color")}); err != nil {
			return fail(err)
		}
		return content(text("Both steps done")), nil, true
	case "test_input_required_result_capabilities":
		// Both at once; the bridge asks the client only what it declared,
		// and answers the other with an error.
		var wg sync.WaitGroup
		got := make([]string, 2)
		for i, q := range []struct {
			id, method string
			params     obj
		}{
			{"cap_elicit", "elicitation/create", obj{"message": "Name?", "requestedSchema": nameSchema("name")}},
			{"cap_sample", "sampling/createMessage", obj{"messages": []obj{{"role": "user", "content": text("Hi")}}, "maxTokens": 10}},
		} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := s.callID(ctx, q.id, q.method, q.params); err != nil {
					got[i] = q.method + ": refused"
				} else {
					got[i] = q.method + ": answered"
				}
			}()
		}
		wg.Wait()
		return content(text(strings.Join(got, ", "))), nil, true
	case "test_missing_capability":
		if s.modern && !s.clientCan(ctx, "sampling") {
			return nil, &rpcError{Code: -32021, Message: "the tool needs the client's sampling capability", Data: obj{"requiredCapabilities": obj{"sampling": obj{}}}}, true
		}
		if _, err := s.callID(ctx, "needs_sampling", "sampling/createMessage", obj{"messages": []obj{{"role": "user", "content": text("Hi")}}, "maxTokens": 10}); err != nil {
			return fail(err)
		}
		return content(text("sampled")), nil, true
	case "test_streaming_elicitation":
		if _, err := s.callID(ctx, "stream_question", "elicitation/create", obj{"message": "Continue?", "requestedSchema": obj{"type": "object", "properties": obj{"ok": obj{"type": "boolean"}}}}); err != nil {
			return fail(err)
		}
		return content(text("streamed")), nil, true
	case "test_trigger_tool_change":
		s.changed("notifications/tools/list_changed")
		return content(text("tool list changed")), nil, true
	case "test_trigger_prompt_change":
		s.changed("notifications/prompts/list_changed")
		return content(text("prompt list changed")), nil, true
	case "test_logging_tool":
		if e := envOf(ctx); e == nil || (e.logLevel >= 0 && levels["info"] >= e.logLevel) {
			s.notify("notifications/message", obj{"level": "info", "logger": "fixture", "data": "a log line of test_logging_tool"})
		}
		return content(text("logged")), nil, true
	}
	return nil, nil, false
}

// mrtrPrompt is the prompt that needs the client's input.
func (s *server) mrtrPrompt(ctx context.Context) (any, *rpcError) {
	res, err := s.callID(ctx, "user_context", "elicitation/create", obj{"message": "What context should the prompt use?", "requestedSchema": nameSchema("context")})
	if err != nil {
		return nil, &rpcError{Code: codeInvalidParams, Message: err.Error()}
	}
	var r struct {
		Content struct {
			Context string `json:"context"`
		} `json:"content"`
	}
	_ = json.Unmarshal(res, &r)
	return obj{"description": "A prompt built from the client's context", "messages": []obj{{"role": "user", "content": text("Context: " + r.Content.Context)}}}, nil
}
