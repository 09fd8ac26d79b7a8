package jsonrpc

import (
	"strings"
	"testing"
)

// BenchmarkScan measures the string scanners on escape-heavy and plain
// strings: Valid (validString), skipString, and Member past a long string
// (skipString inside the member walk). Plain strings are the common case
// and take validString's eight-byte steps; 16 KiB of escapes was 5 ms
// before skipping stopped searching for the closing quote again after each
// escape (issue 34).
func BenchmarkScan(b *testing.B) {
	inputs := []struct {
		name string
		body string
	}{
		{"plain-100B", strings.Repeat("a", 100)},
		{"plain-1MiB", strings.Repeat("abcdefgh", 1<<17)},
		{"text-64KiB", strings.Repeat(`line of text with a \"quote\"\n`, 64<<10/32)},
		{"newlines-16KiB", strings.Repeat(`\n`, 8<<10)},
		{"unicode-16KiB", strings.Repeat(`\u00e9`, 16<<10/6)},
	}
	for _, in := range inputs {
		str := []byte(`"` + in.body + `"`)
		obj := []byte(`{"text":"` + in.body + `","k":1}`)
		b.Run("Valid/"+in.name, func(b *testing.B) {
			b.SetBytes(int64(len(str)))
			for b.Loop() {
				if !Valid(str) {
					b.Fatal("not valid")
				}
			}
		})
		b.Run("skipString/"+in.name, func(b *testing.B) {
			b.SetBytes(int64(len(str)))
			for b.Loop() {
				if skipString(str, 0) != len(str) {
					b.Fatal("missed the end")
				}
			}
		})
		b.Run("Member/"+in.name, func(b *testing.B) {
			b.SetBytes(int64(len(obj)))
			for b.Loop() {
				if Member(obj, "k") == nil {
					b.Fatal("no k")
				}
			}
		})
	}
}
