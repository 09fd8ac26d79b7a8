//go:build unix

package tests

// Many users at once on a destination with a child and a credential per user (issue 35): each call
// sees its own user's credential and child, no planted value shows anywhere, and the cap on users'
// children holds under bursts of new users.

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

// TestUserCrosstalk (issue 35): many users at once on a destination with a
// child per user and a credential each, through the real binary, in both
// eras — 2025 sessions (two per user) and 2026-07-28 requests — every
// call reads its child's credential (as a digest: the value never travels
// back) and pid. Every call sees its own user's credential and child,
// each user one child; and then every planted value is searched for
// where it must not be: the bridge's log at trace level with the audit of
// bodies, /healthz?verbose, /metrics, the console's state and log, the
// state directory's files, and the argv of every process under the bridge.
// 0 found.
func TestUserCrosstalk(t *testing.T) {
	const users, callsPerWorker = 10, 8
	dir := t.TempDir()
	creds := filepath.Join(dir, "credentials")
	if err := os.MkdirAll(filepath.Join(creds, "peruser"), 0o700); err != nil {
		t.Fatal(err)
	}
	secrets := map[string]string{} // user → planted value
	var tokens strings.Builder
	for i := range users {
		u := fmt.Sprintf("u%d", i)
		b := make([]byte, 12)
		_, _ = rand.Read(b)
		secrets[u] = "planted-" + u + "-" + hex.EncodeToString(b)
		if err := os.WriteFile(filepath.Join(creds, "peruser", u), []byte("API_TOKEN="+secrets[u]+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&tokens, "%s: crosstalk-token-%s\n", u, u)
	}
	tokenFile := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokenFile, []byte(tokens.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	config := fakeDestinationsWith(t, map[string]string{"peruser": fakemcp.ModeServer},
		"    isolation: user\n    max_users: 20\n    credentials:\n      API_TOKEN: {description: \"the user's token\"}\n")
	state := filepath.Join(dir, "state")
	p := startBinary(t, config, "-state-dir", state, "-auth-tokens-file", tokenFile, "-credentials-dir", creds,
		"-log-level", "trace", "-audit-log-bodies")
	url := p.base + "/peruser/mcp"

	digest := func(s string) string { sum := sha256.Sum256([]byte(s)); return hex.EncodeToString(sum[:]) }
	type seen struct {
		pid    int
		digest string
	}
	read := func(r response) (seen, error) {
		var m struct {
			Result struct {
				StructuredContent struct {
					Value string `json:"value"`
					PID   int    `json:"pid"`
				} `json:"structuredContent"`
				Content []struct{ Text string } `json:"content"`
			} `json:"result"`
		}
		if r.status != http.StatusOK || json.Unmarshal(r.body, &m) != nil {
			return seen{}, fmt.Errorf("%d %.200s", r.status, r.body)
		}
		v := m.Result.StructuredContent
		if v.PID == 0 && len(m.Result.Content) > 0 {
			_ = json.Unmarshal([]byte(m.Result.Content[0].Text), &v)
		}
		return seen{v.PID, v.Value}, nil
	}
	getenv := `{"name":"getenv","arguments":{"name":"API_TOKEN","digest":"sha256"}`
	var mu sync.Mutex
	pids := map[string]map[int]bool{} // user → the pids their calls saw
	var problems []string
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(problems) < 20 {
			problems = append(problems, fmt.Sprintf(format, args...))
		}
	}
	var wg sync.WaitGroup
	for i := range users {
		u := fmt.Sprintf("u%d", i)
		token := "crosstalk-token-" + u
		for w := range 3 { // two sessions and a stream of 2026-07-28 requests
			wg.Add(1)
			go func() {
				defer wg.Done()
				var c *client
				if w < 2 {
					c = authedClient(t, url, token)
					r, err := c.do(http.MethodPost, initBody)
					if err != nil || r.status != http.StatusOK {
						fail("%s: initialize: %v %d %s", u, err, r.status, r.body)
						return
					}
					c.sid = r.header.Get("Mcp-Session-Id")
				}
				for n := range callsPerWorker {
					var r response
					var err error
					if c != nil {
						r, err = c.do(http.MethodPost, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s}}`, n, getenv))
					} else {
						r, err = request(http.MethodPost, url, "", fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":%s,%s}}`, n, getenv, modernMeta),
							"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "getenv", "Authorization", "Bearer "+token)
					}
					if err != nil {
						fail("%s: %v", u, err)
						return
					}
					s, err := read(r)
					switch {
					case err != nil:
						fail("%s: %v", u, err)
					case s.digest != digest(secrets[u]):
						fail("%s's call read another credential (pid %d)", u, s.pid)
					default:
						mu.Lock()
						if pids[u] == nil {
							pids[u] = map[int]bool{}
						}
						pids[u][s.pid] = true
						mu.Unlock()
					}
				}
			}()
		}
	}
	wg.Wait()
	for _, p := range problems {
		t.Error(p)
	}
	owner := map[int]string{}
	for u, ps := range pids {
		if len(ps) != 1 {
			t.Errorf("%s's calls were served by %d children; want one", u, len(ps))
		}
		for pid := range ps {
			if o, ok := owner[pid]; ok {
				t.Errorf("pid %d served %s and %s", pid, o, u)
			}
			owner[pid] = u
		}
	}
	if len(pids) != users {
		t.Errorf("%d users served; want %d", len(pids), users)
	}

	// Where the values must not be.
	places := map[string]string{
		"the bridge's log (trace, audit bodies)": p.logs.String(),
	}
	for _, path := range []string{"/healthz?verbose", "/metrics", "/console/api/state", "/console/api/log"} {
		r := mustRequest(t, http.MethodGet, p.base+path, "", "", "Authorization", "Bearer crosstalk-token-u0")
		places[path] = string(r.body)
	}
	_ = filepath.WalkDir(state, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, err := os.ReadFile(path); err == nil {
				places["the state directory's "+filepath.Base(path)] = string(b)
			}
		}
		return nil
	})
	for _, pid := range descendants(p.cmd.Process.Pid) {
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); err == nil {
			places["the argv of pid "+strconv.Itoa(pid)] += string(b)
		}
	}
	found := 0
	for where, text := range places {
		for u, secret := range secrets {
			if strings.Contains(text, secret) {
				found++
				t.Errorf("%s's credential found in %s", u, where)
			}
		}
	}
	t.Logf("%d users × (2 sessions + 2026-07-28 requests) × %d calls each: %d children; %d places searched for %d planted values: %d found", users, callsPerWorker, len(owner), len(places), len(secrets), found)
	if lg := p.logs.String(); !strings.Contains(lg, "DEBUG") && !strings.Contains(lg, "debug") {
		t.Logf("log sample: %.2000s", lg)
		t.Error("the bridge logged nothing at debug level: the search proves little")
	}
	// The search has teeth: the results' bodies were logged (their
	// digests are there), so a value in one would have been found.
	if !strings.Contains(p.logs.String(), digest(secrets["u0"])) {
		t.Error("the audit of bodies logged no result of u0's: the search proves little")
	}
}

// userChildProcesses counts the fake children under pid (not their
// reapers).
func userChildProcesses(pid int) int {
	n := 0
	for _, p := range descendants(pid) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/cmdline")
		if err == nil && strings.Contains(string(b), "-test.run=") && !strings.Contains(string(b), "__stelae_reaper") {
			n++
		}
	}
	return n
}

// TestUserChildrenCap (issue 35): 8 rounds of first calls by 50 users at
// once against a destination of at most 10 users' children: the children
// under the bridge never pass 10 (those stopping count), the users past
// the cap get 503 with Retry-After, and a user who holds a session all
// along is served every time by the same child — never stopped to make
// room.
func TestUserChildrenCap(t *testing.T) {
	const users, rounds, maxUsers = 50, 8, 10
	var tokens strings.Builder
	for i := range users + 1 {
		fmt.Fprintf(&tokens, "u%d: cap-token-u%d\n", i, i)
	}
	tokenFile := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokenFile, []byte(tokens.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	// Each child takes 300 ms to stop once its stdin ends: the places of
	// those stopping must stay taken.
	command, args, env := fakemcp.Command(fakemcp.ModeServer)
	env[fakemcp.EnvStopDelay] = "300"
	envJSON, _ := json.Marshal(env)
	config := filepath.Join(t.TempDir(), "destinations.yaml")
	yaml := fmt.Sprintf("destinations:\n  peruser:\n    command: %q\n    args: [%q]\n    isolation: user\n    max_users: %d\n    user_idle: 200ms\n    env: %s\n", command, args[0], maxUsers, envJSON)
	if err := os.WriteFile(config, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startBinary(t, config, "-auth-tokens-file", tokenFile, "-stop-grace", "5s")
	url := p.base + "/peruser/mcp"
	stay := authedClient(t, url, "cap-token-u0")
	stay.initialize()
	stayPID := whoamiCall(t, stay).PID

	var peak int
	stopSampling, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			peak = max(peak, userChildProcesses(p.cmd.Process.Pid))
			select {
			case <-stopSampling:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	var mu sync.Mutex
	statuses := map[int]int{}
	var problems []string
	for round := range rounds {
		var wg sync.WaitGroup
		for i := 1; i <= users; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := authedClient(t, url, fmt.Sprintf("cap-token-u%d", i))
				r, err := c.do(http.MethodPost, initBody)
				status := r.status
				if err == nil && status == http.StatusOK {
					c.sid = r.header.Get("Mcp-Session-Id")
					if r, err = c.do(http.MethodPost, toolCallBody(`"w"`, "whoami", nil)); err == nil && r.status != http.StatusOK {
						status = r.status
					}
					_, _ = c.do(http.MethodDelete, "")
				}
				mu.Lock()
				defer mu.Unlock()
				statuses[status]++
				switch {
				case err != nil:
					problems = append(problems, fmt.Sprintf("round %d u%d: %v", round, i, err))
				case status == http.StatusServiceUnavailable && r.header.Get("Retry-After") == "":
					problems = append(problems, fmt.Sprintf("round %d u%d: 503 without Retry-After", round, i))
				case status != http.StatusOK && status != http.StatusServiceUnavailable:
					problems = append(problems, fmt.Sprintf("round %d u%d: %d %.200s", round, i, status, r.body))
				}
			}()
		}
		wg.Wait()
		if w := whoamiCall(t, stay); w.PID != stayPID {
			t.Fatalf("round %d: the user who stayed is served by pid %d, was %d: their child was stopped for others", round, w.PID, stayPID)
		}
	}
	close(stopSampling)
	<-sampled
	for _, pr := range problems[:min(len(problems), 10)] {
		t.Error(pr)
	}
	t.Logf("%d rounds × %d users' first calls, max_users %d: %v (status → count); at most %d children under the bridge at once", rounds, users, maxUsers, statuses, peak)
	if peak > maxUsers {
		t.Errorf("%d children under the bridge at once; the cap is %d (those stopping included)", peak, maxUsers)
	}
	if statuses[http.StatusOK] == 0 || statuses[http.StatusServiceUnavailable] == 0 {
		t.Errorf("statuses %v: want some served and some refused at the cap", statuses)
	}
}
