package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

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

func uriParams(uri string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"uri": uri})
	return b
}
