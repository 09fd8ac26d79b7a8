package jsonrpc

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestMemberAndReplace(t *testing.T) {
	obj := json.RawMessage(`{"a":1,"b":{"c":"d"}}`)
	if got := Member(obj, "b"); string(got) != `{"c":"d"}` {
		t.Errorf("Member b = %s", got)
	}
	if got := Member(obj, "z"); got != nil {
		t.Errorf("Member z = %s; want nil", got)
	}
	if got := Member(nil, "a"); got != nil {
		t.Errorf("Member of nil = %s", got)
	}
	if got := Member(json.RawMessage(`[1]`), "a"); got != nil {
		t.Errorf("Member of array = %s", got)
	}
	if got := Member(json.RawMessage(`{"a":1,"a":2}`), "a"); string(got) != "2" {
		t.Errorf("Member of a duplicate = %s; want the last, as decoders keep", got)
	}
	out, err := Replace(obj, "a", json.RawMessage(`"x"`))
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != `{"a":"x","b":{"c":"d"}}` {
		t.Errorf("Replace a = %s", out)
	}
	if _, err := Replace(json.RawMessage(`[1]`), "a", json.RawMessage(`1`)); err == nil {
		t.Error("Replace on an array succeeded")
	}
	for in, want := range map[string]string{
		`{}`:                `{"k":1}`,
		`{ }`:               `{ "k":1}`,
		`{"a":0}`:           `{"a":0,"k":1}`,
		`{"a":0 , "b":[] }`: `{"a":0 , "b":[] ,"k":1}`,
		`{"k":0,"k":2}`:     `{"k":1,"k":1}`,
	} {
		got, err := Replace([]byte(in), "k", []byte("1"))
		if err != nil || string(got) != want || !json.Valid(got) {
			t.Errorf("Replace(%s) = %s, %v; want %s", in, got, err, want)
		}
	}
}

// TestReplaceIsByteForByte: splicing a member keeps every other byte of the
// object as the client wrote it: key order, spaces, <>& and unicode escapes,
// big numbers (a map round trip re-sorted keys, escaped <>& and lost
// nothing else only by luck).
func TestReplaceIsByteForByte(t *testing.T) {
	in := []byte(`{ "zeta":1, "alpha" : "<b>&amp;</b> \u00e9\u2028", "big": 123456789012345678901234567890.5e-3,
		"_meta": {"progressToken":"client-7","z":[3,2,1]}, "nested":{"b":1,"a":2} }`)
	meta := Member(in, "_meta")
	newMeta, err := Replace(meta, "progressToken", []byte("42"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := Replace(in, "_meta", newMeta)
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.Replace(in, []byte(`"progressToken":"client-7"`), []byte(`"progressToken":42`), 1)
	if !bytes.Equal(out, want) {
		t.Errorf("Replace changed more than the token:\n got %s\nwant %s", out, want)
	}
}

func FuzzReplace(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, `{"k":{"x":[1,{"k":2}]},"k":"y"}`, `{"\u006b":1}`, `[1]`, `{"a":`} {
		f.Add([]byte(s), []byte(`"v"`))
	}
	f.Fuzz(func(t *testing.T, obj, val []byte) {
		if !json.Valid(val) {
			return
		}
		out, err := Replace(obj, "k", val)
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("Replace(%q, %q) = %q is not JSON", obj, val, out)
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(out, &m) != nil {
			t.Fatalf("Replace(%q) = %q is not an object", obj, out)
		}
		if got := Member(out, "k"); !bytes.Equal(got, bytes.TrimSpace(val)) { // a member's value is read without its surrounding space
			t.Fatalf("Member(Replace(%q), k) = %q; want %q", obj, got, val)
		}
	})
}

func TestDelete(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"a":1,"io.x/b":2,"c":[3]}`, `{"a":1,"c":[3]}`},
		{`{ "io.x/b" : {"k":1} }`, `{}`},
		{`{"a" : "<&>","io.x/b":2}`, `{"a" : "<&>"}`},
		{`{"a":1}`, `{"a":1}`},
		{`{}`, `{}`},
	} {
		got, err := Delete([]byte(tc.in), func(k string) bool { return strings.HasPrefix(k, "io.x/") })
		if err != nil || string(got) != tc.want {
			t.Errorf("Delete(%s) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
	if _, err := Delete([]byte(`[1]`), func(string) bool { return true }); err == nil {
		t.Error("Delete accepted an array")
	}
}

func TestRewrite(t *testing.T) {
	drop := func(k, v []byte) []byte {
		if KeyIs(k, "drop") || KeyHasPrefix(k, "io.x/") {
			return nil
		}
		if KeyIs(k, "swap") {
			return []byte(`"new"`)
		}
		return v
	}
	for _, tc := range []struct{ in, want string }{
		{`{}`, `{}`},
		{`{"a":1}`, `{"a":1}`},
		{`{"a": 1 , "b" :[1, 2]}`, `{"a": 1 , "b" :[1, 2]}`}, // unchanged: obj itself
		{`{"drop":1}`, `{}`},
		{`{"a":1,"drop":{"x":[1,"}"]},"b":"\u00e9"}`, `{"a":1,"b":"\u00e9"}`},
		{`{"swap":1, "io.x/k":2 ,"c": true}`, `{"swap":"new","c":true}`},
		{`{"dr\u006fp":1,"a":2}`, `{"a":2}`}, // an escaped key is read as decoders read it
	} {
		got := Rewrite([]byte(tc.in), drop)
		if string(got) != tc.want {
			t.Errorf("Rewrite(%s) = %s; want %s", tc.in, got, tc.want)
		}
	}
	in := []byte(`{"a":1,"b":2}`)
	if got := Rewrite(in, func(_, v []byte) []byte { return v }); &got[0] != &in[0] {
		t.Error("Rewrite that changes nothing copied its input")
	}
	if n := testing.AllocsPerRun(100, func() { Rewrite(in, func(_, v []byte) []byte { return v }) }); n != 0 {
		t.Errorf("Rewrite that changes nothing allocates %v times", n)
	}
	if n := testing.AllocsPerRun(100, func() { Member(in, "b") }); n != 0 {
		t.Errorf("Member allocates %v times", n)
	}
}

// FuzzRewrite: for any valid object, dropping and replacing members gives
// valid JSON holding exactly the members kept, with their values.
func FuzzRewrite(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1,"b":[{"c":"d"}]}`, `{"x":"\"}","y":null}`, `{ "a" : { } , "a":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, obj []byte) {
		var in map[string]json.RawMessage
		if !json.Valid(obj) || json.Unmarshal(obj, &in) != nil || in == nil {
			return
		}
		out := Rewrite(obj, func(k, v []byte) []byte {
			var key string // as decoders read it (invalid UTF-8 replaced)
			_ = json.Unmarshal(k, &key)
			switch {
			case len(key)%3 == 0:
				return nil
			case len(key)%3 == 1:
				return []byte(`{"r":true}`)
			}
			return v
		})
		var got map[string]json.RawMessage
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("Rewrite(%s) = %s: not a JSON object: %v", obj, out, err)
		}
		for k, v := range in {
			g, ok := got[k]
			switch len(k) % 3 {
			case 0:
				if ok {
					t.Fatalf("Rewrite(%s) = %s kept %q", obj, out, k)
				}
			case 1:
				if string(g) != `{"r":true}` {
					t.Fatalf("Rewrite(%s) = %s: %q is %s", obj, out, k, g)
				}
			default:
				var a, b any
				_ = json.Unmarshal(v, &a)
				_ = json.Unmarshal(g, &b)
				if !ok || !jsonEqual(a, b) {
					t.Fatalf("Rewrite(%s) = %s: %q is %s, was %s", obj, out, k, g, v)
				}
			}
		}
	})
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}
