//go:build unix

package tests

// TestTorture's user-isolated destination (issue 35): a child and a credential per user, every
// answer from the caller's own child, and planted values searched for everywhere the bridge writes
// or serves. Details below.

import (
	"cmp"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

// The user-isolated destination of TestTorture's "tokens" run (issue 35):
// a child per user ('isolation: user') with a credential each
// (fakemcp.EnvTortureSecret), a random value per principal provisioned
// through -credentials-dir. Its calls go through the same machinery as the
// others', and besides:
//   - every answer comes from the caller's own child: the child reports the
//     digest of its credential (never the value), which must be the digest
//     of the caller's planted value; each user has one child (one pid)
//     across their 2025 sessions, sessionless and 2026-07-28 requests, none
//     shared, and the console shows that pid as theirs;
//   - the journal's checks hold child by child: one start each, the
//     credential of a known user, every tagged event of that user's calls;
//   - no planted value shows anywhere the bridge writes or serves: its log,
//     /healthz?verbose, /metrics, the console's state and log, every file
//     of its state directory, the argv of every process under it. The
//     load runs at -log-level warn (bodies of several MiB at trace would
//     swamp the run), so a short phase follows on a second bridge over the
//     same state directory at trace with -audit-log-bodies: calls of every
//     era per user, its log searched too (where the results' digests must
//     show: the search has teeth).

// tortureUserConfig is the user-isolated destination's own keys: room for
// every principal that calls it (the sessions' users s0–s4, its workers'
// mw/xw principals, p and alone: at most 10), no user let go mid-run.
const tortureUserConfig = "    isolation: user\n    max_users: 16\n    user_idle: 10m\n    credentials:\n      " +
	fakemcp.EnvTortureSecret + ": {description: \"the torture user's secret\"}\n"

// tortureUsers is what a run needs for its user-isolated destination.
type tortureUsers struct {
	dest                          *tortureDest
	config, tokens, creds, state  string
	secrets                       map[string]string // user → planted value
	byDigest                      map[string]string // digest of a planted value → user
	placesBeforeStop, placesAfter map[string]string // where to search → its text
	// auditTrail is the load bridge's audit trail, read after it stopped.
	auditTrail string

	// mu guards pids.
	mu sync.Mutex
	// pids are the children whose answers each user's calls got, with
	// the eras of those calls.
	pids map[string]map[int]map[string]bool
}

// plantUsers writes the tokens file (a named line per principal, and the
// operator's unnamed one) and a
// provisioned credential of a random value for each principal on d.
func plantUsers(t *testing.T, dir, config string, d *tortureDest, names []string) *tortureUsers {
	us := &tortureUsers{dest: d, config: config, tokens: filepath.Join(dir, "tokens"), creds: filepath.Join(dir, "credentials"),
		state: filepath.Join(dir, "state"), secrets: map[string]string{}, byDigest: map[string]string{}, pids: map[string]map[int]map[string]bool{}}
	if err := os.MkdirAll(filepath.Join(us.creds, d.name), 0o700); err != nil {
		t.Fatal(err)
	}
	// The operator's token, unnamed (a named token is a user's, which
	// does not open the console).
	var lines strings.Builder
	lines.WriteString(tortureBearer("operator") + "\n")
	for _, n := range names {
		fmt.Fprintf(&lines, "%s: %s\n", n, tortureBearer(n))
		// Random, and with characters JSON escapes (`"`, and <&> with
		// HTML escaping), so an escaped copy differs from the value.
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		v := "planted-" + n + "-" + hex.EncodeToString(b) + `"<&>`
		us.secrets[n] = v
		us.byDigest[sha256Hex(v)] = n
		if err := os.WriteFile(filepath.Join(us.creds, d.name, n), []byte(fakemcp.EnvTortureSecret+"="+v+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(us.tokens, []byte(lines.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return us
}

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// flags are the bridge's flags for the users: their tokens, credentials,
// the state directory to search, and room for every user's child.
func (us *tortureUsers) flags() []string {
	return []string{"-auth-tokens-file", us.tokens, "-credentials-dir", us.creds, "-state-dir", us.state, "-max-user-children", "32"}
}

// ownChild checks that the answer to c came from the caller's own child
// (the user-isolated destination) or from a child with no credential (the
// others), and records its pid; false (reported) when it did not.
func (tt *torture) ownChild(c *tortureCall, res fakemcp.TortureResult) bool {
	us := tt.usersRun
	if !c.dest.perUser {
		if res.Secret != "" {
			tt.report("cross-user", "%s (%s): the child of a shared destination has a user's credential (digest %s, %s's)", c.tag, c.era, res.Secret, us.whose(res.Secret))
			return false
		}
		return true
	}
	want, ok := us.secrets[c.user]
	switch {
	case !ok:
		tt.report("unexpected", "%s (%s): no credential was planted for %s", c.tag, c.era, c.user)
		return false
	case res.Secret != sha256Hex(want):
		tt.report("cross-user", "%s (%s) was answered by pid %d, the child of %s, not %s's own", c.tag, c.era, res.PID, us.whose(res.Secret), c.user)
		return false
	}
	us.mu.Lock()
	defer us.mu.Unlock()
	if us.pids[c.user] == nil {
		us.pids[c.user] = map[int]map[string]bool{}
	}
	if us.pids[c.user][res.PID] == nil {
		us.pids[c.user][res.PID] = map[string]bool{}
	}
	us.pids[c.user][res.PID][c.era] = true
	return true
}

// whose names the user whose credential has digest ("nobody's": none).
func (us *tortureUsers) whose(digest string) string {
	if us == nil {
		return "a user's"
	}
	switch u, ok := us.byDigest[digest]; {
	case digest == "":
		return "nobody (no credential)"
	case ok:
		return u
	}
	return "an unknown user (digest " + digest + ")"
}

// served is each user's one child, the pid their calls got (-1 when they
// got several: reported by checkUserChildren).
func (us *tortureUsers) served() map[string]int {
	us.mu.Lock()
	defer us.mu.Unlock()
	out := map[string]int{}
	for u, pids := range us.pids {
		out[u] = -1
		if len(pids) == 1 {
			for pid := range pids {
				out[u] = pid
			}
		}
	}
	return out
}

// checkUserChildren holds the user-isolated destination d to a child per
// user: each user's calls got one pid, no pid served two users, every
// child in the journal started once, has a known user's credential and
// wrote events of that user's calls only; the destination runs with no
// restart.
func (tt *torture) checkUserChildren(d *tortureDest, state string, restarts int) {
	us := tt.usersRun
	us.mu.Lock()
	owner := map[int]string{}
	for u, pids := range us.pids {
		if len(pids) != 1 {
			tt.report("cross-user", "%s: %s's calls were answered by %d children (%v); want one", d.name, u, len(pids), sortedKeys(pids))
		}
		for pid, eras := range pids {
			if o, ok := owner[pid]; ok {
				tt.report("cross-user", "%s: pid %d answered both %s and %s", d.name, pid, o, u)
			}
			owner[pid] = u
			tt.count(fmt.Sprintf("%s users served in %d eras", d.name, len(eras)), 1)
		}
	}
	us.mu.Unlock()
	// The journal, child by child.
	starts, credOf := map[int]int{}, map[int]string{}
	for _, e := range tt.journal(d) {
		switch e.kind {
		case "start":
			starts[e.pid]++
		case "exit":
			tt.report("journal", "%s: pid %d exited as scripted; nothing asks it to", d.name, e.pid)
		case "credential":
			credOf[e.pid] = us.whose(e.note)
		default:
			// Every other event names a tag (first word of its note):
			// the child's own user's.
			tag, _, _ := strings.Cut(e.note, " ")
			if u, _, ok := splitTag(tag); ok && credOf[e.pid] != u {
				tt.report("cross-user", "%s: the child of %s (pid %d) journaled %s %s, a call of %s", d.name, credOf[e.pid], e.pid, e.kind, e.note, u)
			}
		}
	}
	users := map[string]int{}
	for pid, n := range starts {
		u := credOf[pid]
		if n != 1 || us.secrets[u] == "" {
			tt.report("journal", "%s: pid %d started %d times with the credential of %s; want once, a user's", d.name, pid, n, u)
		}
		if other, ok := users[u]; ok {
			tt.report("journal", "%s: %s has two children, pids %d and %d", d.name, u, other, pid)
		}
		users[u] = pid
		if o, ok := owner[pid]; ok && o != u {
			tt.report("cross-user", "%s: pid %d has %s's credential and answered %s", d.name, pid, u, o)
		}
	}
	for pid, u := range owner {
		if starts[pid] == 0 {
			tt.report("journal", "%s: pid %d answered %s and never journaled its start", d.name, pid, u)
		}
	}
	if len(owner) < 2 || restarts != 0 || state != "running" {
		tt.report("journal", "%s: %d users served, /healthz state %q with %d restarts; want several, running, none", d.name, len(owner), state, restarts)
	}
	tt.count(d.name+" users' children", len(starts))
}

// sortedKeys are m's keys in order.
func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	return slices.Sorted(maps.Keys(m))
}

// everyEra calls the user-isolated destination as each of its session
// users in every era — through their session, then sessionless and
// 2026-07-28 requests — so that each is seen served by one child across
// eras.
func (tt *torture) everyEra() {
	rng := mrand.New(mrand.NewPCG(12, 13))
	for _, d := range tt.dests {
		if !d.perUser {
			continue
		}
		done := map[string]bool{}
		for _, s := range tt.byDest[d.name] {
			if done[s.user] {
				continue
			}
			done[s.user] = true
			for _, era := range []string{eraSession, eraSessionless, eraModern} {
				var sess *tortureSession
				if era == eraSession {
					sess = s
				}
				c := tt.newCall(rng, d, era, sess, s.user)
				c.setArgs(rng, fakemcp.TortureArgs{Answer: 100, Progress: 1}, 100)
				c.cancel, c.jsonOnly = "", false
				tt.run(c)
			}
		}
		for u, pid := range tt.usersRun.served() {
			tt.usersRun.mu.Lock()
			eras := len(tt.usersRun.pids[u][pid])
			tt.usersRun.mu.Unlock()
			if done[u] && eras != 3 {
				tt.report("failed", "%s: %s was served in %d eras by pid %d; want all 3 by one child", d.name, u, eras, pid)
			}
		}
	}
}

// searchRunning collects, while the bridge runs, what it serves and the
// argv of every process under it; the console must show each user's
// child by the pid their calls got.
func (tt *torture) searchRunning() map[string]string {
	us := tt.usersRun
	places := map[string]string{}
	auth := "Bearer " + tortureBearer("operator")
	for _, path := range []string{"/healthz?verbose", "/metrics", "/console/api/state", "/console/api/log"} {
		r, err := requestWith(tt.hc, http.MethodGet, tt.base+path, "", "", "Authorization", auth)
		if err != nil || r.status != http.StatusOK {
			tt.report("search", "GET %s: %v %d %.200s", path, err, r.status, r.body)
			continue
		}
		places[path] = string(r.body)
	}
	for _, pid := range descendants(tt.p.cmd.Process.Pid) {
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); err == nil {
			places["the argv of the processes under the bridge"] += string(b) + "\n"
		}
	}
	// The places were read: the console lists the users' children by
	// the pids their calls got, and the argv the children's command.
	var st struct {
		Destinations []struct {
			Name  string `json:"name"`
			Users []struct {
				Name string `json:"name"`
				PID  int    `json:"pid"`
			} `json:"users"`
		} `json:"destinations"`
	}
	_ = json.Unmarshal([]byte(places["/console/api/state"]), &st)
	shown := map[string]int{}
	for _, d := range st.Destinations {
		if d.Name == us.dest.name {
			for _, u := range d.Users {
				shown[u.Name] = u.PID
			}
		}
	}
	for u, pid := range us.served() {
		if shown[u] != pid {
			tt.report("search", "the console shows %s's child of %s as pid %d; their calls got pid %d", u, us.dest.name, shown[u], pid)
		}
	}
	if !strings.Contains(places["the argv of the processes under the bridge"], "-test.run=") {
		tt.report("search", "no child's argv was read under the bridge (pid %d)", tt.p.cmd.Process.Pid)
	}
	us.placesBeforeStop = places
	return places
}

// stateFiles adds every file of the state directory to places.
func (us *tortureUsers) stateFiles(places map[string]string, label string) int {
	n := 0
	_ = filepath.WalkDir(us.state, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, err := os.ReadFile(path); err == nil {
				rel, _ := filepath.Rel(us.state, path)
				places[label+" state directory's "+rel] = string(b)
				n++
			}
		}
		return nil
	})
	return n
}

// tracePhase runs once the load's bridge has stopped: it starts a second
// bridge on the same configuration and state directory at trace with the
// audit of bodies, makes calls of every era as each user who called the
// user-isolated destination, and searches every planted value in every
// place of both bridges.
func (tt *torture) tracePhase() {
	t, us := tt.t, tt.usersRun
	started := time.Now()
	places := map[string]string{}
	for k, v := range us.placesBeforeStop {
		places["load: "+k] = v
	}
	places["load: the bridge's log (warn)"] = tt.p.logs.String()
	places["load: the audit trail"] = us.auditTrail
	us.stateFiles(places, "load: the")
	users := sortedKeys(us.served())

	traceAudit := filepath.Join(t.TempDir(), "audit.jsonl")
	p := startBinary(t, us.config, append([]string{"-max-sessions", "64", "-request-timeout", "25s", "-stop-grace", "500ms",
		"-log-level", "trace", "-audit-log-bodies", "-audit-log", traceAudit}, us.flags()...)...)
	tr := &torture{t: t, p: p, base: p.base, ctx: tt.ctx, hc: tt.hc, journals: tt.journals, dests: []*tortureDest{us.dest}, tokens: true,
		byDest: map[string][]*tortureSession{}, problems: map[string]*tortureProblem{}, intended: map[string]bool{}, counts: map[string]int{},
		usersRun: &tortureUsers{dest: us.dest, config: us.config, tokens: us.tokens, creds: us.creds, state: us.state, secrets: us.secrets,
			byDigest: us.byDigest, pids: map[string]map[int]map[string]bool{}}}
	tr.streams, tr.endStream = tt.ctx, func() {}
	var wg sync.WaitGroup
	for i, u := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := mrand.New(mrand.NewPCG(14, uint64(i)))
			s := &tortureSession{user: u, dest: us.dest, bearer: tortureBearer(u)}
			if err := tr.open(s, "2025-11-25"); err != nil {
				tr.report("failed", "trace phase: %v", err)
				return
			}
			// Log lines, progress and a child's request each way: what a
			// trace log and the audit of bodies record.
			for _, c := range []struct {
				era  string
				args fakemcp.TortureArgs
			}{
				{eraSession, fakemcp.TortureArgs{Answer: 100, Progress: 1, Logs: 1}},
				{eraSession, fakemcp.TortureArgs{Answer: 100, Ask: "sampling"}},
				{eraSessionless, fakemcp.TortureArgs{Answer: 100, Logs: 1}},
				{eraModern, fakemcp.TortureArgs{Answer: 100, Ask: "elicitation"}},
				{eraModern, fakemcp.TortureArgs{Answer: 100, Progress: 1, Logs: 1}},
			} {
				var sess *tortureSession
				if c.era == eraSession {
					sess = s
				}
				call := tr.newCall(rng, us.dest, c.era, sess, u)
				call.setArgs(rng, c.args, 100)
				call.cancel, call.jsonOnly = "", false
				tr.run(call)
			}
		}()
	}
	wg.Wait()
	for k, v := range tr.searchRunning() {
		places["trace: "+k] = v
	}
	_ = p.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		tr.report("bridge", "the trace bridge did not stop within 30 s of SIGINT")
	}
	traceLog := p.logs.String()
	places["trace: the bridge's log (trace, audit bodies)"] = traceLog
	_, _, traceTrail := readAudit(t, traceAudit)
	places["trace: the audit trail"] = traceTrail
	files := us.stateFiles(places, "trace: the")

	// The search has teeth: the encodings are found where planted, the
	// results' digests of every user's calls are in the trace log (their
	// bodies were logged), and the log has debug lines (the bridge writes
	// none at trace today).
	checkSearchFinds(t)
	for _, u := range users {
		if !strings.Contains(traceLog, sha256Hex(us.secrets[u])) {
			tr.report("search", "the trace log has no result of %s's (the digest of their credential): the audit of bodies proves little", u)
		}
		if !strings.Contains(traceTrail, sha256Hex(us.secrets[u])) {
			tr.report("search", "the trace bridge's audit trail has no result of %s's (the digest of their credential): its search proves little", u)
		}
	}
	if !strings.Contains(traceLog, "[DEBUG]") && !strings.Contains(traceLog, "[TRACE]") {
		tr.report("search", "the trace bridge logged no debug or trace line: %.500s", traceLog)
	}
	served := tr.usersRun.served()
	if len(served) != len(users) {
		tr.report("failed", "the trace phase served %d users; want %d (%v)", len(served), len(users), users)
	}
	owner := map[int]string{}
	for u, pid := range served {
		if o, ok := owner[pid]; ok || pid < 0 {
			tr.report("cross-user", "trace phase: %s's calls got pid %d (also %q's)", u, pid, o)
		}
		owner[pid] = u
	}

	found := searchPlanted(places, us.secrets)
	for _, f := range found {
		tr.report("leak", "%s", f)
	}
	size := 0
	for _, v := range places {
		size += len(v)
	}
	t.Logf("%s: %d users × 5 calls at trace; %d planted values searched in %d places (%d KiB; %d state files after the trace bridge): %d found; the phase took %s; the places: %q",
		us.dest.name, len(users), len(us.secrets), len(places), size>>10, files, len(found), time.Since(started).Round(time.Millisecond), sortedKeys(places))
	for _, k := range sortedKeys(tr.problems) {
		p := tr.problems[k]
		t.Errorf("trace phase: %d %s problem(s); the first %d:\n  %s", p.n, k, len(p.first), strings.Join(p.first, "\n  "))
	}
	if t.Failed() {
		t.Logf("trace bridge stderr (last 20 KiB):\n%s", traceLog[max(0, len(traceLog)-20<<10):])
	}
}

// plantedForms are the ways a value may show: its random part (plain,
// quoted, JSON-escaped: the rest may be escaped), hex of the whole value
// and base64 (standard and URL alphabets) at each of the three alignments
// it may have inside a longer encoded text (the characters that depend
// on its neighbours left out).
func plantedForms(v string) map[string]string {
	_, core, _ := strings.Cut(strings.TrimPrefix(v, "planted-"), "-")
	core, _, _ = strings.Cut(core, `"`)
	forms := map[string]string{"its random part": core, "hex": hex.EncodeToString([]byte(v)), "HEX": strings.ToUpper(hex.EncodeToString([]byte(v)))}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		name := map[*base64.Encoding]string{base64.StdEncoding: "base64", base64.URLEncoding: "base64url"}[enc]
		for k := range 3 {
			s := enc.EncodeToString(append(make([]byte, k), v...))
			// Groups of 4 characters encode 3 bytes: skip those with the
			// k leading bytes, and the last (it has padding or the next
			// bytes).
			forms[fmt.Sprintf("%s at offset %d", name, k)] = s[(k+2)/3*4 : len(s)-4]
		}
	}
	return forms
}

// searchPlanted finds every form of every planted value in places, in one
// pass over each (the forms are indexed by their first 8 bytes).
func searchPlanted(places map[string]string, secrets map[string]string) []string {
	type needle struct{ user, form, s string }
	index := map[uint64][]needle{}
	for u, v := range secrets {
		for form, s := range plantedForms(v) {
			index[le64(s)] = append(index[le64(s)], needle{u, form, s})
		}
	}
	var found []string
	for _, where := range sortedKeys(places) {
		text := places[where]
		seen := map[string]bool{}
		for i := 0; i+8 <= len(text); i++ {
			for _, n := range index[le64(text[i:])] {
				if strings.HasPrefix(text[i:], n.s) && !seen[n.user+n.form] {
					seen[n.user+n.form] = true
					found = append(found, fmt.Sprintf("%s's credential (%s) found in %s", n.user, n.form, where))
				}
			}
		}
	}
	sort.Strings(found)
	return found
}

// le64 is s's first 8 bytes as a number.
func le64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 | uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// open opens s as initialize does, from any goroutine: an error where
// initialize stops the test.
func (tt *torture) open(s *tortureSession, version string) error {
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{"sampling":{},"elicitation":{}},"clientInfo":{"name":"torture-%s","version":"1"}}}`, version, s.user)
	r, err := requestWith(tt.hc, http.MethodPost, tt.url(s.dest), "", body, s.auth()...)
	if err != nil || r.status != http.StatusOK || r.header.Get("Mcp-Session-Id") == "" {
		return fmt.Errorf("initialize %s on %s: %v %d %.300s", s.user, s.dest.name, err, r.status, r.body)
	}
	s.sid = r.header.Get("Mcp-Session-Id")
	if r, err := requestWith(tt.hc, http.MethodPost, tt.url(s.dest), s.sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, s.auth()...); err != nil || r.status != http.StatusAccepted {
		return fmt.Errorf("notifications/initialized %s on %s: %v %d %.300s", s.user, s.dest.name, err, r.status, r.body)
	}
	return nil
}

// checkSearchFinds shows searchPlanted has teeth: a value put in a text in
// each form it looks for, at each alignment, is found.
func checkSearchFinds(t *testing.T) {
	v := "planted-decoy-00112233445566778899aabbccddeeff" + `"<&>`
	escaped, _ := json.Marshal("x" + v)
	places := map[string]string{
		"plain":   "a line with " + v + " in it",
		"json":    string(escaped),
		"hex":     "0x" + hex.EncodeToString([]byte("ab"+v+"cd")),
		"HEX":     strings.ToUpper(hex.EncodeToString([]byte(v))),
		"quoted":  strconv.Quote(v),
		"base64a": base64.StdEncoding.EncodeToString([]byte(v + "tail")),
		"base64b": base64.StdEncoding.EncodeToString([]byte("h" + v + "tail")),
		"base64c": base64.StdEncoding.EncodeToString([]byte("he" + v + "tail")),
		"base64u": base64.URLEncoding.EncodeToString([]byte("hea" + v + "tail")),
	}
	found := searchPlanted(places, map[string]string{"decoy": v})
	for where := range places {
		if !slices.ContainsFunc(found, func(f string) bool { return strings.HasSuffix(f, " found in "+where) }) {
			t.Errorf("the search does not find a planted value put in a text as %s: it proves little (found: %q)", where, found)
		}
	}
}
