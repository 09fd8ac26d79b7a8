package profile

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestCapabilities(t *testing.T) {
	for _, tc := range []struct {
		members []string
		want    string
	}{
		{[]string{`{"tools":{}}`, `{"resources":{"subscribe":true},"logging":{}}`}, `{"logging":{},"resources":{"listChanged":true,"subscribe":true},"tools":{"listChanged":true}}`},
		{[]string{`{"tools":{"listChanged":false},"experimental":{"x":{}},"tasks":{"requests":{}}}`}, `{"tools":{"listChanged":true}}`},
		{[]string{`{"prompts":{},"completions":{}}`, `{"resources":{}}`}, `{"completions":{},"prompts":{"listChanged":true},"resources":{"listChanged":true}}`},
		{[]string{`{}`, `{"tools":true}`}, `{}`},
	} {
		var raw []json.RawMessage
		for _, m := range tc.members {
			raw = append(raw, json.RawMessage(m))
		}
		if got := string(Capabilities(raw)); got != tc.want {
			t.Errorf("Capabilities(%v) = %s; want %s", tc.members, got, tc.want)
		}
	}
}

func TestInstructions(t *testing.T) {
	got := Instructions([]Member{{Destination: "everything", Prefix: "everything"}, {Destination: "memory", Prefix: ""}, {Destination: "fs", Prefix: "fs"}},
		[]string{"Use echo to test.", "", "  Paths are absolute.\n"})
	want := "## everything (tools and prompts named everything__…)\n\nUse echo to test.\n\n## fs (tools and prompts named fs__…)\n\nPaths are absolute."
	if got != want {
		t.Errorf("Instructions:\n%s\nwant:\n%s", got, want)
	}
	if Instructions([]Member{{Destination: "a"}}, []string{""}) != "" || strings.Contains(Instructions([]Member{{Destination: "m"}}, []string{"x"}), "named") {
		t.Error("an unprefixed member or no instructions")
	}
}
