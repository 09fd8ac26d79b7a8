//go:build unix

package tests

// stelae-bridge doctor (issue 40, first part) against a bridge on loopback: every check of a
// healthy endpoint passes or says why it was not checked; a profile of 150 tools, a stream that
// delivers nothing and a static-token endpoint each produce their one line; the doctor leaves no
// session behind.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

// doctorReport is what 'doctor -json' prints.
type doctorReport struct {
	URL     string `json:"url"`
	OK      bool   `json:"ok"`
	Tools   int    `json:"tools"`
	Results []struct {
		Check, Status, Found, Cause, Fix string
	} `json:"results"`
}

// runDoctor runs the binary's doctor on url; its exit code and report.
func runDoctor(t *testing.T, url string, flags ...string) (int, doctorReport) {
	t.Helper()
	cmd := exec.Command(bridgeBinary(t), append(append([]string{"doctor", "-json"}, flags...), url)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	var rep doctorReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("doctor %s: exit %d, %v\nstdout %s\nstderr %s", url, code, err, out.String(), errOut.String())
	}
	return code, rep
}

// statuses is check → status (the last of a check's results).
func (r doctorReport) statuses() map[string]string {
	out := map[string]string{}
	for _, res := range r.Results {
		out[res.Check] = res.Status
	}
	return out
}

// failed are the checks that failed.
func (r doctorReport) failed() []string {
	var out []string
	for _, res := range r.Results {
		if res.Status == "fail" {
			out = append(out, res.Check+": "+res.Found)
		}
	}
	return out
}

func TestDoctorLoopback(t *testing.T) {
	cfg := doctorConfig(t, t.TempDir())
	p := startBinary(t, cfg, "-keepalive", "1s")

	// A healthy endpoint: nothing fails; what needs what is not there
	// (TLS, OAuth, a held stream) says why it was not checked.
	code, rep := runDoctor(t, p.base+"/fake/mcp", "-keepalive-wait", "15s")
	want := map[string]string{"url": "warn", "port": "pass", "tls": "skip", "initialize": "pass", "session": "pass", "tools": "pass",
		"discover": "pass", "stream": "pass", "hold": "skip", "cors": "pass", "metadata": "skip"}
	if code != 0 || !rep.OK || fmt.Sprint(rep.statuses()) != fmt.Sprint(want) || rep.Tools < 20 {
		t.Errorf("a healthy endpoint: exit %d, %+v\nwant %v", code, rep, want)
	}
	// It left no session behind.
	waitFor(t, 10*time.Second, "the doctor's sessions to be gone", func() bool {
		r := mustRequest(t, "GET", p.base+"/healthz?verbose", "", "")
		var h struct {
			Destinations map[string]struct {
				Sessions int `json:"sessions"`
			} `json:"destinations"`
		}
		return json.Unmarshal(r.body, &h) == nil && h.Destinations["fake"].Sessions == 0
	})

	// 150 tools: one failed line, naming the clients' limits.
	code, rep = runDoctor(t, p.base+"/many/mcp", "-keepalive-wait", "15s")
	if f := rep.failed(); code != 1 || len(f) != 1 || !strings.HasPrefix(f[0], "tools: ") || !strings.Contains(f[0], "ChatGPT keeps 128") || rep.Tools < 150 {
		t.Errorf("150 tools: exit %d, failed %q, tools %d", code, f, rep.Tools)
	}
}

// TestDoctorStaticTokens: an endpoint of static tokens, which connectors
// cannot sign in to, is said to be one; with the token the checks behind
// it run.
func TestDoctorStaticTokens(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte("doctor-token-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := fakeDestinations(t, map[string]string{"fake": fakemcp.ModeServer})
	p := startBinary(t, cfg, "-keepalive", "15s", "-auth-tokens-file", tokens)
	// Without the token: the checks behind auth are skipped, and the
	// static token is said to keep connectors out.
	code, rep := runDoctor(t, p.base+"/fake/mcp", "-keepalive-wait", "1s")
	st := rep.statuses()
	if code != 0 || st["initialize"] != "pass" || st["tools"] != "skip" || st["metadata"] != "warn" {
		t.Errorf("a static-token endpoint without the token: exit %d, %+v", code, rep)
	}
	// With it, the checks behind auth run, and pass.
	code, rep = runDoctor(t, p.base+"/fake/mcp", "-keepalive-wait", "10s", "-token", "doctor-token-1")
	if st := rep.statuses(); code != 0 || st["tools"] != "pass" || st["stream"] != "pass" || st["metadata"] != "warn" {
		t.Errorf("a static-token endpoint with the token: exit %d, %+v", code, rep)
	}
}
