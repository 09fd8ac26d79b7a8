package dispatch

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"sync"

	"github.com/stelae-bridge/stelae-bridge/jsonrpc"
)

// This file is the one subscriptions/listen the bridge holds with a child
// of the 2026-07-28 era (issue 38). Such a child sends list changes and
// resource updates only on a listen stream, and takes no
// resources/subscribe: the bridge opens one listen per child, asking for
// every list change the child offers and the resources any session (2025
// sessions and 2026 listen streams alike, reference-counted in d.subs)
// subscribed to. When that set changes, a listen with the new filter is
// opened, then the old one cancelled (notifications/cancelled, as stdio
// cancels a listen), so no change falls between them; a change the two
// both carry reaches sessions twice, which a change notification allows.
// What the child sends on it is routed as a 2025 child's notifications
// are, without the child's subscription id, which is the bridge's (a 2026
// listen stream tags what it forwards with its own).

// childListen is the listen open with the running child.
type childListen struct {
	// mu guards up and serializes opening: filters are written in the
	// order the subscriptions changed.
	mu sync.Mutex
	// up is the upstream id of the listen open now (0: none).
	up uint64
}

// listenAnew opens a listen with c for what the sessions want now and
// cancels the one it replaces. A child with nothing to listen to gets none.
func (d *Dispatcher) listenAnew(c *child) {
	filter, any := d.listenFilter()
	l := &d.listen
	l.mu.Lock()
	defer l.mu.Unlock()
	old := l.up
	l.up = 0
	if any {
		up := d.seq.Add(1)
		params := withEnvelope(filter, d.ownEnvelope(), false)
		if err := c.conn.WriteMessage(jsonrpc.AppendRequest(nil, strconv.AppendUint(nil, up, 10), "subscriptions/listen", params)); err != nil {
			d.log.Debug("could not open a listen with the child", "error", err)
		} else {
			l.up = up
		}
	}
	if old != 0 {
		d.writeTo(c, jsonrpc.AppendRequest(nil, nil, "notifications/cancelled", cancelParams(old, jsonrpc.AppendString(nil, "the bridge's subscriptions changed"))))
	}
}

// forgetListen is called when a child starts: the listen ended with the
// child before it.
func (d *Dispatcher) forgetListen() {
	d.listen.mu.Lock()
	d.listen.up = 0
	d.listen.mu.Unlock()
}

// listenFilter is the params of the bridge's listen: the list changes the
// child's capabilities offer, and the resources subscribed to (sorted, so
// that the same set makes the same filter); any is false when there is
// nothing to ask for.
func (d *Dispatcher) listenFilter() (json.RawMessage, bool) {
	d.mu.RLock()
	caps := jsonrpc.Member(d.initResult, "capabilities")
	uris := make([]string, 0, len(d.subs))
	for uri := range d.subs {
		uris = append(uris, uri)
	}
	d.mu.RUnlock()
	slices.Sort(uris)
	listChanged := func(what string) bool {
		return string(jsonrpc.Member(jsonrpc.Member(caps, what), "listChanged")) == "true"
	}
	f := struct {
		Tools     bool     `json:"toolsListChanged,omitempty"`
		Prompts   bool     `json:"promptsListChanged,omitempty"`
		Resources bool     `json:"resourcesListChanged,omitempty"`
		Subs      []string `json:"resourceSubscriptions,omitempty"`
	}{listChanged("tools"), listChanged("prompts"), listChanged("resources"), uris}
	b, err := json.Marshal(struct {
		Notifications any `json:"notifications"`
	}{f})
	if err != nil {
		return nil, false
	}
	return b, f.Tools || f.Prompts || f.Resources || len(uris) > 0
}

// listenNotification takes a notification a 2026 child wrote: false when it
// is the bridge's own (a listen's acknowledgment); else the line to route,
// without the child's subscription id.
func listenNotification(m *jsonrpc.Message, line []byte) ([]byte, bool) {
	if m.Method == "notifications/subscriptions/acknowledged" {
		return nil, false
	}
	meta := jsonrpc.Member(m.Params, "_meta")
	if meta == nil || !bytes.Contains(meta, []byte("subscriptionId")) {
		return line, true
	}
	kept := jsonrpc.Rewrite(meta, func(k, v []byte) []byte {
		if jsonrpc.KeyIs(k, "io.modelcontextprotocol/subscriptionId") {
			return nil
		}
		return v
	})
	params, err := jsonrpc.Replace(m.Params, "_meta", kept)
	if err != nil {
		return line, true
	}
	return jsonrpc.AppendRequest(nil, nil, m.Method, params), true
}
