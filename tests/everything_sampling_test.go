//go:build unix

package tests

// Sampling requests from the official server-everything on the shipped destinations.yaml, two
// users at once (issue 20): each prompt reaches only the user whose call asked, and each answer
// comes back to that call.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// shippedEverything writes the repository's destinations.yaml with its
// everything destination started from the pinned server-everything
// (tests/node_modules) instead of npx, under its sandbox (granted that
// directory), and with drop removed from it (a
// line, e.g. the interactive list, to see what the bridge does without).
func shippedEverything(t *testing.T, drop ...string) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "destinations.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	const npx = "command: npx\n    args: [\"-y\", \"@modelcontextprotocol/server-everything\"]\n"
	text := string(src)
	if !strings.Contains(text, npx) {
		t.Fatalf("the shipped destinations.yaml no longer starts server-everything with npx as this test expects:\n%s", src)
	}
	text = strings.Replace(text, npx, fmt.Sprintf("command: %q\n", everythingBin(t)), 1)
	// The shipped sandbox holds it as it is: the pinned package's files
	// (not npm's cache) are the ones to read.
	const sandbox = "sandbox: {preset: npx, best_effort: true}"
	modules, err := filepath.Abs("node_modules")
	if err != nil || !strings.Contains(text, sandbox) {
		t.Fatalf("the shipped destinations.yaml has no %q (%v)", sandbox, err)
	}
	text = strings.Replace(text, sandbox, fmt.Sprintf("sandbox: {preset: npx, files: {read: [%q]}, best_effort: true}", modules), 1)
	for _, d := range drop {
		if !strings.Contains(text, d) {
			t.Fatalf("the shipped destinations.yaml has no %q", d)
		}
		text = strings.Replace(text, d, "", 1)
	}
	path := filepath.Join(t.TempDir(), "destinations.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// samplingTally counts what two users' trigger-sampling-request calls saw.
type samplingTally struct {
	delivered, refused, crossed atomic.Int32
	// mu guards problems.
	mu       sync.Mutex
	problems []string
}

func (s *samplingTally) problem(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.problems = append(s.problems, fmt.Sprintf(format, args...))
}

// samplingUser makes calls calls of server-everything's
// trigger-sampling-request as user tag, answering each sampling request it
// is sent with an answer naming itself, and checks that every request it
// is sent is its own call's and every answer it gets is its own.
func samplingUser(c *client, tag string, calls int, tally *samplingTally) {
	for i := range calls {
		prompt := fmt.Sprintf("%s-call-%d", tag, i)
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"trigger-sampling-request","arguments":{"prompt":%q,"maxTokens":5}}}`, i, prompt)
		final, err := streamCall(c, body, func(m rpc) {
			var p struct {
				Messages []struct {
					Content struct{ Text string }
				}
			}
			_ = json.Unmarshal(m.Params, &p)
			if len(p.Messages) == 0 || !strings.HasSuffix(p.Messages[0].Content.Text, ": "+prompt) {
				tally.crossed.Add(1)
				tally.problem("user %s, waiting for %s, was asked %s", tag, prompt, m.Params)
			}
			answer := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"role":"assistant","content":{"type":"text","text":"answer-of-%s"},"model":"m"}}`, m.ID, tag)
			if r, err := c.do(http.MethodPost, answer); err != nil || r.status != http.StatusAccepted {
				tally.problem("%s: answering the sampling request: %v %d %s", prompt, err, r.status, r.body)
			}
		})
		if err != nil {
			tally.problem("%s: %v", prompt, err)
			continue
		}
		switch res := string(final.Result); {
		case strings.Contains(res, "answer-of-"+tag):
			tally.delivered.Add(1)
		case strings.Contains(res, "answer-of-"):
			tally.crossed.Add(1)
			tally.problem("user %s's call %s got another's answer: %s", tag, prompt, res)
		case strings.Contains(res, "no client session can answer"):
			tally.refused.Add(1)
		default:
			tally.problem("%s: answered %s %+v", prompt, res, final.Error)
		}
	}
}

// streamCall POSTs a request on c's session and reads its answer (JSON, or
// an SSE stream) to its end, handing each request the child sends on the
// stream to ask while the stream stays open; it returns the final answer.
func streamCall(c *client, body string, ask func(rpc)) (rpc, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, err := newRequest(ctx, http.MethodPost, c.url, c.sid, body)
	if err != nil {
		return rpc{}, err
	}
	resp, err := (&http.Client{}).Do(req)
	if err != nil {
		return rpc{}, err
	}
	defer resp.Body.Close()
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var m rpc
		err := json.NewDecoder(resp.Body).Decode(&m)
		return m, err
	}
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return rpc{}, fmt.Errorf("the stream ended without an answer: %w", err)
		}
		data, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "data: ")
		if !ok || strings.TrimSpace(data) == "" {
			continue
		}
		var m rpc
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			return rpc{}, fmt.Errorf("event %q: %w", data, err)
		}
		switch {
		case m.Method != "" && m.ID != nil:
			ask(m)
		case m.Method == "":
			return m, nil
		}
	}
}

// samplingInit is a client's initialize that declares sampling.
const samplingInit = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"sampling":{}},"clientInfo":{"name":"sampler","version":"1"}}}`

// TestEverythingSamplingStaysWithItsUser: two users at once call
// server-everything's trigger-sampling-request on the shipped
// destinations.yaml (issue 20: with the old rule, 6 of 8 of one user's
// prompts reached the other). Every prompt must reach only the user whose
// call asked, and every answer come back to that call. With the shipped
// configuration (the tool runs alone) every call gets its own answer; with
// its interactive list removed, calls that overlap have their requests
// refused — never delivered to the other user.
func TestEverythingSamplingStaysWithItsUser(t *testing.T) {
	for _, tc := range []struct {
		name string
		drop []string
	}{
		{"shipped", nil},
		{"not interactive", []string{"      - trigger-sampling-request*\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := startBinary(t, shippedEverything(t, tc.drop...))
			url := p.base + "/everything/mcp"
			users := []string{"alice", "bob"}
			clients := make([]*client, len(users))
			for i := range users {
				c := newClient(t, url)
				r := c.post(samplingInit)
				c.sid = r.header.Get("Mcp-Session-Id")
				if r.status != http.StatusOK || c.sid == "" {
					t.Fatalf("initialize: %d %s", r.status, r.body)
				}
				c.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
				clients[i] = c
			}
			const calls = 6
			var tally samplingTally
			var wg sync.WaitGroup
			for i, c := range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					samplingUser(c, users[i], calls, &tally)
				}()
			}
			wg.Wait()
			t.Logf("%d calls answered by their own user, %d refused, %d crossed", tally.delivered.Load(), tally.refused.Load(), tally.crossed.Load())
			for _, pr := range tally.problems {
				t.Error(pr)
			}
			if tally.crossed.Load() != 0 {
				t.Fatalf("%d prompts or answers reached another user\n%s", tally.crossed.Load(), p.logs.String())
			}
			if tc.drop == nil && tally.delivered.Load() != int32(len(users)*calls) {
				t.Errorf("shipped configuration: %d of %d calls got their own answer; every one should (the tool runs alone)", tally.delivered.Load(), len(users)*calls)
			}
		})
	}
}
