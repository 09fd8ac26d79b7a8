package dispatch

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/stelae-bridge/stelae-bridge/jsonrpc"
)

// This file is the translation between the eras, in one place: what
// dispatch does for MCP 2026-07-28 ("modern") requests, which carry no
// session and no initialize, for a child of the 2025 era. The bridge
// answers server/discover from the child's cached handshake, gives the
// child a request's params without the 2026 envelope (ModernParams), and
// marks its results complete with the destination's caching hints
// (MarkComplete). What session does with such requests (validation, MRTR,
// listen, tasks) is in session/stateless.go and its neighbours.

// Discover answers server/discover (id id): the child's capabilities,
// instructions and server info from its handshake (starting it when none
// runs, as initialize does), and the versions the bridge speaks.
func (d *Dispatcher) Discover(ctx context.Context, id json.RawMessage, timeout time.Duration, cache Cache) ([]byte, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	if _, err := d.sup.Running(ctx, t.C, true); err != nil {
		return nil, err
	}
	d.mu.RLock()
	init := d.initResult
	d.mu.RUnlock()
	var hs struct {
		Capabilities json.RawMessage `json:"capabilities"`
		Instructions string          `json:"instructions"`
		ServerInfo   json.RawMessage `json:"serverInfo"`
	}
	_ = json.Unmarshal(init, &hs)
	if len(hs.Capabilities) == 0 || hs.Capabilities[0] != '{' {
		hs.Capabilities = json.RawMessage(`{}`)
	}
	hs.Capabilities = modernCapabilities(hs.Capabilities)
	result := struct {
		ResultType        string          `json:"resultType"`
		SupportedVersions []string        `json:"supportedVersions"`
		Capabilities      json.RawMessage `json:"capabilities"`
		Instructions      string          `json:"instructions,omitempty"`
		TTLMs             int64           `json:"ttlMs"`
		CacheScope        string          `json:"cacheScope"`
		Meta              map[string]any  `json:"_meta,omitempty"`
	}{ResultType: "complete", SupportedVersions: append(Versions(), ModernVersion), Capabilities: hs.Capabilities, Instructions: hs.Instructions,
		TTLMs: cache.ttlMs(), CacheScope: cache.scope()}
	if len(hs.ServerInfo) > 0 {
		result.Meta = map[string]any{"io.modelcontextprotocol/serverInfo": hs.ServerInfo}
	}
	body, err := json.Marshal(result)
	if err != nil {
		return nil, err
	}
	return jsonrpc.AppendResponse(nil, id, body, nil), nil
}

// modernCapabilities are the child's capabilities a 2026-07-28 client is
// told of: the members that revision defines, and the tasks extension, which
// the bridge runs itself (tasks.go). A 2025-11-25 child's own tasks
// capability is left out — since 2026-07-28 tasks are the extension, which
// the bridge offers in its stead — and so is anything else a modern client
// would read differently.
func modernCapabilities(caps json.RawMessage) json.RawMessage {
	kept := jsonrpc.Rewrite(caps, func(k, v []byte) []byte {
		for _, known := range []string{"tools", "resources", "prompts", "completions", "logging", "experimental"} {
			if jsonrpc.KeyIs(k, known) {
				return v
			}
		}
		return nil
	})
	if out, err := jsonrpc.Replace(kept, "extensions", json.RawMessage(`{"`+TasksExtension+`":{}}`)); err == nil {
		return out
	}
	return kept
}

// ModernParams are a modern request's params as the child gets them: the
// reserved io.modelcontextprotocol/* members of _meta (protocol version,
// client info and capabilities, log level) and MRTR's inputResponses and
// requestState are the bridge's, not the child's.
func ModernParams(params json.RawMessage) json.RawMessage {
	// params were validated with the message (jsonrpc.ParseInto).
	return jsonrpc.Rewrite(params, func(k, v []byte) []byte {
		switch {
		case jsonrpc.KeyIs(k, "inputResponses"), jsonrpc.KeyIs(k, "requestState"):
			return nil
		case jsonrpc.KeyIs(k, "_meta"):
			return jsonrpc.Rewrite(v, func(k, v []byte) []byte {
				if jsonrpc.KeyHasPrefix(k, "io.modelcontextprotocol/") {
					return nil
				}
				return v
			})
		}
		return v
	})
}

// Cache are the caching hints a destination gives modern clients: a child
// of the 2025 era says nothing of caching, so by default (the zero value)
// the bridge says "do not reuse" (ttlMs 0, private).
type Cache struct {
	TTL time.Duration
	// Scope is "private" (the default) or "public".
	Scope string
}

func (c Cache) ttlMs() int64 { return c.TTL.Milliseconds() }

func (c Cache) scope() string {
	if c.Scope == "" {
		return "private"
	}
	return c.Scope
}

// MarkComplete returns a response with resultType "complete" added to its
// result when it has none (MCP 2026-07-28 results say whether they are
// complete or need input; a 2026 child's say so themselves), -32002
// (resource not found, 2025) made -32602, and, when cacheable, the caching
// hints the child did not give itself. Other errors are returned as they
// are.
func MarkComplete(resp []byte, cacheable bool, cache Cache) []byte {
	if e := jsonrpc.Member(resp, "error"); e != nil {
		if string(jsonrpc.Member(e, "code")) == "-32002" {
			// Resource not found: -32002 in the 2025 era, -32602 since
			// 2026-07-28 (SEP-2164).
			if e, err := jsonrpc.Replace(e, "code", json.RawMessage("-32602")); err == nil {
				if out, err := jsonrpc.Replace(resp, "error", e); err == nil {
					return out
				}
			}
		}
		return resp
	}
	start, end, ok := jsonrpc.MemberSpan(resp, "result")
	if !ok || resp[start] != '{' {
		return resp
	}
	result := resp[start:end]
	typed := jsonrpc.Member(result, "resultType") != nil
	if typed && (!cacheable || jsonrpc.String(jsonrpc.Member(result, "resultType")) != "complete") {
		return resp
	}
	// One splice right after the result's '{': the members the result
	// lacks, then a comma unless the result is empty.
	out := make([]byte, 0, len(resp)+80)
	out = append(out, resp[:start+1]...)
	sep := ""
	if !typed {
		out = append(out, `"resultType":"complete"`...)
		sep = ","
	}
	if cacheable {
		if jsonrpc.Member(result, "ttlMs") == nil {
			out = strconv.AppendInt(append(out, sep+`"ttlMs":`...), cache.ttlMs(), 10)
			sep = ","
		}
		if jsonrpc.Member(result, "cacheScope") == nil {
			out = jsonrpc.AppendString(append(out, sep+`"cacheScope":`...), cache.scope())
			sep = ","
		}
	}
	if sep == "" {
		return resp // it had all of them
	}
	rest := resp[start+1:]
	if i := bytes.IndexFunc(result[1:], func(r rune) bool { return r != ' ' && r != '\t' && r != '\r' && r != '\n' }); i >= 0 && result[1+i] != '}' {
		out = append(out, ',')
	}
	return append(out, rest...)
}

// ServerCapabilities are the child's capabilities from its handshake
// (starting it when none runs).
func (d *Dispatcher) ServerCapabilities(ctx context.Context, timeout time.Duration) (json.RawMessage, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	if _, err := d.sup.Running(ctx, t.C, true); err != nil {
		return nil, err
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	return jsonrpc.Member(d.initResult, "capabilities"), nil
}
