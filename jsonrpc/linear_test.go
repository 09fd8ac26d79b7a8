package jsonrpc

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stelae-bridge/stelae-bridge/tests/linear"
)

// Parsers run in linear time (issue 34, defect 2: validString and
// skipString looked for the next quote again after every escape, so 640 KB
// of \n cost 8.5 s of CPU): tests/linear's check, on every scanner.

// assertLinear fails t when f's time per byte grows with its input
// (linear.Check, from 4 KiB to 64 KiB): make(n) builds an input of about
// n bytes.
func assertLinear(t *testing.T, f func([]byte), make func(n int) []byte) {
	t.Helper()
	linear.Check(t, t.Name(), f, make, 4<<10)
}

// escapeInputs are escape-heavy string bodies (without quotes) of about n
// bytes: every escape the grammar has, and the escaped quote that ends a
// search for the closing one.
var escapeInputs = map[string]func(n int) string{
	"newlines":   func(n int) string { return strings.Repeat(`\n`, n/2) },
	"quotes":     func(n int) string { return strings.Repeat(`\"`, n/2) },
	"backslashs": func(n int) string { return strings.Repeat(`\\`, n/2) },
	"unicode":    func(n int) string { return strings.Repeat(`\u00e9`, n/6) },
	"sparse":     func(n int) string { return strings.Repeat(`abcdefg\t`, n/9) },
	"plain":      func(n int) string { return strings.Repeat(`a`, n) },
}

func TestScannersLinear(t *testing.T) {
	for name, body := range escapeInputs {
		str := func(n int) []byte { return []byte(`"` + body(n) + `"`) }
		// The long string first, the member looked for after it.
		obj := func(n int) []byte { return []byte(`{"text":"` + body(n) + `","k":1}`) }
		t.Run(name+"/Valid", func(t *testing.T) {
			assertLinear(t, func(b []byte) {
				if !Valid(b) {
					t.Fatal("not valid")
				}
			}, str)
		})
		t.Run(name+"/skipString", func(t *testing.T) {
			assertLinear(t, func(b []byte) {
				if skipString(b, 0) != len(b) {
					t.Fatal("skipString missed the end")
				}
			}, str)
		})
		t.Run(name+"/Member", func(t *testing.T) {
			assertLinear(t, func(b []byte) {
				if string(Member(b, "k")) != "1" {
					t.Fatal("member k not found")
				}
			}, obj)
		})
		t.Run(name+"/Replace", func(t *testing.T) {
			assertLinear(t, func(b []byte) {
				if _, err := Replace(b, "k", []byte("2")); err != nil {
					t.Fatal(err)
				}
			}, obj)
		})
		t.Run(name+"/Parse", func(t *testing.T) {
			msg := func(n int) []byte {
				return []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"text":"` + body(n) + `"}}}`)
			}
			assertLinear(t, func(b []byte) {
				var m Message
				if err := ParseInto(b, &m); err != nil {
					t.Fatal(err)
				}
			}, msg)
		})
	}
	// Nesting: skipValue and Valid keep one counter or one stack byte per
	// level; a value nested n deep costs n, not n².
	deep := func(n int) []byte {
		n = min(n/2, 9000) // encoding/json's depth limit is 10,000
		return []byte(`{"a":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `,"k":1}`)
	}
	t.Run("deep/Member", func(t *testing.T) {
		// 9000 deep at most: small inputs, so this measures from 1 KiB
		// to 16 KiB of nesting.
		linear.Check(t, "skipValue", func(b []byte) { Member(b, "k") }, deep, 1<<10)
	})
	t.Run("deep/Valid", func(t *testing.T) {
		linear.Check(t, "Valid", func(b []byte) { Valid(b) }, deep, 1<<10)
	})
	t.Run("members/EachMember", func(t *testing.T) {
		// Many members, each with an escaped string.
		assertLinear(t, func(b []byte) {
			EachMember(b, func(string, []byte) bool { return true })
		}, func(n int) []byte {
			var buf bytes.Buffer
			buf.WriteString(`{`)
			for i := 0; buf.Len() < n; i++ {
				if i > 0 {
					buf.WriteByte(',')
				}
				buf.WriteString(`"k\n":"\n\"\\"`)
			}
			buf.WriteString(`}`)
			return buf.Bytes()
		})
	})
}

// FuzzScanEscapes holds the string scanners (validString through Valid,
// skipString, Member, String) to encoding/json on escape-heavy strings:
// each fuzz byte picks a piece — an escape, a broken escape, a quote, a
// control byte, plain text — so that nearly every input is about escapes.
func FuzzScanEscapes(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7})
	f.Add([]byte{1, 1, 1, 1, 1, 1})
	f.Add([]byte{2, 9, 2, 9, 14})
	f.Add([]byte{10, 11, 12, 13})
	f.Fuzz(func(t *testing.T, picks []byte) {
		pieces := []string{`\n`, `\"`, `\\`, `\/`, `\u00e9`, `\uD83D\uDE00`, `\b\f\r\t`, `a`, `xyzw1234abcd`, ` `,
			`\`, `\x`, `\u12`, `"`, "\x01", "\x7f", "\xff", `\u`, `\\"`}
		var sb strings.Builder
		sb.WriteByte('"')
		for _, p := range picks {
			sb.WriteString(pieces[int(p)%len(pieces)])
		}
		sb.WriteByte('"')
		str := []byte(sb.String())
		valid := json.Valid(str)
		if got := Valid(str); got != valid {
			t.Fatalf("Valid(%q) = %v; encoding/json says %v", str, got, valid)
		}
		obj := []byte(`{"s":` + string(str) + `,"k":[1]}`)
		if got := Valid(obj); got != json.Valid(obj) {
			t.Fatalf("Valid(%q) = %v; encoding/json says %v", obj, got, !got)
		}
		if !valid {
			// skipString and the walkers need valid JSON; they must not
			// panic on anything else.
			_ = skipString(str, 0)
			_ = Member(str, "k")
			_ = Member(obj, "k")
			_, _ = UintIDFromPrefix(obj)
			return
		}
		if end := skipString(str, 0); end != len(str) {
			t.Fatalf("skipString(%q) = %d; the string is %d bytes", str, end, len(str))
		}
		var want string
		if err := json.Unmarshal(str, &want); err != nil {
			t.Fatal(err)
		}
		if got := String(str); got != want && utf8.Valid(str) {
			t.Fatalf("String(%q) = %q; encoding/json says %q", str, got, want)
		}
		if got := Member(obj, "s"); !bytes.Equal(got, str) {
			t.Fatalf("Member(%q, s) = %q", obj, got)
		}
		if got := Member(obj, "k"); string(got) != "[1]" {
			t.Fatalf("Member(%q, k) = %q; want [1]", obj, got)
		}
		if !utf8.Valid(str) {
			// String keeps bytes that are not UTF-8 as they are when the
			// string has no escape; encoding/json replaces them.
			return
		}
		// The string as a key, too.
		keyed := []byte(`{` + string(str) + `:1,"k":2}`)
		var m map[string]int
		if err := json.Unmarshal(keyed, &m); err != nil {
			t.Fatal(err)
		}
		seen := map[string]int{}
		EachMember(keyed, func(k string, v []byte) bool {
			var n int
			_ = json.Unmarshal(v, &n)
			seen[k] = n
			return true
		})
		for k, v := range m {
			if seen[k] != v {
				t.Fatalf("EachMember(%q) = %v; encoding/json says %v", keyed, seen, m)
			}
		}
	})
}
