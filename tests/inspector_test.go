//go:build unix

package tests

// The MCP Inspector's CLI against the real binary in front of server-everything: tools/list and
// tools/call. runInspector runs the CLI for tests in other files too.

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runInspector runs the MCP Inspector's CLI mode (pinned in
// tests/package.json) with Node 24 against url and decodes its JSON output.
func runInspector(t *testing.T, url string, args ...string) map[string]any {
	t.Helper()
	node := node24(t)
	inspector, err := filepath.Abs(filepath.Join("node_modules", ".bin", "inspector"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	argv := append([]string{inspector, "--cli", url, "--transport", "http"}, args...)
	cmd := exec.CommandContext(ctx, node, argv...)
	cmd.WaitDelay = 5 * time.Second
	// Anything the Inspector starts with "node" gets Node 24 too.
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(node)+string(os.PathListSeparator)+os.Getenv("PATH"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err = cmd.Run()
	t.Logf("inspector %s: %v in %v", strings.Join(args, " "), err, time.Since(start).Round(time.Millisecond))
	if err != nil {
		t.Fatalf("inspector --cli %s %s failed: %v\nstdout: %s\nstderr: %s", url, strings.Join(args, " "), err, stdout.Bytes(), stderr.Bytes())
	}
	var out map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil {
		t.Fatalf("inspector %s: output is not JSON: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, stdout.Bytes(), stderr.Bytes())
	}
	return out
}

// TestInspectorCLIEverything runs the MCP Inspector CLI against the real
// binary fronting the official server-everything: tools/list shows echo
// (with its schema) and tools/call echo message=hi answers "Echo: hi".
func TestInspectorCLIEverything(t *testing.T) {
	p := startEverything(t)
	defer func() {
		if t.Failed() {
			t.Logf("bridge logs:\n%s", p.logs.String())
		}
	}()
	url := p.base + "/everything/mcp"

	t.Run("tools/list", func(t *testing.T) {
		out := runInspector(t, url, "--method", "tools/list")
		tools, _ := out["tools"].([]any)
		var names []string
		var echo map[string]any
		for _, x := range tools {
			tool, _ := x.(map[string]any)
			name, _ := tool["name"].(string)
			names = append(names, name)
			if name == "echo" {
				echo = tool
			}
		}
		t.Logf("tools/list: %d tools: %v", len(names), names)
		if echo == nil {
			t.Fatalf("tools/list: no echo tool in %v", names)
		}
		schema, _ := echo["inputSchema"].(map[string]any)
		props, _ := schema["properties"].(map[string]any)
		if _, ok := props["message"]; !ok {
			t.Errorf("tools/list: echo's inputSchema has no property message: %v", echo["inputSchema"])
		}
	})

	t.Run("tools/call echo", func(t *testing.T) {
		out := runInspector(t, url, "--method", "tools/call", "--tool-name", "echo", "--tool-arg", "message=hi")
		content, _ := out["content"].([]any)
		if len(content) != 1 {
			t.Fatalf("tools/call echo: content %v, want one block", out)
		}
		block, _ := content[0].(map[string]any)
		if block["type"] != "text" || block["text"] != "Echo: hi" {
			t.Fatalf("tools/call echo: %v, want a text block \"Echo: hi\"", out)
		}
		if isErr, _ := out["isError"].(bool); isErr {
			t.Fatalf("tools/call echo: isError set: %v", out)
		}
		t.Logf("tools/call echo: %v", block)
	})
}
