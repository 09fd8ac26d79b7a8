//go:build unix

package tests

// The tools: filter over HTTP: lists filtered by allow and deny, hidden tools never reach the
// child, and a prestarted child's catalogue.

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stelae-bridge/stelae-bridge/config"
	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

// listTools sends tools/list and returns the tools as raw objects.
func (c *client) listTools() []json.RawMessage {
	c.t.Helper()
	r := c.post(`{"jsonrpc":"2.0","id":"tl","method":"tools/list"}`)
	if r.status != http.StatusOK {
		c.t.Fatalf("tools/list: status %d: %s", r.status, r.body)
	}
	m := decode(c.t, r.body)
	if m.Error != nil || string(m.ID) != `"tl"` {
		c.t.Fatalf("tools/list: %s", r.body)
	}
	var res struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(m.Result, &res); err != nil {
		c.t.Fatalf("tools/list result: %v: %s", err, m.Result)
	}
	return res.Tools
}

func namesOf(t testing.TB, tools []json.RawMessage) []string {
	t.Helper()
	var names []string
	for _, tool := range tools {
		var v struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		}
		if err := json.Unmarshal(tool, &v); err != nil || v.Name == "" || v.InputSchema == nil {
			t.Fatalf("tool %s is not a tool object (%v)", tool, err)
		}
		names = append(names, v.Name)
	}
	return names
}

func TestToolsListFilteredOverHTTP(t *testing.T) {
	open := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{})
	oc := newClient(t, open.url("fake"))
	oc.initialize()
	all := namesOf(t, oc.listTools())

	for _, tc := range []struct {
		name   string
		filter config.ToolFilter
	}{
		{"deny", config.ToolFilter{Deny: []string{"crash", "spawn_*", "gar?age"}}},
		{"allow", config.ToolFilter{Allow: []string{"echo", "st*", "whoami"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{tools: tc.filter})
			c := newClient(t, b.url("fake"))
			c.initialize()
			var want []string
			for _, n := range all {
				if tc.filter.Allows(n) {
					want = append(want, n)
				}
			}
			if len(want) == 0 || len(want) == len(all) {
				t.Fatalf("the filter keeps %d of %d tools; the test needs it to hide some", len(want), len(all))
			}
			listed := c.listTools()
			if got := namesOf(t, listed); !reflect.DeepEqual(got, want) {
				t.Errorf("tools/list names = %q; want %q", got, want)
			}
			// The bridge's catalogue holds the same tool objects.
			d := b.dispatchers["fake"]
			waitFor(t, 10*time.Second, "the catalogue", func() bool { _, known := d.Tools(); return known })
			catalogue, _ := d.Tools()
			if len(catalogue) != len(listed) {
				t.Fatalf("catalogue has %d tools; tools/list %d", len(catalogue), len(listed))
			}
			for i := range listed {
				var a, b any
				_ = json.Unmarshal(catalogue[i], &a)
				_ = json.Unmarshal(listed[i], &b)
				if !reflect.DeepEqual(a, b) {
					t.Errorf("catalogue tool %d = %s; tools/list gave %s", i, catalogue[i], listed[i])
				}
			}
		})
	}
}

func TestToolsHiddenCallNeverReachesTheChild(t *testing.T) {
	filter := config.ToolFilter{Allow: []string{"echo", "stats", "whoami"}}
	b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{tools: filter})
	c := newClient(t, b.url("fake"))
	c.initialize()
	before := c.stats()

	// crash would make the child exit with status 7.
	for _, id := range []string{`"hidden-1"`, `12345678901234567890`} {
		r := c.callTool(id, "crash", map[string]any{})
		if r.status != http.StatusOK {
			t.Fatalf("hidden tools/call: status %d; want 200 (a JSON-RPC error): %s", r.status, r.body)
		}
		m := decode(t, r.body)
		if string(m.ID) != id {
			t.Errorf("id = %s; want %s byte for byte", m.ID, id)
		}
		if m.Error == nil || m.Error.Code != -32602 || !strings.Contains(m.Error.Message, `"crash"`) || !strings.Contains(m.Error.Message, "not available on this destination") {
			t.Errorf("hidden tools/call answer %s; want error -32602 naming crash", r.body)
		}
	}
	// A key in another letter case cannot smuggle it past the filter.
	r := c.post(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo","Name":"crash","arguments":{"text":"x"}}}`)
	if m := decode(t, r.body); r.status != http.StatusOK || m.Error == nil || m.Error.Code != -32602 {
		t.Errorf("smuggled call: %d %s; want the -32602 error", r.status, r.body)
	}

	// The child never saw the calls: it is the same process, never restarted.
	after := c.stats()
	if after.PID != before.PID || after.Inits != 1 {
		t.Errorf("child pid %d → %d, inits %d; want the same child, initialized once", before.PID, after.PID, after.Inits)
	}
	if st := b.dispatchers["fake"].Status(); st.Restarts != 0 || st.State != "running" {
		t.Errorf("status %+v; want running, no restarts", st)
	}
	if logs := b.logs.String(); strings.Contains(logs, "exit status 7") {
		t.Errorf("the child exited as crash does:\n%s", logs)
	}
	// Allowed tools still work.
	r = c.callTool("9", "echo", map[string]string{"text": "still here"})
	if m := decode(t, r.body); m.Error != nil || !strings.Contains(string(m.Result), "still here") {
		t.Errorf("echo after the hidden calls: %s", r.body)
	}
}

func TestToolsPrestart(t *testing.T) {
	b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{
		tools: config.ToolFilter{Deny: []string{"crash"}},
	})
	d := b.dispatchers["fake"]
	if _, known := d.Tools(); known {
		t.Fatal("catalogue known before the destination ever ran")
	}
	d.Prestart()
	waitFor(t, 10*time.Second, "the prestarted child's catalogue", func() bool { _, known := d.Tools(); return known })
	if st := d.Status(); st.State != "running" || st.PID == 0 {
		t.Fatalf("status %+v; want running", st)
	}
	tools, _ := d.Tools()
	names := namesOf(t, tools)
	if strings.Contains(strings.Join(names, " "), "crash") || !strings.Contains(strings.Join(names, " "), "echo") {
		t.Errorf("catalogue names %q; want echo and no crash", names)
	}

	// The first client joins the running child: no second handshake.
	pid := d.Status().PID
	c := newClient(t, b.url("fake"))
	c.initialize()
	s := c.stats()
	if s.PID != pid || s.Inits != 1 {
		t.Errorf("stats %+v; want pid %d initialized once", s, pid)
	}
	var params struct {
		ProtocolVersion string         `json:"protocolVersion"`
		Capabilities    map[string]any `json:"capabilities"`
		ClientInfo      struct {
			Name string `json:"name"`
		} `json:"clientInfo"`
	}
	if err := json.Unmarshal(s.InitParams, &params); err != nil {
		t.Fatalf("init params %s: %v", s.InitParams, err)
	}
	if params.ClientInfo.Name != "stelae-bridge" || params.ProtocolVersion != "2025-11-25" || params.Capabilities["roots"] == nil {
		t.Errorf("the prestarted child was initialized with %s; want the bridge's own params", s.InitParams)
	}
}
