package redact

import (
	"strings"
	"testing"

	"github.com/stelae-bridge/stelae-bridge/tests/linear"
)

// The redactor runs in time linear in what it is given (issue 34: parsers
// run in linear time; a 10 MiB body is logged with -audit-log-bodies):
// tests/linear's check.

// repeatTo is unit repeated to about n bytes.
func repeatTo(unit string, n int) string { return strings.Repeat(unit, max(n/len(unit), 1)) }

func TestRedactorLinear(t *testing.T) {
	// Texts heavy in what each step of Text looks for.
	texts := map[string]string{
		"assignments":   "GITHUB_TOKEN=ghp_abc ",
		"separators":    "a:b=",
		"colons":        ":::::::",
		"long name":     strings.Repeat("a", 200) + "=",
		"name runs":     "PASSWORD_" + strings.Repeat("x", 150),
		"open quotes":   `password="`,
		"escaped":       `\"secret\":\"x\",`,
		"query":         "?token=a&",
		"bearer":        "Bearer abcdefghijklmnopqrstuvwxyz ",
		"jwt":           "eyJhbGciOi.eyJzdWIiOi.abc ",
		"prefixes":      "ghp_abcdefghijklmnopqrstuvwxyz0123 sk-abcdefghijklmnopqr ",
		"urls":          "https://u:p@h/ ",
		"pem no end":    "-----BEGIN PRIVATE KEY-----\nabc\n",
		"header lines":  "Authorization: x\n",
		"plain":         "the quick brown fox jumps over the lazy dog ",
		"almost secret": "keywords: monkey, author, passage ",
	}
	// 1 KiB to 16 KiB: the regular expressions run under -race too.
	const n = 1 << 10
	for name, unit := range texts {
		t.Run("Text/"+name, func(t *testing.T) {
			linear.Check(t, "Text", func(s string) { Text(s) }, func(n int) string { return repeatTo(unit, n) }, n)
		})
	}
	// Bodies: a long string of escapes, many members, JSON inside strings.
	bodies := map[string]func(n int) string{
		"escapes": func(n int) string { return `{"text":"` + repeatTo(`\n`, n) + `"}` },
		"members": func(n int) string {
			return `{"a":[` + strings.TrimSuffix(repeatTo(`{"key":"v","name":"n","apiKey":1},`, n), ",") + `]}`
		},
		"assignments": func(n int) string { return `{"text":"` + repeatTo(`TOKEN=x PASSWORD: y `, n) + `"}` },
		"nested json": func(n int) string {
			return `{"text":"{\"a\":[` + strings.TrimSuffix(repeatTo(`{\"password\":\"x\"},`, n), ",") + `]}"}`
		},
		"deep": func(n int) string { d := min(n/4, 2500); return strings.Repeat(`{"a":[`, d) + strings.Repeat(`]}`, d) },
	}
	for name, body := range bodies {
		t.Run("JSON/"+name, func(t *testing.T) {
			linear.Check(t, "JSON", func(s string) { JSON([]byte(s), MaxBody) }, body, n)
		})
	}
}

// BenchmarkJSONMaxBody redacts a 10 MiB body (the default -max-body-size)
// of text heavy in assignments, as -audit-log-bodies does for every POST.
func BenchmarkJSONMaxBody(b *testing.B) {
	for name, unit := range map[string]string{"assignments": `TOKEN=x PASSWORD: y `, "plain": "the quick brown fox ", "escapes": `\n`} {
		body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"text":"` + repeatTo(unit, 10<<20-256) + `"}}}`)
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				_ = JSON(body, MaxBody)
			}
		})
	}
}
