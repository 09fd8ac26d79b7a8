//go:build unix

package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sdkRounds is how many times each client calls each asking tool.
const sdkRounds = 20

// TestModernChildSDKClients: through one shared 2026-only child (the
// TypeScript SDK v2 server), two TypeScript SDK v1 clients (2025 sessions)
// and two go-sdk clients (2026-07-28, no session) call the sampling tool and
// the two-round sampling-then-elicitation tool at the same time, 20 rounds
// each, with no 'interactive:': every call is answered with its own
// client's answers (its sampling request carried its own prompt, its
// elicitation the text it sampled itself), none refused, none crossed.
func TestModernChildSDKClients(t *testing.T) {
	node := node24(t)
	cfg := filepath.Join(t.TempDir(), "destinations.yaml")
	if err := os.WriteFile(cfg, []byte("destinations:\n  shared:\n"+tsV2Server(t, "reject")), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startBinary(t, cfg)
	url := p.base + "/shared/mcp"
	var wg sync.WaitGroup
	errs := make(chan string, 512)
	for _, label := range []string{"ts1", "ts2"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tsV1Rounds(node, url, label, errs)
		}()
	}
	for _, label := range []string{"go1", "go2"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			goSDKRounds(url, label, errs)
		}()
	}
	wg.Wait()
	close(errs)
	n := 0
	for e := range errs {
		if n++; n <= 20 {
			t.Error(e)
		}
	}
	if n > 20 {
		t.Errorf("… and %d more", n-20)
	}
	m := metricsOf(t, p)
	refused := 0.0
	for k, v := range m {
		if strings.HasPrefix(k, "stelae_child_requests_refused_total") {
			refused += v
		}
	}
	if refused != 0 {
		t.Errorf("%v of the child's requests were refused; want none", refused)
	}
	if t.Failed() {
		t.Logf("bridge logs:\n%s", p.logs.String())
	}
}

// tsV1Rounds runs a TypeScript SDK v1 client (tests/clients/ts-session.mjs,
// a 2025 session) calling sample and twostep sdkRounds times, and reports
// what is not its own.
func tsV1Rounds(node, url, label string, errs chan<- string) {
	run := runClientScript(node, "ts-session.mjs", url, "--label", label, "--caps", "sampling,elicitation", "--deadline", "80000",
		"--repeat", fmt.Sprint(sdkRounds), "--call", `sample {"prompt":"`+label+`"}`, "--call", `twostep {"prompt":"`+label+`"}`)
	var s struct {
		OK           bool     `json:"ok"`
		Failures     []string `json:"failures"`
		Elicitations []struct {
			Message string `json:"message"`
		} `json:"elicitations"`
		Calls []struct {
			Name   string `json:"name"`
			Error  string `json:"error"`
			Result struct {
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
				IsError bool `json:"isError"`
			} `json:"result"`
		} `json:"calls"`
	}
	if err := json.Unmarshal([]byte(run.last), &s); err != nil || !s.OK {
		errs <- fmt.Sprintf("%s: %v %v %v\nstderr: %s", label, run.err, err, s.Failures, run.stderr)
		return
	}
	if len(s.Calls) != 2*sdkRounds || len(s.Elicitations) != sdkRounds {
		errs <- fmt.Sprintf("%s: %d calls and %d elicitations; want %d and %d", label, len(s.Calls), len(s.Elicitations), 2*sdkRounds, sdkRounds)
	}
	for _, e := range s.Elicitations {
		if e.Message != "Keep sampled by "+label+"?" {
			errs <- fmt.Sprintf("%s was asked %q: not its own call's", label, e.Message)
		}
	}
	for _, c := range s.Calls {
		text := ""
		if len(c.Result.Content) > 0 {
			text = c.Result.Content[0].Text
		}
		want := "sampled: sampled by " + label
		if c.Name == "twostep" {
			want = "twostep: sampled by " + label + " then accept"
		}
		if c.Error != "" || c.Result.IsError || text != want {
			errs <- fmt.Sprintf("%s's %s: %q (error %q); want %q", label, c.Name, text, c.Error, want)
		}
	}
}

// goSDKRounds runs a go-sdk client (2026-07-28: MRTR rounds, no session)
// calling sample and twostep sdkRounds times, and reports what is not its
// own.
func goSDKRounds(url, label string, errs chan<- string) {
	ctx, cancel := context.WithTimeout(context.Background(), 80*time.Second)
	defer cancel()
	var mu sync.Mutex
	var prompts, messages []string
	client := mcp.NewClient(&mcp.Implementation{Name: "stelae-" + label, Version: "1.0.0"}, &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			for _, m := range req.Params.Messages {
				if tc, ok := m.Content.(*mcp.TextContent); ok {
					mu.Lock()
					prompts = append(prompts, tc.Text)
					mu.Unlock()
				}
			}
			return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "sampled by " + label}}, nil
		},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			messages = append(messages, req.Params.Message)
			mu.Unlock()
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"ok": true}}, nil
		},
	})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{}}, nil)
	if err != nil {
		errs <- fmt.Sprintf("%s: connect: %v", label, err)
		return
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" || cs.ID() != "" {
		errs <- fmt.Sprintf("%s: protocol %s, session %q; want 2026-07-28 without a session", label, v, cs.ID())
	}
	for i := 0; i < sdkRounds; i++ {
		for _, tool := range []string{"sample", "twostep"} {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"prompt": label}})
			want := "sampled: sampled by " + label
			if tool == "twostep" {
				want = "twostep: sampled by " + label + " then accept"
			}
			text := ""
			if err == nil && len(res.Content) > 0 {
				if tc, ok := res.Content[0].(*mcp.TextContent); ok {
					text = tc.Text
				}
			}
			if err != nil || res.IsError || text != want {
				errs <- fmt.Sprintf("%s's %s round %d: %q %v; want %q", label, tool, i, text, err, want)
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(prompts) != 2*sdkRounds || len(messages) != sdkRounds {
		errs <- fmt.Sprintf("%s: asked %d samplings and %d elicitations; want %d and %d", label, len(prompts), len(messages), 2*sdkRounds, sdkRounds)
	}
	for _, p := range prompts {
		if p != label {
			errs <- fmt.Sprintf("%s was asked to sample %q: not its own call's", label, p)
		}
	}
	for _, m := range messages {
		if m != "Keep sampled by "+label+"?" {
			errs <- fmt.Sprintf("%s was asked %q: not its own call's", label, m)
		}
	}
}
