package credstore

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stelae-bridge/stelae-bridge/tests/linear"
)

func TestValidName(t *testing.T) {
	for name, want := range map[string]bool{
		"A": true, "_": true, "GITHUB_PERSONAL_ACCESS_TOKEN": true, "A1": true, "_1": true, "__X__9": true,
		strings.Repeat("A", MaxNameBytes): true,
		"":                                false, "a": false, "1A": false, "A-B": false, "A B": false, "A=B": false, "É": false,
		"A\x00": false, "token": false, strings.Repeat("A", MaxNameBytes+1): false,
	} {
		if got := ValidName(name); got != want {
			t.Errorf("ValidName(%q) = %v", name, got)
		}
	}
}

func TestCheck(t *testing.T) {
	token := Spec{Name: "GITHUB_PERSONAL_ACCESS_TOKEN", Description: "a fine-grained token", Pattern: `github_pat_[A-Za-z0-9_]{20,255}|ghp_[A-Za-z0-9]{36}`, Required: true}
	host := Spec{Name: "GITHUB_HOST", Description: "your GitHub Enterprise host"}
	region := Spec{Name: "REGION", Pattern: `eu|us`}
	specs := []Spec{token, host, region}
	goodToken := "ghp_" + strings.Repeat("a", 36)
	cases := []struct {
		name string
		vars map[string]string
		want []Problem
	}{
		{"all good", map[string]string{token.Name: goodToken, host.Name: "ghe.example.com", region.Name: "eu"}, nil},
		{"optional left out", map[string]string{token.Name: goodToken}, nil},
		{"optional empty", map[string]string{token.Name: goodToken, region.Name: ""}, nil},
		{"required missing", map[string]string{host.Name: "h"}, []Problem{{token.Name, Missing, token.Description}}},
		{"required empty", map[string]string{token.Name: ""}, []Problem{{token.Name, Missing, token.Description}}},
		{"mismatch", map[string]string{token.Name: "ghp_short"}, []Problem{{token.Name, Mismatch, token.Description}}},
		{"pattern is whole: prefix", map[string]string{token.Name: "x" + goodToken}, []Problem{{token.Name, Mismatch, token.Description}}},
		{"pattern is whole: suffix", map[string]string{token.Name: goodToken + "x"}, []Problem{{token.Name, Mismatch, token.Description}}},
		{"pattern is whole: trailing newline", map[string]string{token.Name: goodToken + "\n"}, []Problem{{token.Name, Mismatch, token.Description}}},
		// \A(?:eu|us)\z, not \Aeu|us\z (which "eux" and "xus" match).
		{"alternation is whole", map[string]string{token.Name: goodToken, region.Name: "eux"}, []Problem{{region.Name, Mismatch, ""}}},
		{"alternation is whole, 2", map[string]string{token.Name: goodToken, region.Name: "xus"}, []Problem{{region.Name, Mismatch, ""}}},
		{"unstorable", map[string]string{token.Name: goodToken, host.Name: "a\x00b"}, []Problem{{host.Name, Unstorable, host.Description}}},
		{"too long", map[string]string{token.Name: goodToken, host.Name: strings.Repeat("h", MaxValueBytes+1)}, []Problem{{host.Name, Unstorable, host.Description}}},
		{"undeclared", map[string]string{token.Name: goodToken, "LD_PRELOAD": "/tmp/x.so", "NODE_OPTIONS": "--require /tmp/x"},
			[]Problem{{"LD_PRELOAD", Undeclared, ""}, {"NODE_OPTIONS", Undeclared, ""}}},
		{"undeclared, not a name", map[string]string{token.Name: goodToken, "ghp_value-in-the-name": ""}, []Problem{{"", Undeclared, ""}}},
		{"several", map[string]string{host.Name: "\x00", region.Name: "asia", "X": "y"},
			[]Problem{{token.Name, Missing, token.Description}, {host.Name, Unstorable, host.Description}, {region.Name, Mismatch, ""}, {"X", Undeclared, ""}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Check(c.vars, specs)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("Check = %v, want %v", got, c.want)
			}
			for _, p := range got {
				for _, v := range c.vars {
					if len(v) > 3 && strings.Contains(p.String(), v) {
						t.Errorf("problem %q shows a value", p)
					}
				}
			}
		})
	}
	if s := (Problem{token.Name, Missing, token.Description}).String(); s != "GITHUB_PERSONAL_ACCESS_TOKEN: required and not given (a fine-grained token)" {
		t.Errorf("Problem.String = %q", s)
	}
}

func TestCheckSpecErrors(t *testing.T) {
	cases := []struct {
		name  string
		specs []Spec
		says  string
	}{
		{"bad name", []Spec{{Name: "github-token"}}, `"github-token" is not a variable name`},
		{"twice", []Spec{{Name: "A"}, {Name: "A"}}, "A is declared twice"},
		{"bad pattern", []Spec{{Name: "A", Pattern: "a("}}, "the pattern of A does not compile"},
		// wrapped without compiling alone first, this escapes the anchors:
		// \A(?:x)|(.*)\z matches anything.
		{"unbalanced pattern", []Spec{{Name: "A", Pattern: "x)|(.*"}}, "the pattern of A does not compile"},
		{"backreference", []Spec{{Name: "A", Pattern: `(a)\1`}}, "does not compile"},
		{"too many", func() (s []Spec) {
			for i := range MaxVars + 1 {
				s = append(s, Spec{Name: fmt.Sprintf("V%d", i)})
			}
			return s
		}(), "33 variables declared"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := Check(map[string]string{"A": "anything"}, c.specs)
			if err == nil || !strings.Contains(err.Error(), c.says) {
				t.Errorf("Check = %v, %v; want an error saying %q", p, err, c.says)
			}
			if err != nil && strings.Contains(err.Error(), "anything") {
				t.Errorf("error %q shows the value", err)
			}
		})
	}
}

// Check's cost is linear in the value, even for a pattern a backtracking
// engine takes exponential time on (Go's regexp is RE2).
func TestCheckLinear(t *testing.T) {
	for _, c := range []struct{ pattern, unit string }{
		{`(x+x+)+y`, "x"},
		{`(a|aa)*b`, "a"},
		{`([a-z0-9]+_?)*\.`, "ab_"},
		{``, "z"},
	} {
		specs := []Spec{{Name: "TOKEN", Pattern: c.pattern, Required: true}}
		f := func(v string) {
			if p, err := Check(map[string]string{"TOKEN": v}, specs); err != nil || (c.pattern != "" && len(p) != 1) {
				t.Fatalf("Check = %v, %v", p, err)
			}
		}
		make := func(n int) string { return strings.Repeat(c.unit, n/len(c.unit)) }
		linear.Check(t, "Check with "+c.pattern, f, make, 4<<10)
	}
}

var nameRE = regexp.MustCompile(`\A[A-Z_][A-Z0-9_]*\z`)

// FuzzCheck: Check never panics, agrees with a reference for names and
// patterns, and never shows a value (marked at both ends and inside).
func FuzzCheck(f *testing.F) {
	f.Add("TOKEN", "TOKEN", "ghp_[a-z]+", "ghp_abc", true)
	f.Add("TOKEN", "OTHER", "", "v", false)
	f.Add("A1", "A1", "(x+x+)+y", "xxxxxxxxxxxxxxxxxxxxxxxx", true)
	f.Add("a", "a", "x)|(.*", "", true)
	f.Add("_", "_", `\A.*\z`, "\x00", false)
	f.Add("X", "x-y", "[", "é", true)
	const mark = "\x7fMARK-5e1d\x7f"
	f.Fuzz(func(t *testing.T, specName, varName, pattern, mid string, required bool) {
		if strings.Contains(pattern, mark) || strings.Contains(specName, mark) || strings.Contains(varName, mark) {
			t.Skip()
		}
		if ValidName(specName) != (nameRE.MatchString(specName) && len(specName) <= MaxNameBytes) {
			t.Fatalf("ValidName(%q) = %v, disagreeing with %s", specName, ValidName(specName), nameRE)
		}
		value := mark + mid + mark + mid + mark
		specs := []Spec{{Name: specName, Description: "what to give", Pattern: pattern, Required: required}}
		vars := map[string]string{varName: value}
		problems, err := Check(vars, specs)
		text := fmt.Sprint(problems)
		if err != nil {
			text += err.Error()
		}
		if strings.Contains(text, "MARK-5e1d") {
			t.Fatalf("Check shows the value: %q", text)
		}
		_, compileErr := regexp.Compile(pattern)
		if wantErr := !ValidName(specName) || compileErr != nil; (err != nil) != wantErr {
			t.Fatalf("Check error %v; the spec is valid: %v", err, !wantErr)
		}
		if err != nil {
			return
		}
		var want []Problem
		if varName == specName {
			re := regexp.MustCompile(`\A(?:` + pattern + `)\z`)
			switch {
			case len(value) > MaxValueBytes || strings.Contains(value, "\x00"):
				want = []Problem{{specName, Unstorable, "what to give"}}
			case pattern != "" && !re.MatchString(value):
				want = []Problem{{specName, Mismatch, "what to give"}}
			}
		} else {
			if required {
				want = append(want, Problem{specName, Missing, "what to give"})
			}
			name := varName
			if !nameRE.MatchString(name) || len(name) > MaxNameBytes {
				name = ""
			}
			want = append(want, Problem{name, Undeclared, ""})
		}
		if !slices.Equal(problems, want) {
			t.Fatalf("Check = %v, want %v", problems, want)
		}
		// What Check passes, the store takes.
		if err := checkVars(vars); len(problems) == 0 && err != nil {
			t.Fatalf("Check found nothing wrong, but Set refuses: %v", err)
		}
	})
}
