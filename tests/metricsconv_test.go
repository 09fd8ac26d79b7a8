//go:build unix

package tests

// The metrics of OpenTelemetry's MCP conventions (issue 39, in progress):
// mcp_server_operation_duration_seconds by method, tool and error type, and
// stelae_tool_calls_total, whose tool label is capped.

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

// TestPrometheusScrapes: a real Prometheus (Debian's) scrapes the bridge's
// /metrics on loopback: a query over the new series returns the test's
// calls, and the README's three queries answer.
func TestPrometheusScrapes(t *testing.T) {
	bin := debianProgram(t, "prometheus", "the Prometheus scrape test", "prometheus")
	p := startBinary(t, fakeDestinations(t, map[string]string{"fake": fakemcp.ModeServer}))
	c := newClient(t, p.base+"/fake/mcp")
	c.initialize()
	const calls = 5
	for i := range calls {
		resultOK(t, "echo", c.callTool(fmt.Sprint(i+1), "echo", map[string]any{"text": "x"}))
	}
	c.callTool("9", "no-such-tool", map[string]any{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	web := ln.Addr().String()
	ln.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	target := strings.TrimPrefix(p.base, "http://")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("global: {scrape_interval: 1s}\nscrape_configs:\n  - job_name: stelae\n    static_configs: [{targets: [%q]}]\n", target)), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+web)
	var logs syncBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	query := func(q string) (string, bool) {
		r, err := request(http.MethodGet, "http://"+web+"/api/v1/query?query="+url.QueryEscape(q), "", "")
		if err != nil || r.status != http.StatusOK {
			return "", false
		}
		var out struct {
			Data struct {
				Result []struct {
					Value [2]any `json:"value"`
				} `json:"result"`
			} `json:"data"`
		}
		if json.Unmarshal(r.body, &out) != nil || len(out.Data.Result) == 0 {
			return "", false
		}
		v, _ := out.Data.Result[0].Value[1].(string)
		return v, true
	}
	var got string
	waitFor(t, 60*time.Second, "Prometheus to have scraped the test's calls", func() bool {
		v, ok := query(`sum(stelae_tool_calls_total{destination="fake",tool="echo",outcome="ok"})`)
		got = v
		return ok && v == fmt.Sprint(calls)
	})
	for _, q := range []string{
		// The README's three queries, over a window that holds the test.
		`sum by (destination, gen_ai_tool_name) (rate(mcp_server_operation_duration_seconds_count{mcp_method_name="tools/call"}[5m]))`,
		`histogram_quantile(0.95, sum by (le, destination) (rate(mcp_server_operation_duration_seconds_bucket{mcp_method_name="tools/call"}[5m])))`,
		`sum by (destination, tool) (rate(stelae_tool_calls_total{outcome!="ok"}[5m]))`,
	} {
		// rate() needs two scrapes in its window.
		waitFor(t, 30*time.Second, "Prometheus to answer "+q, func() bool {
			_, ok := query(q)
			return ok
		})
	}
	if t.Failed() {
		t.Logf("last value %q; prometheus:\n%s", got, logs.String())
	}
}
