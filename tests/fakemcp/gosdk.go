package fakemcp

import (
	"context"
	"fmt"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ModeGoSDK is a stdio server built on the go-sdk (issue 38: a real SDK's
// server of both eras): echo, and sample, which asks the client for a
// sampling answer — by input_required (MRTR) when the request is of the
// 2026-07-28 era, as the go-sdk requires, and returns what was sampled.
const ModeGoSDK = "gosdk"

// goSDKServer serves ModeGoSDK on stdin and stdout until stdin ends.
func goSDKServer() {
	server := mcp.NewServer(&mcp.Implementation{Name: "gosdk-stdio", Version: "1.0.0"}, nil)
	type echoIn struct {
		Message string `json:"message"`
	}
	mcp.AddTool(server, &mcp.Tool{Name: "echo", Description: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Message}}}, nil, nil
	})
	type sampleIn struct {
		Prompt string `json:"prompt"`
	}
	mcp.AddTool(server, &mcp.Tool{Name: "sample", Description: "asks the client for a sampling answer"}, func(_ context.Context, req *mcp.CallToolRequest, in sampleIn) (*mcp.CallToolResult, any, error) {
		// The go-sdk reads a sampling answer as CreateMessageWithToolsResult.
		if got, ok := req.Params.InputResponses["s"].(*mcp.CreateMessageWithToolsResult); ok {
			text := "?"
			if len(got.Content) > 0 {
				if tc, ok := got.Content[0].(*mcp.TextContent); ok {
					text = tc.Text
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "sampled: " + text}}}, nil, nil
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"s": &mcp.CreateMessageParams{
			Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: in.Prompt}}}, MaxTokens: 20}}}, nil, nil
	})
	if err := server.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "gosdk server:", err)
	}
}
