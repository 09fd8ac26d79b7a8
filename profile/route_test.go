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
		// What routes is what the member's child reads (issue 34): a
		// decoder matching names in any case, or keeping the first or the
		// last of duplicates, must not read another name or URI.
		{"resources/read", `{"uri":"file:///a","URI":"file:///secret"}`, "", "", jsonrpc.CodeInvalidParams, true},
		{"resources/read", `{"URI":"file:///secret","uri":"file:///a"}`, "", "", jsonrpc.CodeInvalidParams, true},
		{"resources/read", `{"uri":"file:///a","uri":"file:///a"}`, "", "", jsonrpc.CodeInvalidParams, true},
		{"resources/read", `{"uri":"file:///a","\u0075ri":"file:///secret"}`, "", "", jsonrpc.CodeInvalidParams, true},
		{"resources/read", `{"\u0075ri":"file:///a"}`, "fs", `{"\u0075ri":"file:///a"}`, 0, true}, // escaped, but "uri" to every decoder
		{"resources/read", `{"uri":["file:///a"]}`, "", "", jsonrpc.CodeInvalidParams, true},
		{"resources/subscribe", `{"uri":"file:///a","Uri":"file:///secret"}`, "", "", jsonrpc.CodeInvalidParams, true},
		{"resources/unsubscribe", `{"uri":"file:///a","URI":"file:///secret"}`, "", "", jsonrpc.CodeInvalidParams, true},
		{"tools/call", `{"name":"everything__echo","name":"everything__echo"}`, "", "", jsonrpc.CodeInvalidParams, true},
		{"tools/call", `{"name":"everything__echo","na_me":"mem__read_graph"}`, "", "", jsonrpc.CodeInvalidParams, true}, // encoding/json/v2 without case ignores '_'
		{"prompts/get", `{"name":"everything__simple_prompt","NAME":"x"}`, "", "", jsonrpc.CodeInvalidParams, true},
		{"completion/complete", `{"ref":{"type":"ref/resource","uri":"file:///a","URI":"file:///secret"}}`, "", "", jsonrpc.CodeInvalidParams, true},
		{"completion/complete", `{"ref":{"type":"ref/resource","uri":"file:///a"},"Ref":{"type":"ref/resource","uri":"file:///secret"}}`, "", "", jsonrpc.CodeInvalidParams, true},
		{"completion/complete", `{"ref":{"type":"ref/resource","uri":"file:///secret"},"ref":{"type":"ref/resource","uri":"file:///a"}}`, "", "", jsonrpc.CodeInvalidParams, true},
		{"completion/complete", `{"ref":{"type":"ref/resource","Type":"ref/prompt","uri":"file:///a","name":"x"}}`, "", "", jsonrpc.CodeInvalidParams, true},
		{"completion/complete", `{"ref":{"type":"ref/prompt","name":"everything__simple_prompt","Name":"x"}}`, "", "", jsonrpc.CodeInvalidParams, true},
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
		f.Add("resources/read", s)
	}
	f.Add("resources/read", `{"uri":"u://1","URI":"u://2"}`)
	_, tools := MergeNamed([]Listing{{Destination: "a", Prefix: "a", Items: raws(`{"name":"x"}`)}}, nil)
	_, prompts := MergeNamed([]Listing{{Destination: "a", Prefix: "a", Items: raws(`{"name":"p"}`)}}, nil)
	_, _, res := MergeResources([]Listing{{Destination: "a", Items: raws(`{"uri":"u://1"}`)}}, nil, nil)
	r := &Routes{Tools: tools, Prompts: prompts, Resources: res}
	f.Fuzz(func(t *testing.T, method, params string) {
		if !jsonrpc.Valid([]byte(params)) {
			return // params come from a parsed message
		}
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
			URI  string
			Ref  struct{ Name, URI string }
		}
		var exact map[string]json.RawMessage // case-sensitive, the last of duplicates
		if json.Unmarshal(out, &p) != nil || json.Unmarshal(out, &exact) != nil {
			return
		}
		switch method {
		case "tools/call":
			if p.Name != "x" || string(exact["name"]) != `"x"` {
				t.Fatalf("%q became %q: a decoder reads name %q (%s)", params, out, p.Name, exact["name"])
			}
		case "resources/read":
			if p.URI != "u://1" || jsonrpc.String(exact["uri"]) != "u://1" {
				t.Fatalf("%q routed as u://1: a decoder reads uri %q (%s)", params, p.URI, exact["uri"])
			}
		}
	})
}
