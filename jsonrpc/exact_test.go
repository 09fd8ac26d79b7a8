package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestExactMember(t *testing.T) {
	for _, tc := range []struct {
		obj, key string
		want     string // the value; "" for none
		err      string // a part of the error; "" for none
	}{
		{`{"uri":"res://a/public"}`, "uri", `"res://a/public"`, ""},
		{` { "a" : 1 , "uri" : [1, {"URI":2}] } `, "uri", `[1, {"URI":2}]`, ""}, // nested members are not obj's
		{`{"a":1}`, "uri", "", ""},
		{`{}`, "uri", "", ""},
		{`{"uri":"a","URI":"b"}`, "uri", "", `not "URI"`},
		{`{"URI":"b"}`, "uri", "", `not "URI"`},
		{`{"Uri":"b","uri":"a"}`, "uri", "", `not "Uri"`},
		{`{"uri":"a","uri":"a"}`, "uri", "", "given twice"}, // even alike: decoders take the first or the last
		{`{"uri":"a","uri":"b"}`, "uri", "", "given twice"},
		// Escaped names are compared as decoded.
		{`{"\u0075ri":"a"}`, "uri", `"a"`, ""},
		{`{"uri":"a","\u0075ri":"b"}`, "uri", "", "given twice"},
		{`{"\u0055RI":"a"}`, "uri", "", `not "URI"`},
		{`{"uri":"a","\u0055ri":"b"}`, "uri", "", `not "Uri"`},
		{`{"u\"ri":"a","uri":"b"}`, "uri", `"b"`, ""},
		// Unicode simple folding, as encoding/json and strings.EqualFold.
		{`{"key":1,"\u212Aey":2}`, "key", "", `not "\u212aey"`},
		{"{\"\u212Aey\":2}", "key", "", `not "\u212aey"`},
		{`{"ſ":1}`, "s", "", `not "\u017f"`},
		{`{"progreſsToken":1}`, "progressToken", "", "not"},
		// Full case folding, the Turkish i, '_' and '-' (encoding/json/v2
		// without case).
		{`{"progreßToken":1}`, "progressToken", "", "not"},
		{`{"requeﬆId":1}`, "requestId", "", "not"},
		{`{"İd":1}`, "id", "", "not"},
		{`{"ıd":1}`, "id", "", "not"},
		{`{"meta":1}`, "_meta", "", `not "meta"`},
		{`{"_meta":{},"_Meta":{}}`, "_meta", "", `not "_Meta"`},
		{`{"progress_token":1}`, "progressToken", "", "not"},
		{`{"task-Id":1,"taskId":"t"}`, "taskId", "", "not"},
		// Not alike.
		{`{"uri2":1,"ur":2,"urı_x":3,"uri":4}`, "uri", `4`, ""},
		{`{"names":1,"nam":2,"name":"x"}`, "name", `"x"`, ""},
		{`{"Å":1,"a":2}`, "a", `2`, ""},
		// Not an object.
		{`[{"uri":"a"}]`, "uri", "", "JSON object"},
		{`"uri"`, "uri", "", "JSON object"},
		{``, "uri", "", "JSON object"},
		{`null`, "uri", "", "JSON object"},
		{`{"uri":"a"`, "uri", "", "well-formed"},
	} {
		val, err := ExactMember([]byte(tc.obj), tc.key)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ExactMember(%s, %q) = %s, %v; want an error with %q", tc.obj, tc.key, val, err, tc.err)
		case tc.err != "" && val != nil:
			t.Errorf("ExactMember(%s, %q) = %s with its error", tc.obj, tc.key, val)
		case tc.err == "" && (err != nil || string(val) != tc.want || (tc.want == "") != (val == nil)):
			t.Errorf("ExactMember(%s, %q) = %q, %v; want %q", tc.obj, tc.key, val, err, tc.want)
		}
		var me *MemberError
		if err != nil && (!errors.As(err, &me) || me.Key != tc.key) {
			t.Errorf("ExactMember(%s, %q): %T %v is not a *MemberError for the key", tc.obj, tc.key, err, err)
		}
	}
}

func TestExactMembers(t *testing.T) {
	obj := []byte(`{"name":"echo","arguments":{"Name":1},"_meta":{"progressToken":1}}`)
	vals := make([][]byte, 3)
	if err := ExactMembers(obj, []string{"name", "arguments", "uri"}, vals); err != nil ||
		string(vals[0]) != `"echo"` || string(vals[1]) != `{"Name":1}` || vals[2] != nil {
		t.Fatalf("ExactMembers = %q, %v", vals, err)
	}
	vals[2] = []byte("stale")
	err := ExactMembers([]byte(`{"name":"echo","URI":"x"}`), []string{"name", "arguments", "uri"}, vals)
	if err == nil || !strings.Contains(err.Error(), `"uri" must be one member named exactly "uri"`) || vals[0] != nil || vals[2] != nil {
		t.Fatalf("ExactMembers = %q, %v; want the URI refused and no values", vals, err)
	}
	// A walk that compares plain names allocates nothing.
	if n := testing.AllocsPerRun(100, func() { _ = ExactMembers(obj, []string{"name", "arguments", "uri"}, vals) }); n != 0 {
		t.Errorf("ExactMembers allocates %.0f times per call", n)
	}
}

// FuzzExactMember holds ExactMember to the decoders it speaks for: when it
// reads a value, encoding/json (case-insensitive, the last of duplicates)
// and a case-sensitive decoder keeping the last read that value too; when
// it reads none, they read none.
func FuzzExactMember(f *testing.F) {
	for _, s := range []string{
		`{"uri":"a"}`, `{"uri":"a","URI":"b"}`, `{"\u0075ri":"a"}`, `{"uri":1,"uri":2}`, "{\"\u212Aey\":1}",
		`{"key":1,"kEy":2}`, `{"ſ":1,"s":2}`, `{"name":"x","Name":"y","arguments":{}}`, `{"_meta":{"progressToken":1}}`,
		`{ "a" : [ {"uri":3} ] , "uri" : { } }`, `{}`, `[]`, `{"progreßToken":1}`,
	} {
		for k := range fuzzKeys {
			f.Add(s, uint8(k))
		}
	}
	f.Fuzz(func(t *testing.T, obj string, k uint8) {
		key := fuzzKeys[int(k)%len(fuzzKeys)]
		if !json.Valid([]byte(obj)) {
			return
		}
		val, err := ExactMember([]byte(obj), key)
		if err != nil {
			return
		}
		var m map[string]json.RawMessage
		if json.Unmarshal([]byte(obj), &m) != nil {
			t.Fatalf("ExactMember(%s, %q) read a value of what is not an object", obj, key)
		}
		// Case-sensitive, the last of duplicates.
		if got, ok := m[key]; ok != (val != nil) || !bytes.Equal(got, val) {
			t.Fatalf("ExactMember(%s, %q) = %s; a case-sensitive decoder reads %s", obj, key, val, got)
		}
		// encoding/json into a struct: any case, the last of duplicates.
		typ := reflect.StructOf([]reflect.StructField{{Name: "V", Type: reflect.TypeFor[json.RawMessage](), Tag: reflect.StructTag(`json:"` + key + `"`)}})
		p := reflect.New(typ)
		if err := json.Unmarshal([]byte(obj), p.Interface()); err != nil {
			t.Fatalf("encoding/json: %v", err)
		}
		if got := p.Elem().Field(0).Bytes(); !bytes.Equal(got, val) {
			t.Fatalf("ExactMember(%s, %q) = %s; encoding/json reads %s", obj, key, val, got)
		}
		// No other member is key in any case.
		for name := range m {
			if name != key && strings.EqualFold(name, key) {
				t.Fatalf("ExactMember(%s, %q) read a value beside member %q", obj, key, name)
			}
		}
	})
}

var fuzzKeys = []string{"uri", "name", "key", "s", "_meta", "progressToken", "requestId", "taskId"}

// BenchmarkExactMembers: the screen's walk over a tools/call's params.
func BenchmarkExactMembers(b *testing.B) {
	params := []byte(`{"name":"echo","arguments":{"text":"hi","n":[1,2,3]},"_meta":{"progressToken":"tok-1"}}`)
	keys := []string{"name", "arguments", "_meta"}
	vals := make([][]byte, 3)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := ExactMembers(params, keys, vals); err != nil {
			b.Fatal(err)
		}
	}
}
