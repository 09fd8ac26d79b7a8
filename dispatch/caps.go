package dispatch

import (
	"encoding/json"
	"fmt"
	"github.com/stelae-bridge/stelae-bridge/jsonrpc"
)

// This file holds what the bridge knows of client capabilities: the
// validation of a client's initialize, the parameters of the bridge's own
// handshake with the child, and which capability a request from the child
// needs of the session that is to answer it.
//
// The child is initialized once and shared, so it is told every client
// capability the bridge can serve (roots, sampling, elicitation); each
// request the child sends is then routed only to a session that declared the
// capability that request needs, and answered by the bridge with an error
// when no session can take it.

// clientCaps are the client capabilities one session declared in its
// initialize.
type clientCaps struct {
	roots, sampling, elicitForm, elicitURL bool
	// failures is the supervisor's failure count when the session
	// attached: a failure ends only the sessions that came before it.
	failures uint64
	// envelope is what a 2026 child reads of the session's requests in
	// their _meta (modern.go): its client info and capabilities, and the
	// log level it asked for. modern: the caller speaks 2026-07-28 itself
	// and takes input_required as it is.
	envelope []byte
	modern   bool
	// envelopeBase is the length of envelope without its log level.
	envelopeBase int
	// logLevel is the least severity of the child's log lines the caller
	// takes from a 2026 child ("": none; modern.go's routeModernLog).
	logLevel string
}

// parseClientCaps reads the capabilities of a client's initialize params.
// An empty elicitation object means form mode (MCP 2025-11-25 keeps that
// reading for clients written before URL mode existed).
func parseClientCaps(params json.RawMessage) clientCaps {
	var p struct {
		Capabilities struct {
			Roots       json.RawMessage `json:"roots"`
			Sampling    json.RawMessage `json:"sampling"`
			Elicitation json.RawMessage `json:"elicitation"`
		} `json:"capabilities"`
	}
	_ = json.Unmarshal(params, &p)
	c := p.Capabilities
	caps := clientCaps{roots: declared(c.Roots), sampling: declared(c.Sampling)}
	caps.elicitForm, caps.elicitURL = ElicitationModes(c.Elicitation)
	caps.envelope = modernEnvelope(jsonrpc.Member(params, "clientInfo"), jsonrpc.Member(params, "capabilities"), "")
	caps.envelopeBase = len(caps.envelope)
	return caps
}

// ElicitationModes reads a client's elicitation capability (the object, or
// nothing when undeclared) as MCP 2025-11-25 does: which modes it takes.
// An empty object is form mode alone (clients written before URL mode
// existed). Both eras' checks read it here.
func ElicitationModes(elicitation json.RawMessage) (form, url bool) {
	if !declared(elicitation) {
		return false, false
	}
	f, u := declared(jsonrpc.Member(elicitation, "form")), declared(jsonrpc.Member(elicitation, "url"))
	return f || !u, u
}

// ElicitationMode is the mode of an elicitation/create request's params:
// "url", or "form" (its default), read by the member's exact name as the
// client reads it.
func ElicitationMode(params json.RawMessage) string {
	if jsonrpc.String(jsonrpc.Member(params, "mode")) == "url" {
		return "url"
	}
	return "form"
}

// declared reports whether a capability member is present as an object.
func declared(v json.RawMessage) bool { return len(v) > 0 && v[0] == '{' }

// ValidateInitialize checks the params of a client's initialize request: an
// object with a string protocolVersion, an object of capabilities and a
// clientInfo object naming the client. The error says what is wrong; the
// caller answers the client with it (jsonrpc.CodeInvalidParams) and no session is made.
func ValidateInitialize(params json.RawMessage) error {
	if len(params) == 0 || params[0] != '{' {
		return fmt.Errorf(`initialize needs "params": an object with protocolVersion, capabilities and clientInfo`)
	}
	var p struct {
		ProtocolVersion json.RawMessage `json:"protocolVersion"`
		Capabilities    json.RawMessage `json:"capabilities"`
		ClientInfo      json.RawMessage `json:"clientInfo"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return fmt.Errorf("initialize params: %v", err)
	}
	var version string
	if json.Unmarshal(p.ProtocolVersion, &version) != nil || version == "" {
		return fmt.Errorf(`initialize params need "protocolVersion", a non-empty string such as %q`, LatestVersion)
	}
	if !declared(p.Capabilities) {
		return fmt.Errorf(`initialize params need "capabilities", an object (it may be empty: {})`)
	}
	var info struct {
		Name    *string         `json:"name"`
		Version json.RawMessage `json:"version"`
	}
	if !declared(p.ClientInfo) || json.Unmarshal(p.ClientInfo, &info) != nil || info.Name == nil || *info.Name == "" {
		return fmt.Errorf(`initialize params need "clientInfo", an object with the client's "name" and "version"`)
	}
	if len(info.Version) > 0 && info.Version[0] != '"' {
		return fmt.Errorf(`"clientInfo.version" must be a string`)
	}
	return nil
}

// bridgeCapabilities are the client capabilities the bridge declares to the
// child: everything it can route to some session.
const bridgeCapabilities = `{"roots":{"listChanged":true},"sampling":{},"elicitation":{"form":{},"url":{}}}`

// handshakeParams are the parameters of the bridge's own initialize with the
// child at protocol version v. They never come from a client, so no client
// can make the child refuse its handshake.
func (d *Dispatcher) handshakeParams(v string) json.RawMessage {
	version := d.opts.BridgeVersion
	if version == "" {
		version = "unknown"
	}
	b := []byte(`{"protocolVersion":`)
	b = jsonrpc.AppendString(b, v)
	b = append(b, `,"capabilities":`...)
	b = append(b, bridgeCapabilities...)
	b = append(b, `,"clientInfo":{"name":"stelae-bridge","version":`...)
	b = jsonrpc.AppendString(b, version)
	return append(b, `}}`...)
}

// discoverParams are the parameters of the bridge's server/discover to
// the child: the 2026-07-28 _meta envelope with the bridge's own client
// info and capabilities.
func (d *Dispatcher) discoverParams() json.RawMessage {
	version := d.opts.BridgeVersion
	if version == "" {
		version = "unknown"
	}
	b := []byte(`{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"stelae-bridge","version":`)
	b = jsonrpc.AppendString(b, version)
	b = append(b, `},"io.modelcontextprotocol/clientCapabilities":`...)
	b = append(b, bridgeCapabilities...)
	return append(b, `}}`...)
}

// OptionalMeta is the _meta key (true) of a child's request the call can
// do without: a 2026-07-28 client that did not declare what it needs is
// not asked, the child gets an error and the call goes on, as on a 2025
// session (else the call ends with -32021, naming the capability). The
// bridge's stand-in for a user without credentials marks its URL-mode
// elicitation so: its answer without it is the tool error with the URL.
const OptionalMeta = "stelae-bridge/optional"

// need names the client capability a request from the child requires and
// tells whether a session's capabilities include it.
type need struct {
	name string
	has  func(clientCaps) bool
}

// capabilityFor returns what the child's request m needs of the session that
// answers it; the zero need (no name) for methods that need none.
func capabilityFor(m *jsonrpc.Message) need {
	switch m.Method {
	case "sampling/createMessage":
		return need{"sampling", func(c clientCaps) bool { return c.sampling }}
	case "roots/list":
		return need{"roots", func(c clientCaps) bool { return c.roots }}
	case "elicitation/create":
		if ElicitationMode(m.Params) == "url" {
			return need{"elicitation.url", func(c clientCaps) bool { return c.elicitURL }}
		}
		return need{"elicitation", func(c clientCaps) bool { return c.elicitForm }}
	}
	return need{}
}

func (n need) met(c clientCaps) bool { return n.has == nil || n.has(c) }
