package dispatch

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/stelae-bridge/stelae-bridge/jsonrpc"
)

// This file screens what clients send before anything reaches the child. It
// fails closed: the child may decode messages more leniently than the
// bridge (a Go server matches member names and method names without regard
// to case, keeps the last of duplicate members; a JavaScript server coerces
// ["x"] to "x"), so whatever another decoder could read differently from
// the bridge is refused. The member rules (each of jsonrpc, id, method,
// params, result and error at most once, in lower case) are enforced by
// ParseInto.

// ErrRefused is returned by Notify for a notification the bridge does not
// forward; the endpoint answers it with 400.
var ErrRefused = errors.New("notification refused")

// maxMethod is the longest method name forwarded to a child.
const maxMethod = 256

// knownMethods are the MCP methods a client sends, by their lower-case form.
var knownMethods = func() map[string]string {
	m := map[string]string{}
	for _, name := range []string{
		"initialize", "ping",
		"tools/list", "tools/call",
		"resources/list", "resources/templates/list", "resources/read", "resources/subscribe", "resources/unsubscribe",
		"prompts/list", "prompts/get",
		"completion/complete", "logging/setLevel",
		"tasks/get", "tasks/result", "tasks/list", "tasks/cancel",
		"notifications/initialized", "notifications/cancelled", "notifications/progress",
		"notifications/roots/list_changed", "notifications/tasks/status",
	} {
		m[strings.ToLower(name)] = name
	}
	return m
}()

// miscased returns the known method that method differs from only by letter
// case (Unicode simple folding, as strings.EqualFold and Go decoders use),
// or "" when method is exactly a known method or like none.
func miscased(method string) string {
	if canon, ok := knownMethods[strings.ToLower(method)]; ok {
		if canon == method {
			return ""
		}
		return canon
	}
	for _, canon := range knownMethods {
		if strings.EqualFold(canon, method) {
			return canon
		}
	}
	return ""
}

// Screen tells why a client's request m must not reach the child (code
// and why are zero when it may), as Begin screens every request: for a
// request that reaches the child by another way (a 2026-07-28 retry, which
// resumes a parked call).
func (d *Dispatcher) Screen(m *jsonrpc.Message) (code int, why string) {
	_, code, why = d.screen(m, true)
	return code, why
}

// screen tells why a client's message must not reach the child: code and
// why are zero when it may. request is false for a notification. task
// reports a tools/call that asks the child to run it as a task of its own
// (its "task" member, MCP 2025-11-25: childtasks.go).
func (d *Dispatcher) screen(m *jsonrpc.Message, request bool) (task bool, code int, why string) {
	if len(m.Method) > maxMethod {
		return false, jsonrpc.CodeInvalidRequest, fmt.Sprintf("method name of %d bytes; MCP method names are short (at most %d bytes)", len(m.Method), maxMethod)
	}
	if canon := miscased(m.Method); canon != "" {
		return false, jsonrpc.CodeMethodNotFound, fmt.Sprintf("method %q not found; MCP method names are case-sensitive (did you mean %q?)", truncate([]byte(m.Method), 100), canon)
	}
	if !request && !strings.HasPrefix(m.Method, "notifications/") {
		return false, jsonrpc.CodeInvalidRequest, fmt.Sprintf("%q is a request method, not a notification: send it with an \"id\" to get an answer", truncate([]byte(m.Method), 100))
	}
	name, task, code, why := screenRouted(m, request)
	if code != 0 {
		return false, code, why
	}
	if f := d.filter.Load(); f != nil && m.Method == "tools/call" {
		code, why = d.screenToolCall(jsonrpc.String(name), f.allows)
	}
	return task, code, why
}

// screenRouted refuses a message whose members that the bridge routes,
// filters or binds by — and what a profile, the Mcp-Name and Mcp-Param-*
// headers and an MRTR requestState are checked against — a decoder could
// read otherwise than the bridge (jsonrpc.ExactMember: given twice, or as
// "Name", "URI", "\u212A"…): a tools/call's or prompts/get's "name" and
// "arguments" (the tool filter, turns, tasks, MRTR), a resource's "uri"
// (subscriptions are counted by it), a request's "_meta" and its
// "progressToken" (rewritten by splicing), a cancellation's "requestId".
// A name or URI, when given, must be a string (JavaScript reads ["x"] as
// "x"); params, when given, an object. name is the raw "name" of a
// tools/call or prompts/get, or a resource's "uri" (nil when absent).
func screenRouted(m *jsonrpc.Message, request bool) (name []byte, task bool, code int, why string) {
	var keys []string
	switch m.Method {
	case "tools/call":
		keys = routedToolCall[:]
	case "prompts/get":
		keys = routedByName[:]
	case "resources/read", "resources/subscribe", "resources/unsubscribe":
		keys = routedByURI[:]
	case "notifications/cancelled":
		if len(m.Params) == 0 || m.Params[0] != '{' {
			return nil, false, 0, "" // nothing to cancel
		}
		keys = routedCancel[:]
	default:
		if !request || len(m.Params) == 0 || m.Params[0] != '{' {
			return nil, false, 0, ""
		}
		keys = routedMeta[:]
	}
	noun, key := "tool's name", "name"
	switch m.Method {
	case "prompts/get":
		noun = "prompt's name"
	case "resources/read", "resources/subscribe", "resources/unsubscribe":
		noun, key = "resource's URI", "uri"
	}
	switch {
	case len(m.Params) == 0:
		return nil, false, 0, "" // no decoder reads a name (the filter refuses it)
	case m.Params[0] != '{':
		return nil, false, jsonrpc.CodeInvalidParams, fmt.Sprintf(`%s needs "params": an object with the %s (%q)`, m.Method, noun, key)
	}
	refuse := func(what string, err error) ([]byte, bool, int, string) {
		return nil, false, jsonrpc.CodeInvalidParams, fmt.Sprintf("%s: %v", what, err)
	}
	var vals [6][]byte
	if err := jsonrpc.ExactMembers(m.Params, keys, vals[:len(keys)]); err != nil {
		return refuse(m.Method, err)
	}
	switch m.Method {
	case "tools/call", "prompts/get", "resources/read", "resources/subscribe", "resources/unsubscribe":
		// Absent, no decoder reads one (the child answers); a value
		// that is not a string some decoders coerce (["x"] is "x" in
		// JavaScript).
		if len(vals[0]) > 0 && vals[0][0] != '"' {
			return nil, false, jsonrpc.CodeInvalidParams, fmt.Sprintf(`%s needs "params.%s", the %s as a string`, m.Method, key, noun)
		}
		name = vals[0]
	case "notifications/cancelled":
		return nil, false, 0, ""
	}
	meta := vals[len(keys)-1]
	if len(meta) > 0 && meta[0] == '{' {
		var metaVals [len(routedMetaKeys)][]byte
		if err := jsonrpc.ExactMembers(meta, routedMetaKeys[:], metaVals[:]); err != nil {
			return refuse(m.Method+": _meta", err)
		}
	}
	// A tools/call's "task" (read above, as every decoder reads it).
	task = m.Method == "tools/call" && len(vals[2]) > 0 && vals[2][0] == '{'
	return name, task, 0, ""
}

// The members screenRouted reads, by method; "_meta" last. Every
// request's MRTR members (inputResponses, requestState) are the bridge's:
// it seals and checks a 2026-07-28 client's, drops a 2025 client's before
// a 2026 child, and writes its own into a translated call's retry
// (modern.go), so no decoder may read another spelling of them.
var (
	routedByName = [...]string{"name", "arguments", "inputResponses", "requestState", "_meta"}
	// routedToolCall adds the "task" that makes the child run the call
	// as a task of its own, which then belongs to the caller.
	routedToolCall = [...]string{"name", "arguments", "task", "inputResponses", "requestState", "_meta"}
	routedByURI    = [...]string{"uri", "inputResponses", "requestState", "_meta"}
	routedCancel   = [...]string{"requestId"}
	routedMeta     = [...]string{"inputResponses", "requestState", "_meta"}
	// routedMetaKeys are the members of _meta the bridge rewrites (the
	// progress token) or reads and writes for a 2026 child (the
	// envelope: what a client declared is what the child reads).
	routedMetaKeys = [...]string{"progressToken", "io.modelcontextprotocol/protocolVersion", "io.modelcontextprotocol/clientInfo",
		"io.modelcontextprotocol/clientCapabilities", "io.modelcontextprotocol/logLevel", "traceparent", "tracestate"}
)

// screenToolCall refuses a tools/call that names a hidden tool (name is
// its one exact "name", screenRouted).
func (d *Dispatcher) screenToolCall(name string, allowed func(string) bool) (int, string) {
	if name == "" {
		return jsonrpc.CodeInvalidParams, `tools/call needs "params.name", the tool's name as a string`
	}
	if !validToolName(name) && !d.listsOddTool(name) {
		d.log.Debug("call of a tool name outside the MCP grammar refused", "tool", truncate([]byte(name), 100))
		return jsonrpc.CodeInvalidParams, fmt.Sprintf("tool %q is not available on this destination: MCP tool names are 1 to 128 ASCII letters, digits, '_', '-' and '.', and the server lists no tool of that name", truncate([]byte(name), 100))
	}
	if !allowed(name) {
		d.log.Debug("call of a hidden tool refused", "tool", truncate([]byte(name), 100))
		return jsonrpc.CodeInvalidParams, fmt.Sprintf("tool %q is not available on this destination", truncate([]byte(name), 100))
	}
	return 0, ""
}

// maxToolName is the longest tool name of the MCP grammar (2025-11-25:
// "between 1 and 128 characters").
const maxToolName = 128

// validToolName reports whether name is in the MCP tool-name grammar: 1 to
// 128 ASCII letters, digits, '_', '-' and '.'. A name outside it (a
// zero-width space, fullwidth letters, a trailing '/') could be normalized
// by the child into one the filter hides, so with a filter configured a
// call may name one only when the child lists exactly that name.
func validToolName(name string) bool {
	if len(name) == 0 || len(name) > maxToolName {
		return false
	}
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '-', c == '.':
		default:
			return false
		}
	}
	return true
}

// oddToolNames are the names of tools outside the grammar.
func oddToolNames(tools []json.RawMessage) map[string]struct{} {
	var odd map[string]struct{}
	for _, tool := range tools {
		if name := toolName(tool); !validToolName(name) {
			if odd == nil {
				odd = map[string]struct{}{}
			}
			odd[name] = struct{}{}
		}
	}
	return odd
}

// listsOddTool reports whether the catalogue lists name, outside the
// grammar, exactly.
func (d *Dispatcher) listsOddTool(name string) bool {
	t := &d.tools
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.odd[name]
	return ok
}
