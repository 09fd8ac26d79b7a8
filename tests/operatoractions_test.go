//go:build unix

package tests

// The console's operator actions on the real binary: ending one session and restarting one
// destination leave every bystander (other sessions, users and destinations) untouched, also across
// a restart; named tokens show in the console as their users' names, never the token.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

// operatorBinary runs the binary with the operator actions' destinations —
// shared (one child for every session), iso (isolation: session), other
// (shared, never touched by the actions) and idle and idleiso (never
// used), and a profile "both" of shared and other — two users' tokens,
// and a state directory kept across restarts.
type operatorBinary struct {
	config, tokens, state, addr string
}

const (
	operatorToken = "operator-actions-token-a"
	otherToken    = "operator-actions-token-b"
)

func newOperatorBinary(t *testing.T) *operatorBinary {
	t.Helper()
	modes := map[string]string{"shared": fakemcp.ModeServer, "iso": fakemcp.ModeServer, "other": fakemcp.ModeServer, "idle": fakemcp.ModeServer, "idleiso": fakemcp.ModeServer}
	keys := map[string]string{"iso": "    isolation: session\n", "idleiso": "    isolation: session\n"}
	o := &operatorBinary{config: destinationsFile(t, modes, keys), state: t.TempDir(), addr: freeAddr(t)}
	data, err := os.ReadFile(o.config)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(o.config, append(data, "profiles:\n  both: {destinations: [shared, other]}\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	o.tokens = filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(o.tokens, []byte(operatorToken+"\n"+otherToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return o
}

func (o *operatorBinary) start(t *testing.T) *binaryProc {
	t.Helper()
	return startBinary(t, o.config, "-state-dir", o.state, "-listen", o.addr, "-auth-tokens-file", o.tokens)
}

// operatorAction POSTs one of the console's actions with the operator's
// bearer token and returns the status and the answer's message.
func operatorAction(t *testing.T, base, action, body string) (int, string) {
	t.Helper()
	r := mustRequest(t, http.MethodPost, base+"/console/api/"+action, "", body, "Authorization", "Bearer "+operatorToken, "Accept", "application/json")
	var out struct {
		Message string `json:"message"`
		Error   string `json:"error"`
	}
	_ = json.Unmarshal(r.body, &out)
	if out.Message == "" {
		out.Message = out.Error
	}
	if out.Message == "" {
		out.Message = string(r.body)
	}
	return r.status, out.Message
}

// sessionIDsOf lists the session id prefixes /healthz?verbose shows for dest.
func sessionIDsOf(t *testing.T, base, dest string) []string {
	t.Helper()
	r := mustRequest(t, http.MethodGet, base+"/healthz?verbose", "", "", "Authorization", "Bearer "+operatorToken)
	var h struct {
		Destinations map[string]struct {
			SessionList []struct {
				ID string `json:"id"`
			} `json:"session_list"`
		} `json:"destinations"`
	}
	if err := json.Unmarshal(r.body, &h); err != nil {
		t.Fatalf("/healthz?verbose: %d %v: %s", r.status, err, r.body)
	}
	var ids []string
	for _, s := range h.Destinations[dest].SessionList {
		ids = append(ids, s.ID)
	}
	return ids
}

// TestOperatorEndsOneSession: the console's "end session" ends that one
// session — on a shared destination and on an isolated one — and no
// other: the bystanders (the same user's other session, another user's
// session) go on with the same child, stay listed, and a restart of the
// bridge brings the bystanders back but not the ended session. The ended
// session's own child (isolated) stops; the shared child keeps running
// for the others. (It once ended every session of the destination.)
func TestOperatorEndsOneSession(t *testing.T) {
	o := newOperatorBinary(t)
	p := o.start(t)
	type user struct {
		name string
		c    *client
		pid  int
	}
	sessions := map[string][]*user{}
	for _, dest := range []string{"shared", "iso"} {
		for _, u := range []struct{ name, token string }{{"target", operatorToken}, {"same-user", operatorToken}, {"other-user", otherToken}} {
			c := authedClient(t, p.base+"/"+dest+"/mcp", u.token)
			c.initialize()
			sessions[dest] = append(sessions[dest], &user{u.name, c, whoamiCall(t, c).PID})
		}
	}
	otherDest := authedClient(t, p.base+"/other/mcp", otherToken)
	otherDest.initialize()
	otherPID := whoamiCall(t, otherDest).PID

	for _, dest := range []string{"shared", "iso"} {
		us := sessions[dest]
		target := us[0]
		status, msg := operatorAction(t, p.base, "sessions/end", fmt.Sprintf(`{"destination":%q,"session":%q}`, dest, target.c.sid[:8]))
		if status != http.StatusOK {
			t.Fatalf("%s: end session: %d %s", dest, status, msg)
		}
		if r := target.c.callTool(`"x"`, "echo", map[string]string{"text": "x"}); r.status != http.StatusNotFound {
			t.Errorf("%s: the ended session's next call: %d %s; want 404", dest, r.status, r.body)
		}
		for _, by := range us[1:] {
			if w := whoamiCall(t, by.c); w.PID != by.pid {
				t.Errorf("%s: bystander %s is served by pid %d, was %d (its child was stopped)", dest, by.name, w.PID, by.pid)
			}
		}
		ids := sessionIDsOf(t, p.base, dest)
		if len(ids) != 2 || strings.Contains(strings.Join(ids, " "), target.c.sid[:8]) {
			t.Errorf("%s: sessions listed after ending one: %v; want the two bystanders", dest, ids)
		}
	}
	// The ended isolated session's child stops; the bystanders' run on.
	isoTarget := sessions["iso"][0].pid
	waitFor(t, 20*time.Second, "the ended isolated session's child to stop", func() bool { return !alive(isoTarget) })
	for _, by := range append(sessions["iso"][1:], sessions["shared"]...) {
		if !alive(by.pid) {
			t.Errorf("%s's child (pid %d) stopped", by.name, by.pid)
		}
	}
	if w := whoamiCall(t, otherDest); w.PID != otherPID {
		t.Errorf("another destination's child changed: pid %d, was %d", w.PID, otherPID)
	}

	// Across a restart of the bridge: the shared destination's bystanders
	// come back, the ended session does not.
	stopBinary(t, p)
	p = o.start(t)
	shared := sessions["shared"]
	if r := shared[0].c.callTool(`"x"`, "echo", map[string]string{"text": "x"}); r.status != http.StatusNotFound {
		t.Errorf("after a restart, the ended session: %d %s; want 404", r.status, r.body)
	}
	for _, by := range shared[1:] {
		echoCall(t, by.c, `"after"`, "after the restart")
	}
}

// childStateOf is dest's child state as /healthz?verbose shows it.
func childStateOf(t *testing.T, base, dest string) string {
	t.Helper()
	r := mustRequest(t, http.MethodGet, base+"/healthz?verbose", "", "", "Authorization", "Bearer "+operatorToken)
	var h struct {
		Destinations map[string]struct {
			State string `json:"state"`
		} `json:"destinations"`
	}
	if err := json.Unmarshal(r.body, &h); err != nil {
		t.Fatalf("/healthz?verbose: %d %v: %s", r.status, err, r.body)
	}
	return h.Destinations[dest].State
}

// TestOperatorRestartsOneDestination: the console's restart replaces the
// children of the destination it names — every session of it goes on, on
// a new child, with no 404 — and touches no other destination's child.
// Where nothing runs it starts nothing and says so; a profile, which has
// no process of its own, is refused with the members to restart instead.
func TestOperatorRestartsOneDestination(t *testing.T) {
	o := newOperatorBinary(t)
	p := o.start(t)
	type user struct {
		c   *client
		pid int
	}
	users := map[string][]*user{}
	for _, dest := range []string{"shared", "iso", "other"} {
		for _, token := range []string{operatorToken, otherToken} {
			c := authedClient(t, p.base+"/"+dest+"/mcp", token)
			c.initialize()
			users[dest] = append(users[dest], &user{c, whoamiCall(t, c).PID})
		}
	}
	unchanged := func(dests ...string) {
		t.Helper()
		for _, dest := range dests {
			for i, u := range users[dest] {
				if w := whoamiCall(t, u.c); w.PID != u.pid {
					t.Errorf("%s session %d: served by pid %d, was %d: a restart of another destination reached it", dest, i, w.PID, u.pid)
				}
			}
		}
	}
	restarted := func(dest string) {
		t.Helper()
		for i, u := range users[dest] {
			var w childWho
			waitFor(t, 20*time.Second, fmt.Sprintf("%s session %d on a new child", dest, i), func() bool {
				r := u.c.callTool(`"who"`, "whoami", nil)
				if r.status == http.StatusNotFound {
					t.Fatalf("%s session %d got 404 after the restart: %s", dest, i, r.body)
				}
				return r.status == http.StatusOK && json.Unmarshal(decode(t, r.body).Result, &w) == nil && w.PID != 0 && w.PID != u.pid
			})
			u.pid = w.PID
		}
	}

	status, msg := operatorAction(t, p.base, "restart", `{"destination":"shared"}`)
	if status != http.StatusOK || !strings.Contains(msg, "the child of shared is restarting") {
		t.Fatalf("restart shared: %d %q", status, msg)
	}
	restarted("shared")
	unchanged("iso", "other")

	status, msg = operatorAction(t, p.base, "restart", `{"destination":"iso"}`)
	if status != http.StatusOK || !strings.Contains(msg, "2 children of iso") {
		t.Fatalf("restart iso: %d %q", status, msg)
	}
	restarted("iso")
	unchanged("shared", "other")

	// Nothing runs: nothing is started, and the operator is told so.
	for dest, want := range map[string]string{"idle": "no child of idle is running", "idleiso": "no session of idleiso has a child running"} {
		status, msg = operatorAction(t, p.base, "restart", fmt.Sprintf(`{"destination":%q}`, dest))
		if status != http.StatusOK || !strings.Contains(msg, want) {
			t.Errorf("restart %s: %d %q; want 200 saying %q", dest, status, msg, want)
		}
	}
	if st := childStateOf(t, p.base, "idle"); st != "idle" {
		t.Errorf("idle after the operator's restart: state %q; want idle (a child nobody uses was started)", st)
	}
	// A profile has no process of its own.
	status, msg = operatorAction(t, p.base, "restart", `{"destination":"p/both"}`)
	if status != http.StatusConflict || !strings.Contains(msg, "shared, other") {
		t.Errorf("restart of the profile: %d %q; want 409 naming its members", status, msg)
	}
	unchanged("shared", "iso", "other")
}

// TestNamedTokensInTheConsole: the tokens file's "NAME: TOKEN" lines name
// their users (issue 35): the console shows each session's and each
// logged call's user by that name, not a hash, and never the token.
func TestNamedTokensInTheConsole(t *testing.T) {
	o := newOperatorBinary(t)
	// The operator reads the console with a token of their own, unnamed
	// (a named token is a user's and does not open it).
	const consoleToken = "operator-actions-console-token"
	if err := os.WriteFile(o.tokens, []byte("alice: "+operatorToken+"\nbob: "+otherToken+"\n"+consoleToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := o.start(t)
	for _, token := range []string{operatorToken, otherToken} {
		c := authedClient(t, p.base+"/shared/mcp", token)
		c.initialize()
		echoCall(t, c, `"n"`, "named")
	}
	var state struct {
		Destinations []struct {
			Name     string
			Sessions []struct{ Principal string }
		}
	}
	r := mustRequest(t, http.MethodGet, p.base+"/console/api/state", "", "", "Authorization", "Bearer "+consoleToken)
	if err := json.Unmarshal(r.body, &state); err != nil {
		t.Fatalf("state: %d %v: %.300s", r.status, err, r.body)
	}
	var seen []string
	for _, d := range state.Destinations {
		for _, s := range d.Sessions {
			seen = append(seen, s.Principal)
		}
	}
	slices.Sort(seen)
	if strings.Join(seen, ",") != "alice,bob" {
		t.Errorf("the console's sessions show %v; want alice and bob", seen)
	}
	if strings.Contains(string(r.body), operatorToken) || strings.Contains(string(r.body), otherToken) {
		t.Error("the console's state holds a token")
	}
	var log []struct{ Principal string }
	r = mustRequest(t, http.MethodGet, p.base+"/console/api/log", "", "", "Authorization", "Bearer "+consoleToken)
	if err := json.Unmarshal(r.body, &log); err != nil {
		t.Fatalf("log: %d %v: %.300s", r.status, err, r.body)
	}
	logged := map[string]bool{}
	for _, e := range log {
		logged[e.Principal] = true
	}
	if !logged["alice"] || !logged["bob"] {
		t.Errorf("the console's log names %v; want alice and bob", logged)
	}
}
