package supervisor

import (
	"errors"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// envLookup returns a lookup func backed by a map (no process environment).
func envLookup(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := vars[k]
		return v, ok
	}
}

// noEnv is a lookup that knows no variables.
var noEnv = envLookup(nil)

// configProblems asserts err is a *ConfigError and returns its problems.
func configProblems(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		t.Fatal("ParseConfig succeeded; want an error")
	}
	var ce *ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("error is %T (%v); want *ConfigError", err, err)
	}
	if len(ce.Problems) == 0 {
		t.Fatalf("ConfigError has no problems: %v", err)
	}
	return ce.Problems
}

// findProblem returns the first problem containing every one of subs.
func findProblem(problems []string, subs ...string) (string, bool) {
	for _, p := range problems {
		ok := true
		for _, s := range subs {
			if !strings.Contains(p, s) {
				ok = false
				break
			}
		}
		if ok {
			return p, true
		}
	}
	return "", false
}

func TestParseConfigValid(t *testing.T) {
	dir := t.TempDir()
	src := `# a comment
destinations:
  everything:
    command: npx
    args: ["-y", "@modelcontextprotocol/server-everything"]
    env: { LOG_LEVEL: info, EMPTY: "" }
  files:
    command: "  /usr/bin/mcp-files  "
    args:
      - --root
      - /srv
    cwd: ` + dir + `
  bare:
    command: cat
`
	cfg, err := ParseConfig("destinations.yaml", []byte(src), noEnv)
	if err != nil {
		t.Fatalf("ParseConfig: %v", err)
	}
	if want := []string{"everything", "files", "bare"}; !reflect.DeepEqual(cfg.Names, want) {
		t.Errorf("Names = %q; want %q (file order)", cfg.Names, want)
	}
	if len(cfg.Destinations) != 3 {
		t.Fatalf("got %d destinations; want 3", len(cfg.Destinations))
	}
	e := cfg.Destinations["everything"]
	want := &Destination{
		Name:    "everything",
		Command: "npx",
		Args:    []string{"-y", "@modelcontextprotocol/server-everything"},
		Env:     map[string]string{"LOG_LEVEL": "info", "EMPTY": ""},
		Line:    3,
	}
	if !reflect.DeepEqual(e, want) {
		t.Errorf("everything = %+v\nwant %+v", e, want)
	}
	f := cfg.Destinations["files"]
	if f.Command != "/usr/bin/mcp-files" {
		t.Errorf("files.Command = %q; want surrounding spaces trimmed", f.Command)
	}
	if !reflect.DeepEqual(f.Args, []string{"--root", "/srv"}) {
		t.Errorf("files.Args = %q", f.Args)
	}
	if f.Cwd != dir {
		t.Errorf("files.Cwd = %q; want %q", f.Cwd, dir)
	}
	if f.Line != 7 {
		t.Errorf("files.Line = %d; want 7", f.Line)
	}
	b := cfg.Destinations["bare"]
	if b.Command != "cat" || len(b.Args) != 0 || b.Cwd != "" || b.Env == nil || len(b.Env) != 0 {
		t.Errorf("bare = %+v; want command cat, no args, no cwd, empty non-nil env", b)
	}
	if b.Line != 13 {
		t.Errorf("bare.Line = %d; want 13", b.Line)
	}
}

func TestParseConfigErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "plain-file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		src  string
		// want lists groups of substrings; each group must appear together
		// in one problem.
		want [][]string
		// count, when non-zero, is the exact number of problems.
		count int
	}{
		{
			name: "empty file",
			src:  "",
			want: [][]string{{"empty", "destinations"}},
		},
		{
			name: "only a comment",
			src:  "# nothing here\n",
			want: [][]string{{"destinations"}},
		},
		{
			name: "top level is a list",
			src:  "- a\n- b\n",
			want: [][]string{{"line 1", "top level", "mapping"}},
		},
		{
			name: "syntax error",
			src:  "destinations:\n  a: [unclosed\n",
			want: [][]string{{"line"}},
		},
		{
			name: "unknown top-level key",
			src: `destinations:
  a:
    command: cat
servers:
  b:
    command: cat
`,
			want:  [][]string{{"line 4", `"servers"`, "top level"}},
			count: 1,
		},
		{
			name: "missing destinations key",
			src:  "other: 1\n",
			want: [][]string{{"line 1", `"other"`}, {"destinations"}},
		},
		{
			name: "destinations is empty mapping",
			src:  "destinations: {}\n",
			want: [][]string{{"line 1", "destinations", "at least one"}},
		},
		{
			name: "destinations is null",
			src:  "destinations:\n",
			want: [][]string{{"destinations", "at least one"}},
		},
		{
			name: "destinations is a list",
			src:  "destinations:\n  - command: cat\n",
			want: [][]string{{"line 2", "destinations"}},
		},
		{
			name: "unknown destination key",
			src: `destinations:
  a:
    command: cat
    args: [x]

    comand: typo
`,
			want:  [][]string{{`"a"`, "line 6", `"comand"`, "unknown key"}},
			count: 1,
		},
		{
			name: "two unknown destination keys",
			src: `destinations:
  a:
    command: cat
    enviroment: {A: b}
    workdir: /tmp
`,
			want:  [][]string{{"line 4", `"enviroment"`}, {"line 5", `"workdir"`}},
			count: 2,
		},
		{
			name: "empty command",
			src: `destinations:
  a:
    command: ""
`,
			want:  [][]string{{"line 3", `"a"`, "no command"}},
			count: 1,
		},
		{
			name: "whitespace command",
			src: `destinations:
  a:
    command: "   "
`,
			want: [][]string{{`"a"`, "no command"}},
		},
		{
			name: "missing command",
			src: `destinations:
  a:
    args: [x]
`,
			want:  [][]string{{"line 3", `"a"`, "no command"}},
			count: 1,
		},
		{
			name: "empty destination mapping",
			src:  "destinations:\n  a: {}\n",
			want: [][]string{{"line 2", `"a"`, "no command"}},
		},
		{
			name: "destination is a scalar",
			src:  "destinations:\n  a: cat\n",
			want: [][]string{{"line 2", `"a"`, "mapping"}},
		},
		{
			name: "destination is null",
			src:  "destinations:\n  a:\n",
			want: [][]string{{`"a"`, "mapping"}},
		},
		{
			name: "args is not a list",
			src: `destinations:
  a:
    command: cat
    args: {x: 1}
`,
			want: [][]string{{`"a"`, "line 4"}},
		},
		{
			name: "duplicate destination name",
			src: `destinations:
  a:
    command: cat
  b:
    command: cat
  a:
    command: cat
`,
			want: [][]string{{"line 6", `"a"`}},
		},
		{
			name: "duplicate key inside a destination",
			src: `destinations:
  a:
    command: cat
    command: tac
`,
			want: [][]string{{"line 4", "command"}},
		},
		{
			name: "unsafe name with slash",
			src:  "destinations:\n  a/b:\n    command: cat\n",
			want: [][]string{{"line 2", `"a/b"`, "path segment"}},
		},
		{
			name: "unsafe name dot dot",
			src:  "destinations:\n  \"..\":\n    command: cat\n",
			want: [][]string{{"line 2", `".."`, "path segment"}},
		},
		{
			name: "unsafe name single dot",
			src:  "destinations:\n  \".\":\n    command: cat\n",
			want: [][]string{{"line 2", `"."`}},
		},
		{
			name: "unsafe name with space",
			src:  "destinations:\n  has space:\n    command: cat\n",
			want: [][]string{{"line 2", `"has space"`, "path segment"}},
		},
		{
			name: "empty name",
			src:  "destinations:\n  \"\":\n    command: cat\n",
			want: [][]string{{"line 2", `""`, "path segment"}},
		},
		{
			name: "name with percent",
			src:  "destinations:\n  \"a%2fb\":\n    command: cat\n",
			want: [][]string{{"line 2", `"a%2fb"`}},
		},
		{
			name: "name with query",
			src:  "destinations:\n  \"a?b\":\n    command: cat\n",
			want: [][]string{{"line 2", `"a?b"`}},
		},
		{
			name: "name too long",
			src:  "destinations:\n  " + strings.Repeat("x", 65) + ":\n    command: cat\n",
			want: [][]string{{"line 2", "path segment"}},
		},
		{
			name: "reserved name mcp",
			src:  "destinations:\n  mcp:\n    command: cat\n",
			want: [][]string{{"line 2", `"mcp"`, "reserved"}},
		},
		{
			name: "reserved name any case",
			src:  "destinations:\n  MCP:\n    command: cat\n",
			want: [][]string{{"line 2", `"MCP"`, "reserved"}},
		},
		{
			name: "reserved name healthz",
			src:  "destinations:\n  healthz:\n    command: cat\n",
			want: [][]string{{"line 2", `"healthz"`, "reserved"}},
		},
		{
			name: "unset variable in env",
			src: `destinations:
  a:
    command: cat
    env:
      TOKEN: ${MISSING_TOKEN}
`,
			want:  [][]string{{`"a"`, "MISSING_TOKEN", "not set", "env.TOKEN"}},
			count: 1,
		},
		{
			name: "unset variable in command, args and cwd",
			src: `destinations:
  a:
    command: ${NO_CMD}
    args: ["--key", "${NO_ARG}"]
    cwd: ${NO_DIR}/sub
`,
			want: [][]string{
				{"${NO_CMD}", "command"},
				{"${NO_ARG}", "args[1]"},
				{"${NO_DIR}", "cwd"},
			},
		},
		{
			name: "cwd is not a directory",
			src:  "destinations:\n  a:\n    command: cat\n    cwd: " + file + "\n",
			want: [][]string{{"line 3", file, "not a directory"}},
		},
		{
			name: "cwd does not exist",
			src:  "destinations:\n  a:\n    command: cat\n    cwd: " + filepath.Join(dir, "nope") + "\n",
			want: [][]string{{"nope", "not a directory"}},
		},
		{
			name: "invalid env name",
			src:  "destinations:\n  a:\n    command: cat\n    env: {\"A=B\": x}\n",
			want: [][]string{{`"A=B"`, "invalid"}},
		},
		{
			name: "unknown key lists the known ones",
			src:  "destinations:\n  a:\n    command: cat\n    prestrat: true\n",
			want: [][]string{{"line 4", `"prestrat"`, "command, args, env, cwd, prestart, tools"}},
		},
		{
			name: "unknown top-level key lists default",
			src:  "destinations:\n  a:\n    command: cat\ndefualt: a\n",
			want: [][]string{{"line 4", `"defualt"`, "known: destinations, default"}},
		},
		{
			name: "default names no destination",
			src: `default: b
destinations:
  a:
    command: cat
  c:
    command: cat
`,
			want:  [][]string{{"line 1", `"b"`, "names no destination", "a, c"}},
			count: 1,
		},
		{
			name:  "default is empty",
			src:   "destinations:\n  a:\n    command: cat\ndefault:\n",
			want:  [][]string{{"line 4", "'default'", "must name"}},
			count: 1,
		},
		{
			name:  "default is a list",
			src:   "destinations:\n  a:\n    command: cat\ndefault: [a]\n",
			want:  [][]string{{"line 4", "'default'", "must name"}},
			count: 1,
		},
		{
			name:  "default is case-sensitive",
			src:   "destinations:\n  a:\n    command: cat\ndefault: A\n",
			want:  [][]string{{"line 4", `"A"`, "names no destination"}},
			count: 1,
		},
		{
			name:  "prestart is not a boolean",
			src:   "destinations:\n  a:\n    command: cat\n    prestart: maybe\n",
			want:  [][]string{{`"a"`, "line 4", "maybe", "bool"}},
			count: 1,
		},
		{
			name: "tools has both allow and deny",
			src: `destinations:
  a:
    command: cat
    tools:
      allow: [echo]
      deny: [crash]
`,
			want:  [][]string{{`"a"`, "line 5", "both", "allow", "deny"}},
			count: 1,
		},
		{
			name: "tools has an unknown key",
			src: `destinations:
  a:
    command: cat
    tools:
      allow: [echo]
      hide: [crash]
`,
			want:  [][]string{{`"a"`, "line 6", `"hide"`, "known: allow, deny"}},
			count: 1,
		},
		{
			name:  "tools allow given twice",
			src:   "destinations:\n  a:\n    command: cat\n    tools: {allow: [x], allow: [y]}\n",
			want:  [][]string{{`"a"`, "line 4", "allow", "twice"}},
			count: 1,
		},
		{
			name: "tools glob is invalid",
			src: `destinations:
  a:
    command: cat
    tools:
      deny:
        - ok_*
        - "bad["
`,
			want:  [][]string{{`"a"`, "line 7", `"bad["`, "invalid"}},
			count: 1,
		},
		{
			name:  "tools glob is empty",
			src:   "destinations:\n  a:\n    command: cat\n    tools: {deny: [\"\"]}\n",
			want:  [][]string{{`"a"`, "line 4", "empty glob"}},
			count: 1,
		},
		{
			name:  "tools glob is not a string",
			src:   "destinations:\n  a:\n    command: cat\n    tools: {allow: [[x]]}\n",
			want:  [][]string{{`"a"`, "line 4", "strings"}},
			count: 1,
		},
		{
			name:  "tools list is a string",
			src:   "destinations:\n  a:\n    command: cat\n    tools: {allow: echo}\n",
			want:  [][]string{{`"a"`, "line 4", "tools.allow", "list"}},
			count: 1,
		},
		{
			name:  "tools allow is empty",
			src:   "destinations:\n  a:\n    command: cat\n    tools: {allow: []}\n",
			want:  [][]string{{`"a"`, "line 4", "tools.allow", "empty", "deny"}},
			count: 1,
		},
		{
			name:  "tools is empty",
			src:   "destinations:\n  a:\n    command: cat\n    tools:\n",
			want:  [][]string{{`"a"`, "line 4", "'tools'", "allow", "deny"}},
			count: 1,
		},
		{
			name:  "tools is a list",
			src:   "destinations:\n  a:\n    command: cat\n    tools: [echo]\n",
			want:  [][]string{{`"a"`, "line 4", "'tools'", "mapping"}},
			count: 1,
		},
		{
			name: "many problems are all listed",
			src: `bogus: 1
destinations:
  mcp:
    command: cat
  "a/b":
    command: cat
  nocmd:
    args: [x]
  typo:
    command: cat
    arg: [x]
  secret:
    command: cat
    env: {K: "${UNSET_VAR}"}
`,
			want: [][]string{
				{"line 1", `"bogus"`},
				{"line 3", `"mcp"`, "reserved"},
				{"line 5", `"a/b"`},
				{"line 8", `"nocmd"`, "no command"},
				{"line 11", `"arg"`},
				{"UNSET_VAR"},
			},
			count: 6,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := ParseConfig("test.yaml", []byte(tc.src), noEnv)
			if cfg != nil {
				t.Errorf("ParseConfig returned a config along with the error")
			}
			problems := configProblems(t, err)
			for _, subs := range tc.want {
				if _, ok := findProblem(problems, subs...); !ok {
					t.Errorf("no problem contains all of %q; problems:\n  %s", subs, strings.Join(problems, "\n  "))
				}
			}
			if tc.count > 0 && len(problems) != tc.count {
				t.Errorf("got %d problems; want %d:\n  %s", len(problems), tc.count, strings.Join(problems, "\n  "))
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "test.yaml: ") {
				t.Errorf("Error() = %q; want it to start with the file name", msg)
			}
			for _, p := range problems {
				if !strings.Contains(msg, p) {
					t.Errorf("Error() does not include problem %q:\n%s", p, msg)
				}
			}
		})
	}
}

func TestParseConfigPrestartToolsDefault(t *testing.T) {
	src := `destinations:
  a:
    command: cat
    prestart: true
    tools:
      allow: [echo, "get_*", "[xy]z"]
  b:
    command: cat
    prestart: false
    tools: {deny: ["danger*", crash]}
  c:
    command: cat
    tools: {deny: []}
default: b
`
	cfg, err := ParseConfig("x.yaml", []byte(src), noEnv)
	if err != nil {
		t.Fatalf("ParseConfig: %v", err)
	}
	if cfg.Default != "b" {
		t.Errorf("Default = %q; want b", cfg.Default)
	}
	a, b, c := cfg.Destinations["a"], cfg.Destinations["b"], cfg.Destinations["c"]
	if !a.Prestart || b.Prestart || c.Prestart {
		t.Errorf("Prestart a=%v b=%v c=%v; want true false false", a.Prestart, b.Prestart, c.Prestart)
	}
	if want := (ToolFilter{Allow: []string{"echo", "get_*", "[xy]z"}}); !reflect.DeepEqual(a.Tools, want) {
		t.Errorf("a.Tools = %+v; want %+v", a.Tools, want)
	}
	if want := (ToolFilter{Deny: []string{"danger*", "crash"}}); !reflect.DeepEqual(b.Tools, want) {
		t.Errorf("b.Tools = %+v; want %+v", b.Tools, want)
	}
	if a.Tools.Empty() || b.Tools.Empty() || !c.Tools.Empty() {
		t.Errorf("Empty a=%v b=%v c=%v; want false false true", a.Tools.Empty(), b.Tools.Empty(), c.Tools.Empty())
	}
	for _, tc := range []struct {
		name    string
		a, b, c bool
	}{
		{"echo", true, true, true},
		{"get_weather", true, true, true},
		{"get_", true, true, true},
		{"xz", true, true, true},
		{"zz", false, true, true},
		{"echo2", false, true, true},
		{"crash", false, false, true},
		{"dangerous", false, false, true},
		{"danger", false, false, true},
		{"get/x", false, true, true}, // '*' does not match '/'
		{"", false, true, true},
	} {
		if got := a.Tools.Allows(tc.name); got != tc.a {
			t.Errorf("a allows %q = %v; want %v", tc.name, got, tc.a)
		}
		if got := b.Tools.Allows(tc.name); got != tc.b {
			t.Errorf("b allows %q = %v; want %v", tc.name, got, tc.b)
		}
		if got := c.Tools.Allows(tc.name); got != tc.c {
			t.Errorf("c allows %q = %v; want %v", tc.name, got, tc.c)
		}
	}
	// No default key: Default is empty.
	cfg, err = ParseConfig("x.yaml", []byte("destinations:\n  a:\n    command: cat\n"), noEnv)
	if err != nil || cfg.Default != "" {
		t.Errorf("without default: Default = %q, err %v; want empty", cfg.Default, err)
	}
}

func TestToolFilterZeroAllowsAll(t *testing.T) {
	var f ToolFilter
	if !f.Empty() {
		t.Error("zero filter is not Empty")
	}
	for _, n := range []string{"", "echo", "a/b", "*"} {
		if !f.Allows(n) {
			t.Errorf("zero filter hides %q", n)
		}
	}
}

func TestParseConfigExpansion(t *testing.T) {
	dir := t.TempDir()
	vars := map[string]string{
		"API_TOKEN": "s3cr3t",
		"BIN":       "/opt/mcp/bin",
		"DIR":       dir,
		"EMPTY":     "",
		"NESTED":    "${API_TOKEN}",
	}
	src := `destinations:
  a:
    command: ${BIN}/server
    args: ["--token=${API_TOKEN}", "$HOME", "$API_TOKEN", "${BIN}${BIN}", "x${EMPTY}y", "${NESTED}", "${not-a-var}", "${1}"]
    env:
      TOKEN: ${API_TOKEN}
      LITERAL: $API_TOKEN
      MIXED: "pre-${BIN}-post"
    cwd: ${DIR}
`
	cfg, err := ParseConfig("x.yaml", []byte(src), envLookup(vars))
	if err != nil {
		t.Fatalf("ParseConfig: %v", err)
	}
	d := cfg.Destinations["a"]
	if d.Command != "/opt/mcp/bin/server" {
		t.Errorf("Command = %q", d.Command)
	}
	wantArgs := []string{"--token=s3cr3t", "$HOME", "$API_TOKEN", "/opt/mcp/bin/opt/mcp/bin", "xy", "${API_TOKEN}", "${not-a-var}", "${1}"}
	if !reflect.DeepEqual(d.Args, wantArgs) {
		t.Errorf("Args = %q\nwant %q", d.Args, wantArgs)
	}
	wantEnv := map[string]string{"TOKEN": "s3cr3t", "LITERAL": "$API_TOKEN", "MIXED": "pre-/opt/mcp/bin-post"}
	if !reflect.DeepEqual(d.Env, wantEnv) {
		t.Errorf("Env = %q\nwant %q", d.Env, wantEnv)
	}
	if d.Cwd != dir {
		t.Errorf("Cwd = %q; want %q", d.Cwd, dir)
	}
}

func TestParseConfigExpansionUsesLookupOnly(t *testing.T) {
	// A variable set in the process environment but not in lookup is unset.
	t.Setenv("STELAE_TEST_ONLY_IN_PROCESS", "x")
	src := "destinations:\n  a:\n    command: cat\n    args: [\"${STELAE_TEST_ONLY_IN_PROCESS}\"]\n"
	problems := configProblems(t, func() error { _, err := ParseConfig("x.yaml", []byte(src), noEnv); return err }())
	if _, ok := findProblem(problems, "STELAE_TEST_ONLY_IN_PROCESS", "not set", "line 3"); !ok {
		t.Errorf("problems %q do not name the unset variable with its line", problems)
	}
	// A nil lookup falls back to the process environment.
	cfg, err := ParseConfig("x.yaml", []byte(src), nil)
	if err != nil {
		t.Fatalf("ParseConfig with nil lookup: %v", err)
	}
	if got := cfg.Destinations["a"].Args; !reflect.DeepEqual(got, []string{"x"}) {
		t.Errorf("Args = %q; want [x]", got)
	}
}

func TestParseConfigEmptyVariableMakesEmptyCommand(t *testing.T) {
	src := "destinations:\n  a:\n    command: ${EMPTY}\n"
	problems := configProblems(t, func() error {
		_, err := ParseConfig("x.yaml", []byte(src), envLookup(map[string]string{"EMPTY": ""}))
		return err
	}())
	if _, ok := findProblem(problems, `"a"`, "no command"); !ok {
		t.Errorf("problems %q do not report the empty command", problems)
	}
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	t.Run("missing file", func(t *testing.T) {
		path := filepath.Join(dir, "does-not-exist.yaml")
		cfg, err := LoadConfig(path, noEnv)
		if err == nil || cfg != nil {
			t.Fatalf("LoadConfig(missing) = %v, %v; want an error", cfg, err)
		}
		msg := err.Error()
		for _, want := range []string{path, "-config", "destinations file"} {
			if !strings.Contains(msg, want) {
				t.Errorf("error %q does not mention %q", msg, want)
			}
		}
		if !errors.Is(err, os.ErrNotExist) {
			t.Errorf("error %v does not wrap os.ErrNotExist", err)
		}
	})
	t.Run("good file", func(t *testing.T) {
		path := filepath.Join(dir, "good.yaml")
		if err := os.WriteFile(path, []byte("destinations:\n  a:\n    command: cat\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := LoadConfig(path, noEnv)
		if err != nil {
			t.Fatalf("LoadConfig: %v", err)
		}
		if cfg.Destinations["a"].Command != "cat" {
			t.Errorf("command = %q", cfg.Destinations["a"].Command)
		}
	})
	t.Run("bad file names the path", func(t *testing.T) {
		path := filepath.Join(dir, "bad.yaml")
		if err := os.WriteFile(path, []byte("destinations:\n  a:\n    comand: cat\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := LoadConfig(path, noEnv)
		var ce *ConfigError
		if !errors.As(err, &ce) {
			t.Fatalf("LoadConfig error %v is not a *ConfigError", err)
		}
		if ce.File != path || !strings.HasPrefix(err.Error(), path+":") {
			t.Errorf("error %q does not start with the path %q", err, path)
		}
	})
}

func TestConfigErrorFormat(t *testing.T) {
	e := &ConfigError{File: "d.yaml", Problems: []string{"line 1: one", "line 2: two"}}
	want := "d.yaml: 2 problem(s) in the configuration:\n  line 1: one\n  line 2: two"
	if got := e.Error(); got != want {
		t.Errorf("Error() = %q; want %q", got, want)
	}
}

func FuzzParseConfig(f *testing.F) {
	seeds := []string{
		"",
		"destinations:\n  a:\n    command: cat\n",
		"destinations:\n  a:\n    command: ${X}\n    args: [\"${Y}\", $Z]\n    env: {K: \"${EMPTY}\"}\n",
		"destinations:\n  mcp:\n    command: cat\n  a/b: {command: x}\n",
		"destinations:\n  a: {command: cat}\n  a: {command: tac}\n",
		"bogus: 1\ndestinations: []\n",
		"destinations:\n  a: &x {command: cat}\n  b: *x\n",
		"destinations:\n  &k a: {command: cat}\n  *k : {command: tac}\n",
		"destinations:\n  ? [x, y]\n  : {command: cat}\n",
		"destinations:\n  a:\n    <<: {command: cat}\n",
		"destinations:\n  a:\n    command: [cat]\n",
		"destinations:\n  a:\n    command: cat\n    cwd: /\n---\nmore: 1\n",
		"destinations:\n  a:\n    command: \"${SPACE}\"\n",
		"\xff\xfe",
		"destinations: !!binary aGVsbG8=\n",
		"default: a\ndestinations:\n  a:\n    command: cat\n    prestart: true\n    tools: {allow: [\"e*\", \"[a-c]?\"]}\n",
		"default: [x]\ndestinations:\n  a:\n    command: cat\n    tools: {deny: [\"a[\"], allow: []}\n",
		"destinations:\n  a:\n    command: cat\n    tools: {deny: [\"\\\\\"]}\n",
		"destinations:\n  a:\n    command: cat\n    tools: ~\n    prestart: 1\n",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	lookup := envLookup(map[string]string{"X": "cat", "Y": "y", "Z": "z", "EMPTY": "", "SPACE": " "})
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ParseConfig("fuzz.yaml", data, lookup)
		if err != nil {
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("error %T is not a *ConfigError: %v", err, err)
			}
			if len(ce.Problems) == 0 {
				t.Fatalf("ConfigError without problems")
			}
			if cfg != nil {
				t.Fatalf("config returned with an error")
			}
			return
		}
		if cfg == nil || len(cfg.Destinations) == 0 {
			t.Fatalf("success without destinations: %+v", cfg)
		}
		if len(cfg.Names) != len(cfg.Destinations) {
			t.Fatalf("Names %q do not match %d destinations", cfg.Names, len(cfg.Destinations))
		}
		if cfg.Default != "" && cfg.Destinations[cfg.Default] == nil {
			t.Fatalf("default %q names no destination", cfg.Default)
		}
		seen := map[string]bool{}
		for _, n := range cfg.Names {
			if seen[n] {
				t.Fatalf("name %q listed twice", n)
			}
			seen[n] = true
			d := cfg.Destinations[n]
			if d == nil {
				t.Fatalf("name %q has no destination", n)
			}
			if d.Name != n {
				t.Fatalf("destination %q has Name %q", n, d.Name)
			}
			if d.Command == "" {
				t.Fatalf("destination %q has an empty command", n)
			}
			if !validName.MatchString(n) || reservedNames[strings.ToLower(n)] {
				t.Fatalf("destination name %q is not a valid, unreserved name", n)
			}
			if n == "." || n == ".." || strings.ContainsAny(n, "/?#% \t\n") {
				t.Fatalf("destination name %q is not a safe path segment", n)
			}
			if d.Line <= 0 {
				t.Fatalf("destination %q has line %d", n, d.Line)
			}
			if d.Tools.Allow != nil && d.Tools.Deny != nil {
				t.Fatalf("destination %q has both allow and deny", n)
			}
			for _, g := range append(append([]string(nil), d.Tools.Allow...), d.Tools.Deny...) {
				if _, err := path.Match(g, ""); err != nil || g == "" {
					t.Fatalf("destination %q has invalid glob %q", n, g)
				}
			}
			d.Tools.Allows("x")
			for k := range d.Env {
				if k == "" || strings.ContainsAny(k, "=\x00") {
					t.Fatalf("destination %q has invalid env name %q", n, k)
				}
			}
		}
	})
}
