//go:build unix

package tests

// The official Go SDK client against the real binary, in the 2026-07-28 era and with
// -protocol-eras 2025: tools, progress, sampling and list changes. goSDKSession connects it for
// tests in other files.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

// wireTap is an http.RoundTripper that copies every response body the client
// reads into a buffer (the fake server's "sample" result carries the client's
// answer in a field CallToolResult does not keep) and notes each exchange
// ("POST tools/call(progress) → 200 text/event-stream").
type wireTap struct {
	next http.RoundTripper
	buf  *syncBuffer

	mu        *sync.Mutex
	exchanges *[]string
}

func (w wireTap) RoundTrip(req *http.Request) (*http.Response, error) {
	what := req.Method
	if req.Body != nil && req.Body != http.NoBody {
		body, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &m) == nil {
			switch {
			case m.Method != "" && m.Params.Name != "":
				what += fmt.Sprintf(" %s(%s)", m.Method, m.Params.Name)
			case m.Method != "":
				what += " " + m.Method
			case m.ID != nil:
				what += " response"
			}
		}
	}
	resp, err := w.next.RoundTrip(req)
	w.mu.Lock()
	if err != nil {
		*w.exchanges = append(*w.exchanges, fmt.Sprintf("%s → %v", what, err))
	} else {
		*w.exchanges = append(*w.exchanges, strings.TrimSpace(fmt.Sprintf("%s → %d %s", what, resp.StatusCode, resp.Header.Get("Content-Type"))))
	}
	w.mu.Unlock()
	if err == nil && resp.Body != nil {
		resp.Body = tapBody{ReadCloser: resp.Body, r: io.TeeReader(resp.Body, w.buf)}
	}
	return resp, err
}

type tapBody struct {
	io.ReadCloser
	r io.Reader
}

func (b tapBody) Read(p []byte) (int, error) { return b.r.Read(p) }

// TestGoSDKClient runs the official Go SDK client (mcp.NewClient with the
// streamable HTTP client transport, default options) against the real
// binary: list tools, progress with a progress handler, sampling answered by
// CreateMessageHandler, tools/list_changed through ToolListChangedHandler,
// close.
//
// It runs twice: with both eras (the default), where go-sdk 1.8 probes with
// server/discover and stays in the 2026-07-28 era (no session; sampling
// through MRTR input_required rounds; list changes through
// subscriptions/listen), and with -protocol-eras 2025, where the probe is
// told -32601 as by a legacy server and the client falls back to a 2025
// session.
func TestGoSDKClient(t *testing.T) {
	for _, eras := range []string{"both", "2025"} {
		t.Run(eras, func(t *testing.T) { goSDKClient(t, eras) })
	}
}

func goSDKClient(t *testing.T, eras string) {
	p := startBinary(t, fakeDestinations(t, map[string]string{"fake": fakemcp.ModeServer}), "-protocol-eras", eras)
	defer func() {
		if t.Failed() {
			t.Logf("bridge logs:\n%s", p.logs.String())
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	call := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, 20*time.Second) }

	const (
		token  = "gosdk-progress-token"
		steps  = 5
		answer = "sampled answer for the Go SDK client"
		prompt = "prompt from the Go SDK client"
	)
	var (
		mu          sync.Mutex
		progress    []*mcp.ProgressNotificationParams
		sampled     []*mcp.CreateMessageParams
		elicited    []*mcp.ElicitParams
		listChanged = make(chan struct{}, 16)
		sdkLog      syncBuffer
	)
	client := mcp.NewClient(&mcp.Implementation{Name: "stelae-gosdk-test", Version: "1.0.0"}, &mcp.ClientOptions{
		Logger: slog.New(slog.NewTextHandler(&sdkLog, &slog.HandlerOptions{Level: slog.LevelDebug})),
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			progress = append(progress, req.Params)
			mu.Unlock()
		},
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			mu.Lock()
			sampled = append(sampled, req.Params)
			mu.Unlock()
			return &mcp.CreateMessageResult{Model: "stelae-test-model", Role: "assistant", Content: &mcp.TextContent{Text: answer}, StopReason: "endTurn"}, nil
		},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			elicited = append(elicited, req.Params)
			mu.Unlock()
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "gosdk-elicited"}}, nil
		},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			listChanged <- struct{}{}
		},
	})
	wire := &syncBuffer{}
	var exchanges []string
	transport := &mcp.StreamableClientTransport{
		Endpoint:   p.base + "/fake/mcp",
		HTTPClient: &http.Client{Transport: wireTap{next: http.DefaultTransport, buf: wire, mu: &mu, exchanges: &exchanges}},
		MaxRetries: 2,
	}
	defer func() {
		mu.Lock()
		t.Logf("go-sdk HTTP exchanges:\n  %s", strings.Join(exchanges, "\n  "))
		mu.Unlock()
		if t.Failed() {
			t.Logf("go-sdk client log:\n%s", sdkLog.String())
		}
	}()

	// Connect: the SDK's default handshake (it may probe server/discover of
	// the 2026-07-28 protocol first and fall back to initialize).
	cctx, ccancel := call()
	cs, err := client.Connect(cctx, transport, nil)
	ccancel()
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	closed := false
	defer func() {
		if !closed {
			cs.Close()
		}
	}()
	init := cs.InitializeResult()
	t.Logf("connected: session %s, protocol %s, server %+v", cs.ID(), init.ProtocolVersion, init.ServerInfo)
	switch {
	case eras == "2025" && (cs.ID() == "" || init.ProtocolVersion == "2026-07-28"):
		t.Errorf("connect: session %q, protocol %s; want a 2025 session after the fallback", cs.ID(), init.ProtocolVersion)
	case eras == "both" && (cs.ID() != "" || init.ProtocolVersion != "2026-07-28"):
		t.Errorf("connect: session %q, protocol %s; want the 2026-07-28 era, no session", cs.ID(), init.ProtocolVersion)
	}

	// tools/list
	lctx, lcancel := call()
	tools, err := cs.ListTools(lctx, nil)
	lcancel()
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	t.Logf("tools/list: %v", names)
	for _, want := range []string{"echo", "progress", "sample", "list_changed"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools/list: no %q in %v", want, names)
		}
	}

	// progress: every event carries this call's token and total, in order.
	pctx, pcancel := call()
	res, err := cs.CallTool(pctx, &mcp.CallToolParams{Name: "progress", Arguments: map[string]any{"steps": steps, "ms": 50}, Meta: mcp.Meta{"progressToken": token}})
	pcancel()
	if err != nil {
		t.Fatalf("tools/call progress: %v", err)
	}
	if got := toolText(res); got != "done" {
		t.Errorf("progress: result text %q, want %q", got, "done")
	}
	// In JSON mode the notifications travel on the GET stream, apart from
	// the answer: allow them a moment.
	waitFor(t, 10*time.Second, fmt.Sprintf("%d progress notifications", steps), func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(progress) >= steps
	})
	mu.Lock()
	var seen []string
	for i, pr := range progress {
		seen = append(seen, fmt.Sprintf("%v/%v", pr.Progress, pr.Total))
		if pr.ProgressToken != token || int(pr.Progress) != i+1 || int(pr.Total) != steps {
			t.Errorf("progress event %d: token %#v progress %v total %v; want token %q, progress %d of %d", i, pr.ProgressToken, pr.Progress, pr.Total, token, i+1, steps)
		}
	}
	if len(progress) != steps {
		t.Errorf("progress: %d events, want %d", len(progress), steps)
	}
	mu.Unlock()
	t.Logf("progress: token %q, events %v", token, seen)

	// sample: the child asks this client to sample; the answer comes back
	// in the tool's result.
	sctx, scancel := call()
	res, err = cs.CallTool(sctx, &mcp.CallToolParams{Name: "sample", Arguments: map[string]any{"prompt": prompt}})
	scancel()
	if err != nil {
		t.Fatalf("tools/call sample: %v", err)
	}
	mu.Lock()
	if len(sampled) != 1 {
		t.Errorf("sampling: CreateMessageHandler ran %d times, want 1", len(sampled))
	} else if tc, ok := sampled[0].Messages[0].Content.(*mcp.TextContent); !ok || tc.Text != prompt {
		t.Errorf("sampling: request content %#v, want the prompt %q", sampled[0].Messages[0].Content, prompt)
	}
	mu.Unlock()
	// Only response bodies are tapped: the answer text there can only come
	// from the sample tool's result, which quotes the client's reply.
	if w := wire.String(); !strings.Contains(w, `"answer":{`) || !strings.Contains(w, answer) {
		t.Errorf("sampling: the sample tool's result does not carry the client's answer %q; the wire had:\n%s", answer, wire.String())
	} else {
		t.Logf("sampling: the tool's result carries the answer %q", answer)
	}

	// elicitation: the child asks this client for input (in the 2026-07-28
	// era through an input_required round); the answer reaches the child.
	ectx, ecancel := call()
	res, err = cs.CallTool(ectx, &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{"method": "elicitation/create",
		"params": `{"mode":"form","message":"Your name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}}`}})
	ecancel()
	if err != nil {
		t.Fatalf("tools/call ask elicitation: %v", err)
	}
	mu.Lock()
	if len(elicited) != 1 || elicited[0].Message != "Your name?" {
		t.Errorf("elicitation: ElicitationHandler saw %+v; want one request asking %q", elicited, "Your name?")
	}
	mu.Unlock()
	if w := wire.String(); !strings.Contains(w, `"action":"accept"`) || !strings.Contains(w, "gosdk-elicited") {
		t.Errorf("elicitation: the ask tool's result does not carry the client's answer; the wire had:\n%s", w)
	}

	// cancellation: giving up on a call (in the 2026-07-28 era by closing
	// its response stream, in 2025 with notifications/cancelled) reaches
	// the child as notifications/cancelled.
	observer := newClient(t, p.base+"/fake/mcp")
	observer.initialize()
	before := len(observer.stats().Cancelled)
	nvctx, nvcancel := context.WithCancel(ctx)
	neverErr := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(nvctx, &mcp.CallToolParams{Name: "never"})
		neverErr <- err
	}()
	waitCalled(t, observer, "never")
	nvcancel()
	select {
	case err := <-neverErr:
		if err == nil {
			t.Error("a cancelled call of never returned no error")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a cancelled call did not return within 10s")
	}
	waitFor(t, 10*time.Second, "the child to see the cancellation", func() bool { return len(observer.stats().Cancelled) > before })

	// list_changed: the child's notifications/tools/list_changed reaches
	// ToolListChangedHandler.
	nctx, ncancel := call()
	res, err = cs.CallTool(nctx, &mcp.CallToolParams{Name: "list_changed"})
	ncancel()
	if err != nil {
		t.Fatalf("tools/call list_changed: %v", err)
	}
	if got := toolText(res); got != "sent" {
		t.Errorf("list_changed: result text %q, want %q", got, "sent")
	}
	select {
	case <-listChanged:
		t.Log("notifications/tools/list_changed received")
	case <-time.After(10 * time.Second):
		t.Error("no notifications/tools/list_changed within 10s")
	}

	closed = true
	if err := cs.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
}

// toolText is the text of a tool result's first content block.
func toolText(res *mcp.CallToolResult) string {
	if res == nil || len(res.Content) == 0 {
		return ""
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); ok {
		return tc.Text
	}
	return ""
}

// goSDKSession connects the official Go SDK client, named name, to url
// (retrying a dropped stream up to retries times); the test's cleanup
// closes it.
func goSDKSession(t *testing.T, ctx context.Context, url, name string, retries int) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: retries}, nil)
	if err != nil {
		t.Fatalf("the Go SDK client's connect to %s: %v", url, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}
