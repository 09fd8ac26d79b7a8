package profile

import (
	"encoding/json"
	"testing"

	"github.com/stelae-bridge/stelae-bridge/jsonrpc"
)

func TestRoute(t *testing.T) {
	_, toolNames := MergeNamed([]Listing{
		{Destination: "everything", Prefix: "everything", Items: raws(`{"name":"echo"}`)},
		{Destination: "memory", Prefix: "mem", Items: raws(`{"name":"read_graph"}`)},
	}, nil)
	_, promptNames := MergeNamed([]Listing{{Destination: "everything", Prefix: "everything", Items: raws(`{"name":"simple_prompt"}`)}}, nil)
	_, _, res := MergeResources([]Listing{{Destination: "fs", Items: raws(`{"uri":"file:///a"}`)}}, nil, nil)
	r := &Routes{Tools: toolNames, Prompts: promptNames, Resources: res}
	for _, tc := range []struct {
		method, params string
		dest, out      string
		code           int
		routed         bool
	}{
		{"tools/call", `{"name":"mem__read_graph","arguments":{"name":"x"}}`, "memory", `{"name":"read_graph","arguments":{"name":"x"}}`, 0, true},
		{"tools/call", `{"arguments":{},"name":"everything__echo","_meta":{"progressToken":1}}`, "everything", `{"arguments":{},"name":"echo","_meta":{"progressToken":1}}`, 0, true},
		{"tools/call", `{"name":"echo"}`, "", "", jsonrpc.CodeInvalidParams, true},             // unprefixed: not a profile name
		{"tools/call", `{"Name":"everything__echo"}`, "", "", jsonrpc.CodeInvalidParams, true}, // a lenient decoder's "name"
		{"tools/call", `{"name":"everything__echo","name":"mem__read_graph"}`, "", "", jsonrpc.CodeInvalidParams, true},
		{"tools/call", `[]`, "", "", jsonrpc.CodeInvalidParams, true},
		{"prompts/get", `{"name":"everything__simple_prompt"}`, "everything", `{"name":"simple_prompt"}`, 0, true},
		{"resources/read", `{"uri":"file:///a"}`, "fs", `{"uri":"file:///a"}`, 0, true},
		{"resources/subscribe", `{"uri":"file:///b"}`, "", "", jsonrpc.CodeInvalidParams, true},
		{"completion/complete", `{"ref":{"type":"ref/prompt","name":"everything__simple_prompt"},"argument":{"name":"a","value":"b"}}`, "everything", `{"ref":{"type":"ref/prompt","name":"simple_prompt"},"argument":{"name":"a","value":"b"}}`, 0, true},
		{"completion/complete", `{"ref":{"type":"ref/resource","uri":"file:///a"}}`, "fs", `{"ref":{"type":"ref/resource","uri":"file:///a"}}`, 0, true},
		{"completion/complete", `{"ref":{"type":"ref/other"}}`, "", "", jsonrpc.CodeInvalidParams, true},
		{"ping", `{}`, "", `{}`, 0, false},
	} {
		dest, out, routed, err := r.Route(tc.method, []byte(tc.params))
		code := 0
		if re, ok := err.(*RouteError); ok {
			code = re.Code
		} else if err != nil {
			t.Errorf("%s %s: %v", tc.method, tc.params, err)
			continue
		}
		if routed != tc.routed || code != tc.code || code == 0 && (dest != tc.dest || string(out) != tc.out) {
			t.Errorf("%s %s: %q %s routed=%v code %d (%v); want %q %s routed=%v code %d", tc.method, tc.params, dest, out, routed, code, err, tc.dest, tc.out, tc.routed, tc.code)
		}
	}
}

func FuzzRoute(f *testing.F) {
	for _, s := range []string{`{"name":"a__x"}`, `{"name":"a__x","Name":"b"}`, `{"na\u006de":"a__x"}`, `{"ref":{"type":"ref/prompt","name":"a__p"}}`, `{"uri":"u://1"}`, `{`, ``} {
		f.Add("tools/call", s)
		f.Add("completion/complete", s)
	}
	_, tools := MergeNamed([]Listing{{Destination: "a", Prefix: "a", Items: raws(`{"name":"x"}`)}}, nil)
	_, prompts := MergeNamed([]Listing{{Destination: "a", Prefix: "a", Items: raws(`{"name":"p"}`)}}, nil)
	_, _, res := MergeResources([]Listing{{Destination: "a", Items: raws(`{"uri":"u://1"}`)}}, nil, nil)
	r := &Routes{Tools: tools, Prompts: prompts, Resources: res}
	f.Fuzz(func(t *testing.T, method, params string) {
		dest, out, routed, err := r.Route(method, []byte(params))
		if !routed || err != nil {
			return
		}
		if dest != "a" || !jsonrpc.Valid(out) {
			t.Fatalf("routed %q to %q as %q", params, dest, out)
		}
		// What the member gets names the member's own tool or prompt,
		// and the name a decoder reads is the one routed.
		var p struct {
			Name string
			Ref  struct{ Name string }
		}
		if json.Unmarshal(out, &p) == nil && method == "tools/call" && p.Name != "x" {
			t.Fatalf("%q became %q: a decoder reads name %q", params, out, p.Name)
		}
	})
}
