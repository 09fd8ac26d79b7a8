//go:build unix

package tests

// TestTorture: one user's traffic never reaches another (issue 20), on the real binary under mixed
// load of both eras; and focused scenarios (a child that stops reading, abandoned calls, a stalled
// child). Its harness (torture, tortureDest, startFocused) serves the tortureaudit and tortureusers
// files too.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stelae-bridge/stelae-bridge/recycle"
	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

// TestTorture guards the promise of issue 20 — one user's traffic never
// reaches another — on the real binary (built with -race when the suite
// runs with it, so the bridge's own races fail the test and its recycled
// buffers are poisoned), under the load that once broke it: one shared
// child per destination and many users of both protocol eras at once
// (2025 sessions with a GET stream each, sessionless 2025 requests,
// 2026-07-28 requests); payloads from a few bytes to several MiB each way;
// a child that reads its stdin slowly and one that answers out of order;
// sampling and elicitation requests from the child, progress, log lines;
// cancellations of both eras; pipelined keep-alive requests of different
// users on one connection (the fast path); one child restart mid-run.
//
// Every answer is checked against its own request: the child answers with
// the digest of the arguments it received and a text derived from the
// call's tag. Every other message a user receives (progress, log lines,
// child requests, on POST streams, GET streams and in input_required
// results) carries the tag of the call that caused it, and must be that
// user's. The child's journal must show no message cut short or spliced,
// none received twice, no answer from the wrong user, no cancellation of
// a call nobody cancelled. Child requests that cannot be attributed are
// refused; the test checks that those that can be (one user in flight, an
// interactive destination) are delivered.
//
// It runs twice: "open" (no auth: every 2025 session, and every
// sessionless or 2026-07-28 request, is a user of its own) and "tokens"
// (static bearer tokens: a user is a principal, whose sessions and
// requests are one user; one user holds two sessions on each destination,
// and some 2026-07-28 requests come from session users). With tokens one
// more destination gives each user a child of their own ('isolation:
// user') with a credential each, provisioned (tortureusers_test.go): its
// answers must come from the caller's own child, one per user, and no
// planted value may show anywhere the bridge writes or serves.
func TestTorture(t *testing.T) {
	load := 7 * time.Second
	if testing.Short() {
		load = 3 * time.Second
	}
	for _, tokens := range []bool{false, true} {
		t.Run(map[bool]string{false: "open", true: "tokens"}[tokens], func(t *testing.T) {
			tt := startTorture(t, load, tokens)
			tt.runLoad()
			tt.alone()
			if tokens {
				tt.everyEra()
				tt.searchRunning()
			}
			tt.finish()
			if tokens {
				tt.tracePhase()
			}
		})
	}
}

// tortureDest is one destination of the torture bridge.
type tortureDest struct {
	name string
	mode string
	// interactive: calls one at a time ('interactive: true'); asking:
	// the calls that ask run alone ('interactive: [torture_asks]'). Either
	// way every child request of a caller that can answer is attributed
	// exactly and must be delivered.
	interactive, asking bool
	// modern: its child speaks MCP 2026-07-28 only (issue 38): what it
	// asks belongs to the call that got it, with no 'interactive:', so
	// every child request of a caller that can answer is delivered too.
	modern bool
	// sizes is how big its payloads are: sizesBig (up to several MiB),
	// sizesIssue20 (requests of about 100 B or 200–500 KiB, which
	// spliced messages at a slow child in issue 20, and now and then
	// several MiB) or sizesSmall (up to 64 KiB: where calls run alone they
	// wait for each other).
	sizes int
	// crash: the destination whose child exits mid-run.
	crash bool
	// perUser: a child per user ('isolation: user') with a credential
	// each (fakemcp.EnvTortureSecret), provisioned; with tokens only (no
	// auth, it has no users to tell apart).
	perUser bool
	// holds is the percentage of calls that hold until their caller
	// cancels them (a call abandoned without an answer keeps its turn
	// until the child shows it read the cancellation: few where calls run
	// alone).
	holds int
	// Workers: per 2025 session, of 2026-07-28 requests, of sessionless
	// 2025 requests.
	sessionWorkers, modernWorkers, sessionlessWorkers int
}

var tortureDests = []*tortureDest{
	{name: "slow", mode: fakemcp.ModeTortureSlow, sizes: sizesIssue20, holds: 10, sessionWorkers: 2, modernWorkers: 2, sessionlessWorkers: 1},
	{name: "shuffle", mode: fakemcp.ModeTortureShuffle, sizes: sizesBig, crash: true, holds: 10, sessionWorkers: 2, modernWorkers: 2, sessionlessWorkers: 1},
	{name: "solo", mode: fakemcp.ModeTortureShuffle, interactive: true, holds: 2, sessionWorkers: 1, modernWorkers: 1, sessionlessWorkers: 1},
	{name: "mixed", mode: fakemcp.ModeTortureSlow, asking: true, holds: 4, sessionWorkers: 1, modernWorkers: 1, sessionlessWorkers: 1},
	{name: "modern", mode: fakemcp.ModeTortureModern, modern: true, sizes: sizesIssue20, holds: 10, sessionWorkers: 1, modernWorkers: 2, sessionlessWorkers: 1},
}

// tortureUserDest is the destination with a child per user, among the
// others with tokens.
var tortureUserDest = &tortureDest{name: "peruser", mode: fakemcp.ModeTortureShuffle, perUser: true, sizes: sizesBig, holds: 10, sessionWorkers: 1, modernWorkers: 2, sessionlessWorkers: 1}

// exact: every child request a caller can answer is delivered.
func (d *tortureDest) exact() bool { return d.interactive || d.asking || d.modern }

const (
	// tortureSessions is how many 2025 sessions every destination has.
	tortureSessions = 6
	// tortureMaxCalls bounds each worker's calls; tortureRounds the
	// pipelining goroutine's rounds.
	tortureMaxCalls = 400
	tortureRounds   = 60
	// tortureConns is how many goroutines pipeline requests on raw
	// connections.
	tortureConns = 3
	// tortureBudget bounds the whole test: past it the bridge is killed.
	tortureBudget = 3 * time.Minute
	// tortureCallTimeout bounds one HTTP exchange (the bridge's request
	// timeout is 25 s: a call that hangs comes back as a 504 first).
	tortureCallTimeout = 60 * time.Second
)

// tortureBearer is user's token (with auth: "tokens").
func tortureBearer(user string) string { return "torture-token-" + user }

// Eras of a torture call.
const (
	eraSession     = "session"     // a 2025 session
	eraSessionless = "sessionless" // a 2025 request without Mcp-Session-Id
	eraModern      = "modern"      // a 2026-07-28 request
)

// torture is one run of the torture test.
type torture struct {
	t        *testing.T
	p        *binaryProc
	base     string
	host     string
	hc       *http.Client
	ctx      context.Context // ends at the budget: every exchange is bounded by it
	stop     context.CancelFunc
	watchdog *time.Timer
	journals map[string]string // by destination
	// dests are the destinations of the run.
	dests    []*tortureDest
	sessions []*tortureSession
	byDest   map[string][]*tortureSession
	// streams ends the GET streams; streamsWG waits for their readers.
	streams   context.Context
	endStream context.CancelFunc
	streamsWG sync.WaitGroup
	load      time.Duration
	loadStart time.Time
	loadEnd   time.Time
	// tokens: the bridge runs with static bearer tokens, and a user is a
	// principal (a token); otherwise a user is a session, or one
	// sessionless or 2026-07-28 request.
	tokens bool
	// usersRun is what the run needs for its user-isolated destination
	// (tortureusers_test.go): nil without one.
	usersRun *tortureUsers
	users    atomic.Int64 // numbers the one-call users (open)
	tags     atomic.Int64 // numbers the calls
	// audit is the bridge's audit trail ("" for a bridge without one).
	audit string

	// mu guards every field below.
	mu sync.Mutex
	// crashFrom is when the crash call was sent, crashBack when the
	// child was seen running again (zero: not yet): a call on the crash
	// destination that overlaps it may fail (not with a wrong answer).
	crashFrom, crashBack time.Time
	problems             map[string]*tortureProblem
	// intended are the tags whose calls the test cancelled.
	intended map[string]bool
	// failed are the tags of calls that failed, for the journal's story.
	failed []string
	// answered are the calls the bridge answered (or whose hold reached
	// the child before the client closed it), tag → user: each must have
	// its line in the audit trail.
	answered map[string]string
	counts   map[string]int
}

// tortureProblem is every problem of one kind: how many, and the first
// few in full.
type tortureProblem struct {
	n     int
	first []string
}

// tortureSession is a user's 2025 session on one destination.
type tortureSession struct {
	user string // s0, s1…
	dest *tortureDest
	sid  string
	// bearer is its user's token ("" without auth).
	bearer string
	// ids are the session's JSON-RPC ids, which collide with other
	// sessions' on purpose.
	ids atomic.Int64
}

// tortureCall is one call, from its building to its check.
type tortureCall struct {
	dest *tortureDest
	era  string
	sess *tortureSession // eraSession
	user string
	tag  string
	id   json.RawMessage
	// bearer is the caller's token ("" without auth).
	bearer string
	// tool is the tool called: TortureAskTool for a call that asks.
	tool string
	// token is the client's progress token (raw JSON), nil for none.
	token json.RawMessage
	args  fakemcp.TortureArgs // what the call asks for (Pad unused)
	raw   []byte              // the arguments as sent
	// jsonOnly: Accept names only application/json (a 2025 session's
	// related messages then travel on its GET stream).
	jsonOnly bool
	// cancel: "notify" (a 2025 client's notifications/cancelled) or
	// "close" (a 2026-07-28 client closes its response), once the hold's
	// progress shows the call reached the child.
	cancel  string
	started time.Time
}

// receiver is who a message reached: a user on a destination, on the
// stream of call (nil: a GET stream), through sess (nil: a caller that
// cannot answer the child's requests).
type receiver struct {
	user string
	dest *tortureDest
	sess *tortureSession
	call *tortureCall
}

func (r receiver) String() string {
	where := "its GET stream"
	if r.call != nil {
		where = "the stream of its call " + r.call.tag
	}
	return fmt.Sprintf("%s on %s (%s)", r.user, r.dest.name, where)
}

// tmsg is a JSON-RPC message as a torture client reads it.
type tmsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func startTorture(t *testing.T, load time.Duration, tokens bool) *torture {
	bin := tortureBridgeBinary(t)
	if os.Getenv(EnvBridgeBinary) == "" {
		t.Setenv(EnvBridgeBinary, bin) // startBinary runs it
	}
	dir := t.TempDir()
	dests := tortureDests
	if tokens {
		dests = append(slices.Clone(dests), tortureUserDest)
	}
	config, journals := tortureConfig(t, dir, dests)
	flags := []string{
		"-max-sessions", "64",
		"-request-timeout", "25s",
		"-restart-delay", "100ms",
		"-max-body-memory", "1GiB",
		"-keepalive", "1s",
		"-stop-grace", "500ms",
		"-log-level", "warn",
		// The audit trail of every call (issue 39), rotated many times.
		"-audit-log", filepath.Join(dir, "audit.jsonl"), "-audit-log-max-size", "1MiB", "-audit-log-keep", "10000",
	}
	var us *tortureUsers
	if tokens {
		// Every principal the test uses (requestUser, the sessions), by
		// name: a user of the user-isolated destination is one of them.
		names := []string{"p", "crash", "alone", "admin"}
		for i := range 32 {
			names = append(names, fmt.Sprintf("s%d", i), fmt.Sprintf("mw%d", i), fmt.Sprintf("xw%d", i))
		}
		us = plantUsers(t, dir, config, tortureUserDest, names)
		flags = append(flags, us.flags()...)
	}
	p := startBinary(t, config, flags...)
	ctx, stop := context.WithTimeout(context.Background(), tortureBudget)
	streams, endStream := context.WithCancel(ctx)
	u, _ := neturl.Parse(p.base)
	tt := &torture{
		t: t, p: p, base: p.base, host: u.Host, ctx: ctx, stop: stop, journals: journals, dests: dests, usersRun: us,
		audit: filepath.Join(dir, "audit.jsonl"), answered: map[string]string{},
		streams: streams, endStream: endStream, load: load, tokens: tokens, byDest: map[string][]*tortureSession{},
		problems: map[string]*tortureProblem{}, intended: map[string]bool{}, counts: map[string]int{},
		hc: &http.Client{Transport: &http.Transport{
			Proxy:               nil, // loopback only, whatever the environment says
			MaxIdleConnsPerHost: 256,
			IdleConnTimeout:     30 * time.Second,
			DisableCompression:  true,
		}},
	}
	// The whole test ends even if the bridge hangs: past the budget it is
	// killed, and every exchange ends with the context.
	tt.watchdog = time.AfterFunc(tortureBudget, func() {
		// SIGQUIT first: the Go runtime writes every goroutine's stack to
		// the bridge's stderr (finish prints the dispatcher's and the
		// child's writer's).
		_ = p.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = p.cmd.Process.Kill()
		}
		tt.report("watchdog", "the test ran past its budget of %s: the bridge was stopped (SIGQUIT)", tortureBudget)
	})
	t.Cleanup(func() {
		tt.watchdog.Stop()
		stop()
		tt.hc.CloseIdleConnections()
	})
	for _, d := range dests {
		for i := range tortureSessions {
			// With tokens, s0 holds two sessions on every destination.
			s := &tortureSession{user: fmt.Sprintf("s%d", i), dest: d}
			if tokens {
				s.user = fmt.Sprintf("s%d", max(0, i-1))
				s.bearer = tortureBearer(s.user)
			}
			tt.initialize(s, []string{"2025-03-26", "2025-06-18", "2025-11-25"}[i%3])
			tt.sessions = append(tt.sessions, s)
			tt.byDest[d.name] = append(tt.byDest[d.name], s)
			tt.streamsWG.Add(1)
			go tt.getStream(s)
		}
	}
	return tt
}

// tortureConfig writes a destinations file of dests (torture children,
// each with a journal of its own) in dir.
func tortureConfig(t *testing.T, dir string, dests []*tortureDest) (config string, journals map[string]string) {
	journals = map[string]string{}
	var b strings.Builder
	b.WriteString("destinations:\n")
	for _, d := range dests {
		command, args, env := fakemcp.Command(d.mode)
		journals[d.name] = filepath.Join(dir, d.name+".journal")
		env[fakemcp.EnvJournal] = journals[d.name]
		interactive := strconv.FormatBool(d.interactive)
		if d.asking {
			interactive = "[" + fakemcp.TortureAskTool + "]"
		}
		fmt.Fprintf(&b, "  %s:\n    command: %s\n    args: [%s]\n    interactive: %s\n", d.name, strconv.Quote(command), strconv.Quote(args[0]), interactive)
		if d.perUser {
			b.WriteString(tortureUserConfig)
		}
		b.WriteString("    env:\n")
		for k, v := range env {
			fmt.Fprintf(&b, "      %s: %s\n", k, strconv.Quote(v))
		}
	}
	config = filepath.Join(dir, "destinations.yaml")
	if err := os.WriteFile(config, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return config, journals
}

var (
	raceBuildOnce sync.Once
	raceBinDir    string
	raceBinPath   string
	raceBuildErr  error
)

// removeTortureBinary deletes the binary tortureBridgeBinary built.
func removeTortureBinary() {
	if raceBinDir != "" {
		os.RemoveAll(raceBinDir)
	}
}

// tortureBridgeBinary is the bridge the torture test runs: under the race
// detector a build of cmd/stelae-bridge with -race too (once per test
// run), so that the bridge's own races fail the test and its recycled
// buffers are poisoned (recycle.Poison); otherwise bridgeBinary's.
func tortureBridgeBinary(t *testing.T) string {
	t.Helper()
	if os.Getenv(EnvBridgeBinary) != "" || !recycle.Enabled {
		return bridgeBinary(t)
	}
	raceBuildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "stelae-bridge-race")
		if err != nil {
			raceBuildErr = err
			return
		}
		raceBinDir = dir
		raceBinPath = filepath.Join(dir, "stelae-bridge")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, "go", "build", "-race", "-o", raceBinPath, "github.com/stelae-bridge/stelae-bridge/cmd/stelae-bridge").CombinedOutput()
		if err != nil {
			raceBuildErr = fmt.Errorf("go build -race: %v\n%s", err, out)
		}
	})
	if raceBuildErr != nil {
		t.Fatal(raceBuildErr)
	}
	return raceBinPath
}

// report records a problem of a kind; the test fails with every kind at
// its end.
func (tt *torture) report(kind, format string, args ...any) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	tt.reportLocked(kind, format, args...)
}

// reportLocked is report with tt.mu held.
func (tt *torture) reportLocked(kind, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	p := tt.problems[kind]
	if p == nil {
		p = &tortureProblem{}
		tt.problems[kind] = p
	}
	p.n++
	if len(p.first) < 8 {
		p.first = append(p.first, msg)
	}
}

func (tt *torture) count(key string, n int) {
	tt.mu.Lock()
	tt.counts[key] += n
	tt.mu.Unlock()
}

// slowest keeps the longest call of each destination and era, in ms.
func (tt *torture) slowest(c *tortureCall) {
	key := c.dest.name + " " + c.era + " slowest call (ms)"
	ms := int(time.Since(c.started).Milliseconds())
	tt.mu.Lock()
	tt.counts[key] = max(tt.counts[key], ms)
	tt.mu.Unlock()
}

func (tt *torture) counted(key string) int {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	return tt.counts[key]
}

func (tt *torture) url(d *tortureDest) string { return tt.base + "/" + d.name + "/mcp" }

// initialize opens s (on the test's goroutine).
func (tt *torture) initialize(s *tortureSession, version string) {
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{"sampling":{},"elicitation":{}},"clientInfo":{"name":"torture-%s","version":"1"}}}`, version, s.user)
	auth := []string{"Authorization", ""}
	if s.bearer != "" {
		auth[1] = "Bearer " + s.bearer
	}
	r, err := requestWith(tt.hc, http.MethodPost, tt.url(s.dest), "", body, auth...)
	if err != nil || r.status != http.StatusOK || r.header.Get("Mcp-Session-Id") == "" {
		tt.t.Fatalf("initialize %s on %s: %v %d %s", s.user, s.dest.name, err, r.status, r.body)
	}
	s.sid = r.header.Get("Mcp-Session-Id")
	if r, err := requestWith(tt.hc, http.MethodPost, tt.url(s.dest), s.sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, auth...); err != nil || r.status != http.StatusAccepted {
		tt.t.Fatalf("notifications/initialized %s on %s: %v %d %s", s.user, s.dest.name, err, r.status, r.body)
	}
}

// auth is the session's Authorization header, as request's headers.
func (s *tortureSession) auth() []string {
	if s.bearer == "" {
		return []string{"Authorization", ""}
	}
	return []string{"Authorization", "Bearer " + s.bearer}
}

// Tags are USER@DEST#N: a session user's tags share its user, every
// sessionless or modern request is a user of its own.
func tortureTag(user, dest string, n int64) string { return fmt.Sprintf("%s@%s#%d", user, dest, n) }

func splitTag(tag string) (user, dest string, ok bool) {
	user, rest, ok1 := strings.Cut(tag, "@")
	dest, _, ok2 := strings.Cut(rest, "#")
	return user, dest, ok1 && ok2 && user != "" && dest != ""
}

// Payload sizes of a destination (tortureDest.sizes).
const (
	sizesSmall = iota
	sizesBig
	sizesIssue20
)

// tortureSize is a payload size of a destination's kind: mostly small,
// some of the 200–500 KiB that filled the child's stdin queue in issue 20,
// a few of 1–5 MiB; with sizesIssue20, a request (request) is about 100 B
// or 200–500 KiB most of the time.
func tortureSize(rng *rand.Rand, sizes int, request bool) int {
	big := sizes != sizesSmall
	if sizes == sizesIssue20 && request {
		switch r := rng.IntN(100); {
		case r < 45:
			return 80 + rng.IntN(40)
		case r < 85:
			return 200<<10 + rng.IntN(300<<10)
		}
	}
	switch r := rng.IntN(1000); {
	case r < 450:
		return rng.IntN(100)
	case r < 700:
		return 100 + rng.IntN(3<<10)
	case r < 850 || !big:
		return 3<<10 + rng.IntN(61<<10)
	case r < 990:
		return 200<<10 + rng.IntN(300<<10)
	default:
		return 1<<20 + rng.IntN(4<<20)
	}
}

var (
	padOnce sync.Once
	padText []byte // filler: letters and digits, nothing JSON escapes
)

const padLen = 6 << 20

// tortureArgs builds a call's arguments with about size bytes of filler;
// the filler starts with characters a JSON encoder escapes.
func tortureArgs(rng *rand.Rand, a fakemcp.TortureArgs, size int) []byte {
	padOnce.Do(func() {
		const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.,:;!?/+=()[]{}@# "
		r := rand.New(rand.NewPCG(1, 2))
		padText = make([]byte, padLen)
		for i := range padText {
			padText[i] = alphabet[r.IntN(len(alphabet))]
		}
	})
	size = min(size, padLen)
	off := rng.IntN(padLen - size + 1)
	fields, _ := json.Marshal(a) // no pad: Pad is empty
	out := make([]byte, 0, size+len(fields)+32)
	out = append(out, `{"pad":"\u00e9\"\\\n\u003c`...)
	out = append(out, padText[off:off+size]...)
	out = append(out, `",`...)
	return append(out, fields[1:]...)
}

// newCall builds a call of era on d, of a kind picked at random: through
// s for a session; otherwise from user (with auth: a principal), or a user
// of its own when user is "".
func (tt *torture) newCall(rng *rand.Rand, d *tortureDest, era string, s *tortureSession, user string) *tortureCall {
	c := &tortureCall{dest: d, era: era, sess: s, user: user}
	var id int64
	switch {
	case s != nil:
		c.user, c.bearer, id = s.user, s.bearer, s.ids.Add(1)
	case user == "":
		prefix := map[string]string{eraModern: "m", eraSessionless: "x"}[era]
		c.user, id = fmt.Sprintf("%s%d", prefix, tt.users.Add(1)), int64(rng.IntN(4))
	default:
		id = int64(rng.IntN(4))
	}
	if tt.tokens && c.bearer == "" {
		c.bearer = tortureBearer(c.user)
	}
	c.tag = tortureTag(c.user, d.name, tt.tags.Add(1))
	// Ids and tokens of both forms, the same across users.
	if id%2 == 0 {
		c.id = json.RawMessage(strconv.FormatInt(id, 10))
	} else {
		c.id = json.RawMessage(strconv.Quote(strconv.FormatInt(id, 10)))
	}
	if rng.IntN(8) != 0 {
		if id%3 == 0 {
			c.token = json.RawMessage(strconv.FormatInt(id, 10))
		} else {
			c.token = json.RawMessage(strconv.Quote("pt-" + strconv.FormatInt(id, 10)))
		}
	}
	a := fakemcp.TortureArgs{Tag: c.tag, Answer: tortureSize(rng, d.sizes, false)}
	switch k := rng.IntN(100); {
	case k < 40:
	case k < 60:
		a.Progress, a.Logs = rng.IntN(5), 1+rng.IntN(4)
	case k < 82 && !(d.modern && era == eraSessionless):
		// (A 2026 child's request reaches a sessionless request as its
		// call's error: TestModernChild.)
		a.Ask, a.Logs = "sampling", rng.IntN(3)
		if rng.IntN(10) < 3 {
			a.Ask = "elicitation"
		}
	case k < 82+d.holds && era != eraSessionless:
		// A hold the caller cancels once the child has it.
		a.HoldMS = 3000
		c.cancel = map[string]string{eraSession: "notify", eraModern: "close"}[era]
		if c.token == nil {
			c.token = json.RawMessage(`"hold"`)
		}
	default:
		a.Progress = 1 + rng.IntN(3)
	}
	c.jsonOnly = era == eraSession && c.cancel == "" && rng.IntN(5) == 0
	c.setArgs(rng, a, tortureSize(rng, d.sizes, true))
	return c
}

// setArgs sets the call's arguments, with about size bytes of filler, and
// the tool that serves them.
func (c *tortureCall) setArgs(rng *rand.Rand, a fakemcp.TortureArgs, size int) {
	a.Tag = c.tag
	c.args, c.raw, c.tool = a, tortureArgs(rng, a, size), fakemcp.TortureTool
	if a.Ask != "" {
		c.tool = fakemcp.TortureAskTool
	}
}

// body is the call's tools/call request; modern requests carry the
// 2026-07-28 _meta, and a retry its input responses and state.
func (c *tortureCall) body(inputs map[string]json.RawMessage, state string) []byte {
	var meta []string
	if c.token != nil {
		meta = append(meta, `"progressToken":`+string(c.token))
	}
	if c.era == eraModern {
		meta = append(meta, `"io.modelcontextprotocol/protocolVersion":"2026-07-28"`, `"io.modelcontextprotocol/clientInfo":{"name":"torture","version":"1"}`,
			`"io.modelcontextprotocol/clientCapabilities":{"sampling":{},"elicitation":{}}`, `"io.modelcontextprotocol/logLevel":"debug"`)
	}
	b := make([]byte, 0, len(c.raw)+512)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, c.id...)
	b = append(b, `,"method":"tools/call","params":{"name":`...)
	b = strconv.AppendQuote(b, c.tool)
	b = append(b, `,"arguments":`...)
	b = append(b, c.raw...)
	if len(meta) > 0 {
		b = append(b, `,"_meta":{`+strings.Join(meta, ",")+`}`...)
	}
	if state != "" {
		in, _ := json.Marshal(inputs)
		b = append(b, `,"inputResponses":`...)
		b = append(b, in...)
		b = append(b, `,"requestState":`...)
		b = strconv.AppendQuote(b, state)
	}
	return append(b, `}}`...)
}

// auth is the call's Authorization header ("" without auth: the header is
// left out).
func (c *tortureCall) auth() string {
	if c.bearer == "" {
		return ""
	}
	return "Bearer " + c.bearer
}

// headers are the call's request headers (name, value pairs).
func (c *tortureCall) headers() []string {
	h := []string{"Authorization", c.auth()}
	if c.jsonOnly {
		h = append(h, "Accept", "application/json")
	}
	if c.era == eraModern {
		h = append(h, "MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", c.tool)
	}
	return h
}

func (c *tortureCall) sid() string {
	if c.sess != nil {
		return c.sess.sid
	}
	return ""
}

func (c *tortureCall) receiver() receiver {
	return receiver{user: c.user, dest: c.dest, sess: c.sess, call: c}
}

// exchange sends one request and hands each message of its answer to each,
// in order (a JSON answer is one message, an SSE answer one per event);
// each returns false to stop reading, which abandons the request (its
// connection is closed). It returns the status, and the body of an answer
// that is not 200.
func (tt *torture) exchange(method, url, sid string, body []byte, headers []string, each func(tmsg) bool) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(tt.ctx, tortureCallTimeout)
	defer cancel()
	req, err := newRequest(ctx, method, url, sid, "", headers...)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		req.Body, _ = req.GetBody()
		req.ContentLength = int64(len(body))
	}
	resp, err := tt.hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return resp.StatusCode, b, nil
	}
	return resp.StatusCode, nil, readMessages(resp.Header.Get("Content-Type"), resp.Body, each)
}

// readMessages reads an answer's JSON-RPC messages (see exchange).
func readMessages(contentType string, r io.Reader, each func(tmsg) bool) error {
	if !strings.HasPrefix(contentType, "text/event-stream") {
		b, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		var m tmsg
		if err := json.Unmarshal(b, &m); err != nil {
			return fmt.Errorf("not JSON-RPC (%v): %.200q", err, b)
		}
		each(m)
		return nil
	}
	br := bufio.NewReaderSize(r, 64<<10)
	var data []byte
	for {
		line, err := fakemcp.ReadLine(br)
		if err != nil {
			if errors.Is(err, io.EOF) && len(line) == 0 {
				return nil
			}
			return err
		}
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case len(line) == 0:
			if len(bytes.TrimSpace(data)) > 0 { // (a priming event has none)
				var m tmsg
				if err := json.Unmarshal(data, &m); err != nil {
					return fmt.Errorf("an event that is not JSON-RPC (%v): %.200q", err, data)
				}
				if !each(m) {
					return nil
				}
			}
			data = data[:0]
		case bytes.HasPrefix(line, []byte("data:")):
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, bytes.TrimPrefix(line[5:], []byte(" "))...)
		}
	}
}

// owns checks that a message tagged tag, of the kind what, may reach rcv:
// it belongs to rcv's user on rcv's destination.
func (tt *torture) owns(rcv receiver, tag, what string) bool {
	user, dest, ok := splitTag(tag)
	switch {
	case !ok:
		tt.report("untagged", "%s got a %s without a tag: %q", rcv, what, tag)
		return false
	case user != rcv.user || dest != rcv.dest.name:
		tt.report("cross-user", "%s got %s's %s (tag %s)", rcv, user+" on "+dest, what, tag)
		return false
	}
	return true
}

// related checks a message that reached rcv before (or without) an answer
// and answers the child's requests.
func (tt *torture) related(rcv receiver, m tmsg) {
	key := rcv.dest.name + " received "
	switch m.Method {
	case "notifications/progress":
		var p struct {
			Token   json.RawMessage `json:"progressToken"`
			Message string          `json:"message"`
		}
		_ = json.Unmarshal(m.Params, &p)
		if !tt.owns(rcv, p.Message, "progress") {
			return
		}
		if rcv.call != nil && (p.Message != rcv.call.tag || !bytes.Equal(p.Token, rcv.call.token)) {
			// Progress goes to its call, not just its user.
			tt.report("misrouted", "%s got progress %s (token %s) of another call; its token is %s", rcv, p.Message, p.Token, rcv.call.token)
			return
		}
		tt.count(key+"progress", 1)
	case "notifications/message":
		var p struct {
			Data string `json:"data"`
		}
		_ = json.Unmarshal(m.Params, &p)
		if tt.owns(rcv, p.Data, "log line") {
			tt.count(key+"log lines", 1)
		}
	case "sampling/createMessage", "elicitation/create":
		tag := requestTag(m.Method, m.Params)
		if rcv.sess == nil {
			tt.report("cross-user", "%s, which cannot answer, got the child's %s for %s", rcv, m.Method, tag)
			return
		}
		mine := tt.owns(rcv, tag, m.Method)
		var answer []byte
		if mine {
			answer, _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": inputResponse(m.Method, tag)})
		} else {
			answer, _ = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32600, "message": "not mine"}})
		}
		started := time.Now()
		status, body, err := tt.exchange(http.MethodPost, tt.url(rcv.dest), rcv.sess.sid, answer, rcv.sess.auth(), nil)
		if err != nil || status != http.StatusAccepted {
			if !tt.excused(rcv.dest, started) {
				tt.report("failed", "%s answering the child's %s for %s: %v %d %s", rcv, m.Method, tag, err, status, body)
			}
			return
		}
		tt.count(key+"child requests", 1)
	case "notifications/tools/list_changed", "notifications/resources/list_changed", "notifications/prompts/list_changed":
		// Every session's.
	case "":
		tt.report("unexpected", "%s got a response that is not its own: %.300s", rcv, m.Result)
	default:
		tt.report("unexpected", "%s got %s %.300s", rcv, m.Method, m.Params)
	}
}

// requestTag is the tag a child's request carries.
func requestTag(method string, params json.RawMessage) string {
	var p struct {
		Message  string `json:"message"`
		Messages []struct {
			Content struct {
				Text string `json:"text"`
			} `json:"content"`
		} `json:"messages"`
	}
	_ = json.Unmarshal(params, &p)
	if method == "elicitation/create" {
		return p.Message
	}
	if len(p.Messages) > 0 {
		return p.Messages[0].Content.Text
	}
	return ""
}

// inputResponse is a user's answer to the child's request for tag.
func inputResponse(method, tag string) map[string]any {
	if method == "elicitation/create" {
		return map[string]any{"action": "accept", "content": map[string]any{"tag": tag}}
	}
	return map[string]any{"role": "assistant", "content": map[string]any{"type": "text", "text": fakemcp.TortureSamplingText(tag)}, "model": "torture"}
}

// excused reports whether a call on d that started at started may fail:
// it overlapped the child's crash.
func (tt *torture) excused(d *tortureDest, started time.Time) bool {
	if !d.crash {
		return false
	}
	tt.mu.Lock()
	defer tt.mu.Unlock()
	return !tt.crashFrom.IsZero() && (tt.crashBack.IsZero() || started.Before(tt.crashBack))
}

func (tt *torture) intend(tag string) {
	tt.mu.Lock()
	tt.intended[tag] = true
	tt.mu.Unlock()
}

// run makes the call and checks everything it receives; it returns what
// became of the child's request (TortureResult.Asked), "" when none was
// made or the call did not end with an answer.
func (tt *torture) run(c *tortureCall) string {
	c.started = time.Now()
	defer tt.slowest(c)
	rcv := c.receiver()
	var inputs map[string]json.RawMessage
	var state string
	for round := 0; round < 8; round++ {
		var final *tmsg
		cancelled := false
		status, body, err := tt.exchange(http.MethodPost, tt.url(c.dest), c.sid(), c.body(inputs, state), c.headers(), func(m tmsg) bool {
			if m.Method == "" {
				final = &m
				return true
			}
			tt.related(rcv, m)
			if c.cancel != "" && !cancelled && holding(m, c.tag) {
				// The hold has reached the child: cancel it.
				cancelled = true
				tt.intend(c.tag)
				if c.cancel == "close" {
					tt.count(c.dest.name+" cancelled by closing", 1)
					return false
				}
				note := fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%s,"reason":"torture"}}`, c.id)
				if st, b, err := tt.exchange(http.MethodPost, tt.url(c.dest), c.sid(), []byte(note), c.headers()[:2], nil); err != nil || st != http.StatusAccepted {
					if !tt.excused(c.dest, c.started) {
						tt.report("failed", "%s: notifications/cancelled: %v %d %s", c.tag, err, st, b)
					}
				}
			}
			return true
		})
		if (cancelled && c.cancel == "close") || (err == nil && status == http.StatusOK) {
			tt.heard(c)
		}
		if cancelled && c.cancel == "close" {
			return ""
		}
		if err == nil && status == http.StatusOK && final == nil {
			err = errors.New("the answer ended without a response")
		}
		if err != nil || status != http.StatusOK {
			if tt.excused(c.dest, c.started) {
				tt.count(c.dest.name+" excused failures (crash)", 1)
			} else {
				tt.callFailed(c, "%v %d %s", err, status, body)
			}
			return ""
		}
		if !bytes.Equal(final.ID, c.id) {
			tt.report("cross-user", "%s (id %s) got the answer for id %s: %.300s", c.tag, c.id, final.ID, final.Result)
			return ""
		}
		if final.Error != nil {
			switch {
			case cancelled && final.Error.Code == -32800:
				tt.count(c.dest.name+" cancelled by notification", 1)
			case tt.excused(c.dest, c.started):
				tt.count(c.dest.name+" excused failures (crash)", 1)
			default:
				tt.callFailed(c, "error %d %s", final.Error.Code, final.Error.Message)
			}
			return ""
		}
		var res struct {
			fakemcp.TortureResult
			ResultType    string                     `json:"resultType"`
			InputRequests map[string]json.RawMessage `json:"inputRequests"`
			RequestState  string                     `json:"requestState"`
			Content       []struct {
				Text string `json:"text"`
			} `json:"content"`
		}
		if err := json.Unmarshal(final.Result, &res); err != nil {
			tt.report("corrupt", "%s: a result that does not decode (%v): %.300s", c.tag, err, final.Result)
			return ""
		}
		if res.ResultType == "input_required" {
			inputs = tt.inputRequests(rcv, res.InputRequests)
			state = res.RequestState
			c.id = json.RawMessage(strconv.Quote(fmt.Sprintf("%s-retry%d", c.id, round+1)))
			continue
		}
		tt.checkAnswer(c, final.Result, res.TortureResult, res.Content)
		return res.Asked
	}
	tt.report("failed", "%s: still input_required after 8 rounds", c.tag)
	return ""
}

// callFailed reports a call that failed and did not have to.
func (tt *torture) callFailed(c *tortureCall, format string, args ...any) {
	a := c.args
	tt.report("failed", "%s (%s, %d B sent; answer %d B, progress %d, logs %d, ask %q, hold %d ms, cancel %q, json only %v): %s",
		c.tag, c.era, len(c.raw), a.Answer, a.Progress, a.Logs, a.Ask, a.HoldMS, c.cancel, c.jsonOnly, fmt.Sprintf(format, args...))
	tt.mu.Lock()
	tt.failed = append(tt.failed, c.tag)
	tt.mu.Unlock()
}

// holding reports whether m is the progress a hold sends once it has the
// call tagged tag.
func holding(m tmsg, tag string) bool {
	var p struct {
		Progress *float64 `json:"progress"`
		Message  string   `json:"message"`
	}
	return m.Method == "notifications/progress" && json.Unmarshal(m.Params, &p) == nil && p.Progress != nil && *p.Progress == 0 && p.Message == tag
}

// inputRequests checks the child's requests in a 2026-07-28 call's
// input_required result and answers those that are the caller's.
func (tt *torture) inputRequests(rcv receiver, reqs map[string]json.RawMessage) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	for key, raw := range reqs {
		var r struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		_ = json.Unmarshal(raw, &r)
		tag := requestTag(r.Method, r.Params)
		if !tt.owns(rcv, tag, r.Method+" (input request)") {
			continue
		}
		out[key], _ = json.Marshal(inputResponse(r.Method, tag))
		tt.count(rcv.dest.name+" received child requests", 1)
	}
	return out
}

// checkAnswer holds the answer to the call's own request: its tag, the
// digest of the arguments the child received, the text derived from the
// tag.
func (tt *torture) checkAnswer(c *tortureCall, raw json.RawMessage, res fakemcp.TortureResult, content []struct {
	Text string `json:"text"`
}) {
	sum := sha256.Sum256(c.raw)
	want := fakemcp.TortureText(c.tag, c.args.Answer)
	switch {
	case res.Tag == "":
		tt.report("corrupt", "%s (%s): an answer that is not the torture tool's: %.300s", c.tag, c.era, raw)
	case res.Tag != c.tag:
		tt.report("cross-user", "%s (%s) got the answer to %s", c.tag, c.era, res.Tag)
	case res.Digest != hex.EncodeToString(sum[:]):
		tt.report("corrupt", "%s (%s): the child received other arguments than the %d bytes sent (digest %s, sent %x)", c.tag, c.era, len(c.raw), res.Digest, sum)
	case len(content) != 1 || content[0].Text != want:
		got := ""
		if len(content) > 0 {
			got = content[0].Text
		}
		tt.report("corrupt", "%s (%s): answer text of %d bytes differs from the %d expected (starts %.60q)", c.tag, c.era, len(got), len(want), got)
	case strings.HasPrefix(res.Asked, "wrong:"):
		tt.report("cross-user", "%s (%s): the child's request was answered by the user of %s", c.tag, c.era, strings.TrimPrefix(res.Asked, "wrong:"))
	case !tt.ownChild(c, res):
		// Reported by ownChild.
	default:
		key := c.dest.name + " " + c.era
		tt.count(key+" answers", 1)
		tt.count(key+" bytes sent", len(c.raw))
		tt.count(key+" bytes received", len(want))
		switch {
		case res.Asked == "refused" && c.era == eraModern && c.args.Logs > 0:
			// Its log lines made its answer an SSE stream before the
			// child asked: an input_required result cannot follow them
			// (session/stateless.go), so the child is refused whoever
			// else is in flight.
			tt.count(key+" asked refused after streaming", 1)
		case res.Asked != "":
			tt.count(key+" asked "+res.Asked, 1)
		}
	}
}

// getStream reads s's GET stream until the end of the load, reopening it
// when it ends.
func (tt *torture) getStream(s *tortureSession) {
	defer tt.streamsWG.Done()
	rcv := receiver{user: s.user, dest: s.dest, sess: s}
	for range 20 {
		if tt.streams.Err() != nil {
			return
		}
		req, err := newRequest(tt.streams, http.MethodGet, tt.url(s.dest), s.sid, "", s.auth()...)
		if err != nil {
			tt.report("failed", "%s: %v", rcv, err)
			return
		}
		resp, err := tt.hc.Do(req)
		if err == nil {
			if resp.StatusCode == http.StatusOK {
				err = readMessages(resp.Header.Get("Content-Type"), resp.Body, func(m tmsg) bool {
					tt.related(rcv, m)
					return true
				})
			} else {
				err = fmt.Errorf("status %d", resp.StatusCode)
			}
			resp.Body.Close()
		}
		if tt.streams.Err() != nil {
			return
		}
		tt.count(s.dest.name+" GET streams reopened", 1)
		if !tt.excused(s.dest, time.Now()) && err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
			tt.report("failed", "%s: the GET stream ended: %v", rcv, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// runLoad runs every worker, the pipelining connections and the crash
// until the load's end, and waits for them.
func (tt *torture) runLoad() {
	tt.loadStart = time.Now()
	tt.loadEnd = tt.loadStart.Add(tt.load)
	var wg sync.WaitGroup
	seed := uint64(time.Now().UnixNano())
	tt.t.Logf("seed %d", seed)
	worker, principals := 0, 0
	spawn := func(f func(rng *rand.Rand)) {
		worker++
		rng := rand.New(rand.NewPCG(seed, uint64(worker)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(rng)
		}()
	}
	loop := func(rng *rand.Rand, next func() *tortureCall) {
		for i := 0; i < tortureMaxCalls && time.Now().Before(tt.loadEnd) && tt.ctx.Err() == nil; i++ {
			tt.run(next())
		}
	}
	for _, d := range tt.dests {
		for _, s := range tt.byDest[d.name] {
			for range d.sessionWorkers {
				spawn(func(rng *rand.Rand) { loop(rng, func() *tortureCall { return tt.newCall(rng, d, eraSession, s, "") }) })
			}
		}
		for range d.modernWorkers {
			me := fmt.Sprintf("mw%d", principals)
			principals++
			spawn(func(rng *rand.Rand) {
				loop(rng, func() *tortureCall { return tt.newCall(rng, d, eraModern, nil, tt.requestUser(rng, me, true)) })
			})
		}
		for range d.sessionlessWorkers {
			me := fmt.Sprintf("xw%d", principals)
			principals++
			spawn(func(rng *rand.Rand) {
				loop(rng, func() *tortureCall { return tt.newCall(rng, d, eraSessionless, nil, tt.requestUser(rng, me, false)) })
			})
		}
		if d.crash {
			wg.Add(1)
			go func() {
				defer wg.Done()
				tt.crash(d)
			}()
		}
	}
	for range tortureConns {
		spawn(tt.pipeline)
	}
	wg.Wait()
	tt.t.Logf("load: %s", time.Since(tt.loadStart).Round(time.Millisecond))
}

// requestUser is the user of a sessionless or 2026-07-28 request: a user
// of its own (""), or with tokens the worker's principal me, or now and
// then (shared) a session user's, whose sessions and requests are one user.
func (tt *torture) requestUser(rng *rand.Rand, me string, shared bool) string {
	switch {
	case !tt.tokens:
		return ""
	case shared && rng.IntN(4) == 0:
		return fmt.Sprintf("s%d", rng.IntN(tortureSessions-1))
	}
	return me
}

// crash makes d's child exit 40% into the load, and waits until it runs
// again.
func (tt *torture) crash(d *tortureDest) {
	select {
	case <-time.After(time.Until(tt.loadStart.Add(tt.load * 4 / 10))):
	case <-tt.ctx.Done():
		return
	}
	tt.mu.Lock()
	tt.crashFrom = time.Now()
	tt.mu.Unlock()
	rng := rand.New(rand.NewPCG(7, 7))
	c := tt.newCall(rng, d, eraModern, nil, tt.requestUser(rng, "crash", false))
	c.setArgs(rng, fakemcp.TortureArgs{Exit: true}, 0)
	c.raw, _ = json.Marshal(c.args)
	status, body, err := tt.exchange(http.MethodPost, tt.url(d), "", c.body(nil, ""), c.headers(), func(tmsg) bool { return true })
	tt.t.Logf("crash call: %v %d %.200s", err, status, body)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) && tt.ctx.Err() == nil {
		if h, err := tt.health(); err == nil && h[d.name].State == "running" && h[d.name].Restarts >= 1 {
			tt.mu.Lock()
			tt.crashBack = time.Now()
			tt.mu.Unlock()
			tt.t.Logf("%s: the child ran again %s after the crash call", d.name, time.Since(tt.crashFrom).Round(time.Millisecond))
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	tt.report("failed", "%s: the child did not run again within 30 s of its crash", d.name)
}

type tortureHealth map[string]struct {
	State    string `json:"state"`
	Restarts int    `json:"restarts"`
}

func (tt *torture) health() (tortureHealth, error) {
	var h struct {
		Destinations tortureHealth `json:"destinations"`
	}
	r, err := requestWith(tt.hc, http.MethodGet, tt.base+"/healthz", "", "")
	if err == nil {
		err = json.Unmarshal(r.body, &h)
	}
	return h.Destinations, err
}

// pipeline writes small POSTs of different users back to back on raw
// keep-alive connections, as a reverse proxy would, and checks that each
// answer, in order, is its own request's. Now and then one request in
// the middle is too large for the fast path (the connection goes to
// net/http with the bytes read so far), and the bytes are written in
// pieces cut anywhere.
func (tt *torture) pipeline(rng *rand.Rand) {
	for round := 0; round < tortureRounds && time.Now().Before(tt.loadEnd) && tt.ctx.Err() == nil; {
		conn, err := net.DialTimeout("tcp", tt.host, 10*time.Second)
		if err != nil {
			tt.report("failed", "pipeline: dial: %v", err)
			return
		}
		br := bufio.NewReaderSize(conn, 64<<10)
		open := true
		for k := 0; open && k < 5 && round < tortureRounds && time.Now().Before(tt.loadEnd); k, round = k+1, round+1 {
			n := 2 + rng.IntN(5)
			large := -1
			if rng.IntN(4) == 0 {
				large = rng.IntN(n)
			}
			calls := make([]*tortureCall, n)
			var wire []byte
			for i := range calls {
				c := tt.pipelinedCall(rng, i == large)
				calls[i] = c
				wire = append(wire, tt.rawRequest(c)...)
			}
			_ = conn.SetDeadline(time.Now().Add(tortureCallTimeout))
			for len(wire) > 0 && err == nil {
				cut := len(wire)
				if rng.IntN(2) == 0 {
					cut = 1 + rng.IntN(len(wire))
				}
				_, err = conn.Write(wire[:cut])
				wire = wire[cut:]
				if len(wire) > 0 {
					time.Sleep(time.Duration(rng.IntN(2000)) * time.Microsecond)
				}
			}
			for i, c := range calls {
				if err == nil {
					if err = tt.readPipelined(br, c); err == nil {
						tt.heard(c)
					}
				}
				if err != nil {
					if !slices.ContainsFunc(calls[i:], func(c *tortureCall) bool { return tt.excused(c.dest, c.started) }) {
						tt.report("failed", "pipeline: request %d of %d (%s): %v", i+1, n, c.tag, err)
					}
					open = false
					break
				}
			}
			tt.count("pipelined requests", n)
			if large >= 0 {
				tt.count("pipelined rounds handed to net/http", 1)
			}
		}
		conn.Close()
	}
}

// pipelinedCall is a small call (a few hundred bytes: the fast path's) of
// a user picked at random, or a larger one (tens of KiB).
func (tt *torture) pipelinedCall(rng *rand.Rand, large bool) *tortureCall {
	var c *tortureCall
	switch r := rng.IntN(10); {
	case r < 6:
		s := tt.sessions[rng.IntN(len(tt.sessions))]
		c = tt.newCall(rng, s.dest, eraSession, s, "")
	case r < 8:
		c = tt.newCall(rng, tt.dests[rng.IntN(len(tt.dests))], eraModern, nil, tt.requestUser(rng, "p", true))
	default:
		c = tt.newCall(rng, tt.dests[rng.IntN(len(tt.dests))], eraSessionless, nil, tt.requestUser(rng, "p", false))
	}
	// Nothing that waits for the caller (a request, a hold), small
	// answers; some progress and log lines, which make the answer an SSE
	// stream (chunked).
	c.cancel, c.jsonOnly = "", false
	size := rng.IntN(400)
	if large {
		size = 8<<10 + rng.IntN(32<<10)
	}
	c.setArgs(rng, fakemcp.TortureArgs{Answer: rng.IntN(8 << 10), Progress: rng.IntN(2), Logs: rng.IntN(2)}, size)
	c.started = time.Now()
	return c
}

// rawRequest is the call as HTTP/1.1 bytes, strict enough for the fast
// path when small.
func (tt *torture) rawRequest(c *tortureCall) []byte {
	body := c.body(nil, "")
	var b bytes.Buffer
	fmt.Fprintf(&b, "POST /%s/mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n", c.dest.name, tt.host)
	if c.sess != nil {
		fmt.Fprintf(&b, "Mcp-Session-Id: %s\r\n", c.sess.sid)
	}
	h := c.headers()
	for i := 0; i+1 < len(h); i += 2 {
		if h[i+1] != "" {
			fmt.Fprintf(&b, "%s: %s\r\n", h[i], h[i+1])
		}
	}
	fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n", len(body))
	b.Write(body)
	return b.Bytes()
}

// readPipelined reads the next answer on a pipelined connection and checks
// it is c's.
func (tt *torture) readPipelined(br *bufio.Reader, c *tortureCall) error {
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		if tt.excused(c.dest, c.started) {
			tt.count(c.dest.name+" excused failures (crash)", 1)
			return nil
		}
		return fmt.Errorf("status %d %s", resp.StatusCode, b)
	}
	var final *tmsg
	rcv := c.receiver()
	err = readMessages(resp.Header.Get("Content-Type"), resp.Body, func(m tmsg) bool {
		if m.Method == "" {
			final = &m
		} else {
			tt.related(rcv, m)
		}
		return true
	})
	if err != nil {
		return err
	}
	if final == nil {
		return errors.New("no response in the answer")
	}
	if !bytes.Equal(final.ID, c.id) {
		tt.report("cross-user", "pipeline: %s (id %s) got the answer for id %s: %.200s", c.tag, c.id, final.ID, final.Result)
		return nil
	}
	if final.Error != nil {
		if !tt.excused(c.dest, c.started) {
			tt.report("failed", "pipeline: %s: error %d %s", c.tag, final.Error.Code, final.Error.Message)
		}
		return nil
	}
	var res struct {
		fakemcp.TortureResult
		ResultType    string                     `json:"resultType"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		Content       []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(final.Result, &res); err != nil {
		tt.report("corrupt", "pipeline: %s: %v: %.200s", c.tag, err, final.Result)
		return nil
	}
	if res.ResultType == "input_required" {
		// A pipelined call asks nothing: these requests are another's.
		if len(tt.inputRequests(rcv, res.InputRequests)) > 0 {
			tt.report("unexpected", "pipeline: %s, which asks nothing, was asked for input: %.300s", c.tag, final.Result)
		}
		return nil
	}
	tt.checkAnswer(c, final.Result, res.TortureResult, res.Content)
	return nil
}

// alone runs, once the load is over, what must be delivered: on each
// destination where calls of several users run together, the child
// requests of one user at a time — three calls of a session at once (with
// tokens: two calls of one session and one of the user's other session),
// then a 2026-07-28 request alone — and a sessionless request's, refused
// (it can answer nothing).
// Then one cancellation of each era, each waited for in the journal.
func (tt *torture) alone() {
	tt.waitIdle()
	rng := rand.New(rand.NewPCG(3, 4))
	// No log lines: one that reaches a 2026-07-28 request (its own, or
	// with tokens another call's of its user) makes its answer an SSE
	// stream, after which the bridge refuses every request routed to it.
	ask := func(c *tortureCall, kind string, jsonOnly bool) *tortureCall {
		c.setArgs(rng, fakemcp.TortureArgs{Ask: kind, Answer: 100}, 100)
		c.cancel, c.jsonOnly = "", jsonOnly
		return c
	}
	for _, d := range tt.dests {
		if d.exact() {
			continue
		}
		a, b := tt.byDest[d.name][0], tt.byDest[d.name][1] // with tokens, both s0's
		// Calls abandoned during the load (cancelled ones the child never
		// answers) count as their users' for a while: wait until the
		// request of a user that made no call before is delivered.
		deadline := time.Now().Add(20 * time.Second)
		for tt.run(ask(tt.newCall(rng, d, eraModern, nil, tt.requestUser(rng, "alone", false)), "sampling", false)) != "delivered" {
			if time.Now().After(deadline) {
				tt.report("alone", "%s: a lone call's request was still refused 20 s after the load", d.name)
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		together := []*tortureCall{
			ask(tt.newCall(rng, d, eraSession, a, ""), "sampling", false),
			ask(tt.newCall(rng, d, eraSession, a, ""), "elicitation", true),
			ask(tt.newCall(rng, d, eraSession, a, ""), "sampling", false),
		}
		if tt.tokens {
			// Not with a 2026-07-28 request of the same principal: the
			// bridge may route a session call's request to it (the user's
			// newest call), and refuses it when that request ends first.
			together[2] = ask(tt.newCall(rng, d, eraSession, b, ""), "sampling", false)
		}
		asked := make([]string, len(together))
		var wg sync.WaitGroup
		for i, c := range together {
			wg.Add(1)
			go func() {
				defer wg.Done()
				asked[i] = tt.run(c)
			}()
		}
		wg.Wait()
		for _, era := range []string{eraModern, eraSessionless} {
			c := ask(tt.newCall(rng, d, era, nil, tt.requestUser(rng, "alone", false)), "sampling", false)
			together = append(together, c)
			asked = append(asked, tt.run(c))
		}
		want := slices.Repeat([]string{"delivered"}, len(asked)-1)
		if want = append(want, "refused"); !slices.Equal(asked, want) {
			var why []string
			for _, e := range tt.journal(d) {
				if e.kind == "refused" && slices.ContainsFunc(together, func(c *tortureCall) bool { return strings.HasPrefix(e.note, c.tag+" ") }) {
					why = append(why, e.note)
				}
			}
			tt.report("alone", "%s: with one user in flight at a time, the child's requests became %q; want %q (calls of one user at once, a 2026-07-28 request alone, a sessionless request alone); the child was told %q", d.name, asked, want, why)
		}
	}
	// One cancellation of each era, each waited for in the journal.
	d := tt.dests[0]
	for _, era := range []string{eraSession, eraModern} {
		var s *tortureSession
		if era == eraSession {
			s = tt.byDest[d.name][2]
		}
		c := tt.newCall(rng, d, era, s, tt.requestUser(rng, "alone", false))
		c.setArgs(rng, fakemcp.TortureArgs{HoldMS: 20000}, 10)
		c.jsonOnly = false
		c.cancel = map[string]string{eraSession: "notify", eraModern: "close"}[era]
		c.token = json.RawMessage(`"hold"`)
		tt.run(c)
		tt.mu.Lock()
		intended := tt.intended[c.tag]
		tt.mu.Unlock()
		if !intended {
			tt.report("alone", "%s: the %s hold %s never showed its progress", d.name, era, c.tag)
			continue
		}
		deadline := time.Now().Add(20 * time.Second)
		for !slices.ContainsFunc(tt.journal(d), func(e childEvent) bool { return e.kind == "cancelled" && e.note == c.tag }) {
			if time.Now().After(deadline) {
				tt.report("alone", "%s: the child never saw the cancellation of %s (%s, %s)", d.name, c.tag, era, c.cancel)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// waitIdle waits until no call is in flight at the bridge.
func (tt *torture) waitIdle() {
	deadline := time.Now().Add(30 * time.Second)
	for {
		m := tt.metrics()
		busy := ""
		for _, d := range tt.dests {
			if m[`stelae_inflight_calls{destination="`+d.name+`"}`] != 0 {
				busy = d.name
			}
		}
		if busy == "" {
			return
		}
		if time.Now().After(deadline) {
			tt.report("failed", "calls still in flight on %s 30 s after the load", busy)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// metrics reads the bridge's /metrics into name{labels} → value.
func (tt *torture) metrics() map[string]float64 {
	auth := ""
	if tt.tokens {
		auth = "Bearer " + tortureBearer("admin")
	}
	r, err := requestWith(tt.hc, http.MethodGet, tt.base+"/metrics", "", "", "Authorization", auth)
	if err != nil || r.status != http.StatusOK {
		tt.t.Fatalf("/metrics: %v %d %s", err, r.status, r.body)
	}
	out := map[string]float64{}
	for _, m := range anyMetricLine.FindAllStringSubmatch(string(r.body), -1) {
		v, _ := strconv.ParseFloat(m[3], 64)
		out[m[1]+m[2]] = v
	}
	return out
}

// journal is what d's children recorded.
func (tt *torture) journal(d *tortureDest) []childEvent {
	b := &testBridge{t: tt.t, journalPath: tt.journals[d.name]}
	return b.journal()
}

// finish ends the streams and the bridge and checks what the run left:
// the child journals, the counts, the bridge's health and its stderr.
func (tt *torture) finish() {
	t := tt.t
	tt.endStream()
	tt.streamsWG.Wait()
	h, err := tt.health()
	if err != nil {
		t.Errorf("/healthz: %v", err)
	}
	for _, d := range tt.dests {
		starts, exits := 0, 0
		for _, e := range tt.journal(d) {
			switch e.kind {
			case "start":
				starts++
			case "exit":
				exits++
			case "cancelled":
				if !tt.intended[e.note] {
					tt.report("journal", "%s: the child got a cancellation of %s, which nobody cancelled", d.name, e.note)
				}
				tt.count(d.name+" cancellations at the child", 1)
			case "badline":
				tt.report("journal", "%s: the child read a line that is not a JSON-RPC message (cut short or spliced): %s", d.name, e.note)
			case "badargs", "dup", "wrong":
				tt.report("journal", "%s: the child's journal says %s %s", d.name, e.kind, e.note)
			}
		}
		wantStarts, wantRestarts := 1, 0
		if d.crash {
			wantStarts, wantRestarts = 2, 1
		}
		if d.perUser {
			// A child per user: checked child by child.
			tt.checkUserChildren(d, h[d.name].State, h[d.name].Restarts)
		} else if starts != wantStarts || exits != wantRestarts || h[d.name].Restarts != wantRestarts || h[d.name].State != "running" {
			tt.report("journal", "%s: %d child starts and %d scripted exits, /healthz %+v; want %d starts, %d exits, %d restarts, running", d.name, starts, exits, h[d.name], wantStarts, wantRestarts, wantRestarts)
		}
		// Some child requests were delivered, so refusing everything
		// cannot pass; an interactive destination refuses none of those
		// a caller can answer; a sessionless request can answer nothing.
		delivered := tt.counted(d.name+" session asked delivered") + tt.counted(d.name+" modern asked delivered")
		refused := tt.counted(d.name+" session asked refused") + tt.counted(d.name+" modern asked refused")
		if delivered == 0 {
			tt.report("counts", "%s: no child request was delivered (%d refused)", d.name, refused)
		}
		if (d.interactive || d.modern) && refused != 0 {
			var why []string
			for _, e := range tt.journal(d) {
				if e.kind == "refused" && !strings.HasPrefix(e.note, "x") {
					why = append(why, e.note)
				}
			}
			tt.report("counts", "%s is interactive, yet %d child requests of sessions and 2026-07-28 requests were refused (%d delivered): %q", d.name, refused, delivered, why)
		}
		if n := tt.counted(d.name + " sessionless asked delivered"); n != 0 {
			tt.report("counts", "%s: %d child requests were delivered to sessionless requests, which cannot answer", d.name, n)
		}
	}
	// What the children say of the first calls that failed.
	for _, tag := range tt.failed[:min(len(tt.failed), 8)] {
		_, dest, _ := splitTag(tag)
		for _, d := range tt.dests {
			if d.name != dest {
				continue
			}
			var story []string
			for _, e := range tt.journal(d) {
				if e.note == tag || strings.HasPrefix(e.note, tag+" ") {
					story = append(story, e.kind+" "+e.note)
				}
			}
			t.Logf("the %s child's journal of %s: %q", dest, tag, story)
		}
	}
	// The bridge stops on SIGINT; its stderr has every race it met. When
	// something went wrong it gets SIGQUIT instead, and writes its
	// goroutines' stacks there.
	tt.mu.Lock()
	sig := syscall.SIGINT
	if len(tt.problems) > 0 {
		sig = syscall.SIGQUIT
	}
	tt.mu.Unlock()
	_ = tt.p.cmd.Process.Signal(sig)
	select {
	case <-tt.p.done:
	case <-time.After(30 * time.Second):
		_ = tt.p.cmd.Process.Kill()
		<-tt.p.done
		tt.report("bridge", "the bridge did not stop within 30 s of SIGINT")
	}
	logs := tt.p.logs.String()
	if n := strings.Count(logs, "WARNING: DATA RACE"); n > 0 {
		i := strings.Index(logs, "WARNING: DATA RACE")
		tt.report("race", "the bridge met %d data races; the first:\n%s", n, logs[i:min(len(logs), i+6000)])
	}
	if i := strings.Index(logs, "panic:"); i >= 0 {
		tt.report("bridge", "the bridge panicked:\n%s", logs[i:min(len(logs), i+4000)])
	}
	tt.checkAudit()
	if strings.Contains(logs, "SIGQUIT") {
		// The goroutines that move messages between the bridge and its
		// children, from the dump SIGQUIT asked for.
		var stacks []string
		for _, g := range strings.Split(logs, "\n\n") {
			if strings.HasPrefix(g, "goroutine ") && (strings.Contains(g, "dispatch.(*Dispatcher).read") || strings.Contains(g, "supervisor.(*Process)")) {
				stacks = append(stacks, g)
			}
		}
		t.Logf("the bridge's stdio goroutines at the end:\n%s", strings.Join(stacks, "\n\n"))
	}

	keys := make([]string, 0, len(tt.counts))
	for k := range tt.counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var summary strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&summary, "\n  %s: %d", k, tt.counts[k])
	}
	t.Logf("counts:%s", summary.String())
	kinds := make([]string, 0, len(tt.problems))
	for k := range tt.problems {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		p := tt.problems[k]
		t.Errorf("%d %s problem(s); the first %d:\n  %s", p.n, k, len(p.first), strings.Join(p.first, "\n  "))
	}
	if t.Failed() {
		t.Logf("bridge stderr (last 20 KiB):\n%s", logs[max(0, len(logs)-20<<10):])
	}
}

// TestTortureReaderNeverWaitsOnStdin guards the other direction of a
// child's pipes: the bridge must keep reading what a child writes even
// while the child does not read what the bridge writes. A server of the
// simplest kind (one loop: read a message, handle it, write its output,
// read the next) stops reading its stdin while it writes a large answer;
// if the bridge's reader of the child's stdout waited on a write to the
// child's stdin then (the error it answers a child's request with, when it
// refuses it), neither side would move: calls of every user hang until
// their timeout, and the child's stdin stays wedged.
//
// The child's stdin is one page of pipe, so one request fills it: user
// a's call stalls the child until user b's request waits on its stdin,
// then sends a sampling request (refused: two users are in flight) and a
// 1 MiB answer. Both calls must be answered, and a later one too.
func TestTortureReaderNeverWaitsOnStdin(t *testing.T) {
	d := &tortureDest{name: "seq", mode: fakemcp.ModeTortureSequential}
	tt := startFocused(t, d, "-request-timeout", "10s")
	a, bb := &tortureSession{user: "a", dest: d}, &tortureSession{user: "b", dest: d}
	tt.initialize(a, "2025-06-18")
	tt.initialize(bb, "2025-06-18")
	rng := rand.New(rand.NewPCG(5, 6))

	// a's call: stalls until b's request waits on the child's stdin, asks,
	// answers with 1 MiB.
	x := tt.newCall(rng, d, eraSession, a, "")
	x.setArgs(rng, fakemcp.TortureArgs{Ask: "sampling", Answer: 1 << 20, WaitStdin: 3800}, 10)
	x.token, x.cancel, x.jsonOnly = nil, "", false
	// b's request: one line of about 3,950 bytes, nearly a page.
	y := tt.newCall(rng, d, eraSession, bb, "")
	y.token, y.cancel, y.jsonOnly = nil, "", false
	y.setArgs(rng, fakemcp.TortureArgs{Answer: 10}, 0)
	y.setArgs(rng, fakemcp.TortureArgs{Answer: 10}, 3950-len(y.body(nil, ""))-32)

	done := make(chan string, 2)
	go func() { done <- "a: " + tt.run(x) }()
	stalled := func() bool {
		return slices.ContainsFunc(tt.journal(d), func(e childEvent) bool { return e.kind == "stalling" && e.note == x.tag })
	}
	waitFor(t, 20*time.Second, "the child to stall in a's call", stalled)
	go func() { done <- "b: " + tt.run(y) }()
	for range 2 {
		select {
		case r := <-done:
			t.Logf("call ended (%s)", r)
		case <-time.After(30 * time.Second):
			t.Fatalf("a call still waits 30 s on (request timeout 10 s)")
		}
	}
	z := tt.newCall(rng, d, eraSession, a, "")
	z.token, z.cancel, z.jsonOnly = nil, "", false
	z.setArgs(rng, fakemcp.TortureArgs{Answer: 10}, 10)
	tt.run(z)
	for k, p := range tt.problems {
		t.Errorf("%d %s problem(s): %s", p.n, k, strings.Join(p.first, "\n  "))
	}
	if n := tt.counted("seq session answers"); n != 3 {
		t.Errorf("%d of 3 calls answered", n)
	}
	if t.Failed() {
		t.Logf("bridge stderr:\n%s", tt.p.logs.String())
	}
}

// startFocused runs the bridge binary with one torture destination, for a
// test of one scenario.
func startFocused(t *testing.T, d *tortureDest, flags ...string) *torture {
	config, journals := tortureConfig(t, t.TempDir(), []*tortureDest{d})
	p := startBinary(t, config, flags...)
	streams, endStream := context.WithCancel(context.Background())
	t.Cleanup(endStream)
	return &torture{t: t, p: p, base: p.base, ctx: context.Background(), hc: &http.Client{Transport: &http.Transport{Proxy: nil}},
		journals: journals, dests: []*tortureDest{d}, streams: streams, endStream: endStream, byDest: map[string][]*tortureSession{},
		problems: map[string]*tortureProblem{}, intended: map[string]bool{}, counts: map[string]int{}}
}

// TestTortureAbandonedCallsStayTheirUsers: a call its user gave up on
// (cancelled, timed out) is still its user's for as long as the child
// works on it. A child need not stop when told (servers that do not
// implement cancellation keep going, and log as they go): what it sends
// for the abandoned call must not reach whichever user is in flight next.
//
// User a's call is cancelled as soon as it reaches the child, which goes
// on a second later regardless — two log lines and a sampling request,
// each with a's tag — while user b's call is the only call in flight; on
// an interactive destination too (b's call waits for a's abandoned one).
func TestTortureAbandonedCallsStayTheirUsers(t *testing.T) {
	if os.Getenv("STELAE_TORTURE_KNOWN_DEFECTS") == "" {
		// dispatch/abandoned.go, README: an abandoned call stops counting
		// as its user's once the child answers anything written after the
		// cancellation (the ping sent with it), or after 3 s, on the
		// assumption that a server stops acting for a cancelled request
		// once it has read the cancellation. This child does not. Once a
		// child has answered a cancelled call with a result, the bridge
		// knows it goes on and keeps its abandoned calls until they are
		// answered (TestChildThatGoesOnWithCancelledCalls); what it sent
		// for the first one it went on with is what this test sees.
		t.Skip("known limit (a documented assumption): before a child has shown that it goes on with cancelled requests, an abandoned call stops counting as its user's once the child has read its cancellation; set STELAE_TORTURE_KNOWN_DEFECTS=1 to run")
	}
	for _, interactive := range []bool{false, true} {
		t.Run(map[bool]string{false: "shared", true: "interactive"}[interactive], func(t *testing.T) {
			tortureAbandoned(t, &tortureDest{name: "late", mode: fakemcp.ModeTortureShuffle, interactive: interactive})
		})
	}
}

func tortureAbandoned(t *testing.T, d *tortureDest) {
	tt := startFocused(t, d)
	rng := rand.New(rand.NewPCG(8, 9))
	a, b := &tortureSession{user: "a", dest: d}, &tortureSession{user: "b", dest: d}
	for _, s := range []*tortureSession{a, b} {
		tt.initialize(s, "2025-06-18")
		tt.streamsWG.Add(1)
		go tt.getStream(s)
	}
	x := tt.newCall(rng, d, eraSession, a, "")
	x.setArgs(rng, fakemcp.TortureArgs{IgnoreCancelMS: 1000, Logs: 2, Ask: "sampling", Answer: 10}, 10)
	x.token, x.cancel, x.jsonOnly = json.RawMessage(`"late"`), "notify", false
	tt.run(x)
	y := tt.newCall(rng, d, eraSession, b, "")
	y.setArgs(rng, fakemcp.TortureArgs{HoldMS: 3000, Answer: 10}, 10)
	y.token, y.cancel, y.jsonOnly = json.RawMessage(`"b"`), "", false
	done := make(chan struct{})
	go func() {
		defer close(done)
		tt.run(y)
	}()
	// The child's request for a's call is answered one way or another
	// (refused, or answered by whoever got it).
	waitFor(t, 20*time.Second, "the child's late request for a's call to be answered", func() bool {
		return slices.ContainsFunc(tt.journal(d), func(e childEvent) bool {
			return (e.kind == "refused" || e.kind == "wrong" || e.kind == "unanswered") && strings.HasPrefix(e.note, x.tag+" ")
		})
	})
	<-done
	tt.endStream()
	tt.streamsWG.Wait()
	for k, p := range tt.problems {
		t.Errorf("%d %s problem(s):\n  %s", p.n, k, strings.Join(p.first, "\n  "))
	}
	if t.Failed() {
		for _, e := range tt.journal(d) {
			t.Logf("child journal: %s %s (+%s)", e.kind, e.note, e.at.Sub(tt.journal(d)[0].at).Round(time.Millisecond))
		}
	}
}

// TestTortureStalledChildRecovers: a child that stops reading its stdin
// for longer than the bridge's write timeout (the request timeout) — a
// long computation in a server that reads between jobs — leaves a write
// cut short in its stdin. The bridge cannot write to it again (the next
// line would be spliced to the cut one); once the child reads again, the
// destination must serve calls again (the bridge may restart the child),
// not answer every call with 504 until someone restarts the bridge.
func TestTortureStalledChildRecovers(t *testing.T) {
	d := &tortureDest{name: "stall", mode: fakemcp.ModeTortureSequential}
	tt := startFocused(t, d, "-request-timeout", "2s")
	a, b := &tortureSession{user: "a", dest: d}, &tortureSession{user: "b", dest: d}
	tt.initialize(a, "2025-06-18")
	tt.initialize(b, "2025-06-18")
	rng := rand.New(rand.NewPCG(10, 11))
	call := func(s *tortureSession, args fakemcp.TortureArgs, size int) *tortureCall {
		c := tt.newCall(rng, d, eraSession, s, "")
		c.token, c.cancel, c.jsonOnly = nil, "", false
		c.setArgs(rng, args, size)
		return c
	}
	// a's call stalls the child 4 s; b's request, larger than the child's
	// one-page stdin, cannot be written meanwhile: its write times out.
	go tt.run(call(a, fakemcp.TortureArgs{HoldMS: 4000}, 10))
	waitFor(t, 20*time.Second, "the child to stall", func() bool {
		return slices.ContainsFunc(tt.journal(d), func(e childEvent) bool { return e.kind == "stalling" })
	})
	tt.run(call(b, fakemcp.TortureArgs{}, 6<<10))
	// After the stall: the destination serves calls again within 20 s.
	deadline := time.Now().Add(20 * time.Second)
	for {
		c := call(a, fakemcp.TortureArgs{Answer: 10}, 10)
		c.started = time.Now()
		status, body, err := tt.exchange(http.MethodPost, tt.url(d), a.sid, c.body(nil, ""), c.headers(), func(tmsg) bool { return true })
		if err == nil && status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("20 s after the child read its stdin again, a call still gets %v %d %s", err, status, body)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// heard notes that the bridge answered c.
func (tt *torture) heard(c *tortureCall) {
	tt.mu.Lock()
	if tt.answered == nil { // a torture made elsewhere (tracePhase's)
		tt.answered = map[string]string{}
	}
	tt.answered[c.tag] = c.user
	tt.mu.Unlock()
}

// checkAudit reads the stopped bridge's audit trail: it holds a line for
// every call the bridge answered, with the call's user where auth names
// them, no "dropped" line, and it was rotated.
func (tt *torture) checkAudit() {
	if tt.audit == "" {
		return
	}
	lines, files, raw := readAudit(tt.t, tt.audit)
	tags := map[string]auditLine{}
	dropped := 0
	for _, l := range lines {
		if l.Event == "dropped" {
			dropped += l.Dropped
		}
		var args struct{ Tag string }
		if json.Unmarshal(l.Arguments, &args) == nil && args.Tag != "" {
			tags[args.Tag] = l
		}
	}
	tt.mu.Lock()
	defer tt.mu.Unlock()
	missing := []string{}
	for tag, user := range tt.answered {
		l, ok := tags[tag]
		switch {
		case !ok:
			missing = append(missing, tag)
		case tt.tokens && l.User != user:
			tt.reportLocked("audit", "%s: the trail names %q as its caller; want %q", tag, l.User, user)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		tt.reportLocked("audit", "%d of the %d calls the bridge answered have no line in the audit trail (%d dropped); the first: %q", len(missing), len(tt.answered), dropped, missing[:min(len(missing), 8)])
	}
	if dropped > 0 {
		tt.reportLocked("audit", "the audit trail dropped %d entries", dropped)
	}
	if files < 2 {
		tt.reportLocked("audit", "the audit trail was not rotated (%d file, %d bytes)", files, len(raw))
	}
	tt.counts["audit trail lines"], tt.counts["audit trail files"] = len(lines), files
	if tt.usersRun != nil {
		tt.usersRun.auditTrail = raw
	}
}
