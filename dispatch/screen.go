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
func (d *Dispatcher) Screen(m *jsonrpc.Message) (code int, why string) { return d.screen(m, true) }

// screen tells why a client's message must not reach the child: code and
// why are zero when it may. request is false for a notification.
func (d *Dispatcher) screen(m *jsonrpc.Message, request bool) (code int, why string) {
	if len(m.Method) > maxMethod {
		return jsonrpc.CodeInvalidRequest, fmt.Sprintf("method name of %d bytes; MCP method names are short (at most %d bytes)", len(m.Method), maxMethod)
	}
	if canon := miscased(m.Method); canon != "" {
		return jsonrpc.CodeMethodNotFound, fmt.Sprintf("method %q not found; MCP method names are case-sensitive (did you mean %q?)", truncate([]byte(m.Method), 100), canon)
	}
	if !request && !strings.HasPrefix(m.Method, "notifications/") {
		return jsonrpc.CodeInvalidRequest, fmt.Sprintf("%q is a request method, not a notification: send it with an \"id\" to get an answer", truncate([]byte(m.Method), 100))
	}
	if f := d.filter.Load(); f != nil && m.Method == "tools/call" {
		return d.screenToolCall(m, f.allows)
	}
	return 0, ""
}

// screenToolCall refuses a tools/call that names a hidden tool, and any
// whose name a lenient decoder could read differently: params must be an
// object whose every member named "name" in any letter case is a string
// naming an allowed tool, and there must be one.
func (d *Dispatcher) screenToolCall(m *jsonrpc.Message, allowed func(string) bool) (int, string) {
	if len(m.Params) == 0 || m.Params[0] != '{' {
		return jsonrpc.CodeInvalidParams, `tools/call needs "params": an object with the tool's "name"`
	}
	var named bool
	var code int
	var why string
	jsonrpc.EachMember(m.Params, func(key string, val []byte) bool {
		if !strings.EqualFold(key, "name") {
			return true
		}
		if key != "name" || len(val) == 0 || val[0] != '"' {
			code, why = jsonrpc.CodeInvalidParams, `tools/call: "name" must be one string member named exactly "name"`
			return false
		}
		name := jsonrpc.String(val)
		if !validToolName(name) && !d.listsOddTool(name) {
			d.log.Debug("call of a tool name outside the MCP grammar refused", "tool", truncate([]byte(name), 100))
			code, why = jsonrpc.CodeInvalidParams, fmt.Sprintf("tool %q is not available on this destination: MCP tool names are 1 to 128 ASCII letters, digits, '_', '-' and '.', and the server lists no tool of that name", truncate([]byte(name), 100))
			return false
		}
		if !allowed(name) {
			d.log.Debug("call of a hidden tool refused", "tool", truncate([]byte(name), 100))
			code, why = jsonrpc.CodeInvalidParams, fmt.Sprintf("tool %q is not available on this destination", truncate([]byte(name), 100))
			return false
		}
		named = true
		return true
	})
	if code == 0 && !named {
		code, why = jsonrpc.CodeInvalidParams, `tools/call needs "params.name", the tool's name as a string`
	}
	return code, why
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
