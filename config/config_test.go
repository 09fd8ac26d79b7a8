package config

import (
	"errors"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
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

// configProblems asserts err is a *Error and returns its problems.
func configProblems(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		t.Fatal("Parse succeeded; want an error")
	}
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("error is %T (%v); want *Error", err, err)
	}
	if len(ce.Problems) == 0 {
		t.Fatalf("Error has no problems: %v", err)
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
	cfg, err := Parse("destinations.yaml", []byte(src), noEnv, testReserved...)
	if err != nil {
		t.Fatalf("Parse: %v", err)
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
			want: [][]string{{"line 4", `"prestrat"`, "command, args, env, cwd, prestart, tools, base_env, roots, isolation, start_timeout, stderr_log_level"}},
		},
		{
			name:  "base_env is not inherit or minimal",
			src:   "destinations:\n  a:\n    command: cat\n    base_env: none\n",
			want:  [][]string{{`"a"`, "line 4", "'base_env'", "inherit or minimal", `"none"`, "PATH, HOME"}},
			count: 1,
		},
		{
			name:  "base_env is empty",
			src:   "destinations:\n  a:\n    command: cat\n    base_env:\n",
			want:  [][]string{{`"a"`, "line 4", "'base_env'", "inherit or minimal", "not empty"}},
			count: 1,
		},
		{
			name:  "isolation is unknown",
			src:   "destinations:\n  a:\n    command: cat\n    isolation: per-session\n",
			want:  [][]string{{`"a"`, "line 4", "'isolation'", "shared, session or user", `"per-session"`}},
			count: 1,
		},
		{
			name:  "prestart with isolation: session",
			src:   "destinations:\n  a:\n    command: cat\n    prestart: true\n    isolation: session\n",
			want:  [][]string{{`"a"`, "line 5", "'prestart'", "isolation: session"}},
			count: 1,
		},
		{
			name:  "isolation is a list",
			src:   "destinations:\n  a:\n    command: cat\n    isolation: [session]\n",
			want:  [][]string{{`"a"`, "line 4", "'isolation'", "a list"}},
			count: 1,
		},
		{
			name:  "start_timeout is a bare number",
			src:   "destinations:\n  a:\n    command: cat\n    start_timeout: 300\n",
			want:  [][]string{{`"a"`, "line 4", "'start_timeout'", "90s or 5m", `"300"`, "no unit"}},
			count: 1,
		},
		{
			name:  "start_timeout is not a duration",
			src:   "destinations:\n  a:\n    command: cat\n    start_timeout: soon\n",
			want:  [][]string{{`"a"`, "line 4", "'start_timeout'", "duration", `"soon"`}},
			count: 1,
		},
		{
			name:  "logs is not a policy",
			src:   "destinations:\n  a:\n    command: cat\n    logs: everyone\n",
			want:  [][]string{{`"a"`, "line 4", "'logs'", "attributed, fanout or drop", `"everyone"`}},
			count: 1,
		},
		{
			name:  "interactive with isolation: session",
			src:   "destinations:\n  a:\n    command: cat\n    interactive: true\n    isolation: session\n",
			want:  [][]string{{`"a"`, "'interactive'", "isolation: session"}},
			count: 1,
		},
		{
			name:  "interactive list with isolation: session",
			src:   "destinations:\n  a:\n    command: cat\n    interactive: [ask]\n    isolation: session\n",
			want:  [][]string{{`"a"`, "line 4", "'interactive'", "isolation: session"}},
			count: 1,
		},
		{
			name:  "interactive is neither a boolean nor a list",
			src:   "destinations:\n  a:\n    command: cat\n    interactive: sometimes\n",
			want:  [][]string{{`"a"`, "line 4", "'interactive' must be true", "list of the tools", `"sometimes"`}},
			count: 1,
		},
		{
			name:  "interactive is an empty list",
			src:   "destinations:\n  a:\n    command: cat\n    interactive: []\n",
			want:  [][]string{{`"a"`, "line 4", "empty list"}},
			count: 1,
		},
		{
			name:  "interactive has a bad glob and an empty entry",
			src:   "destinations:\n  a:\n    command: cat\n    interactive:\n      - \"[a\"\n      - \"\"\n",
			want:  [][]string{{`"a"`, "line 5", "glob \"[a\" is invalid"}, {`"a"`, "line 6", "tool names or globs"}},
			count: 2,
		},
		{
			name:  "input_wait is not a duration",
			src:   "destinations:\n  a:\n    command: cat\n    input_wait: 90\n",
			want:  [][]string{{`"a"`, "line 4", "'input_wait'", "duration", "a bare number has no unit"}},
			count: 1,
		},
		{
			name:  "cache is not a mapping",
			src:   "destinations:\n  a:\n    command: cat\n    cache: 30s\n",
			want:  [][]string{{`"a"`, "line 4", "'cache'", "ttl", "scope"}},
			count: 1,
		},
		{
			name:  "cache ttl and scope are wrong, and a key is unknown",
			src:   "destinations:\n  a:\n    command: cat\n    cache:\n      ttl: 30\n      scope: everyone\n      age: 1\n",
			want:  [][]string{{`"a"`, "line 5", "'cache.ttl'", "30s"}, {`"a"`, "line 6", "'cache.scope'", "private", "public"}, {`"a"`, "line 7", `"age"`}},
			count: 3,
		},
		{
			name:  "tasks is not a mapping",
			src:   "destinations:\n  a:\n    command: cat\n    tasks: 1s\n",
			want:  [][]string{{`"a"`, "line 4", "'tasks'", "after", "ttl"}},
			count: 1,
		},
		{
			name:  "tasks after and ttl are wrong, and a key is unknown",
			src:   "destinations:\n  a:\n    command: cat\n    tasks:\n      after: 0s\n      ttl: 3600\n      poll: 1s\n",
			want:  [][]string{{`"a"`, "line 5", "'tasks.after'", "positive"}, {`"a"`, "line 6", "'tasks.ttl'", "1h"}, {`"a"`, "line 7", `"poll"`}},
			count: 3,
		},
		{
			name:  "start_timeout is zero",
			src:   "destinations:\n  a:\n    command: cat\n    start_timeout: 0s\n",
			want:  [][]string{{`"a"`, "line 4", "'start_timeout'", "positive"}},
			count: 1,
		},
		{
			name:  "start_timeout is negative",
			src:   "destinations:\n  a:\n    command: cat\n    start_timeout: -1m\n",
			want:  [][]string{{`"a"`, "line 4", "'start_timeout'", "positive", "-1m"}},
			count: 1,
		},
		{
			name:  "start_timeout is empty",
			src:   "destinations:\n  a:\n    command: cat\n    start_timeout:\n",
			want:  [][]string{{`"a"`, "line 4", "'start_timeout'", "not empty"}},
			count: 1,
		},
		{
			name:  "stderr_log_level is unknown",
			src:   "destinations:\n  a:\n    command: cat\n    stderr_log_level: verbose\n",
			want:  [][]string{{`"a"`, "line 4", "'stderr_log_level'", "trace, debug, info, warn, error or off", `"verbose"`}},
			count: 1,
		},
		{
			name:  "stderr_log_level is upper case",
			src:   "destinations:\n  a:\n    command: cat\n    stderr_log_level: WARN\n",
			want:  [][]string{{`"a"`, "line 4", "'stderr_log_level'", `"WARN"`}},
			count: 1,
		},
		{
			name:  "roots is not a list",
			src:   "destinations:\n  a:\n    command: cat\n    roots: /srv\n",
			want:  [][]string{{`"a"`, "line 4", "'roots'", "list"}},
			count: 1,
		},
		{
			name: "roots entries that are not roots",
			src: `destinations:
  a:
    command: cat
    roots:
      - relative/dir
      - ~/notes
      - https://example.com/x
      - ""
      -
      - [nested]
      - file://server/share
      - {uri: /srv}
      - {path: file:///srv}
      - {path: /a, uri: file:///b}
      - {name: nothing}
      - {path: /a, label: x}
      - file:relative
      - {path: [x]}
      - s3://bucket/key
`,
			want: [][]string{
				{`"a"`, "line 5", "roots[0]", `"relative/dir"`, "relative", "absolute"},
				{`"a"`, "line 6", "roots[1]", `"~/notes"`, "${HOME}"},
				{`"a"`, "line 7", "roots[2]", `"https://example.com/x"`, "not a file:// URI"},
				{`"a"`, "line 8", "roots[3]", "empty"},
				{`"a"`, "line 9", "roots[4]", "empty"},
				{`"a"`, "line 10", "roots[5]", "absolute path, a file:// URI"},
				{`"a"`, "line 11", "roots[6]", `"server"`, "this machine"},
				{`"a"`, "line 12", "roots[7]", `"/srv"`, "'path:'"},
				{`"a"`, "line 13", "roots[8]", `"file:///srv"`, "a URI, not a path", "'uri:'"},
				{`"a"`, "line 14", "roots[9]", "both"},
				{`"a"`, "line 15", "roots[10]", "neither"},
				{`"a"`, "line 16", "roots[11]", `"label"`, "known: path, uri, name"},
				{`"a"`, "line 17", "roots[12]", `"file:relative"`},
				{`"a"`, "line 18", "roots[13].path", "string"},
				{`"a"`, "line 19", "roots[14]", `"s3://bucket/key"`, "not a file:// URI"},
			},
			count: 15,
		},
		{
			name: "root listed twice",
			src: `destinations:
  a:
    command: cat
    roots:
      - /srv/data
      - /srv/./data/
`,
			want:  [][]string{{`"a"`, "line 6", "roots[1]", "file:///srv/data", "twice", "line 5"}},
			count: 1,
		},
		{
			name: "unset variable in a root",
			src: `destinations:
  a:
    command: cat
    roots:
      - /srv
      - {path: "${NO_ROOT}/x", name: "${NO_NAME}"}
`,
			want:  [][]string{{`"a"`, "line 6", "roots[1].path", "${NO_ROOT}"}, {`"a"`, "line 6", "roots[1].name", "${NO_NAME}"}},
			count: 2,
		},
		{
			name: "mcpServers and destinations together",
			src: `destinations:
  a:
    command: cat
mcpServers:
  b:
    command: cat
`,
			want:  [][]string{{"line 4", "'destinations' and 'mcpServers'", "keep one"}},
			count: 1,
		},
		{
			name: "mcpServers remote by url",
			src: `mcpServers:
  local:
    command: cat
  linear:
    url: https://mcp.linear.app/sse
    headers: {Authorization: "Bearer x"}
`,
			want:  [][]string{{"line 5", `"linear"`, "remote server", "'url:'", "only stdio", "point the client at its URL directly"}},
			count: 1,
		},
		{
			name: "mcpServers remote by type",
			src: `mcpServers:
  a:
    type: http
    command: cat
  b:
    type: sse
  c:
    type: streamable-http
`,
			want: [][]string{
				{"line 3", `"a"`, "remote server", "type: http", "only stdio"},
				{"line 6", `"b"`, "remote server", "type: sse"},
				{"line 8", `"c"`, "remote server", "type: streamable-http"},
			},
			count: 3,
		},
		{
			name:  "mcpServers unknown type",
			src:   "mcpServers:\n  a:\n    type: docker\n    command: cat\n",
			want:  [][]string{{"line 3", `"a"`, `'type' is "docker"`, "type: stdio"}},
			count: 1,
		},
		{
			name:  "type is not a destinations key",
			src:   "destinations:\n  a:\n    type: stdio\n    command: cat\n",
			want:  [][]string{{"line 3", `"a"`, `unknown key "type"`}},
			count: 1,
		},
		{
			name:  "mcpServers misspelt key lists type",
			src:   "mcpServers:\n  a:\n    command: cat\n    isolaton: session\n",
			want:  [][]string{{"line 4", `"a"`, `unknown key "isolaton"`, `did you mean "isolation"?`, "logs, cache, tasks, input_wait, session_ttl, prefix, max_users, user_idle, credentials, sandbox, era, type"}},
			count: 1,
		},
		{
			name:  "mcpServers every entry disabled",
			src:   "mcpServers:\n  a:\n    command: cat\n    disabled: true\n",
			want:  [][]string{{"no destination is served", "disabled"}},
			count: 1,
		},
		{
			name:  "mcpServers name that cannot be made safe",
			src:   "mcpServers:\n  \"★\":\n    command: cat\n",
			want:  [][]string{{"line 2", `"★"`, "path segment", "letters, digits"}},
			count: 1,
		},
		{
			name:  "session_ttl is not a duration",
			src:   "destinations:\n  a:\n    command: cat\n    session_ttl: soon\n",
			want:  [][]string{{"line 4", `"a"`, "session_ttl", "5m or 1h"}},
			count: 1,
		},
		{
			name:  "destinations misspelt key",
			src:   "destinations:\n  a:\n    comand: cat\n",
			want:  [][]string{{"line 3", `unknown key "comand"`, `did you mean "command"?`}},
			count: 1,
		},
		{
			// An unknown key no longer hides its entry's other problems.
			name:  "unknown key beside another problem",
			src:   "destinations:\n  a:\n    command: cat\n    isolaton: session\n    isolation: everyone\n    start_timeout: soon\n",
			want:  [][]string{{"line 4", `unknown key "isolaton"`, `did you mean "isolation"?`}, {"line 5", "isolation"}, {"line 6", "start_timeout"}},
			count: 3,
		},
		{
			name:  "default misspelt",
			src:   "default: everthing\ndestinations:\n  everything:\n    command: cat\n",
			want:  [][]string{{"line 1", `'default' is "everthing"`, `did you mean "everything"?`}},
			count: 1,
		},
		{
			name:  "destinations key of another client stays an error",
			src:   "destinations:\n  a:\n    command: cat\n    autoApprove: [x]\n",
			want:  [][]string{{"line 4", `unknown key "autoApprove"`}},
			count: 1,
		},
		{
			name:  "top-level misspelt key",
			src:   "destination:\n  a:\n    command: cat\n",
			want:  [][]string{{"line 1", `unknown key "destination"`, `did you mean "destinations"?`}},
			count: 2,
		},
		{
			name:  "mcpServers is empty",
			src:   "mcpServers: {}\n",
			want:  [][]string{{"line 1", "'mcpServers'", "at least one"}},
			count: 1,
		},
		{
			name:  "default names no mcpServers entry",
			src:   "mcpServers:\n  a:\n    command: cat\ndefault: b\n",
			want:  [][]string{{"line 4", `"b"`, "names no destination"}},
			count: 1,
		},
		{
			name:  "json syntax error",
			src:   "{\"mcpServers\": {\"a\": {\"command\": \"cat\"}}\n",
			want:  [][]string{{"line 1"}},
			count: 1,
		},
		{
			name: "unknown top-level key lists default",
			src:  "destinations:\n  a:\n    command: cat\ndefualt: a\n",
			want: [][]string{{"line 4", `"defualt"`, "known: destinations, mcpServers, default"}},
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
			cfg, err := Parse("test.yaml", []byte(tc.src), noEnv, testReserved...)
			if cfg != nil {
				t.Errorf("Parse returned a config along with the error")
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
	cfg, err := Parse("x.yaml", []byte(src), noEnv, testReserved...)
	if err != nil {
		t.Fatalf("Parse: %v", err)
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
	cfg, err = Parse("x.yaml", []byte("destinations:\n  a:\n    command: cat\n"), noEnv, testReserved...)
	if err != nil || cfg.Default != "" {
		t.Errorf("without default: Default = %q, err %v; want empty", cfg.Default, err)
	}
}

func TestParseConfigNewKeys(t *testing.T) {
	src := `destinations:
  a:
    command: cat
    base_env: minimal
    isolation: session
    start_timeout: 5m
    stderr_log_level: "off"
  b:
    command: cat
    base_env: inherit
    isolation: shared
    start_timeout: 1m30s
    stderr_log_level: debug
  c:
    command: cat
`
	cfg, err := Parse("x.yaml", []byte(src), noEnv, testReserved...)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	for _, tc := range []struct {
		name                        string
		baseEnv, isolation, stderrL string
		start                       time.Duration
	}{
		{"a", BaseEnvMinimal, IsolationSession, "off", 5 * time.Minute},
		{"b", BaseEnvInherit, IsolationShared, "debug", 90 * time.Second},
		// Absent keys leave the zero values: inherit, shared, warn, and the
		// caller's start timeout.
		{"c", "", "", "", 0},
	} {
		d := cfg.Destinations[tc.name]
		if d.BaseEnv != tc.baseEnv || d.Isolation != tc.isolation || d.StderrLevel != tc.stderrL || d.StartTimeout != tc.start {
			t.Errorf("%s: BaseEnv %q Isolation %q StderrLevel %q StartTimeout %s; want %q %q %q %s",
				tc.name, d.BaseEnv, d.Isolation, d.StderrLevel, d.StartTimeout, tc.baseEnv, tc.isolation, tc.stderrL, tc.start)
		}
		if d.Roots != nil {
			t.Errorf("%s: Roots = %v; want nil without 'roots:'", tc.name, d.Roots)
		}
	}
	// The attribution and caching keys.
	src = "destinations:\n  a:\n    command: cat\n    interactive: true\n    logs: fanout\n    cache:\n      ttl: 90s\n      scope: public\n  b:\n    command: cat\n    cache:\n      ttl: 0s\n"
	if cfg, err = Parse("x.yaml", []byte(src), noEnv, testReserved...); err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if a := cfg.Destinations["a"]; !a.Interactive || a.Logs != LogsFanout || a.CacheTTL != 90*time.Second || a.CacheScope != CachePublic {
		t.Errorf("a: Interactive %v Logs %q CacheTTL %s CacheScope %q; want true fanout 1m30s public", a.Interactive, a.Logs, a.CacheTTL, a.CacheScope)
	}
	if b := cfg.Destinations["b"]; b.Interactive || b.Logs != "" || b.CacheTTL != 0 || b.CacheScope != CachePrivate {
		t.Errorf("b: Interactive %v Logs %q CacheTTL %s CacheScope %q; want false, empty, 0s, private", b.Interactive, b.Logs, b.CacheTTL, b.CacheScope)
	}
	src = "destinations:\n  a:\n    command: cat\n    input_wait: 45s\n"
	if cfg, err = Parse("x.yaml", []byte(src), noEnv, testReserved...); err != nil || cfg.Destinations["a"].InputWait != 45*time.Second {
		t.Errorf("input_wait: %v", err)
	}
	// interactive: a list of the tools that run alone.
	src = "destinations:\n  a:\n    command: cat\n    interactive: [trigger-sampling-request, \"ask_*\"]\n  b:\n    command: cat\n    interactive: false\n"
	if cfg, err = Parse("x.yaml", []byte(src), noEnv, testReserved...); err != nil {
		t.Fatalf("Parse: %v", err)
	}
	a := cfg.Destinations["a"]
	if a.Interactive || !slices.Equal(a.InteractiveTools, []string{"trigger-sampling-request", "ask_*"}) {
		t.Errorf("a: Interactive %v InteractiveTools %q; want false and the two globs", a.Interactive, a.InteractiveTools)
	}
	for name, want := range map[string]bool{"trigger-sampling-request": true, "TRIGGER-Sampling-Request": true, "ask_me": true, "echo": false, "ask": false} {
		if a.RunsAlone(name) != want {
			t.Errorf("a.RunsAlone(%q) = %v; want %v", name, !want, want)
		}
	}
	if b := cfg.Destinations["b"]; b.Interactive || b.InteractiveTools != nil || b.RunsAlone("x") {
		t.Errorf("b (interactive: false): %v %q", b.Interactive, b.InteractiveTools)
	}
	src = "destinations:\n  a:\n    command: cat\n    tasks:\n      after: 250ms\n      ttl: 2h\n"
	if cfg, err = Parse("x.yaml", []byte(src), noEnv, testReserved...); err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if a := cfg.Destinations["a"]; a.TaskAfter != 250*time.Millisecond || a.TaskTTL != 2*time.Hour {
		t.Errorf("a: TaskAfter %s TaskTTL %s; want 250ms 2h", a.TaskAfter, a.TaskTTL)
	}
	for _, level := range stderrLevels {
		src := "destinations:\n  a:\n    command: cat\n    stderr_log_level: " + level + "\n"
		if cfg, err := Parse("x.yaml", []byte(src), noEnv, testReserved...); err != nil || cfg.Destinations["a"].StderrLevel != level {
			t.Errorf("stderr_log_level %s: %v", level, err)
		}
	}
}

func TestParseConfigRoots(t *testing.T) {
	src := `destinations:
  a:
    command: cat
    roots:
      - /srv/data
      - "/srv/My Notes #1/../Notes%/"
      - /
      - file:///home/me/My%20Docs
      - FILE://localhost/opt/x
      - ${WORK}/site
      - {path: /var/lib/app, name: App data}
      - {uri: "file:///mnt/share", name: "${SHARE_NAME}"}
      - path: ${WORK}/y
  none:
    command: cat
    roots: []
`
	cfg, err := Parse("x.yaml", []byte(src), envLookup(map[string]string{"WORK": "/home/me/work", "SHARE_NAME": "Share"}))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := []Root{
		{URI: "file:///srv/data", Name: "data"},
		{URI: "file:///srv/Notes%25", Name: "Notes%"},
		{URI: "file:///", Name: "/"},
		{URI: "file:///home/me/My%20Docs", Name: "My Docs"},
		{URI: "FILE://localhost/opt/x", Name: "x"},
		{URI: "file:///home/me/work/site", Name: "site"},
		{URI: "file:///var/lib/app", Name: "App data"},
		{URI: "file:///mnt/share", Name: "Share"},
		{URI: "file:///home/me/work/y", Name: "y"},
	}
	if got := cfg.Destinations["a"].Roots; !reflect.DeepEqual(got, want) {
		t.Errorf("Roots =\n  %+v\nwant\n  %+v", got, want)
	}
	if got := cfg.Destinations["none"].Roots; got == nil || len(got) != 0 {
		t.Errorf("roots: [] gave %#v; want an empty, non-nil list", got)
	}
	// Characters that are not allowed in a URI path are escaped; the result
	// parses back to the cleaned path.
	for _, p := range []string{"/a b/c#d?e", "/x/%41", "/日本/語", "/a//b/./c/"} {
		src := "destinations:\n  a:\n    command: cat\n    roots: [" + strconv.Quote(p) + "]\n"
		cfg, err := Parse("x.yaml", []byte(src), noEnv, testReserved...)
		if err != nil {
			t.Fatalf("root %q: %v", p, err)
		}
		r := cfg.Destinations["a"].Roots[0]
		u, err := url.Parse(r.URI)
		if err != nil || u.Scheme != "file" || u.Path != filepath.Clean(p) || u.RawQuery != "" || u.Fragment != "" {
			t.Errorf("root %q became %q, which parses to %+v (%v)", p, r.URI, u, err)
		}
		if r.Name != filepath.Base(filepath.Clean(p)) {
			t.Errorf("root %q: Name = %q", p, r.Name)
		}
	}
}

func TestParseConfigMCPServers(t *testing.T) {
	t.Run("Claude Desktop file", func(t *testing.T) {
		cfg, err := Load(filepath.Join("testdata", "claude_desktop_config.json"), envLookup(map[string]string{"GITHUB_TOKEN": "ghp_x"}))
		if err != nil {
			t.Fatalf("Load: %v", err)
		}
		if want := []string{"filesystem", "github", "sqlite"}; !reflect.DeepEqual(cfg.Names, want) {
			t.Errorf("Names = %q; want %q", cfg.Names, want)
		}
		want := &Destination{
			Name:    "github",
			Command: "docker",
			Args:    []string{"run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN", "ghcr.io/github/github-mcp-server"},
			Env:     map[string]string{"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_x"},
			Line:    12,
		}
		if got := cfg.Destinations["github"]; !reflect.DeepEqual(got, want) {
			t.Errorf("github = %+v\nwant %+v", got, want)
		}
		if fs := cfg.Destinations["filesystem"]; fs.Command != "npx" || len(fs.Args) != 4 || fs.Line != 3 {
			t.Errorf("filesystem = %+v", fs)
		}
		if cfg.Default != "" {
			t.Errorf("Default = %q", cfg.Default)
		}
	})
	t.Run("a lived-in Claude Desktop / Cline file", func(t *testing.T) {
		// Keys of other clients are skipped with a warning; a disabled
		// entry is not served; a name with a space is served URL-safe.
		cfg, err := Load(filepath.Join("testdata", "claude_desktop_lived_in.json"), noEnv, testReserved...)
		if err != nil {
			t.Fatalf("Load: %v", err)
		}
		if want := []string{"my-notes", "github"}; !reflect.DeepEqual(cfg.Names, want) {
			t.Errorf("Names = %q; want %q", cfg.Names, want)
		}
		if d := cfg.Destinations["github"]; d == nil || d.Command != "docker" || len(d.Args) != 4 {
			t.Errorf("github = %+v", d)
		}
		for _, want := range [][]string{
			{"line 2", `"globalShortcut"`, "ignored"},
			{"line 4", `"My Notes"`, `served as "my-notes"`, "/my-notes/mcp"},
			{"line 11", "disabled: false", "ignored"},
			{"line 12", `"autoApprove"`, "Cline", "ignored"},
			{"line 13", `"alwaysAllow"`},
			{"line 14", `"timeout"`},
			{"line 18", `"old-server"`, "disabled", "not served"},
		} {
			if _, ok := findProblem(cfg.Warnings, want...); !ok {
				t.Errorf("no warning has %q: %q", want, cfg.Warnings)
			}
		}
		if len(cfg.Warnings) != 7 {
			t.Errorf("%d warnings; want 7: %q", len(cfg.Warnings), cfg.Warnings)
		}
	})
	t.Run("tab-indented JSON", func(t *testing.T) {
		src := "{\n\t\"mcpServers\": {\n\t\t\"notes\": {\n\t\t\t\"command\": \"notes-mcp\",\n\t\t\t\"args\": [\"a\\tb\"]\n\t\t}\n\t}\n}\n"
		cfg, err := Parse("mcp.json", []byte(src), noEnv, testReserved...)
		if err != nil {
			t.Fatalf("Parse: %v", err)
		}
		if d := cfg.Destinations["notes"]; d.Command != "notes-mcp" || !reflect.DeepEqual(d.Args, []string{"a\tb"}) || d.Line != 3 {
			t.Errorf("notes = %+v", d)
		}
	})
	t.Run("the bridge's keys and default", func(t *testing.T) {
		src := `default: notes
mcpServers:
  notes:
    type: stdio
    command: notes-mcp
    base_env: minimal
    isolation: session
    start_timeout: 2m
    stderr_log_level: info
    roots: [/srv/notes]
    tools: {allow: [search]}
  other:
    command: cat
    prestart: true
`
		cfg, err := Parse("x.yaml", []byte(src), noEnv, testReserved...)
		if err != nil {
			t.Fatalf("Parse: %v", err)
		}
		d := cfg.Destinations["notes"]
		if cfg.Default != "notes" || d.BaseEnv != "minimal" || d.Isolation != "session" || d.StartTimeout != 2*time.Minute ||
			d.StderrLevel != "info" || !cfg.Destinations["other"].Prestart || !reflect.DeepEqual(d.Roots, []Root{{URI: "file:///srv/notes", Name: "notes"}}) ||
			!reflect.DeepEqual(d.Tools.Allow, []string{"search"}) {
			t.Errorf("Default %q, notes = %+v", cfg.Default, d)
		}
	})
	t.Run("Cursor file with a remote server", func(t *testing.T) {
		_, err := Load(filepath.Join("testdata", "cursor_mcp_remote.json"), noEnv, testReserved...)
		problems := configProblems(t, err)
		if len(problems) != 1 {
			t.Errorf("got %d problems; want 1:\n  %s", len(problems), strings.Join(problems, "\n  "))
		}
		if _, ok := findProblem(problems, "line 8", `"linear"`, "remote", "only stdio", "directly"); !ok {
			t.Errorf("no problem names the remote entry: %q", problems)
		}
		for _, p := range problems {
			if strings.Contains(p, "linear.app") {
				t.Errorf("a problem repeats the remote URL (it may carry a secret): %q", p)
			}
		}
	})
}

func TestConfigProblemsSortedByLine(t *testing.T) {
	src := `destinations:
  a:
    command: cat
    tools: {allow: []}
    start_timeout: soon
    base_env: none
    roots: [relative]
bogus: 1
`
	problems := configProblems(t, func() error { _, err := Parse("x.yaml", []byte(src), noEnv, testReserved...); return err }())
	var lines []string
	for _, p := range problems {
		lines = append(lines, strings.SplitN(p, ":", 2)[0])
	}
	if want := []string{"line 4", "line 5", "line 6", "line 7", "line 8"}; !reflect.DeepEqual(lines, want) {
		t.Errorf("problems in the order %q; want %q:\n  %s", lines, want, strings.Join(problems, "\n  "))
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
	cfg, err := Parse("x.yaml", []byte(src), envLookup(vars))
	if err != nil {
		t.Fatalf("Parse: %v", err)
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
	problems := configProblems(t, func() error { _, err := Parse("x.yaml", []byte(src), noEnv, testReserved...); return err }())
	if _, ok := findProblem(problems, "STELAE_TEST_ONLY_IN_PROCESS", "not set", "line 3"); !ok {
		t.Errorf("problems %q do not name the unset variable with its line", problems)
	}
	// A nil lookup falls back to the process environment.
	cfg, err := Parse("x.yaml", []byte(src), nil, testReserved...)
	if err != nil {
		t.Fatalf("Parse with nil lookup: %v", err)
	}
	if got := cfg.Destinations["a"].Args; !reflect.DeepEqual(got, []string{"x"}) {
		t.Errorf("Args = %q; want [x]", got)
	}
}

func TestParseConfigEmptyVariableMakesEmptyCommand(t *testing.T) {
	src := "destinations:\n  a:\n    command: ${EMPTY}\n"
	problems := configProblems(t, func() error {
		_, err := Parse("x.yaml", []byte(src), envLookup(map[string]string{"EMPTY": ""}))
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
		cfg, err := Load(path, noEnv, testReserved...)
		if err == nil || cfg != nil {
			t.Fatalf("Load(missing) = %v, %v; want an error", cfg, err)
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
		cfg, err := Load(path, noEnv, testReserved...)
		if err != nil {
			t.Fatalf("Load: %v", err)
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
		_, err := Load(path, noEnv, testReserved...)
		var ce *Error
		if !errors.As(err, &ce) {
			t.Fatalf("Load error %v is not a *Error", err)
		}
		if ce.File != path || !strings.HasPrefix(err.Error(), path+":") {
			t.Errorf("error %q does not start with the path %q", err, path)
		}
	})
}

func TestConfigErrorFormat(t *testing.T) {
	e := &Error{File: "d.yaml", Problems: []string{"line 1: one", "line 2: two"}}
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
		"destinations:\n  a:\n    command: cat\n    base_env: minimal\n    isolation: session\n    start_timeout: 5m\n    stderr_log_level: off\n",
		"destinations:\n  a:\n    command: cat\n    roots: [/srv, \"file:///x%20y\", {path: \"${Y}\", name: n}, {uri: \"file://h/x\"}, rel, \"\"]\n",
		"{\"mcpServers\": {\"a\": {\"type\": \"stdio\", \"command\": \"cat\"}, \"b\": {\"url\": \"http://x\"}}, \"default\": \"a\"}\n",
		"mcpServers:\n  a: {command: cat, type: sse}\ndestinations:\n  a: {command: cat}\n",
		"{\n\t\"mcpServers\": {\"a b\": {\"command\": \"cat\", \"start_timeout\": 300}}\n}\n",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	lookup := envLookup(map[string]string{"X": "cat", "Y": "y", "Z": "z", "EMPTY": "", "SPACE": " "})
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse("fuzz.yaml", data, lookup, testReserved...)
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("error %T is not a *Error: %v", err, err)
			}
			if len(ce.Problems) == 0 {
				t.Fatalf("Error without problems")
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
			if !validName.MatchString(n) || slices.Contains(testReserved, strings.ToLower(n)) {
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
			if d.BaseEnv != "" && d.BaseEnv != BaseEnvInherit && d.BaseEnv != BaseEnvMinimal {
				t.Fatalf("destination %q has base_env %q", n, d.BaseEnv)
			}
			if d.Isolation != "" && d.Isolation != IsolationShared && d.Isolation != IsolationSession {
				t.Fatalf("destination %q has isolation %q", n, d.Isolation)
			}
			if d.StderrLevel != "" && !slices.Contains(stderrLevels, d.StderrLevel) {
				t.Fatalf("destination %q has stderr_log_level %q", n, d.StderrLevel)
			}
			if d.StartTimeout < 0 {
				t.Fatalf("destination %q has start_timeout %s", n, d.StartTimeout)
			}
			for _, r := range d.Roots {
				u, err := url.Parse(r.URI)
				if err != nil || u.Scheme != "file" || !strings.HasPrefix(u.Path, "/") || (u.Host != "" && u.Host != "localhost") {
					t.Fatalf("destination %q has root %q, not a local file:// URI", n, r.URI)
				}
			}
			for k := range d.Env {
				if k == "" || strings.ContainsAny(k, "=\x00") {
					t.Fatalf("destination %q has invalid env name %q", n, k)
				}
			}
		}
	})
}

// TestToolFilterFailsClosed: a deny list also matches a name in another
// letter case (a server may look tools up without regard to case); an allow
// list matches exactly.
func TestToolFilterFailsClosed(t *testing.T) {
	deny := ToolFilter{Deny: []string{"delete_*", "shell"}}
	for _, name := range []string{"shell", "SHELL", "Shell", "ſhell", "delete_all", "DELETE_ALL", "Delete_Everything"} {
		if deny.Allows(name) {
			t.Errorf("deny list allows %q", name)
		}
	}
	for _, name := range []string{"echo", "shells", "undelete_all"} {
		if !deny.Allows(name) {
			t.Errorf("deny list refuses %q", name)
		}
	}
	allow := ToolFilter{Allow: []string{"search", "fetch"}}
	for name, want := range map[string]bool{"search": true, "fetch": true, "SEARCH": false, "Fetch": false, "shell": false} {
		if got := allow.Allows(name); got != want {
			t.Errorf("allow list: Allows(%q) = %v, want %v", name, got, want)
		}
	}
}

// testReserved are the bridge's own route names, as it hands them in.
var testReserved = []string{"mcp", "sse", "message", "healthz", "metrics", "version", "tools", "stream", ".well-known"}

// TestEra: 'era:' takes auto, 2025 or 2026; anything else is refused with
// what each means.
func TestEra(t *testing.T) {
	cfg, err := Parse("test.yaml", []byte("destinations:\n  a: {command: /bin/true, era: \"2025\"}\n  b: {command: /bin/true, era: auto}\n  c: {command: /bin/true}\n  d: {command: /bin/true, era: \"2026\"}\n"), noEnv, testReserved...)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Destinations["a"].Era != Era2025 || cfg.Destinations["b"].Era != EraAuto || cfg.Destinations["c"].Era != "" || cfg.Destinations["d"].Era != Era2026 {
		t.Errorf("eras %q %q %q %q", cfg.Destinations["a"].Era, cfg.Destinations["b"].Era, cfg.Destinations["c"].Era, cfg.Destinations["d"].Era)
	}
	for src, want := range map[string]string{
		"era: modern":     "'era' must be",
		"era: 2026-07-28": "2026: speak 2026-07-28",
	} {
		if _, err := Parse("test.yaml", []byte("destinations:\n  a:\n    command: /bin/true\n    "+src+"\n"), noEnv, testReserved...); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want %q", src, err, want)
		}
	}
}
