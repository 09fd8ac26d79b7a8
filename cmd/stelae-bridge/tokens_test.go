package main

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
)

// TestLoadTokens: the tokens file holds a token a line, or NAME: TOKEN —
// a named token is a user of that name (issue 35) — with comments and
// blank lines; a bad name, a name given twice and a name without its
// token are refused with the line, and no token ever appears in an error.
func TestLoadTokens(t *testing.T) {
	const secret = "tok-s3cr3t-value"
	for _, tc := range []struct {
		name   string
		file   string
		tokens []string
		names  map[string]string
		err    string
	}{
		{"plain", "# team\ntok-1\n\ntok-2\n", []string{"tok-1", "tok-2"}, nil, ""},
		{"named", "alice: tok-a\nbob:tok-not-named\n  carol.x_y-1 :   tok-c  \ntok-d\n", []string{"tok-a", "bob:tok-not-named", "tok-c", "tok-d"},
			map[string]string{"tok-a": "alice", "tok-c": "carol.x_y-1"}, ""},
		{"bad name", "al ice: " + secret + "\n", nil, nil, "line 1: a token's name"},
		{"name twice", "alice: tok-1\nalice: " + secret + "\n", nil, nil, "line 2: the name alice is given to another token too (line 1)"},
		{"no token", "alice: \n", nil, nil, "no token after the colon"},
		{"empty", "# nothing\n", nil, nil, "holds no token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &settings{authTokensFile: "tokens"}
			tokens, names, err := loadTokens(s, func(string) ([]byte, error) { return []byte(tc.file), nil })
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || strings.Contains(err.Error(), secret) {
					t.Fatalf("error %v; want one saying %q, without the token", err, tc.err)
				}
				return
			}
			if err != nil || !slices.Equal(tokens, tc.tokens) || !maps.Equal(names, tc.names) {
				t.Fatalf("tokens %q names %v err %v; want %q %v", tokens, names, err, tc.tokens, tc.names)
			}
		})
	}
	if _, _, err := loadTokens(&settings{authTokensFile: "missing"}, func(string) ([]byte, error) { return nil, errors.New("no such file") }); err == nil {
		t.Error("a missing tokens file was read")
	}
}
