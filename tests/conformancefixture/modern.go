package conformancefixture

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
)

// This file is the fixture as a child of the MCP 2026-07-28 era only
// (EnvEra "2026"), for issue 38: it answers server/discover and refuses
// initialize (-32022, as the TypeScript SDK v2's legacy: 'reject' does);
// every request carries its _meta envelope, whose client capabilities and
// log level are the request's own; what a tool needs of the client comes
// back as the call's answer (input_required, with inputRequests and a
// requestState the retry must echo) instead of a request on stdout, the
// tool's work replayed on the retry with the answers given; list changes
// and resource updates go only to subscriptions/listen streams, tagged with
// their subscription id.

// EnvEra makes the fixture speak MCP 2026-07-28 only when it is "2026".
const EnvEra = "STELAE_CONFORMANCE_ERA"

// modernVersion is the only version the fixture speaks in that mode.
const modernVersion = "2026-07-28"

// reqEnv is one 2026-07-28 request's envelope and its MRTR round.
type reqEnv struct {
	caps     map[string]json.RawMessage
	logLevel int // -1: no log messages for this request
	inputs   map[string]json.RawMessage
	state    string
	// mu guards n and asks: a tool may ask several things at once.
	mu   sync.Mutex
	n    int
	asks map[string]obj
}

type envKey struct{}

func envOf(ctx context.Context) *reqEnv {
	e, _ := ctx.Value(envKey{}).(*reqEnv)
	return e
}

// errInputRequired ends a tool's work when it asked something the request
// has no answer for yet.
var errInputRequired = errors.New("input required")

// readReqEnv reads a request's envelope and MRTR members.
func readReqEnv(params json.RawMessage) (*reqEnv, *rpcError) {
	var p struct {
		Meta struct {
			Version  string                     `json:"io.modelcontextprotocol/protocolVersion"`
			Caps     map[string]json.RawMessage `json:"io.modelcontextprotocol/clientCapabilities"`
			LogLevel *string                    `json:"io.modelcontextprotocol/logLevel"`
		} `json:"_meta"`
		InputResponses map[string]json.RawMessage `json:"inputResponses"`
		RequestState   string                     `json:"requestState"`
	}
	if len(params) > 0 {
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, &rpcError{Code: codeInvalidParams, Message: "params: " + err.Error()}
		}
	}
	if p.Meta.Version != modernVersion {
		return nil, &rpcError{Code: -32022, Message: "the request did not name protocol version " + modernVersion, Data: obj{"supported": []string{modernVersion}}}
	}
	e := &reqEnv{caps: p.Meta.Caps, logLevel: -1, inputs: p.InputResponses, state: p.RequestState}
	if p.Meta.LogLevel != nil {
		l, ok := levels[*p.Meta.LogLevel]
		if !ok {
			return nil, &rpcError{Code: codeInvalidParams, Message: "unknown log level " + *p.Meta.LogLevel}
		}
		e.logLevel = l
	}
	if e.state != "" {
		// The answers of the rounds before are in the state (a retry
		// carries only the last round's): the server keeps nothing.
		var earlier map[string]json.RawMessage
		b, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(e.state, stateHead))
		if !strings.HasPrefix(e.state, stateHead) || err != nil || json.Unmarshal(b, &earlier) != nil {
			return nil, &rpcError{Code: codeInvalidParams, Message: fmt.Sprintf("requestState %q is not one this server issued", e.state)}
		}
		for k, v := range e.inputs {
			earlier[k] = v
		}
		e.inputs = earlier
	}
	return e, nil
}

// stateHead starts the fixture's requestStates.
const stateHead = "fixture-state:"

// ask is callID for a 2026-07-28 request: the answer the retry carries
// under key, or errInputRequired with the request recorded to be asked.
func (e *reqEnv) ask(key, method string, params any) (json.RawMessage, error) {
	need := map[string]string{"sampling/createMessage": "sampling", "elicitation/create": "elicitation", "roots/list": "roots"}[method]
	if _, ok := e.caps[need]; !ok {
		return nil, fmt.Errorf("the client did not declare the %s capability", need)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if v, ok := e.inputs[key]; ok {
		return v, nil
	}
	if e.asks == nil {
		e.asks = map[string]obj{}
	}
	e.asks[key] = obj{"method": method, "params": params}
	return nil, errInputRequired
}

// nextKey is the key of the request's next unnamed ask (the same on each
// replay: the tool asks in the same order).
func (e *reqEnv) nextKey() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.n++
	return fmt.Sprintf("input-%d", e.n)
}

// inputRequired is the answer of a request that asked something: every
// ask, and a requestState the retry must echo, holding the answers given
// so far.
func (e *reqEnv) inputRequired() (obj, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.asks) == 0 {
		return nil, false
	}
	known := e.inputs
	if known == nil {
		known = map[string]json.RawMessage{}
	}
	b, _ := json.Marshal(known)
	return obj{"resultType": "input_required", "inputRequests": e.asks, "requestState": stateHead + base64.RawURLEncoding.EncodeToString(b)}, true
}

// discover answers server/discover.
func (s *server) discover() obj {
	return obj{
		"supportedVersions": []string{modernVersion},
		"capabilities":      serverCapabilities(),
		"instructions":      "Conformance fixture for the MCP conformance suite's server scenarios (2026-07-28 only).",
		"resultType":        "complete",
		"ttlMs":             0,
		"cacheScope":        "private",
		"_meta":             obj{"io.modelcontextprotocol/serverInfo": obj{"name": serverName, "version": serverVersion}},
	}
}

// listenSub is an open subscriptions/listen.
type listenSub struct {
	id     json.RawMessage
	filter listenFilter
}

type listenFilter struct {
	ToolsListChanged      bool     `json:"toolsListChanged,omitempty"`
	PromptsListChanged    bool     `json:"promptsListChanged,omitempty"`
	ResourcesListChanged  bool     `json:"resourcesListChanged,omitempty"`
	ResourceSubscriptions []string `json:"resourceSubscriptions,omitempty"`
}

// listen serves a subscriptions/listen until it is cancelled: the
// acknowledgment first, then an update of each resource it names (as a
// live server's would come), then what changes.
func (s *server) listen(ctx context.Context, m *message) {
	var p struct {
		Notifications listenFilter `json:"notifications"`
	}
	_ = json.Unmarshal(m.Params, &p)
	key := idKey(m.ID)
	s.mu.Lock()
	if s.listens == nil {
		s.listens = map[string]listenSub{}
	}
	s.listens[key] = listenSub{id: m.ID, filter: p.Notifications}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listens, key)
		s.mu.Unlock()
	}()
	tag := obj{"io.modelcontextprotocol/subscriptionId": m.ID}
	s.notify("notifications/subscriptions/acknowledged", obj{"_meta": tag, "notifications": p.Notifications})
	for _, uri := range p.Notifications.ResourceSubscriptions {
		s.notify("notifications/resources/updated", obj{"_meta": tag, "uri": uri})
	}
	<-ctx.Done() // cancelled by the client, or the end of stdin
}

// changed sends a list change to the listens that asked for it (2026), or
// to the client (2025).
func (s *server) changed(method string) {
	if !s.modern {
		s.notify(method, nil)
		return
	}
	s.mu.Lock()
	var to []json.RawMessage
	for _, l := range s.listens {
		f := l.filter
		if (method == "notifications/tools/list_changed" && f.ToolsListChanged) || (method == "notifications/prompts/list_changed" && f.PromptsListChanged) ||
			(method == "notifications/resources/list_changed" && f.ResourcesListChanged) {
			to = append(to, l.id)
		}
	}
	s.mu.Unlock()
	for _, id := range to {
		s.notify(method, obj{"_meta": obj{"io.modelcontextprotocol/subscriptionId": id}})
	}
}
