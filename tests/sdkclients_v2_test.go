//go:build unix

package tests

// The official TypeScript SDK v2 client in the 2026-07-28 era, probing and pinned: discover, calls,
// progress, elicitation and sampling through input_required, a listen stream, and a cancelled call.

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

// tsV2Summary is what tests/clients/ts-v2-client.mjs prints.
type tsV2Summary struct {
	Mode            string            `json:"mode"`
	OK              bool              `json:"ok"`
	Steps           []string          `json:"steps"`
	Failures        []string          `json:"failures"`
	Era             json.RawMessage   `json:"era"`
	ProtocolVersion string            `json:"protocolVersion"`
	Tools           []string          `json:"tools"`
	Progress        []json.RawMessage `json:"progress"`
	Elicitations    int               `json:"elicitations"`
	Samplings       int               `json:"samplings"`
	ListChanged     int               `json:"listChanged"`
	CancelledBefore int               `json:"cancelledBefore"`
	CancelledAfter  int               `json:"cancelledAfter"`
	HTTP            []string          `json:"http"`
}

// TestTSClientV2 runs the official TypeScript SDK v2 client
// (@modelcontextprotocol/client) against the real binary in the MCP
// 2026-07-28 era, probing (auto) and pinned: discover, list, call, progress,
// an elicitation and a sampling round trip through input_required, a
// subscriptions/listen stream receiving tools/list_changed, and a call
// aborted by closing its stream, which the child sees cancelled. No session
// and no initialize may appear on the wire.
func TestTSClientV2(t *testing.T) {
	node := node24(t)
	for _, mode := range []string{"auto", "pin"} {
		t.Run(mode, func(t *testing.T) {
			p := startBinary(t, fakeDestinations(t, map[string]string{"fake": fakemcp.ModeServer}))
			run := runClientScript(node, "ts-v2-client.mjs", p.base+"/fake/mcp", "--mode", mode, "--deadline", "60000")
			err := run.err
			var s tsV2Summary
			line := run.last
			if jerr := json.Unmarshal([]byte(line), &s); jerr != nil && err == nil {
				err = jerr
			}
			t.Logf("ts-v2 %s: ok=%v steps=%v era=%s protocol=%s tools=%d progress=%d elicitations=%d samplings=%d listChanged=%d cancelled %d→%d",
				mode, s.OK, s.Steps, s.Era, s.ProtocolVersion, len(s.Tools), len(s.Progress), s.Elicitations, s.Samplings, s.ListChanged, s.CancelledBefore, s.CancelledAfter)
			t.Logf("ts-v2 %s HTTP exchanges:\n  %s", mode, strings.Join(s.HTTP, "\n  "))
			if err != nil || !s.OK || s.Mode != mode || s.Steps[len(s.Steps)-1] != "done" {
				t.Errorf("ts-v2 client (%s) failed: %v\nfailures:\n  %s\nstdout: %s\nstderr: %s\nbridge logs:\n%s",
					mode, err, strings.Join(s.Failures, "\n  "), run.stdout, run.stderr, p.logs.String())
			}
		})
	}
}
