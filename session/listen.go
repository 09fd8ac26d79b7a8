package session

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/stelae-bridge/stelae-bridge/httpx"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/stelae-bridge/stelae-bridge/dispatch"
	"github.com/stelae-bridge/stelae-bridge/jsonrpc"
)

// This file is subscriptions/listen (MCP 2026-07-28): a modern client's
// long-lived stream of the change notifications it asked for, each tagged
// with the subscription's id. The listener is one more session of the
// dispatcher: list changes fan out to it, and its resource subscriptions
// are reference-counted onto the child with the 2025 sessions'.

// listenFilter is the notifications a listen request asks for (and the
// subset the bridge honours).
type listenFilter struct {
	ToolsListChanged      bool     `json:"toolsListChanged,omitempty"`
	PromptsListChanged    bool     `json:"promptsListChanged,omitempty"`
	ResourcesListChanged  bool     `json:"resourcesListChanged,omitempty"`
	ResourceSubscriptions []string `json:"resourceSubscriptions,omitempty"`
}

// wants reports whether the filter asks for a notification.
func (f *listenFilter) wants(method string) bool {
	switch method {
	case "notifications/tools/list_changed":
		return f.ToolsListChanged
	case "notifications/prompts/list_changed":
		return f.PromptsListChanged
	case "notifications/resources/list_changed":
		return f.ResourcesListChanged
	case "notifications/resources/updated":
		return len(f.ResourceSubscriptions) > 0
	}
	return false
}

// listener is a listen stream as the dispatcher sees a session.
type listener struct {
	statelessCaller
	// queue carries what the child sends to sessions, to the stream's
	// goroutine; Deliver never blocks: when the queue is full the stream
	// has fallen behind, and it is closed (behind, once closed), as a GET
	// stream is, so that its client listens anew.
	queue    chan []byte
	behind   chan struct{}
	overflow sync.Once
	// abort ends the stream's write in progress (its client stopped
	// reading); safe from any goroutine.
	abort func()
}

func (l *listener) Deliver(msg []byte) bool {
	select {
	case l.queue <- msg:
		return true
	default:
		l.overflow.Do(func() {
			close(l.behind)
			l.abort()
		})
		return false
	}
}

// maxListenSubscriptions bounds the resource subscriptions of one listen
// stream.
const maxListenSubscriptions = 256

// serveListen answers subscriptions/listen with its stream.
func (ep *Endpoint) serveListen(w http.ResponseWriter, r *http.Request, m *jsonrpc.Message, caps json.RawMessage, rec *postLog) {
	d := ep.shared
	var asked listenFilter
	if n := jsonrpc.Member(m.Params, "notifications"); n == nil || json.Unmarshal(n, &asked) != nil {
		rec.status = modernError(w, http.StatusBadRequest, m.ID, jsonrpc.CodeInvalidParams, "subscriptions/listen needs params.notifications: which change notifications to send", nil)
		return
	}
	serverCaps, err := d.ServerCapabilities(r.Context(), ep.opts.RequestTimeout)
	if err != nil {
		ep.writeResult(w, nil, err, rec)
		return
	}
	has := func(kind, flag string) bool {
		v := jsonrpc.Member(jsonrpc.Member(serverCaps, kind), flag)
		return string(v) == "true"
	}
	honoured := listenFilter{
		ToolsListChanged:     asked.ToolsListChanged && has("tools", "listChanged"),
		PromptsListChanged:   asked.PromptsListChanged && has("prompts", "listChanged"),
		ResourcesListChanged: asked.ResourcesListChanged && has("resources", "listChanged"),
	}
	asked.ResourceSubscriptions = uniqueStrings(asked.ResourceSubscriptions)
	if n := len(asked.ResourceSubscriptions); n > maxListenSubscriptions {
		rec.status = modernError(w, http.StatusBadRequest, m.ID, jsonrpc.CodeInvalidParams,
			fmt.Sprintf("subscriptions/listen asks for %d resource subscriptions; at most %d per stream (open another stream for more)", n, maxListenSubscriptions), nil)
		return
	}
	principal := PrincipalFrom(r)
	if ok, principalFull := ep.limits.takeListen(principal, ep.opts.MaxStreamsPerSession); !ok {
		w.Header().Set("Retry-After", "5")
		msg := fmt.Sprintf("the bridge has its maximum of %d open streams; retry later, or raise -max-streams", ep.limits.MaxStreams)
		if principalFull {
			msg = fmt.Sprintf("this client already has its maximum of %d open subscriptions/listen streams; close one first (raise -max-streams-per-session)", ep.opts.MaxStreamsPerSession)
		}
		rec.status = modernError(w, http.StatusServiceUnavailable, m.ID, codeServer, msg, nil)
		return
	}
	defer ep.limits.giveListen(principal)
	ep.m.Streams.Inc()
	defer ep.m.Streams.Dec()
	ctx, cancel := context.WithCancelCause(r.Context())
	sw := ep.newSSEWriter(w)
	l := &listener{statelessCaller: statelessCaller{kind: "listen", seq: modernSeq.Add(1), cancel: cancel, principal: principal}, queue: make(chan []byte, 64), behind: make(chan struct{}), abort: sw.abort}
	d.Attach(l, json.RawMessage(`{"capabilities":`+string(caps)+`}`))
	// On the way out: cancel, wait for the subscriber, then detach.
	var subscriber sync.WaitGroup
	defer d.Detach(l, nil)
	defer subscriber.Wait()
	defer cancel(nil)
	if has("resources", "subscribe") {
		// Acknowledged at once; the subscriptions reach the child behind
		// it (their updates can only come after).
		honoured.ResourceSubscriptions = asked.ResourceSubscriptions
		subscriber.Add(1)
		go func() {
			defer subscriber.Done()
			for i, uri := range asked.ResourceSubscriptions {
				params, _ := json.Marshal(map[string]string{"uri": uri})
				sub := &jsonrpc.Message{JSONRPC: "2.0", ID: json.RawMessage(strconv.Itoa(i)), Method: "resources/subscribe", Params: params}
				if _, err := d.Do(ctx, l, sub, ep.opts.RequestTimeout); err != nil {
					ep.log.Debug("listen: resource subscription failed", "uri", uri, "error", err)
				}
			}
		}()
	}
	subID := m.ID
	tag := func(msg []byte) []byte {
		params := jsonrpc.Member(msg, "params")
		if len(params) == 0 || params[0] != '{' {
			params = json.RawMessage(`{}`) // absent or null
		}
		meta := jsonrpc.Member(params, "_meta")
		if len(meta) == 0 || meta[0] != '{' {
			meta = json.RawMessage(`{}`)
		}
		meta, err := jsonrpc.Replace(meta, "io.modelcontextprotocol/subscriptionId", subID)
		if err != nil {
			return msg
		}
		if params, err = jsonrpc.Replace(params, "_meta", meta); err != nil {
			return msg
		}
		out, err := jsonrpc.Replace(msg, "params", params)
		if err != nil {
			return msg
		}
		return out
	}
	httpx.SetSSEHeaders(w.Header())
	w.WriteHeader(http.StatusOK)
	ack, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
		"params": map[string]any{"_meta": map[string]json.RawMessage{"io.modelcontextprotocol/subscriptionId": subID}, "notifications": honoured}})
	if !sw.write(modernEvent(ack)) {
		return
	}
	ticker := time.NewTicker(ep.opts.KeepAlive)
	defer ticker.Stop()
	for {
		select {
		case msg := <-l.queue:
			method := jsonrpc.String(jsonrpc.Member(msg, "method"))
			if !honoured.wants(method) {
				continue
			}
			if method == "notifications/resources/updated" {
				uri := jsonrpc.String(jsonrpc.Member(jsonrpc.Member(msg, "params"), "uri"))
				if !containsString(honoured.ResourceSubscriptions, uri) {
					continue
				}
			}
			if !sw.write(modernEvent(tag(msg))) {
				return
			}
		case <-ticker.C:
			if !sw.comment() {
				return
			}
		case <-ep.shutdown:
			// A graceful end: the listen request's own answer.
			done, _ := json.Marshal(map[string]any{"resultType": "complete", "_meta": map[string]json.RawMessage{"io.modelcontextprotocol/subscriptionId": subID}})
			sw.write(modernEvent(jsonrpc.AppendResponse(nil, m.ID, done, nil)))
			return
		case <-l.behind:
			ep.m.Dropped.Inc()
			ep.log.Warn("subscriptions/listen stream fell behind; closing it so the client listens anew", "listener", l.SessionID())
			return
		case <-ctx.Done():
			return
		}
	}
}

// uniqueStrings is l without repeats, in order.
func uniqueStrings(l []string) []string {
	seen := make(map[string]bool, len(l))
	out := l[:0:0]
	for _, s := range l {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func containsString(l []string, s string) bool {
	for _, v := range l {
		if v == s {
			return true
		}
	}
	return false
}

var _ dispatch.Session = (*listener)(nil)
