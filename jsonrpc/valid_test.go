package jsonrpc

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestValid(t *testing.T) {
	for _, s := range []string{
		``, ` `, `{}`, `[]`, `{"a":1}`, `{"a":1,}`, `[1,]`, `[1 2]`, `{"a" 1}`, `{"a":}`, `{,}`, `{"a":1}x`, `{"a":1} `, " \t\n\r{}\n",
		`"x"`, `"\u00e9\n\"\\\/"`, `"\x"`, `"\u00g0"`, `"\u00e"`, "\"a\x01b\"", "\"a\x7fb\"", "\"\xff\xfe\"", `"unterminated`, `"a\"`,
		`0`, `-0`, `01`, `-`, `1.`, `1.5`, `.5`, `1e5`, `1E+5`, `1e`, `1e+`, `-1.5e-7`, `2.`, `1.e3`, `+1`, `0x10`,
		`true`, `false`, `null`, `tru`, `nul`, `truex`, `True`, `[true,false,null]`, `{"a":[{"b":{}}]}`, `[[[]]]`, `[[]`, `]`, `}`,
		`{"a":1,"a":2}`, `{"":""}`, `[{"a":"}"},"]"]`,
	} {
		if got, want := Valid([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Errorf("Valid(%q) = %v; encoding/json says %v", s, got, want)
		}
	}
	// Long strings with one special byte at every position: the eight-byte
	// steps must see it wherever it falls.
	for _, special := range []string{"\x00", "\x1f", "\\", "\\n", "\\u12", "\x7f", "\xff", " ", "\""} {
		for pos := 0; pos < 40; pos++ {
			s := `"` + strings.Repeat("a", pos) + special + strings.Repeat("b", 40-pos) + `"`
			if got, want := Valid([]byte(s)), json.Valid([]byte(s)); got != want {
				t.Errorf("Valid(%q) = %v; encoding/json says %v", s, got, want)
			}
		}
	}
	for _, depth := range []int{9999, 10000, 10001} {
		s := strings.Repeat("[", depth) + strings.Repeat("]", depth)
		if got, want := Valid([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Errorf("Valid(depth %d) = %v; encoding/json says %v", depth, got, want)
		}
	}
}

// FuzzValid holds Valid to encoding/json's Valid.
func FuzzValid(f *testing.F) {
	for _, s := range []string{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"h\u00e9\"i"}}}`,
		`[1,-2.5e+3,true,null,"\\"]`, `{"a":{"b":[{}]}}`, "\"\x00\"", `01`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := Valid(b), json.Valid(b); got != want {
			t.Fatalf("Valid(%q) = %v; encoding/json says %v", b, got, want)
		}
	})
}

func BenchmarkValid(b *testing.B) {
	big := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + strings.Repeat("x", 1<<20) + `"}}}`)
	small := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`)
	for _, tc := range []struct {
		name string
		data []byte
	}{{"small", small}, {"1MiB", big}} {
		b.Run("encoding-json/"+tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(tc.data)))
			for i := 0; i < b.N; i++ {
				json.Valid(tc.data)
			}
		})
		b.Run("jsonrpc/"+tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(tc.data)))
			for i := 0; i < b.N; i++ {
				Valid(tc.data)
			}
		})
	}
}
