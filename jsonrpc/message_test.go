package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseKind(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want Kind
	}{
		{"request number id", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, KindRequest},
		{"request string id", `{"jsonrpc":"2.0","id":"abc","method":"tools/list","params":{}}`, KindRequest},
		{"request negative id", `{"jsonrpc":"2.0","id":-1,"method":"x"}`, KindRequest},
		{"request zero id", `{"jsonrpc":"2.0","id":0,"method":"x"}`, KindRequest},
		{"request empty string id", `{"jsonrpc":"2.0","id":"","method":"x"}`, KindRequest},
		{"request with whitespace", " \r\n\t{ \"id\" : 5 , \"method\" : \"x\" }\n", KindRequest},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, KindNotification},
		{"notification with params", `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1}}`, KindNotification},
		{"response result", `{"jsonrpc":"2.0","id":1,"result":{}}`, KindResponse},
		{"response null result", `{"jsonrpc":"2.0","id":1,"result":null}`, KindResponse},
		{"response error", `{"jsonrpc":"2.0","id":"a","error":{"code":-32601,"message":"nope"}}`, KindResponse},
		{"error response with null id", `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}}`, KindResponse},
		{"request with null id", `{"jsonrpc":"2.0","id":null,"method":"x"}`, KindInvalid},
		{"request with bool id", `{"jsonrpc":"2.0","id":true,"method":"x"}`, KindInvalid},
		{"request with false id", `{"jsonrpc":"2.0","id":false,"method":"x"}`, KindInvalid},
		{"request with object id", `{"jsonrpc":"2.0","id":{"a":1},"method":"x"}`, KindInvalid},
		{"request with array id", `{"jsonrpc":"2.0","id":[1],"method":"x"}`, KindInvalid},
		{"response with bool id", `{"jsonrpc":"2.0","id":true,"result":{}}`, KindInvalid},
		{"response with object id", `{"jsonrpc":"2.0","id":{},"result":{}}`, KindInvalid},
		{"response without result or error", `{"jsonrpc":"2.0","id":1}`, KindInvalid},
		{"result without id", `{"jsonrpc":"2.0","result":{}}`, KindInvalid},
		{"empty object", `{}`, KindInvalid},
		{"empty method with id", `{"jsonrpc":"2.0","id":1,"method":""}`, KindInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Parse([]byte(tc.in))
			if err != nil {
				t.Fatalf("Parse(%s): %v", tc.in, err)
			}
			if got := m.Kind(); got != tc.want {
				t.Errorf("Kind(%s) = %d; want %d", tc.in, got, tc.want)
			}
		})
	}
}

func TestParseNonObject(t *testing.T) {
	// A JSON value that is not an object is either a parse error or an
	// invalid message, never a request, notification or response.
	for _, in := range []string{`null`, `true`, `"x"`, `1`} {
		m, err := Parse([]byte(in))
		if err == nil && m.Kind() != KindInvalid {
			t.Errorf("Parse(%s) = kind %d; want an error or KindInvalid", in, m.Kind())
		}
	}
}

func TestParseKeepsRawMembers(t *testing.T) {
	in := `{"jsonrpc":"2.0","id":12345678901234567890123,"method":"tools/call","params":{"name":"x","arguments":{"n":1.50}}}`
	m, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if string(m.ID) != "12345678901234567890123" {
		t.Errorf("ID = %s; want every digit kept", m.ID)
	}
	if string(m.Params) != `{"name":"x","arguments":{"n":1.50}}` {
		t.Errorf("Params = %s; want the bytes kept", m.Params)
	}
	if m.Method != "tools/call" || m.JSONRPC != "2.0" {
		t.Errorf("Method/JSONRPC = %q/%q", m.Method, m.JSONRPC)
	}
	if !m.HasID() {
		t.Error("HasID = false")
	}
	m, err = Parse([]byte(`{"jsonrpc":"2.0","id":"\u0041b","result":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	if string(m.ID) != `"\u0041b"` {
		t.Errorf("string ID = %s; want the escape kept byte for byte", m.ID)
	}
}

func TestHasID(t *testing.T) {
	for in, want := range map[string]bool{
		`{"method":"x"}`:           false,
		`{"method":"x","id":null}`: false,
		`{"method":"x","id":0}`:    true,
		`{"method":"x","id":""}`:   true,
	} {
		m, err := Parse([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		if got := m.HasID(); got != want {
			t.Errorf("HasID(%s) = %v; want %v", in, got, want)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, in := range []string{`[{"jsonrpc":"2.0","id":1,"method":"x"}]`, `[]`, "  \n\t[1]"} {
		if _, err := Parse([]byte(in)); !errors.Is(err, ErrBatch) {
			t.Errorf("Parse(%q) = %v; want ErrBatch", in, err)
		}
	}
	if !strings.Contains(ErrBatch.Error(), "batch") {
		t.Errorf("ErrBatch = %q; want it to say batching is not supported", ErrBatch)
	}
	for _, in := range []string{``, `   `, `not json`, `{"id":1,`, `{"method":1}`, `{"id":1,"method":"x"} trailing`} {
		m, err := Parse([]byte(in))
		if err == nil {
			t.Errorf("Parse(%q) succeeded: %+v", in, m)
		}
		if errors.Is(err, ErrBatch) {
			t.Errorf("Parse(%q) = ErrBatch", in)
		}
	}
}

func TestParseIntoResets(t *testing.T) {
	var m Message
	if err := ParseInto([]byte(`{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":1}}`), &m); err != nil {
		t.Fatal(err)
	}
	if err := ParseInto([]byte(`{"jsonrpc":"2.0","method":"y"}`), &m); err != nil {
		t.Fatal(err)
	}
	if m.ID != nil || m.Params != nil || m.Method != "y" {
		t.Errorf("ParseInto kept members of the previous message: %+v", m)
	}
	if m.Kind() != KindNotification {
		t.Errorf("Kind = %d; want notification", m.Kind())
	}
}

// mustValidJSON fails unless b is valid JSON.
func mustValidJSON(t *testing.T, b []byte) {
	t.Helper()
	if !json.Valid(b) {
		t.Fatalf("not valid JSON: %s", b)
	}
}

func TestAppendResponse(t *testing.T) {
	tests := []struct {
		name        string
		id          string
		result, err string
		want        string
	}{
		{"result", `1`, `{"tools":[]}`, ``, `{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`},
		{"string id", `"a-b"`, `{}`, ``, `{"jsonrpc":"2.0","id":"a-b","result":{}}`},
		{"big id", `12345678901234567890123`, `1`, ``, `{"jsonrpc":"2.0","id":12345678901234567890123,"result":1}`},
		{"error wins", `2`, `{}`, `{"code":-1,"message":"m"}`, `{"jsonrpc":"2.0","id":2,"error":{"code":-1,"message":"m"}}`},
		{"error only", `2`, ``, `{"code":-1,"message":"m"}`, `{"jsonrpc":"2.0","id":2,"error":{"code":-1,"message":"m"}}`},
		{"empty result is null", `3`, ``, ``, `{"jsonrpc":"2.0","id":3,"result":null}`},
		{"null id", `null`, ``, `{"code":-32700,"message":"x"}`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var result, rpcErr json.RawMessage
			if tc.result != "" {
				result = json.RawMessage(tc.result)
			}
			if tc.err != "" {
				rpcErr = json.RawMessage(tc.err)
			}
			got := AppendResponse(nil, json.RawMessage(tc.id), result, rpcErr)
			if string(got) != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			mustValidJSON(t, got)
			m, err := Parse(got)
			if err != nil || m.Kind() != KindResponse {
				t.Errorf("re-parse: %v, kind %v", err, m)
			}
		})
	}
	// Appends to dst.
	got := AppendResponse([]byte("prefix:"), json.RawMessage(`1`), json.RawMessage(`{}`), nil)
	if string(got) != `prefix:{"jsonrpc":"2.0","id":1,"result":{}}` {
		t.Errorf("append to dst: %s", got)
	}
}

func TestAppendRequest(t *testing.T) {
	tests := []struct {
		name   string
		id     []byte
		method string
		params string
		want   string
	}{
		{"request", []byte(`7`), "tools/list", `{}`, `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}}`},
		{"no params", []byte(`7`), "ping", ``, `{"jsonrpc":"2.0","id":7,"method":"ping"}`},
		{"notification", nil, "notifications/cancelled", `{"requestId":3}`, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`},
		{"notification without params", nil, "notifications/initialized", ``, `{"jsonrpc":"2.0","method":"notifications/initialized"}`},
		{"string id", []byte(`"x"`), "a", `[1,2]`, `{"jsonrpc":"2.0","id":"x","method":"a","params":[1,2]}`},
		{"method needing escapes", []byte(`1`), "a\"b\\c\n", ``, `{"jsonrpc":"2.0","id":1,"method":"a\"b\\c\n"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var params json.RawMessage
			if tc.params != "" {
				params = json.RawMessage(tc.params)
			}
			got := AppendRequest(nil, tc.id, tc.method, params)
			if string(got) != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			mustValidJSON(t, got)
			m, err := Parse(got)
			if err != nil {
				t.Fatal(err)
			}
			if m.Method != tc.method {
				t.Errorf("method round trip: %q; want %q", m.Method, tc.method)
			}
			wantKind := KindRequest
			if tc.id == nil {
				wantKind = KindNotification
			}
			if m.Kind() != wantKind {
				t.Errorf("Kind = %d; want %d", m.Kind(), wantKind)
			}
		})
	}
}

func TestAppendString(t *testing.T) {
	tests := []string{
		"",
		"plain ascii",
		"tools/call",
		`quote " here`,
		`back\slash`,
		"new\nline",
		"tab\there",
		"\x00\x01\x1f",
		"\x7f del",
		"héllo wörld",
		"日本語",
		"emoji 🎉",
		"line sep \u2028 para sep \u2029",
		"\xff\xfe invalid utf-8",
		"mixed \"q\" and é\n",
	}
	for _, s := range tests {
		got := AppendString(nil, s)
		mustValidJSON(t, got)
		want, _ := json.Marshal(s)
		// json.Marshal escapes <, > and & for HTML; AppendString need not.
		// Everything else must match byte for byte.
		if !strings.ContainsAny(s, "<>&") && !bytes.Equal(got, want) {
			t.Errorf("AppendString(%q) = %s; json.Marshal gives %s", s, got, want)
		}
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Errorf("AppendString(%q) = %s does not decode: %v", s, got, err)
			continue
		}
		if utf8.ValidString(s) && back != s {
			t.Errorf("AppendString(%q) decodes to %q", s, back)
		}
	}
	// HTML characters: valid JSON that decodes to the same string.
	for _, s := range []string{"<a href='x'>&amp;</a>", "a<b", "é<"} {
		got := AppendString([]byte("x"), s)
		if got[0] != 'x' {
			t.Errorf("AppendString did not append to dst")
		}
		var back string
		if err := json.Unmarshal(got[1:], &back); err != nil || back != s {
			t.Errorf("AppendString(%q) = %s → %q, %v", s, got[1:], back, err)
		}
	}
}

func TestParseUint(t *testing.T) {
	tests := []struct {
		in string
		n  uint64
		ok bool
	}{
		{"0", 0, true},
		{"1", 1, true},
		{"42", 42, true},
		{"18446744073709551615"[:19], 1844674407370955161, true},
		{"9999999999999999999", 9999999999999999999, true},
		{"18446744073709551615", 0, false}, // 20 digits: longer than any minted id
		{"", 0, false},
		{"-1", 0, false},
		{"+1", 0, false},
		{"1.5", 0, false},
		{"1e3", 0, false},
		{`"1"`, 0, false},
		{" 1", 0, false},
		{"12a", 0, false},
		{"null", 0, false},
	}
	for _, tc := range tests {
		n, ok := Uint([]byte(tc.in))
		if n != tc.n || ok != tc.ok {
			t.Errorf("Uint(%q) = %d, %v; want %d, %v", tc.in, n, ok, tc.n, tc.ok)
		}
	}
}

func TestIDFromPrefix(t *testing.T) {
	tests := []struct {
		name   string
		prefix string
		n      uint64
		ok     bool
	}{
		{"response", `{"jsonrpc":"2.0","id":42,"result":`, 42, true},
		{"spaces around colon", `{"jsonrpc":"2.0","id" : 7,"result":{"x":`, 7, true},
		{"tabs", "{\"id\"\t:\t9,", 9, true},
		{"id first", `{"id":123456,"jsonrpc":"2.0","result":{"content":[{"type":"text","text":"aaaa`, 123456, true},
		{"id complete before the cut", `{"jsonrpc":"2.0","id":42,`, 42, true},
		// The digits may go on past the prefix (42 could be 421): unknown.
		{"id cut at the end", `{"jsonrpc":"2.0","id":42`, 0, false},
		{"string id", `{"jsonrpc":"2.0","id":"42","result":`, 0, false},
		{"string id with spaces", `{"jsonrpc":"2.0","id" : "abc","result":`, 0, false},
		{"negative id", `{"jsonrpc":"2.0","id":-3,"result":`, 0, false},
		{"null id", `{"jsonrpc":"2.0","id":null,"error":`, 0, false},
		{"no id", `{"jsonrpc":"2.0","result":{"content":[{"type":"text","text":"aaaa`, 0, false},
		{"id key without colon", `{"jsonrpc":"2.0","method":"x","params":["id",3]}`, 0, false},
		{"empty", ``, 0, false},
		{"id cut before value", `{"jsonrpc":"2.0","id":`, 0, false},
		{"nested id before the top-level id", `{"jsonrpc":"2.0","result":{"content":[{"id":7,"text":"aaaa`, 0, false},
		{"id inside a string value", `{"jsonrpc":"2.0","result":{"text":"the \"id\": 5 is`, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, ok := UintIDFromPrefix([]byte(tc.prefix))
			if n != tc.n || ok != tc.ok {
				t.Errorf("UintIDFromPrefix(%s) = %d, %v; want %d, %v", tc.prefix, n, ok, tc.n, tc.ok)
			}
		})
	}
}

// TestIDFromPrefixEveryCut cuts real messages at every byte: UintIDFromPrefix
// must never panic and never report an id the message does not have.
func TestIDFromPrefixEveryCut(t *testing.T) {
	msgs := []struct {
		msg string
		id  uint64 // 0: no numeric top-level id
	}{
		{`{"jsonrpc":"2.0","id":1,"result":{}}`, 1},
		{`{"jsonrpc":"2.0","id":4217,"result":{"content":[{"type":"text","text":"a \"quoted\" \\ text"}]}}`, 4217},
		{`{"result":{"content":[{"id":7,"text":"x"}],"isError":false},"jsonrpc":"2.0","id":12}`, 12},
		{` { "jsonrpc" : "2.0" , "id" : 99 , "error" : { "code" : -1 , "message" : "m" } } `, 99},
		{`{"jsonrpc":"2.0","id":"42","result":{"id":42}}`, 0},
		{`{"jsonrpc":"2.0","method":"notifications/progress","params":{"id":3}}`, 0},
		{`{"a":[1,2,{"b":"}"}],"c":"\"id\":5","id":6,"result":null}`, 6},
	}
	for _, m := range msgs {
		if !json.Valid([]byte(m.msg)) {
			t.Fatalf("test message is not JSON: %s", m.msg)
		}
		for k := 0; k <= len(m.msg); k++ {
			prefix := []byte(m.msg[:k])
			var n uint64
			var ok bool
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("UintIDFromPrefix(%q) panicked: %v", prefix, r)
					}
				}()
				n, ok = UintIDFromPrefix(prefix)
			}()
			if ok && (m.id == 0 || n != m.id) {
				t.Errorf("UintIDFromPrefix(%q) = %d; the message's top-level id is %d (0: none)", prefix, n, m.id)
			}
		}
	}
}

func TestErrorResponse(t *testing.T) {
	tests := []struct {
		id   json.RawMessage
		code int
		msg  string
		want string
	}{
		{nil, -32600, "bad", `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"bad"}}`},
		{json.RawMessage(`5`), -32000, "x", `{"jsonrpc":"2.0","id":5,"error":{"code":-32000,"message":"x"}}`},
		{json.RawMessage(`"s"`), 1, `say "hi"` + "\n", `{"jsonrpc":"2.0","id":"s","error":{"code":1,"message":"say \"hi\"\n"}}`},
		{json.RawMessage{}, 0, "", `{"jsonrpc":"2.0","id":null,"error":{"code":0,"message":""}}`},
	}
	for _, tc := range tests {
		got := ErrorResponse(tc.id, tc.code, tc.msg)
		if string(got) != tc.want {
			t.Errorf("ErrorResponse(%s, %d, %q) = %s; want %s", tc.id, tc.code, tc.msg, got, tc.want)
		}
		mustValidJSON(t, got)
		m, err := Parse(got)
		if err != nil || m.Kind() != KindResponse {
			t.Errorf("ErrorResponse does not parse as a response: %v", err)
		}
	}
	// Non-ASCII and destination names with quotes stay valid JSON.
	got := ErrorResponse(nil, -32000, `destination "wörld" failed: "exit status 1"`)
	mustValidJSON(t, got)
	var v struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(got, &v); err != nil || v.Error.Message != `destination "wörld" failed: "exit status 1"` {
		t.Errorf("message round trip: %q, %v", v.Error.Message, err)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":"x","method":"a\u0000b","params":{"_meta":{"progressToken":1}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`{"jsonrpc":"2.0","id":null,"method":"x"}`,
		`{"id":1e400,"method":"x"}`,
		`{"id":-0.0,"method":"\ud800","params":null}`,
		`[{"id":1}]`,
		` `,
		`{"method":"é","id":"\"","params":[]}`,
		`{"id":1,"ID":2,"Method":"x","method":"y","id":3}`,
		`{"m\u0065thod":"x","\u0069d":1,"params":{"a":"}"}}`,
		`{"method":null,"id":1}`,
		`{"jsonrpc":2,"method":"x"}`,
		`{"id":1,"result":[1,{"a":[]}] , "method" : "\u00e9"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		// Any bytes can be the prefix of a too-long line.
		_, _ = UintIDFromPrefix(b)
		m, err := Parse(b)
		// Reference: encoding/json into a map keeps each member's raw bytes
		// (exact, case-sensitive keys; the last duplicate wins).
		var ref map[string]json.RawMessage
		refErr := json.Unmarshal(b, &ref)
		if err != nil {
			if m != nil {
				t.Fatalf("Parse returned a message with error %v", err)
			}
			if errors.Is(err, ErrBatch) {
				if i := bytes.IndexAny(b, "[{\"0123456789-tfn"); i < 0 || b[i] != '[' {
					t.Fatalf("ErrBatch for %q, which does not start with '['", b)
				}
				return
			}
			if refErr == nil && ref != nil && !ambiguousMembers(b) {
				if meth, ok := ref["method"]; !ok || meth[0] == '"' {
					t.Fatalf("Parse(%q) failed (%v) but it is a JSON object with a string or no method", b, err)
				}
			}
			return
		}
		if refErr != nil || ref == nil {
			t.Fatalf("Parse(%q) succeeded but it is not a JSON object (%v)", b, refErr)
		}
		if ambiguousMembers(b) {
			t.Fatalf("Parse(%q) succeeded, but a JSON-RPC member appears twice or in another letter case", b)
		}
		for key, got := range map[string]json.RawMessage{"id": m.ID, "params": m.Params, "result": m.Result, "error": m.Error} {
			if !bytes.Equal(got, ref[key]) {
				t.Fatalf("Parse(%q): %s = %q; encoding/json gives %q", b, key, got, ref[key])
			}
		}
		for key, got := range map[string]string{"method": m.Method, "jsonrpc": m.JSONRPC} {
			raw, ok := ref[key]
			if !ok {
				if got != "" {
					t.Fatalf("Parse(%q): %s = %q but the member is absent", b, key, got)
				}
				continue
			}
			var want string
			if json.Unmarshal(raw, &want) != nil || raw[0] != '"' {
				continue // not a string: Parse's choice
			}
			if utf8.Valid(raw) && got != want {
				t.Fatalf("Parse(%q): %s = %q; want %q", b, key, got, want)
			}
		}
		kind := m.Kind()
		if kind < KindInvalid || kind > KindResponse {
			t.Fatalf("Kind = %d", kind)
		}
		switch kind {
		case KindRequest:
			out := AppendRequest(nil, m.ID, m.Method, m.Params)
			if !json.Valid(out) {
				t.Fatalf("AppendRequest gives invalid JSON: %s (from %s)", out, b)
			}
			back, err := Parse(out)
			if err != nil {
				t.Fatalf("re-parse %s: %v", out, err)
			}
			if back.Kind() != KindRequest {
				t.Fatalf("re-encoded request %s has kind %d", out, back.Kind())
			}
			if !bytes.Equal(back.ID, m.ID) {
				t.Fatalf("id %s became %s", m.ID, back.ID)
			}
			if utf8.ValidString(m.Method) && back.Method != m.Method {
				t.Fatalf("method %q became %q", m.Method, back.Method)
			}
			// Splicing a member keeps the params valid JSON.
			if meta := Member(m.Params, "_meta"); Member(meta, "progressToken") != nil {
				nm, err1 := Replace(meta, "progressToken", []byte("1"))
				np, err2 := Replace(m.Params, "_meta", nm)
				if err1 != nil || err2 != nil || !json.Valid(np) {
					t.Fatalf("splicing the progress token gives %s (%v, %v)", np, err1, err2)
				}
			}
		case KindNotification:
			out := AppendRequest(nil, nil, m.Method, m.Params)
			if !json.Valid(out) {
				t.Fatalf("AppendRequest (notification) gives invalid JSON: %s", out)
			}
		case KindResponse:
			out := AppendResponse(nil, m.ID, m.Result, m.Error)
			if !json.Valid(out) {
				t.Fatalf("AppendResponse gives invalid JSON: %s", out)
			}
		}
		// A too-long line's prefix never yields an id the whole message
		// does not have.
		if kind == KindResponse && bytes.Count(b, []byte(`"id"`)) == 1 && !bytes.Contains(b, []byte(`\u`)) {
			for _, k := range []int{len(b), len(b) / 2, len(b) / 3, 2 * len(b) / 3, len(b) - 1} {
				if k < 0 || k > len(b) {
					continue
				}
				if n, ok := UintIDFromPrefix(b[:k]); ok {
					if full, fok := Uint(m.ID); !fok || full != n {
						t.Fatalf("UintIDFromPrefix(%q) = %d, but the message's id is %s", b[:k], n, m.ID)
					}
				}
			}
		}
		_ = ErrorResponse(m.ID, -1, m.Method)
	})
}

// ambiguousMembers reports whether the top-level object b names a JSON-RPC
// member twice, or in another letter case (read by encoding/json's own
// decoder, independently of the parser under test).
func ambiguousMembers(b []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return false
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		key, _ := tok.(string)
		for _, name := range []string{"jsonrpc", "id", "method", "params", "result", "error"} {
			if strings.EqualFold(key, name) {
				if key != name || seen[name] {
					return true
				}
				seen[name] = true
			}
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return false
		}
	}
	return false
}
