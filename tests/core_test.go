//go:build unix

package tests

// The smallest end-to-end exchange with a fake child: initialize, tools/list, a tools/call, and a
// notification on the session's GET stream.

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

func TestInitializeListCallNotify(t *testing.T) {
	b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{})
	c := newClient(t, b.url("fake"))
	init := decode(t, c.initialize())
	_ = init
	r := c.post(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if r.status != http.StatusOK || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("tools/list: %d %v %s", r.status, r.header, r.body)
	}
	if got := r.header.Get("Mcp-Session-Id"); got != c.sid {
		t.Fatalf("tools/list answered with session %q, want %q", got, c.sid)
	}
	var list struct {
		Tools []struct{ Name string } `json:"tools"`
	}
	if err := json.Unmarshal(decode(t, r.body).Result, &list); err != nil || len(list.Tools) == 0 {
		t.Fatalf("tools/list result: %v %s", err, r.body)
	}
	r = c.callTool(`"x-1"`, "echo", map[string]string{"text": "hello"})
	m := decode(t, r.body)
	if string(m.ID) != `"x-1"` || string(m.Result) != `{"content":[{"text":"hello","type":"text"}]}` {
		t.Fatalf("echo: %s", r.body)
	}
	st := c.openStream()
	if r := c.callTool("2", "list_changed", nil); r.status != http.StatusOK {
		t.Fatalf("list_changed: %d %s", r.status, r.body)
	}
	st.next(t, "notifications/tools/list_changed", 5*time.Second)
}
