package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/stelae-bridge/stelae-bridge/jsonrpc"
	"github.com/stelae-bridge/stelae-bridge/supervisor"
)

// handshake initializes the child with the bridge's own parameters at the
// newest protocol version the bridge speaks; a child that answers with an
// error is asked again at each older version (the lifecycle spec: "If the
// server supports the requested protocol version, it MUST respond with the
// same version. Otherwise, the server MUST respond with another protocol
// version it supports", but some servers refuse instead). The result is
// cached for every session's initialize. A child that refuses every version
// fails with supervisor.ErrPermanent: restarting it would fail the same way.
func (d *Dispatcher) handshake(ctx context.Context, c *child) error {
	// Discovery first (issue 38): a child that speaks MCP 2026-07-28 says
	// so to server/discover; any other answer, or none in time, is a 2025
	// child's.
	var discovered json.RawMessage
	if d.opts.Era != Era2025 {
		discovered = d.discover(ctx, c)
	}
	d.mu.Lock()
	d.discovered = discovered
	d.mu.Unlock()
	if discovered != nil {
		// It speaks 2026-07-28: it is spoken to in it (modern.go). It has
		// no initialize; sessions' are answered from what it said.
		c.modern = true
		d.mu.Lock()
		d.initResult = modernInitResult(discovered, d.opts.Name)
		d.mu.Unlock()
		// List changes and the sessions' subscriptions come from one
		// listen (listen.go).
		d.forgetListen()
		d.listenAnew(c)
		d.refreshTools(c)
		if d.opts.Interactive || d.opts.InteractiveTool != nil {
			d.log.Info("the child speaks MCP 2026-07-28: what it asks belongs to the call that got it, so 'interactive:' is not needed to route it; its calls still run alone as configured (remove 'interactive:' to let them run together)")
		}
		return nil
	}
	if d.opts.Era == EraModern {
		return fmt.Errorf("%w: 'era: \"2026\"' is set, and the child did not answer server/discover for MCP 2026-07-28 within %s: serve it with era auto or \"2025\", or check that the server speaks 2026-07-28", supervisor.ErrPermanent, min(discoverTimeout, d.opts.StartTimeout))
	}
	var m *jsonrpc.Message
	var refusals []string
	for i := len(supportedVersions) - 1; i >= 0; i-- {
		call := d.getCall(ctx, d.opts.StartTimeout)
		msg, err := d.send(call, c, nil, "initialize", d.handshakeParams(supportedVersions[i])).wait()
		call.Release()
		if err == nil {
			m, err = jsonrpc.Parse(msg)
		}
		if err != nil {
			if errors.Is(err, ErrChildExited) {
				return fmt.Errorf("the child exited during initialize (%s)", supervisor.ExitStatus(c.conn))
			}
			return fmt.Errorf("initialize handshake failed: %w", err)
		}
		if len(m.Error) == 0 {
			break
		}
		refusals = append(refusals, supportedVersions[i]+": "+truncate(m.Error, 200))
		m = nil
	}
	if m == nil && slices.ContainsFunc(refusals, func(r string) bool { return strings.Contains(r, "-32022") }) && d.opts.Era == Era2025 {
		return fmt.Errorf("%w: it refused initialize at every 2025 version (%s), which a child that speaks MCP 2026-07-28 only does, and 'era: \"2025\"' kept the bridge from asking it server/discover: set era to auto", supervisor.ErrPermanent, strings.Join(refusals, "; "))
	}
	if m == nil {
		return fmt.Errorf("%w: it refused the initialize handshake at every protocol version the bridge speaks (%s); check the server's own logs and version", supervisor.ErrPermanent, strings.Join(refusals, "; "))
	}
	// "After successful initialization, the client MUST send an initialized
	// notification to indicate it is ready to begin normal operations."
	if err := c.conn.WriteMessage([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err != nil {
		return err
	}
	d.mu.Lock()
	d.initResult = m.Result
	var uris []string
	for uri := range d.subs {
		uris = append(uris, uri)
	}
	d.mu.Unlock()
	// A restarted child has lost its subscriptions; renew them.
	for _, uri := range uris {
		d.fireAndForget(c, "resources/subscribe", uriParams(uri))
	}
	d.refreshTools(c)
	return nil
}

// discoverTimeout bounds the discovery probe: a 2025 child that does not
// answer a method it does not know must not hold its start.
const discoverTimeout = 5 * time.Second

// discover asks the child server/discover, as a 2026-07-28 client does
// (with the _meta envelope: without it a dual-era server pins itself to
// 2025), and returns its result when it speaks 2026-07-28; nil otherwise.
func (d *Dispatcher) discover(ctx context.Context, c *child) json.RawMessage {
	call := d.getCall(ctx, min(discoverTimeout, d.opts.StartTimeout))
	defer call.Release()
	msg, err := d.send(call, c, nil, "server/discover", d.discoverParams()).wait()
	if err != nil {
		return nil
	}
	m, err := jsonrpc.Parse(msg)
	if err != nil || len(m.Error) > 0 {
		return nil
	}
	var r struct {
		SupportedVersions []string `json:"supportedVersions"`
	}
	if json.Unmarshal(m.Result, &r) != nil || !slices.Contains(r.SupportedVersions, "2026-07-28") {
		return nil
	}
	return m.Result
}

func uriParams(uri string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"uri": uri})
	return b
}
