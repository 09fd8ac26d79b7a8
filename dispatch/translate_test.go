package dispatch

import (
	"encoding/json"
	"testing"
	"time"
)

func TestModernParams(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"name":"echo","arguments":{"a":1}}`, `{"name":"echo","arguments":{"a":1}}`},
		{`{"name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":"t","io.modelcontextprotocol/clientCapabilities":{}}}`,
			`{"name":"echo","_meta":{"progressToken":"t"}}`},
		{`{"name":"x","inputResponses":{"k":{}},"requestState":"s","_meta":{"io.modelcontextprotocol/logLevel":"info"},"arguments":{"io.modelcontextprotocol/kept":1}}`,
			`{"name":"x","_meta":{},"arguments":{"io.modelcontextprotocol/kept":1}}`},
	} {
		if got := string(ModernParams([]byte(tc.in))); got != tc.want {
			t.Errorf("ModernParams(%s) = %s; want %s", tc.in, got, tc.want)
		}
	}
}

func TestMarkComplete(t *testing.T) {
	public := Cache{TTL: 90 * time.Second, Scope: "public"}
	for _, tc := range []struct {
		in        string
		cacheable bool
		cache     Cache
		want      string
	}{
		{`{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`, false, Cache{}, `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","content":[]}}`},
		{`{"jsonrpc":"2.0","id":1,"result":{}}`, false, Cache{}, `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete"}}`},
		{`{"jsonrpc":"2.0","id":1,"result":{ }}`, true, Cache{}, `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","ttlMs":0,"cacheScope":"private" }}`},
		{`{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`, true, public, `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","ttlMs":90000,"cacheScope":"public","tools":[]}}`},
		{`{"jsonrpc":"2.0","id":1,"result":{"tools":[],"ttlMs":5}}`, true, public, `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","cacheScope":"public","tools":[],"ttlMs":5}}`},
		{`{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required"}}`, false, Cache{}, `{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required"}}`},
		// A 2026 child's result: typed already; the hints it lacks are added.
		{`{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","tools":[]}}`, true, public, `{"jsonrpc":"2.0","id":1,"result":{"ttlMs":90000,"cacheScope":"public","resultType":"complete","tools":[]}}`},
		{`{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","ttlMs":1,"cacheScope":"private"}}`, true, public, `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","ttlMs":1,"cacheScope":"private"}}`},
		{`{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required"}}`, true, public, `{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required"}}`},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32002,"message":"no"}}`, true, Cache{}, `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"no"}}`},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}`, true, Cache{}, `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}`},
	} {
		if got := string(MarkComplete([]byte(tc.in), tc.cacheable, tc.cache)); got != tc.want {
			t.Errorf("MarkComplete(%s, %v) = %s; want %s", tc.in, tc.cacheable, got, tc.want)
		}
	}
}

func TestModernCapabilities(t *testing.T) {
	in := `{"tools":{"listChanged":true},"tasks":{"list":{},"requests":{"tools":{"call":{}}}},"logging":{},"completions":{},"resources":{"subscribe":true},"prompts":{},"experimental":{"x":{}},"extensions":{"x.y/z":{}},"other":1}`
	want := `{"tools":{"listChanged":true},"logging":{},"completions":{},"resources":{"subscribe":true},"prompts":{},"experimental":{"x":{}},"extensions":{"io.modelcontextprotocol/tasks":{}}}`
	if got := string(modernCapabilities([]byte(in))); got != want {
		t.Errorf("modernCapabilities = %s; want %s", got, want)
	}
}

func TestToolTasks(t *testing.T) {
	tools := []json.RawMessage{
		json.RawMessage(`{"name":"a","execution":{"taskSupport":"optional"}}`),
		json.RawMessage(`{"name":"b","execution":{"taskSupport":"required"}}`),
		json.RawMessage(`{"name":"c","execution":{"taskSupport":"forbidden"}}`),
		json.RawMessage(`{"name":"d"}`),
		json.RawMessage(`{"name":"e","execution":{"taskSupport":"sometimes"}}`),
	}
	got := toolTasks(tools)
	want := map[string]string{"a": TaskOptional, "b": TaskRequired}
	if len(got) != len(want) || got["a"] != want["a"] || got["b"] != want["b"] {
		t.Errorf("toolTasks = %v; want %v", got, want)
	}
	if toolTasks(tools[2:]) != nil {
		t.Errorf("toolTasks of tools without task support is not nil")
	}
}
