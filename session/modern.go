package session

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/stelae-bridge/stelae-bridge/dispatch"
	"github.com/stelae-bridge/stelae-bridge/jsonrpc"
)

// This file serves MCP 2026-07-28 ("modern") requests beside the 2025
// sessions, on the same shared child: a request is modern when its
// params._meta carries the protocol version (classified by envelope, never
// by method name). It has no session; it is validated, then answered
// (server/discover) or forwarded, its result marked complete.

// The reserved _meta keys of a modern request.
const (
	metaProtocolVersion = "io.modelcontextprotocol/protocolVersion"
	metaClientInfo      = "io.modelcontextprotocol/clientInfo"
	metaClientCaps      = "io.modelcontextprotocol/clientCapabilities"
)

// Values of Options.Sessionless.
const (
	SessionlessServe  = "serve"
	SessionlessReject = "reject"
)

// Eras are the values of Options.ProtocolEras.
const (
	ErasBoth   = "both"
	Eras2025   = "2025"
	eraModern  = dispatch.ModernVersion
	base64Head = "=?base64?"
)

// modernMethods are the methods a modern request may name; the removed ones
// (initialize, ping, logging/setLevel, resources/subscribe|unsubscribe) and
// any other get 404 / -32601.
var modernMethods = []string{"server/discover", "tools/list", "tools/call", "resources/list", "resources/templates/list",
	"resources/read", "prompts/list", "prompts/get", "completion/complete", "subscriptions/listen"}

// isModern reports whether a request is one of the modern era: it carries
// the modern envelope (params._meta's protocol version), or — so that a
// malformed one is told what is wrong rather than that it lacks a session —
// it names the modern version in its MCP-Protocol-Version header and has no
// session.
func isModern(r *http.Request, m *jsonrpc.Message) bool {
	if m.Kind() != jsonrpc.KindRequest {
		return false
	}
	if jsonrpc.Member(jsonrpc.Member(m.Params, "_meta"), metaProtocolVersion) != nil {
		return true
	}
	return r.Header.Get("MCP-Protocol-Version") == eraModern && r.Header.Get(headerSessionID) == ""
}

// modernError answers a modern request with a JSON-RPC error carrying its
// id (and data when set).
func modernError(w http.ResponseWriter, status int, id json.RawMessage, code int, msg string, data any) int {
	body := struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Data    any    `json:"data,omitempty"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id}
	body.Error.Code, body.Error.Message, body.Error.Data = code, msg, data
	b, _ := json.Marshal(body)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(b)
	return status
}

// headerValue decodes a header in the base64 sentinel form (=?base64?…?=).
func headerValue(v string) string {
	if strings.HasPrefix(v, base64Head) && strings.HasSuffix(v, "?=") && len(v) >= len(base64Head)+2 {
		if b, err := base64.StdEncoding.DecodeString(v[len(base64Head) : len(v)-2]); err == nil {
			return string(b)
		}
	}
	return v
}

// validateModern is the validation ladder; it writes the error and returns
// its status, or returns 0 and the request's client capabilities.
func (ep *Endpoint) validateModern(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message) (int, json.RawMessage) {
	if ep.opts.ProtocolEras == Eras2025 {
		// Answered as a legacy server must, so that every client falls
		// back to initialize: 4xx, the request's id, -32601.
		return modernError(w, http.StatusNotFound, m.ID, jsonrpc.CodeMethodNotFound, "this endpoint serves MCP 2025 sessions only: send initialize", nil), nil
	}
	meta := jsonrpc.Member(m.Params, "_meta")
	var version string
	var caps map[string]json.RawMessage
	if json.Unmarshal(jsonrpc.Member(meta, metaProtocolVersion), &version) != nil || version == "" ||
		json.Unmarshal(jsonrpc.Member(meta, metaClientCaps), &caps) != nil || caps == nil {
		return modernError(w, http.StatusBadRequest, m.ID, jsonrpc.CodeInvalidParams,
			"a "+eraModern+" request's params._meta needs "+metaProtocolVersion+" (a string) and "+metaClientCaps+" (an object); "+metaClientInfo+" is recommended", nil), nil
	}
	if h := r.Header.Get("MCP-Protocol-Version"); h != version {
		return modernError(w, http.StatusBadRequest, m.ID, jsonrpc.CodeHeaderMismatch,
			fmt.Sprintf("the MCP-Protocol-Version header (%q) differs from the request's protocol version (%q)", h, version), nil), nil
	}
	if h := r.Header.Get("Mcp-Method"); headerValue(h) != m.Method {
		return modernError(w, http.StatusBadRequest, m.ID, jsonrpc.CodeHeaderMismatch,
			fmt.Sprintf("the Mcp-Method header (%q) differs from the request's method (%q)", h, m.Method), nil), nil
	}
	if m.Method == "tools/call" || m.Method == "prompts/get" || m.Method == "resources/read" {
		field := "name"
		if m.Method == "resources/read" {
			field = "uri"
		}
		var name string
		_ = json.Unmarshal(jsonrpc.Member(m.Params, field), &name)
		if h := r.Header.Get("Mcp-Name"); headerValue(h) != name {
			return modernError(w, http.StatusBadRequest, m.ID, jsonrpc.CodeHeaderMismatch,
				fmt.Sprintf("the Mcp-Name header (%q) differs from params.%s (%q)", h, field, name), nil), nil
		}
	}
	if version != eraModern {
		return modernError(w, http.StatusBadRequest, m.ID, jsonrpc.CodeUnsupportedVersion,
			fmt.Sprintf("protocol version %q is not supported in a request's _meta; this bridge speaks %s per request, and %s with initialize", version, eraModern, strings.Join(dispatch.Versions(), ", ")),
			map[string]any{"supported": append(dispatch.Versions(), eraModern), "requested": version}), nil
	}
	if !slices.Contains(modernMethods, m.Method) {
		return modernError(w, http.StatusNotFound, m.ID, jsonrpc.CodeMethodNotFound, fmt.Sprintf("method %q is not available to %s requests", m.Method, eraModern), nil), nil
	}
	return 0, jsonrpc.Member(meta, metaClientCaps)
}

// cacheable reports whether a method's results carry caching hints
// (ttlMs, cacheScope).
func cacheable(method string) bool {
	switch method {
	case "tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read":
		return true
	}
	return false
}

// modernCaller is a modern request as the dispatcher sees a session: it
// lives as long as the request.
type modernCaller struct {
	id     string
	cancel context.CancelCauseFunc
}

var modernSeq atomic.Uint64

func (c *modernCaller) SessionID() string { return c.id }

// Deliver drops what the child sends to sessions: a modern request has no
// stream for unrelated notifications.
func (c *modernCaller) Deliver([]byte) bool { return false }
func (c *modernCaller) End(reason error)    { c.cancel(reason) }

// serveModern answers a modern request.
func (ep *Endpoint) serveModern(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message, rec *postLog) {
	status, caps := ep.validateModern(w, r, m)
	if status != 0 {
		rec.status = status
		return
	}
	if ep.shared == nil {
		rec.status = modernError(w, http.StatusBadRequest, m.ID, jsonrpc.CodeMethodNotFound, fmt.Sprintf("destination %q gives each session a child of its own ('isolation: session'): use a 2025 session (initialize)", ep.name), nil)
		return
	}
	d := ep.shared
	if m.Method == "subscriptions/listen" {
		ep.serveListen(w, r, m, caps, rec)
		return
	}
	if m.Method == "server/discover" {
		resp, err := d.Discover(r.Context(), m.ID, ep.opts.RequestTimeout)
		ep.writeResult(w, resp, err, rec)
		return
	}
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	caller := &modernCaller{id: fmt.Sprintf("modern-%d", modernSeq.Add(1)), cancel: cancel}
	d.Attach(caller, json.RawMessage(`{"capabilities":`+string(caps)+`}`))
	defer d.Detach(caller, nil)
	fwd := *m
	fwd.Params = dispatch.ModernParams(m.Params)
	ep.forwardModern(w, r, d, caller, &fwd, rec, ctx, true)
}

// serveSessionless serves a 2025-style request that came without
// Mcp-Session-Id (ChatGPT has been seen dropping it on its second POST, and
// stateless 2025 clients exist) on the destination's initialized child,
// its related messages on its own POST stream. The auth layer has already
// let it in.
func (ep *Endpoint) serveSessionless(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message, rec *postLog) {
	d := ep.shared
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	caller := &modernCaller{id: fmt.Sprintf("sessionless-%d", modernSeq.Add(1)), cancel: cancel}
	d.Attach(caller, json.RawMessage(`{"capabilities":{}}`))
	defer d.Detach(caller, nil)
	ep.forwardModern(w, r, d, caller, m, rec, ctx, false)
}

// forwardModern sends a modern request to the child and answers it: JSON,
// or — once the call sends progress and the client accepts a stream — an
// SSE stream scoped to the request, carrying its progress and then its
// answer. A client that closes the stream cancels the call (the child gets
// notifications/cancelled). Requests the child sends during the call would
// need MRTR; they are answered with an error for now.
func (ep *Endpoint) forwardModern(w http.ResponseWriter, r *http.Request, d *dispatch.Dispatcher, caller *modernCaller, m *jsonrpc.Message, rec *postLog, ctx context.Context, modern bool) {
	accept := r.Header.Get("Accept")
	sseOK := accept != "" && accepts(accept, "text/event-stream")
	call := d.Begin(ctx, caller, m, ep.opts.RequestTimeout, true)
	defer call.Release()
	var sw *sseWriter
	var tick <-chan time.Time
	var ticker *time.Ticker
	defer func() {
		if ticker != nil {
			ticker.Stop()
		}
	}()
	for {
		ev := call.Next(tick)
		switch {
		case ev.Done:
			resp, err := ev.Answer, ev.Err
			if err == nil && modern {
				resp = dispatch.MarkComplete(resp, cacheable(m.Method))
			}
			if sw == nil {
				ep.writeResult(w, resp, err, rec)
				return
			}
			if err != nil {
				_, msg := statusFor(ep.name, err)
				resp = jsonrpc.ErrorResponse(m.ID, codeServer, msg)
			}
			sw.write(modernEvent(resp))
			return
		case ev.Tick:
			sw.comment()
		case ev.Related != nil:
			rel := ev.Related
			method := jsonrpc.String(jsonrpc.Member(rel, "method"))
			if id := jsonrpc.Member(rel, "id"); id != nil {
				// A request of the child's, attributed to this call.
				if reply, err := jsonrpc.Parse(jsonrpc.ErrorResponse(id, jsonrpc.CodeMethodNotFound, method+" cannot be relayed to this "+eraModern+" client yet")); err == nil {
					_ = d.Respond(caller, reply)
				}
				continue
			}
			if method != "notifications/progress" || !sseOK {
				continue
			}
			if sw == nil {
				sw = ep.newSSEWriter(w)
				h := w.Header()
				setSSEHeaders(h)
				w.WriteHeader(http.StatusOK)
				rec.status = http.StatusOK
				ticker = time.NewTicker(ep.opts.KeepAlive)
				tick = ticker.C
			}
			sw.write(modernEvent(rel))
		}
	}
}

// modernEvent is an SSE event without an id: modern streams are not
// resumable.
func modernEvent(data []byte) []byte {
	out := make([]byte, 0, len(data)+24)
	out = append(out, "event: message\ndata: "...)
	out = append(out, data...)
	return append(out, "\n\n"...)
}
