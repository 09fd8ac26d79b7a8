package dispatch

import (
	"bytes"
	"encoding/json"
	"github.com/stelae-bridge/stelae-bridge/jsonrpc"
	"strings"
	"testing"
)

// admitted runs a client's message through what the bridge does before the
// child sees it: parse, classify, screen. It reports whether the message
// would be forwarded.
func admitted(d *Dispatcher, b []byte) bool {
	m, err := jsonrpc.Parse(b)
	if err != nil {
		return false
	}
	switch m.Kind() {
	case jsonrpc.KindRequest:
		_, code, _ := d.screen(m, true)
		return code == 0
	case jsonrpc.KindNotification:
		_, code, _ := d.screen(m, false)
		return code == 0
	}
	return false
}

func TestScreenRefusesWhatADecoderCouldReadDifferently(t *testing.T) {
	d := New(Options{ToolAllowed: globs(false, "hidden")})
	d.tools.odd = oddToolNames([]json.RawMessage{json.RawMessage(`{"name":"files/read"}`)})
	for _, tc := range []struct {
		name string
		msg  string
		ok   bool
	}{
		{"allowed call", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`, true},
		{"hidden call", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"hidden"}}`, false},
		{"name as an array", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":["hidden"]}}`, false},
		{"name as an object", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":{"toString":"hidden"}}}`, false},
		{"tools/call as a notification", `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"hidden"}}`, false},
		{"any request method as a notification", `{"jsonrpc":"2.0","method":"resources/read","params":{"uri":"x"}}`, false},
		{"method in another case", `{"jsonrpc":"2.0","id":1,"method":"Tools/Call","params":{"name":"hidden"}}`, false},
		{"method with a long s", `{"jsonrpc":"2.0","id":1,"method":"toolſ/call","params":{"name":"hidden"}}`, false},
		{"method with a Kelvin sign", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\u212a\"}", true},
		{"a second method member", `{"jsonrpc":"2.0","id":1,"method":"resources/read","Method":"tools/call","params":{"name":"hidden"}}`, false},
		{"duplicate params", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"},"params":{"name":"hidden"}}`, false},
		{"escaped method", `{"jsonrpc":"2.0","id":1,"method":"tools\/c\u0061ll","params":{"name":"hidden"}}`, false},
		{"notifications pass", `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`, true},
		{"unknown methods pass", `{"jsonrpc":"2.0","id":1,"method":"x-vendor/thing"}`, true},
		// Names a child that normalizes names would read as the hidden
		// tool: outside the MCP tool-name grammar, refused.
		{"zero-width space", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"hid\u200bden\"}}", false},
		{"fullwidth letters", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ｈｉｄｄｅｎ"}}`, false},
		{"trailing slash", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"hidden/"}}`, false},
		{"dot slash", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"./hidden"}}`, false},
		{"too long", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + strings.Repeat("a", 129) + `"}}`, false},
		{"empty", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":""}}`, false},
		{"dotted name", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"admin.tools_list-2"}}`, true},
		{"odd name the child lists", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"files/read"}}`, true},
		{"odd name the child does not list", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"files/write"}}`, false},
	} {
		if got := admitted(d, []byte(tc.msg)); got != tc.ok {
			t.Errorf("%s: admitted %v, want %v: %s", tc.name, got, tc.ok, tc.msg)
		}
	}
}

// decoded is what a decoder reads of a message: its method, whether it has
// an id, and the tool name of a tools/call.
type decoded struct {
	method, name string
	nameOK       bool
}

// strictView decodes like JSON.parse: exact member names, the last of
// duplicates wins, and a name is coerced with String() (["x"] is "x").
func strictView(b []byte) (decoded, bool) {
	var top map[string]json.RawMessage
	if json.Unmarshal(b, &top) != nil || top == nil {
		return decoded{}, false
	}
	var v decoded
	_ = json.Unmarshal(top["method"], &v.method)
	var params map[string]json.RawMessage
	_ = json.Unmarshal(top["params"], &params)
	v.name, v.nameOK = coerce(params["name"])
	return v, true
}

// lenientView decodes like Go's encoding/json into a struct: member names
// match without regard to case (Unicode simple folding) and the last match
// wins; a method is compared case-insensitively by the server.
func lenientView(b []byte) (decoded, bool) {
	top, ok := orderedMembers(b)
	if !ok {
		return decoded{}, false
	}
	var v decoded
	var params json.RawMessage
	for _, m := range top {
		switch {
		case strings.EqualFold(m.key, "method"):
			_ = json.Unmarshal(m.val, &v.method)
		case strings.EqualFold(m.key, "params"):
			params = m.val
		}
	}
	inner, _ := orderedMembers(params)
	for _, m := range inner {
		if strings.EqualFold(m.key, "name") {
			v.name, v.nameOK = coerce(m.val)
		}
	}
	return v, true
}

type member2 struct {
	key string
	val json.RawMessage
}

// orderedMembers lists an object's members in document order.
func orderedMembers(b []byte) ([]member2, bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	var out []member2
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		var val json.RawMessage
		if dec.Decode(&val) != nil {
			return nil, false
		}
		key, _ := tok.(string)
		out = append(out, member2{key, val})
	}
	return out, true
}

// coerce reads a name the way a JavaScript server's String(x) would.
func coerce(raw json.RawMessage) (string, bool) {
	var v any
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil {
		return "", false
	}
	switch x := v.(type) {
	case string:
		return x, true
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			s, _ := coerce(mustMarshal(e))
			parts[i] = s
		}
		return strings.Join(parts, ","), true
	case float64, bool:
		return string(raw), true
	}
	return "", false
}

func mustMarshal(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// FuzzScreen: whatever the bridge forwards, neither a strict nor a lenient
// decoder reads as a call of the hidden tool.
func FuzzScreen(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":["hidden"]}}`,
		`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"hidden"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"Tools/Call","params":{"name":"hidden"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","NAME":"hidden"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","METHOD":"tools/call","params":{"name":"hidden"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"},"Params":{"name":"hidden"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"n\u0061me":"hidden"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"toolſ/call","params":{"name":"hidden"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"./hidden/"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ｈｉｄｄｅｎ"}}`,
	} {
		f.Add([]byte(s))
	}
	d := New(Options{ToolAllowed: globs(false, "hidden")})
	f.Fuzz(func(t *testing.T, b []byte) {
		if !admitted(d, b) {
			return
		}
		if v, ok := strictView(b); ok && v.method == "tools/call" && v.nameOK && v.name == "hidden" {
			t.Fatalf("forwarded %s, which a strict decoder reads as a call of the hidden tool", b)
		}
		if v, ok := lenientView(b); ok && strings.EqualFold(v.method, "tools/call") && v.nameOK && strings.EqualFold(normalized(v.name), "hidden") {
			t.Fatalf("forwarded %s, which a lenient decoder reads as a call of the hidden tool", b)
		}
	})
}

// normalized is a tool name as a child that normalizes names could read
// it: zero-width characters dropped, fullwidth forms folded to ASCII, a
// leading "./" and trailing "/" trimmed, spaces trimmed.
func normalized(name string) string {
	var b strings.Builder
	for _, r := range name {
		switch {
		case r == '\u200b' || r == '\u200c' || r == '\u200d' || r == '\ufeff' || r == '\u2060':
			continue
		case r >= '\uff01' && r <= '\uff5e':
			r -= 0xfee0
		}
		b.WriteRune(r)
	}
	out := strings.TrimSpace(b.String())
	out = strings.TrimPrefix(out, "./")
	return strings.TrimSuffix(out, "/")
}

// TestScreenRefusesRoutedMembersADecoderReadsOtherwise: what the bridge
// routes, filters or binds by (issue 34) is refused when a decoder could
// read another value — with or without a tool filter.
func TestScreenRefusesRoutedMembersADecoderReadsOtherwise(t *testing.T) {
	for _, d := range []*Dispatcher{New(Options{}), New(Options{ToolAllowed: globs(false, "hidden")})} {
		for _, tc := range []struct {
			name, msg string
			ok        bool
		}{
			{"read", `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"res://a/public"}}`, true},
			{"read, escaped name", `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"\u0075ri":"res://a/public"}}`, true},
			{"read, URI too", `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"res://a/public","URI":"res://a/secret"}}`, false},
			{"read, uri twice", `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"res://a/secret","uri":"res://a/public"}}`, false},
			{"read, uri as an array", `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":["res://a/secret"]}}`, false},
			{"read, no uri", `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{}}`, true}, // no decoder reads one
			{"subscribe, Uri too", `{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"a","Uri":"b"}}`, false},
			{"unsubscribe, URI too", `{"jsonrpc":"2.0","id":1,"method":"resources/unsubscribe","params":{"uri":"a","URI":"b"}}`, false},
			{"unsubscribe", `{"jsonrpc":"2.0","id":1,"method":"resources/unsubscribe","params":{"uri":"a"}}`, true},
			{"prompt", `{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"p","arguments":{"Name":"x"}}}`, true},
			{"prompt, Name too", `{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"p","Name":"q"}}`, false},
			{"call, name twice alike", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","name":"echo"}}`, false},
			{"call, Arguments too", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{},"ARGUMENTS":{"a":1}}}`, false},
			{"call, Kelvin in a key", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"_meta\":{\"progressToken\":1,\"progressTo\u212Aen\":2}}}", false},
			{"call, progressToken", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":{"progressToken":1}}}`, true},
			{"call, ProgressToken too", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":{"progressToken":1,"ProgressToken":2}}}`, false},
			{"call, progressToken twice", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":{"progressToken":1,"progressToken":2}}}`, false},
			{"call, _Meta too", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":{"progressToken":1},"_Meta":{"progressToken":2}}}`, false},
			{"list, _META", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_META":{"progressToken":2}}}`, false},
			{"list, _meta", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"progressToken":2}}}`, true},
			{"other method, progreßToken", `{"jsonrpc":"2.0","id":1,"method":"x/y","params":{"_meta":{"progreßToken":2}}}`, false},
			// MRTR's members and the 2026 envelope: the bridge's (modern.go).
			{"call, requestState", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","requestState":"s","inputResponses":{}}}`, true},
			{"call, RequestState", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","RequestState":"stolen"}}`, false},
			{"call, requestState twice", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","requestState":"a","requestState":"b"}}`, false},
			{"read, input_responses", `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"a","input_responses":{}}}`, false},
			{"list, InputResponses", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"InputResponses":{}}}`, false},
			{"call, envelope", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"info"}}}`, true},
			{"call, envelope in capitals", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":{"IO.modelcontextprotocol/clientCapabilities":{"sampling":{}}}}}`, false},
			{"list, clientInfo twice", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/clientInfo":{},"io.modelcontextprotocol/clientInfo":{}}}}`, false},
			{"cancel", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`, true},
			{"cancel, no params", `{"jsonrpc":"2.0","method":"notifications/cancelled"}`, true},
			{"cancel, requestId twice", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"requestId":2}}`, false},
			{"cancel, RequestID too", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"RequestID":2}}`, false},
		} {
			if got := admitted(d, []byte(tc.msg)); got != tc.ok {
				t.Errorf("filter %v: %s: admitted %v, want %v: %s", d.filter.Load() != nil, tc.name, got, tc.ok, tc.msg)
			}
		}
	}
}

// progressTokens are the readings of a message's params._meta.progressToken
// by a Go decoder (any case, the last), a case-sensitive one keeping the
// last and one keeping the first; "" for none.
func progressTokens(msg []byte) (lenient, last, first string) {
	var l struct {
		Params struct {
			Meta struct {
				ProgressToken json.RawMessage `json:"progressToken"`
			} `json:"_meta"`
		}
	}
	_ = json.Unmarshal(msg, &l)
	var s struct {
		Params map[string]json.RawMessage `json:"params"`
	}
	_ = json.Unmarshal(msg, &s)
	var meta map[string]json.RawMessage
	_ = json.Unmarshal(s.Params["_meta"], &meta)
	firstOf := func(obj []byte, key string) []byte {
		ms, _ := orderedMembers(obj)
		for _, m := range ms {
			if m.key == key {
				return m.val
			}
		}
		return nil
	}
	return string(l.Params.Meta.ProgressToken), string(meta["progressToken"]),
		string(firstOf(firstOf(firstOf(msg, "params"), "_meta"), "progressToken"))
}

// TestChildReadsTheProgressTokenTheBridgeWrote: a client's progress token
// is rewritten to the call's upstream id (progress is routed by it to the
// call's caller); a token the bridge did not rewrite, read by the child,
// would route the child's progress to whichever call has that id — another
// user's. Every token a decoder could read is rewritten, or the call is
// refused.
func TestChildReadsTheProgressTokenTheBridgeWrote(t *testing.T) {
	d, l := newToolDispatcher(t, Options{}, func(int) *scriptConn { return newScriptConn() })
	s := &recSession{}
	d.Attach(s, json.RawMessage(`{"capabilities":{}}`))
	call(t, d, s, testInit)
	for _, meta := range []string{
		`{"progressToken":"mine"}`,
		`{"progress\u0054oken":5}`, // "progressToken" to every decoder
		`{"progressToken":"mine","ProgressToken":5}`,
		`{"ProgressToken":5}`,
		`{"progressToken":"mine","progressToken":5}`,
		"{\"progressToken\":\"mine\",\"progressTo\u212Aen\":5}",
	} {
		for _, params := range []string{
			`{"name":"echo","_meta":` + meta + `}`,
			`{"name":"echo","_meta":{"progressToken":"mine"},"_Meta":` + meta + `}`,
		} {
			before := len(l.started()[0].written())
			resp := call(t, d, s, `{"jsonrpc":"2.0","id":"c","method":"tools/call","params":`+params+`}`)
			for _, msg := range l.started()[0].written()[before:] {
				m, err := jsonrpc.Parse([]byte(msg))
				if err != nil || m.Method != "tools/call" {
					continue
				}
				lenient, last, first := progressTokens([]byte(msg))
				if lenient != string(m.ID) || last != string(m.ID) || first != string(m.ID) {
					t.Errorf("params %s reached the child as %s: its tokens read %s (Go), %s (the last), %s (the first); the bridge routes progress by %s", params, msg, lenient, last, first, m.ID)
				}
			}
			if !strings.Contains(string(resp), `"result"`) && !strings.Contains(string(resp), `"code":-32602`) {
				t.Errorf("params %s: answered %s", params, resp)
			}
		}
	}
}

// TestUnsubscribeCountsWhatTheChildReads: subscriptions are counted per
// URI, so that one user's unsubscribe never ends another's; an unsubscribe
// the bridge counts under one URI and the child reads as another would end
// a bystander's subscription at the child.
func TestUnsubscribeCountsWhatTheChildReads(t *testing.T) {
	d, l := newToolDispatcher(t, Options{}, func(int) *scriptConn { return newScriptConn() })
	bystander, other := &recSession{}, &recSession{}
	d.Attach(bystander, json.RawMessage(`{"capabilities":{}}`))
	d.Attach(other, json.RawMessage(`{"capabilities":{}}`))
	call(t, d, bystander, `{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"res://a"}}`)
	call(t, d, other, `{"jsonrpc":"2.0","id":1,"method":"resources/subscribe","params":{"uri":"res://b"}}`)
	for _, params := range []string{
		`{"uri":"res://a","URI":"res://b"}`, // a Go decoder reads res://b, a JavaScript one res://a
		`{"uri":"res://a","uri":"res://b"}`,
		`{"uri":"res://b","Uri":"res://a"}`,
		`{"uri":["res://a"]}`,
	} {
		resp := call(t, d, other, `{"jsonrpc":"2.0","id":2,"method":"resources/unsubscribe","params":`+params+`}`)
		if !strings.Contains(string(resp), `"code":-32602`) {
			t.Errorf("unsubscribe %s answered %s; want it refused", params, resp)
		}
	}
	for _, msg := range l.started()[0].written() {
		if strings.Contains(msg, "resources/unsubscribe") {
			t.Errorf("the child got %s while the bystander is subscribed to res://a", msg)
		}
	}
	// The other user's ordinary unsubscribe goes through; the
	// bystander's subscription stays.
	call(t, d, other, `{"jsonrpc":"2.0","id":3,"method":"resources/unsubscribe","params":{"uri":"res://b"}}`)
	d.mu.RLock()
	_, subscribed := d.subs["res://a"][bystander]
	_, left := d.subs["res://b"]
	d.mu.RUnlock()
	if !subscribed || left {
		t.Errorf("after the other's unsubscribe: bystander subscribed %v (want true), res://b counted %v (want false)", subscribed, left)
	}
	var unsubscribed []string
	for _, msg := range l.started()[0].written() {
		if strings.Contains(msg, "resources/unsubscribe") {
			unsubscribed = append(unsubscribed, msg)
		}
	}
	if len(unsubscribed) != 1 || !strings.Contains(unsubscribed[0], `"params":{"uri":"res://b"}`) {
		t.Errorf("the child got unsubscribes %q; want the one of res://b", unsubscribed)
	}
}
