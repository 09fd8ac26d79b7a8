package dispatch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/stelae-bridge/stelae-bridge/jsonrpc"
	"sync"
)

// This file holds the destination's tools: the filter that hides some of the
// child's tools from clients (Options.ToolAllowed), the catalogue of the
// child's tools the bridge keeps for itself, and Prestart, which starts a
// child (and so fills the catalogue) before any client comes.
//
// The filter costs nothing when it is not configured: Call checks
// Options.ToolAllowed against nil before looking at tools/call or tools/list.

// maxToolPages bounds the tools/list pages followed for one catalogue fetch.
const maxToolPages = 100

// toolCatalog is the destination's tool list as last fetched from the child,
// whole: Tools filters it as it is read, so that a new filter
// (SetToolAllowed) applies to it at once, with or without a child.
type toolCatalog struct {
	// mu guards list, known, headers, tasks, fetching, again and next. It is never held
	// while talking to the child.
	mu    sync.Mutex
	list  []json.RawMessage
	known bool
	// headers are the tools' parameters mirrored into headers
	// (toolheaders.go), by tool name.
	headers map[string][]ParamHeader
	// tasks are the tools' declared task support (tasks.go), by tool
	// name: TaskOptional or TaskRequired; absent for none.
	tasks map[string]string
	// odd are the names outside the MCP tool-name grammar that the
	// child lists (and the filter allows), which calls may name
	// (screen.go).
	odd map[string]struct{}
	// fetching is set while a fetch goroutine runs; again asks it to fetch
	// once more, from next, when it is done.
	fetching bool
	again    bool
	next     *child
}

// Tools returns the destination's tools as the child described them (each a
// JSON object with name, description, inputSchema, …), without the ones the
// filter hides. The list is fetched by the bridge after every handshake (so
// also after restarts) and again when the child sends
// notifications/tools/list_changed; it is the last completed fetch, kept
// while the child is stopped. known is false until a first fetch completed,
// e.g. when the destination has never run. A child whose initialize result
// declares no tools capability has an empty, known list. The caller must not
// modify the returned messages.
func (d *Dispatcher) Tools() (tools []json.RawMessage, known bool) {
	t := &d.tools
	t.mu.Lock()
	list, known := t.list, t.known
	t.mu.Unlock()
	for _, tool := range list {
		if d.toolAllowed(toolName(tool)) {
			tools = append(tools, tool)
		}
	}
	return tools, known
}

// refreshTools fetches the catalogue from c on a goroutine of its own; it
// never blocks, so the reader may call it. Requests that come while a fetch
// runs are folded into one more fetch, from the newest child.
func (d *Dispatcher) refreshTools(c *child) {
	t := &d.tools
	t.mu.Lock()
	t.next = c
	if t.fetching {
		t.again = true
		t.mu.Unlock()
		return
	}
	t.fetching = true
	t.mu.Unlock()
	d.work.Add(1) // Close waits for the fetch
	go d.fetchLoop()
}

func (d *Dispatcher) fetchLoop() {
	defer d.work.Done()
	t := &d.tools
	t.mu.Lock()
	for {
		c := t.next
		t.again = false
		t.mu.Unlock()
		tools, err := d.fetchTools(c)
		headers, tasks, odd := toolHeaders(tools), toolTasks(tools), oddToolNames(tools)
		t.mu.Lock()
		if err == nil {
			t.list, t.known, t.headers, t.tasks, t.odd = tools, true, headers, tasks, odd
		}
		if !t.again {
			t.fetching, t.next = false, nil
			t.mu.Unlock()
			if err == nil {
				d.log.Debug("tool catalogue fetched", "tools", len(tools))
			} else if errors.Is(err, ErrChildExited) {
				d.log.Debug("tool catalogue not fetched: the child exited")
			} else {
				d.log.Warn("could not fetch the child's tool list; keeping the previous one", "error", err)
			}
			return
		}
	}
}

// fetchTools asks c for its tools (every page, up to maxToolPages) as one of
// the bridge's own calls and returns them all.
func (d *Dispatcher) fetchTools(c *child) ([]json.RawMessage, error) {
	d.mu.RLock()
	result := d.initResult
	d.mu.RUnlock()
	if jsonrpc.Member(jsonrpc.Member(result, "capabilities"), "tools") == nil {
		return nil, nil // the child declares no tools
	}
	var out []json.RawMessage
	var cursor json.RawMessage
	for page := 0; page < maxToolPages; page++ {
		var params json.RawMessage
		if cursor != nil {
			params = append(append(json.RawMessage(`{"cursor":`), cursor...), '}')
		}
		call := d.getCall(d.closing, d.opts.StartTimeout)
		msg, err := d.send(call, c, nil, "tools/list", params).wait()
		call.Release()
		var m *jsonrpc.Message
		if err == nil {
			m, err = jsonrpc.Parse(msg)
		}
		if err != nil {
			return nil, fmt.Errorf("tools/list: %w", err)
		}
		if len(m.Error) > 0 {
			return nil, fmt.Errorf("the child answered tools/list with an error: %s", m.Error)
		}
		var next json.RawMessage
		jsonrpc.EachMember(m.Result, func(key string, val []byte) bool {
			switch key {
			case "tools":
				jsonrpc.EachElement(val, func(tool []byte) { out = append(out, tool) })
			case "nextCursor":
				next = val
			}
			return true
		})
		if len(next) == 0 || string(next) == "null" || string(next) == `""` || bytes.Equal(next, cursor) {
			return out, nil
		}
		cursor = next
	}
	d.log.Warn("the child's tool list has too many pages; the catalogue holds the first ones", "pages", maxToolPages)
	return out, nil
}

// toolFilter holds a ToolAllowed function (Dispatcher.filter).
type toolFilter struct{ allows func(string) bool }

func (d *Dispatcher) toolAllowed(name string) bool {
	f := d.filter.Load()
	return f == nil || f.allows(name)
}

// SetToolAllowed replaces Options.ToolAllowed (nil allows every tool), as
// a reload that changed only a destination's 'tools:' does: the calls and
// lists from now on follow it, the catalogue is fetched again from the
// running child, and every session — and every subscriptions/listen
// stream that asked for tool list changes — gets
// notifications/tools/list_changed, so that clients list anew.
func (d *Dispatcher) SetToolAllowed(allowed func(name string) bool) {
	if allowed == nil {
		d.filter.Store(nil)
	} else {
		d.filter.Store(&toolFilter{allowed})
	}
	if c := d.current(); c != nil {
		d.refreshTools(c)
	}
	msg := []byte(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`)
	d.mu.RLock()
	for s := range d.sessions {
		d.deliver(s, msg)
	}
	d.mu.RUnlock()
}

// filterToolList removes the hidden tools from a tools/list response. Every
// other member of the result, and each remaining tool, is kept byte for byte.
func (d *Dispatcher) filterToolList(resp []byte, err error) ([]byte, error) {
	if err != nil {
		return resp, err
	}
	m, perr := jsonrpc.Parse(resp)
	if perr != nil || len(m.Result) == 0 {
		return resp, nil
	}
	f := d.filter.Load()
	if f == nil {
		return resp, nil // the filter was lifted while the call ran
	}
	result, changed := filterToolsResult(m.Result, f.allows)
	if !changed {
		return resp, nil
	}
	return jsonrpc.AppendResponse(make([]byte, 0, len(resp)), m.ID, result, nil), nil
}

// filterToolsResult rewrites the "tools" array of a tools/list result to the
// allowed tools. changed is false when nothing was removed.
func filterToolsResult(result json.RawMessage, allowed func(string) bool) (json.RawMessage, bool) {
	type span struct{ start, end int }
	var spans []span
	var arrays [][]byte
	jsonrpc.EachMemberAt(result, func(key string, start, end int) bool {
		val := result[start:end]
		if key != "tools" || val[0] != '[' {
			return true
		}
		arr := []byte{'['}
		removed := false
		jsonrpc.EachElement(val, func(tool []byte) {
			if !allowed(toolName(tool)) {
				removed = true
				return
			}
			if len(arr) > 1 {
				arr = append(arr, ',')
			}
			arr = append(arr, tool...)
		})
		if removed {
			spans = append(spans, span{start, end})
			arrays = append(arrays, append(arr, ']'))
		}
		return true
	})
	if len(spans) == 0 {
		return result, false
	}
	out := make([]byte, 0, len(result))
	prev := 0
	for i, s := range spans {
		out = append(out, result[prev:s.start]...)
		out = append(out, arrays[i]...)
		prev = s.end
	}
	return append(out, result[prev:]...), true
}

// toolName reads the "name" of a tool object; "" when it has none.
func toolName(tool []byte) string {
	var name string
	jsonrpc.EachMember(tool, func(key string, val []byte) bool {
		if key == "name" && len(val) > 0 && val[0] == '"' {
			name = jsonrpc.String(val)
		}
		return true
	})
	return name
}

// ToolMark is one tool of the child's catalogue and whether the
// destination's allow/deny lists let clients see and call it.
type ToolMark struct {
	Name    string `json:"name"`
	Allowed bool   `json:"allowed"`
}

// ToolMarks is the child's whole catalogue as last fetched (Tools), each
// tool marked allowed or denied by the filter; known as in Tools.
func (d *Dispatcher) ToolMarks() (marks []ToolMark, known bool) {
	t := &d.tools
	t.mu.Lock()
	list, known := t.list, t.known
	t.mu.Unlock()
	for _, tool := range list {
		name := toolName(tool)
		marks = append(marks, ToolMark{Name: name, Allowed: d.toolAllowed(name)})
	}
	return marks, known
}
