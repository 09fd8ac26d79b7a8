package peruser

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/stelae-bridge/stelae-bridge/dispatch"
	"github.com/stelae-bridge/stelae-bridge/jsonrpc"
	"github.com/stelae-bridge/stelae-bridge/supervisor"
)

// standIn is the child of a user whose credentials are missing
// ('credentials:' on an 'isolation: user' destination): an in-process MCP
// server, so that no half-configured child starts. It answers the
// handshake and the lists (the destination's tools as its users' children
// listed them, so that a client sees what it would get), and every call
// with what the user must do: where the credentials page is known, it
// first asks the client to open it (URL-mode elicitation, MCP
// 2025-11-25 — the bridge routes the request to the caller, or refuses it
// for a client that did not declare elicitation), then answers the call
// with a tool error whose text says the same, so a client without
// elicitation still tells its user. The call can be made again once the
// credentials are in (the user's endpoint is let go when they are set).
type standIn struct {
	dest    string
	missing []string // "NAME (description)"
	url     string   // where the user enters them ("" when nowhere)
	user    string
	tools   func() []json.RawMessage
	out     chan []byte
	exited  chan struct{}
	once    sync.Once
	// mu guards asked and n.
	mu    sync.Mutex
	asked map[string]json.RawMessage // the elicitation's id → the call's id
	n     int
}

var _ supervisor.Child = (*standIn)(nil)

// StandIn starts stand-ins for user (their display name) of destination
// dest, whose credentials missing are missing ("NAME (description)");
// url is where they enter them ("" when nowhere), tools the destination's
// tools as its users' children listed them.
func StandIn(dest, user, url string, missing []string, tools func() []json.RawMessage) supervisor.Launcher {
	return func(context.Context) (supervisor.Child, error) {
		return &standIn{dest: dest, user: user, url: url, missing: missing, tools: tools, out: make(chan []byte, 64), exited: make(chan struct{}), asked: map[string]json.RawMessage{}}, nil
	}
}

// what is what the user must do, for the call's answer and the page link.
func (c *standIn) what() string {
	msg := fmt.Sprintf("destination %q needs your own credentials before its server can run for you (%s): %s.", c.dest, c.user, strings.Join(c.missing, "; "))
	if c.url != "" {
		return msg + " Enter them at " + c.url + " (signed in as yourself), then make the call again."
	}
	return msg + " Ask the bridge's operator to provision them for you, then make the call again."
}

// ReadMessage implements supervisor.Child.
func (c *standIn) ReadMessage() ([]byte, error) {
	select {
	case m := <-c.out:
		return m, nil
	case <-c.exited:
		return nil, io.EOF
	}
}

// Enqueue implements supervisor.Child.
func (c *standIn) Enqueue(msg []byte) error { return c.WriteMessage(msg) }

// send queues a message for the bridge; it never waits past the stand-in's
// end.
func (c *standIn) send(msg []byte) {
	select {
	case c.out <- msg:
	case <-c.exited:
	}
}

// WriteMessage implements supervisor.Child: the bridge's message is
// answered at once.
func (c *standIn) WriteMessage(line []byte) error {
	m, err := jsonrpc.Parse(line)
	if err != nil {
		return nil
	}
	result := func(v any) {
		b, _ := json.Marshal(v)
		c.send(jsonrpc.AppendResponse(nil, m.ID, b, nil))
	}
	switch m.Kind() {
	case jsonrpc.KindResponse:
		// The client's answer to the page's elicitation: the call ends
		// with what to do, whatever it answered.
		c.mu.Lock()
		call, ok := c.asked[string(m.ID)]
		delete(c.asked, string(m.ID))
		c.mu.Unlock()
		if ok {
			c.send(jsonrpc.AppendResponse(nil, call, c.toolError(), nil))
		}
	case jsonrpc.KindRequest:
		switch m.Method {
		case "initialize":
			var p struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			_ = json.Unmarshal(m.Params, &p)
			result(map[string]any{"protocolVersion": p.ProtocolVersion, "capabilities": map[string]any{"tools": map[string]any{}},
				"serverInfo": map[string]any{"name": c.dest, "version": "waiting for credentials"}, "instructions": c.what()})
		case "ping":
			result(map[string]any{})
		case "tools/list":
			tools := c.tools()
			if tools == nil {
				tools = []json.RawMessage{}
			}
			result(map[string]any{"tools": tools})
		case "prompts/list":
			result(map[string]any{"prompts": []any{}})
		case "resources/list":
			result(map[string]any{"resources": []any{}})
		case "resources/templates/list":
			result(map[string]any{"resourceTemplates": []any{}})
		case "tools/call":
			if c.url == "" {
				c.send(jsonrpc.AppendResponse(nil, m.ID, c.toolError(), nil))
				return nil
			}
			c.mu.Lock()
			c.n++
			id := strconv.Quote("credentials-" + strconv.Itoa(c.n))
			c.asked[id] = append(json.RawMessage(nil), m.ID...)
			c.mu.Unlock()
			// Optional: a 2026-07-28 client that did not declare URL mode
			// gets the tool error (the refusal's answer), not -32021.
			params, _ := json.Marshal(map[string]any{"mode": "url", "url": c.url, "elicitationId": strings.Trim(id, `"`), "message": c.what(),
				"_meta": map[string]any{dispatch.OptionalMeta: true}})
			c.send(jsonrpc.AppendRequest(nil, json.RawMessage(id), "elicitation/create", params))
		default:
			c.send(jsonrpc.ErrorResponse(m.ID, jsonrpc.CodeInvalidRequest, c.what()))
		}
	}
	return nil
}

// toolError is a tools/call result that tells the user what to do.
func (c *standIn) toolError() json.RawMessage {
	b, _ := json.Marshal(map[string]any{"isError": true, "content": []map[string]string{{"type": "text", "text": c.what()}}})
	return b
}

// Stop implements supervisor.Child.
func (c *standIn) Stop(context.Context) error {
	c.once.Do(func() { close(c.exited) })
	return nil
}

// Exited implements supervisor.Child.
func (c *standIn) Exited() <-chan struct{} { return c.exited }

// ExitStatus implements supervisor.Child.
func (c *standIn) ExitStatus() string { return "" }

// PID implements supervisor.Child: no process.
func (c *standIn) PID() int { return 0 }
