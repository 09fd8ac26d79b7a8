package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseProfiles(t *testing.T) {
	src := `destinations:
  everything: {command: npx, args: [-y, "@modelcontextprotocol/server-everything"]}
  filesystem: {command: npx, prefix: fs}
  memory: {command: npx, prefix: ""}
profiles:
  work:
    destinations: [everything, filesystem, memory]
    tools: {deny: [everything__get-env]}
    prompts: {allow: ["fs__*"]}
  solo:
    destinations: [memory]
default: work
`
	cfg, err := Parse("d.yaml", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cfg.ProfileNames, []string{"work", "solo"}) || cfg.Default != "work" || !cfg.DefaultProfile {
		t.Fatalf("profiles %v, default %q (profile %v)", cfg.ProfileNames, cfg.Default, cfg.DefaultProfile)
	}
	w := cfg.Profiles["work"]
	if !reflect.DeepEqual(w.Destinations, []string{"everything", "filesystem", "memory"}) || w.Line != 6 {
		t.Errorf("work: %+v", w)
	}
	if w.Tools.Allows("everything__get-env") || !w.Tools.Allows("everything__echo") || w.Prompts.Allows("everything__x") || !w.Prompts.Allows("fs__y") || !w.Resources.Empty() {
		t.Errorf("work's filters: %+v %+v %+v", w.Tools, w.Prompts, w.Resources)
	}
	for name, want := range map[string]string{"everything": "everything", "filesystem": "fs", "memory": ""} {
		if got := cfg.Destinations[name].ToolPrefix(); got != want {
			t.Errorf("%s's prefix %q; want %q", name, got, want)
		}
	}
}

func TestParseProfileErrors(t *testing.T) {
	const dests = "destinations:\n  everything: {command: x}\n  memory: {command: x}\n"
	for _, tc := range []struct {
		name, src string
		want      []string
	}{
		{"not a mapping", dests + "profiles: [a]\n", []string{"line 4", "'profiles' must be a mapping"}},
		{"no destinations", dests + "profiles:\n  p: {tools: {deny: [x]}}\n", []string{"line 5", `profile "p"`, "'destinations' must list", "declared: everything, memory"}},
		{"unknown member", dests + "profiles:\n  p: {destinations: [everthing]}\n", []string{`profile "p"`, `"everthing" names no destination`, `did you mean "everything"?`}},
		{"twice", dests + "profiles:\n  p:\n    destinations: [memory, memory]\n", []string{"line 6", `"memory" is listed twice`}},
		{"unknown key", dests + "profiles:\n  p: {destinations: [memory], tool: {deny: [x]}}\n", []string{`unknown key "tool"`, `did you mean "tools"?`}},
		{"bad filter", dests + "profiles:\n  p:\n    destinations: [memory]\n    prompts: {allow: []}\n", []string{"line 7", "'prompts.allow' is empty", "every prompt"}},
		{"bad name", dests + "profiles:\n  my profile: {destinations: [memory]}\n", []string{"line 5", `profile name "my profile"`}},
		{"declared twice", dests + "profiles:\n  p: {destinations: [memory]}\n  p: {destinations: [everything]}\n", []string{"line 6", `profile "p" is declared twice (first at line 5)`}},
		{"ambiguous default", "destinations:\n  p: {command: x}\nprofiles:\n  p: {destinations: [p]}\ndefault: p\n", []string{"line 5", "names both a destination and a profile"}},
		{"default names neither", dests + "profiles:\n  p: {destinations: [memory]}\ndefault: q\n", []string{"line 6", `"q", which names no destination or profile (p)`}},
		{"bad prefix", "destinations:\n  a: {command: x, prefix: \"a.b\"}\n", []string{"line 2", `'prefix' "a.b" may hold only letters`}},
		{"prefix not a string", "destinations:\n  a: {command: x, prefix: [a]}\n", []string{"line 2", "'prefix' must be a string"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("d.yaml", []byte(tc.src), nil)
			var cerr *Error
			if !errors.As(err, &cerr) {
				t.Fatalf("no configuration error: %v", err)
			}
			for _, p := range cerr.Problems {
				ok := true
				for _, w := range tc.want {
					ok = ok && strings.Contains(p, w)
				}
				if ok {
					return
				}
			}
			t.Errorf("no problem says all of %q:\n%s", tc.want, strings.Join(cerr.Problems, "\n"))
		})
	}
}

// TestProfileSharedPrefixWarns: two members with one prefix are a warning
// (-check shows it), not an error.
func TestProfileSharedPrefixWarns(t *testing.T) {
	cfg, err := Parse("d.yaml", []byte("destinations:\n  a: {command: x, prefix: p}\n  b: {command: x, prefix: p}\nprofiles:\n  both: {destinations: [a, b]}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0], `"a" and "b" share the prefix "p"`) || !strings.Contains(cfg.Warnings[0], "line 5") {
		t.Errorf("warnings %q", cfg.Warnings)
	}
}
