//go:build unix

package tests

// The metrics of OpenTelemetry's MCP conventions (issue 39, in progress):
// mcp_server_operation_duration_seconds by method, tool and error type, and
// stelae_tool_calls_total, whose tool label is capped.

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

// TestOperationMetrics: a tool call that succeeds and one that fails are
// counted by the conventions' series with their tool and error type; past
// 128 tool names a destination's calls are counted as "other", so a
// client naming tools at random cannot grow the series without bound.
func TestOperationMetrics(t *testing.T) {
	p := startBinary(t, fakeDestinations(t, map[string]string{"fake": fakemcp.ModeServer}))
	c := newClient(t, p.base+"/fake/mcp")
	c.initialize()
	resultOK(t, "echo", c.callTool("1", "echo", map[string]any{"text": "x"}))
	for i := range 140 {
		c.callTool(fmt.Sprint(i+2), fmt.Sprintf("no-such-tool-%d", i), map[string]any{})
	}
	m := metricsOf(t, p)
	find := func(name string, parts ...string) (float64, int) {
		var sum float64
		n := 0
		for k, v := range m {
			if !strings.HasPrefix(k, name+"{") {
				continue
			}
			all := true
			for _, part := range parts {
				all = all && strings.Contains(k, part)
			}
			if all {
				sum += v
				n++
			}
		}
		return sum, n
	}
	if v, _ := find("mcp_server_operation_duration_seconds_count", `mcp_method_name="tools/call"`, `gen_ai_tool_name="echo"`, `error_type=""`); v != 1 {
		t.Errorf("echo's successful call counted %v times; want 1", v)
	}
	if v, _ := find("stelae_tool_calls_total", `tool="echo"`, `outcome="ok"`); v != 1 {
		t.Errorf("stelae_tool_calls_total echo ok = %v; want 1", v)
	}
	if v, _ := find("stelae_tool_calls_total", `outcome="error"`); v != 140 {
		t.Errorf("failed tool calls counted %v; want 140", v)
	}
	if v, _ := find("stelae_tool_calls_total", `tool="other"`); v != 140-(128-1) {
		t.Errorf("calls counted as other: %v; want %d (128 names, echo's among them)", v, 140-127)
	}
	if _, n := find("stelae_tool_calls_total", `destination="fake"`); n > 129 {
		t.Errorf("%d tool series; want at most 128 names and other", n)
	}
	if _, n := find("mcp_server_operation_duration_seconds_count", `mcp_method_name="initialize"`); n != 1 {
		t.Errorf("initialize's operation series: %d; want 1", n)
	}
}
