package dispatch

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestToolHeaders(t *testing.T) {
	tools := []json.RawMessage{
		json.RawMessage(`{"name":"plain","inputSchema":{"type":"object","properties":{"a":{"type":"string"}}}}`),
		json.RawMessage(`{"name":"sql","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"db":{"type":"object","properties":{"shard":{"type":"integer","x-mcp-header":"Shard"}}}}}}`),
		// Invalid: through items, a number, a repeated name, not a token, on the root.
		json.RawMessage(`{"name":"items","inputSchema":{"type":"object","properties":{"l":{"type":"array","items":{"type":"string","x-mcp-header":"L"}}}}}`),
		json.RawMessage(`{"name":"number","inputSchema":{"type":"object","properties":{"n":{"type":"number","x-mcp-header":"N"}}}}`),
		json.RawMessage(`{"name":"twice","inputSchema":{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"X"},"b":{"type":"string","x-mcp-header":"x"}}}}`),
		json.RawMessage(`{"name":"token","inputSchema":{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"A B"}}}}`),
		json.RawMessage(`{"name":"root","inputSchema":{"type":"string","x-mcp-header":"R"}}`),
	}
	got := toolHeaders(tools)
	if len(got) != 1 {
		t.Fatalf("toolHeaders = %v; want only sql's", got)
	}
	want := map[string]ParamHeader{
		"Mcp-Param-Region": {Header: "Mcp-Param-Region", Path: []string{"region"}, Type: "string"},
		"Mcp-Param-Shard":  {Header: "Mcp-Param-Shard", Path: []string{"db", "shard"}, Type: "integer"},
	}
	for _, h := range got["sql"] {
		if !reflect.DeepEqual(want[h.Header], h) {
			t.Errorf("%+v; want %+v", h, want[h.Header])
		}
		delete(want, h.Header)
	}
	if len(want) > 0 {
		t.Errorf("missing %v", want)
	}
}
