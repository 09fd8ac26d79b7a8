package conformancefixture

import (
	"bufio"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"
)

// pipeClient drives Run over pipes.
type pipeClient struct {
	t    *testing.T
	in   *io.PipeWriter
	out  chan message
	done chan error
}

func startFixture(t *testing.T) *pipeClient {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &pipeClient{t: t, in: inW, out: make(chan message, 64), done: make(chan error, 1)}
	go func() {
		c.done <- Run(inR, outW, Options{ReconnectDelay: 10 * time.Millisecond, ClientRequestTimeout: 5 * time.Second})
		outW.Close()
	}()
	go func() {
		defer close(c.out)
		br := bufio.NewReader(outR)
		for {
			line, err := br.ReadBytes('\n')
			if len(line) > 0 {
				var m message
				if err := json.Unmarshal(line, &m); err != nil {
					t.Errorf("fixture wrote a line that is not JSON: %q", line)
				}
				c.out <- m
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		inW.Close()
		select {
		case err := <-c.done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("Run did not return after stdin closed")
		}
	})
	return c
}

func (c *pipeClient) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		c.t.Fatal(err)
	}
}

// next returns the next message the fixture writes.
func (c *pipeClient) next() message {
	c.t.Helper()
	select {
	case m, ok := <-c.out:
		if !ok {
			c.t.Fatal("fixture output closed")
		}
		return m
	case <-time.After(5 * time.Second):
		c.t.Fatal("no message from the fixture within 5s")
	}
	return message{}
}

func (c *pipeClient) initialize(caps string) {
	c.t.Helper()
	c.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":` + caps + `,"clientInfo":{"name":"t","version":"1"}}}`)
	if m := c.next(); string(m.ID) != "0" || m.Error != nil {
		c.t.Fatalf("initialize: %+v", m)
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

func TestToolsListHasEveryScenarioTool(t *testing.T) {
	c := startFixture(t)
	c.initialize(`{}`)
	c.send(`{"jsonrpc":"2.0","id":"l","method":"tools/list"}`)
	m := c.next()
	var r struct {
		Tools []struct {
			Name        string         `json:"name"`
			Description string         `json:"description"`
			InputSchema map[string]any `json:"inputSchema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(m.Result, &r); err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, tool := range r.Tools {
		if tool.Description == "" || tool.InputSchema["type"] != "object" {
			t.Errorf("tool %s lacks a description or an object inputSchema", tool.Name)
		}
		have[tool.Name] = true
	}
	for _, n := range []string{"test_simple_text", "test_image_content", "test_audio_content", "test_embedded_resource",
		"test_multiple_content_types", "test_tool_with_logging", "test_tool_with_progress", "test_error_handling",
		"test_reconnection", "test_sampling", "test_elicitation", "test_elicitation_sep1034_defaults",
		"test_elicitation_sep1330_enums", "json_schema_2020_12_tool"} {
		if !have[n] {
			t.Errorf("tools/list lacks %s", n)
		}
	}
}

func TestProgressUsesTheCallersToken(t *testing.T) {
	c := startFixture(t)
	c.initialize(`{}`)
	c.send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"test_tool_with_progress","arguments":{},"_meta":{"progressToken":"tok-1"}}}`)
	var progress []float64
	for {
		m := c.next()
		if m.Method == "notifications/progress" {
			var p struct {
				ProgressToken string  `json:"progressToken"`
				Progress      float64 `json:"progress"`
				Total         float64 `json:"total"`
			}
			json.Unmarshal(m.Params, &p)
			if p.ProgressToken != "tok-1" || p.Total != 100 {
				t.Fatalf("progress notification %s", m.Params)
			}
			progress = append(progress, p.Progress)
			continue
		}
		if string(m.ID) != "7" || m.Result == nil {
			t.Fatalf("want the answer to 7, got %+v", m)
		}
		break
	}
	if len(progress) != 3 || progress[0] != 0 || progress[1] != 50 || progress[2] != 100 {
		t.Fatalf("progress %v, want [0 50 100] before the answer", progress)
	}
}

func TestSamplingRoundTrip(t *testing.T) {
	c := startFixture(t)
	c.initialize(`{"sampling":{}}`)
	c.send(`{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"test_sampling","arguments":{"prompt":"Say hi"}}}`)
	req := c.next()
	if req.Method != "sampling/createMessage" || !strings.Contains(string(req.Params), `"maxTokens":100`) || !strings.Contains(string(req.Params), "Say hi") {
		t.Fatalf("want sampling/createMessage with the prompt, got %+v", req)
	}
	c.send(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"role":"assistant","content":{"type":"text","text":"hi there"},"model":"m"}}`)
	m := c.next()
	if string(m.ID) != `"s"` || !strings.Contains(string(m.Result), "LLM response: hi there") {
		t.Fatalf("tool answer %s", m.Result)
	}
}

func TestElicitationWithoutCapabilityIsAToolError(t *testing.T) {
	c := startFixture(t)
	c.initialize(`{}`)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"test_elicitation","arguments":{"message":"m"}}}`)
	m := c.next()
	if !strings.Contains(string(m.Result), `"isError":true`) {
		t.Fatalf("want an isError result, got %+v", m)
	}
}

func TestCancelledCallIsNotAnswered(t *testing.T) {
	c := startFixture(t)
	c.initialize(`{"elicitation":{}}`)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"test_elicitation","arguments":{"message":"m"}}}`)
	req := c.next()
	if req.Method != "elicitation/create" {
		t.Fatalf("want elicitation/create, got %+v", req)
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
	// The fixture withdraws its own request, and never answers call 1.
	if m := c.next(); m.Method != "notifications/cancelled" || !strings.Contains(string(m.Params), string(req.ID)) {
		t.Fatalf("want notifications/cancelled for %s, got %+v", req.ID, m)
	}
	c.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	if m := c.next(); string(m.ID) != "2" {
		t.Fatalf("want only the ping's answer, got %+v", m)
	}
}

func TestErrors(t *testing.T) {
	c := startFixture(t)
	c.initialize(`{}`)
	for _, tc := range []struct {
		line string
		code int
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"nope"}}`, codeInvalidParams},
		{`{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"test://nope"}}`, codeResourceNotFound},
		{`{"jsonrpc":"2.0","id":3,"method":"prompts/get","params":{"name":"test_prompt_with_arguments","arguments":{"arg1":"a"}}}`, codeInvalidParams},
		{`{"jsonrpc":"2.0","id":4,"method":"no/such"}`, codeMethodNotFound},
		{`not json`, codeParse},
	} {
		c.send(tc.line)
		if m := c.next(); m.Error == nil || m.Error.Code != tc.code {
			t.Errorf("%s: want error %d, got %+v", tc.line, tc.code, m)
		}
	}
}
