//go:build unix

// Package tests holds the end-to-end tests: the bridge's HTTP handler, wired
// as cmd/stelae-bridge wires it, against real child processes (this test
// binary re-executed as a scripted MCP server) over real HTTP.
package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/stelae-bridge/stelae-bridge/h1"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/stelae-bridge/stelae-bridge/authserver"
	"github.com/stelae-bridge/stelae-bridge/bridge"
	"github.com/stelae-bridge/stelae-bridge/config"
	"github.com/stelae-bridge/stelae-bridge/dispatch"
	"github.com/stelae-bridge/stelae-bridge/supervisor"
	"github.com/stelae-bridge/stelae-bridge/tests/conformancefixture"
	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

func TestMain(m *testing.M) {
	fakemcp.NoExitSleep()
	supervisor.RunReaperIfAsked()
	fakemcp.Serve()
	conformancefixture.Serve()
	code := m.Run()
	removeBridgeBinary()
	removeTortureBinary()
	os.Exit(code)
}

// testBridge is a running bridge under test.
type testBridge struct {
	t      *testing.T
	srv    *testServer
	bridge *bridge.Bridge
	// dispatchers are the shared ones, by destination.
	dispatchers map[string]*dispatch.Dispatcher
	logs        *syncBuffer
	// journalPath is the file the fake children record their starts and
	// scripted exits in (fakemcp.EnvJournal).
	journalPath string
}

// bridgeConfig tunes newBridge; zero values take the defaults below.
type bridgeConfig struct {
	opts       bridge.Options
	restart    supervisor.RestartPolicy
	stopGrace  time.Duration
	maxMessage int
	linger     time.Duration
	extraEnv   map[string]string
	// defaultDest is the configuration's 'default:'.
	defaultDest string
	// tools, roots, startTimeout and isolated are every destination's
	// 'tools:', 'roots:', 'start_timeout:' and 'isolation: session'.
	tools        config.ToolFilter
	roots        []config.Root
	startTimeout time.Duration
	isolated     bool
	// isolation, when set, is every destination's 'isolation:' (isolated
	// is 'session'); maxUsers and userIdle its 'max_users:' and
	// 'user_idle:'.
	isolation string
	maxUsers  int
	userIdle  time.Duration
	// credentials are every destination's 'credentials:'.
	credentials []config.Credential
	// interactive and logs are every destination's 'interactive:' and
	// 'logs:'.
	interactive bool
	logs        string
	// cacheTTL and cacheScope are every destination's 'cache:'.
	cacheTTL   time.Duration
	cacheScope string
	// taskAfter and taskTTL are every destination's 'tasks:'.
	taskAfter, taskTTL time.Duration
	// inputWait is every destination's 'input_wait:'.
	inputWait time.Duration
	// auth is the top-level 'auth:' block (every destination's);
	// destAuth replaces it for some destinations.
	auth     *config.Auth
	destAuth map[string]*config.Auth
	// authServer, when set, is the built-in authorization server.
	authServer *authserver.Server
	// addr, when set, is the address to listen on (a restarted bridge at
	// the same URL).
	addr string
	// profiles are the configuration's 'profiles:', by name: each the
	// destinations it combines (prefixed with their names).
	profiles map[string][]string
	// unclaimedLinger and restartPatience are the bridge's options.
	unclaimedLinger time.Duration
	restartPatience time.Duration
}

// newBridge serves one destination per name → fake server mode, built by
// bridge.New as cmd/stelae-bridge builds it.
func newBridge(t *testing.T, modes map[string]string, cfg bridgeConfig) *testBridge {
	t.Helper()
	logs := &syncBuffer{}
	log := hclog.New(&hclog.LoggerOptions{Name: "test", Level: hclog.Debug, Output: logs})
	opts := cfg.opts
	opts.Restart = cfg.restart
	if cfg.restart.MaxRestarts == 0 && cfg.restart.Initial == 0 {
		// Quick restarts; a test that wants none says so with Initial.
		opts.Restart = supervisor.RestartPolicy{MaxRestarts: 3, Initial: 50 * time.Millisecond, StableAfter: time.Minute}
	}
	opts.StopGrace = cfg.stopGrace
	if opts.StopGrace == 0 {
		opts.StopGrace = 500 * time.Millisecond
	}
	if opts.RequestTimeout == 0 {
		opts.RequestTimeout = 10 * time.Second
	}
	opts.MaxMessage, opts.Linger = cfg.maxMessage, cfg.linger
	opts.UnclaimedLinger, opts.RestartPatience = cfg.unclaimedLinger, cfg.restartPatience
	opts.Logger, opts.LogOutput = log, logs
	// Children run under a reaper, as in the binary: this test binary in
	// its reaper mode (TestMain).
	reaper, err := supervisor.ReaperCommand()
	if err != nil {
		t.Fatal(err)
	}
	opts.Reaper = reaper
	if cfg.authServer != nil {
		opts.AuthServer = cfg.authServer
	}
	conf := &config.Config{Destinations: map[string]*config.Destination{}, Default: cfg.defaultDest, Auth: cfg.auth}
	journalPath := filepath.Join(t.TempDir(), "journal")
	for name, mode := range modes {
		command, args, env := fakemcp.Command(mode)
		env[fakemcp.EnvJournal] = journalPath
		for k, v := range cfg.extraEnv {
			env[k] = v
		}
		d := &config.Destination{Name: name, Command: command, Args: args, Env: env, Tools: cfg.tools, Roots: cfg.roots, StartTimeout: cfg.startTimeout}
		if cfg.isolated {
			d.Isolation = config.IsolationSession
		}
		if cfg.isolation != "" {
			d.Isolation, d.MaxUsers, d.UserIdle = cfg.isolation, cfg.maxUsers, cfg.userIdle
			d.Credentials = cfg.credentials
		}
		d.Interactive, d.Logs = cfg.interactive, cfg.logs
		d.CacheTTL, d.CacheScope = cfg.cacheTTL, cfg.cacheScope
		d.TaskAfter, d.TaskTTL, d.InputWait = cfg.taskAfter, cfg.taskTTL, cfg.inputWait
		d.Auth = cfg.auth
		if a, ok := cfg.destAuth[name]; ok {
			d.Auth = a
		}
		conf.Destinations[name] = d
		conf.Names = append(conf.Names, name)
	}
	for name, members := range cfg.profiles {
		if conf.Profiles == nil {
			conf.Profiles = map[string]*config.Profile{}
		}
		conf.Profiles[name] = &config.Profile{Name: name, Destinations: members}
		conf.ProfileNames = append(conf.ProfileNames, name)
	}
	br, err := bridge.New(conf, opts)
	if err != nil {
		t.Fatal(err)
	}
	b := &testBridge{t: t, bridge: br, dispatchers: map[string]*dispatch.Dispatcher{}, logs: logs, journalPath: journalPath}
	for _, name := range conf.Names {
		if d := br.Dispatcher(name); d != nil {
			b.dispatchers[name] = d
		}
	}
	addr := cfg.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := listenRetry(addr)
	if err != nil {
		t.Fatal(err)
	}
	b.srv = startServer(br, ln, log.Named("http"))
	t.Cleanup(b.close)
	return b
}

func (b *testBridge) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := b.bridge.Shutdown(ctx); err != nil {
		b.t.Errorf("the bridge did not stop: %v", err)
	}
	b.srv.Close()
	if b.t.Failed() {
		b.t.Logf("bridge logs:\n%s", b.logs.String())
	}
}

// testServer serves a bridge's handler the way the binary does
// (h1.Server: the fast path, and net/http for the rest).
type testServer struct {
	URL      string
	Listener net.Listener
	srv      *h1.Server
	done     chan struct{}
}

func startServer(h http.Handler, ln net.Listener, log hclog.Logger) *testServer {
	s := &testServer{URL: "http://" + ln.Addr().String(), Listener: ln, srv: h1.NewServer(h, log), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln)
	}()
	return s
}

// Close waits a while for the requests in flight, then closes every
// connection.
func (s *testServer) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
	<-s.done
}

func (b *testBridge) url(dest string) string { return b.srv.URL + "/" + dest + "/mcp" }

// listenRetry listens on addr, retrying while a server just closed there
// releases it.
func listenRetry(addr string) (net.Listener, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		ln, err := net.Listen("tcp", addr)
		if err == nil || time.Now().After(deadline) {
			return ln, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// childEvent is one line of the fake children's journal.
type childEvent struct {
	kind string // "start", "exit" or "asked"
	pid  int
	at   time.Time
	note string // what "asked" got
}

// whileAsking calls do on a goroutine of its own once a fake child has
// journaled "asking" (its "ask" tool waits before it asks: another call
// starts meanwhile), or after 10 s; its response comes on the channel.
func (b *testBridge) whileAsking(do func() response) <-chan response {
	done := make(chan response, 1)
	go func() {
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			if slices.ContainsFunc(b.journal(), func(e childEvent) bool { return e.kind == "asking" }) {
				break
			}
		}
		done <- do()
	}()
	return done
}

// journal is what the bridge's fake children recorded so far, in order.
func (b *testBridge) journal() []childEvent {
	data, err := os.ReadFile(b.journalPath)
	if err != nil && !os.IsNotExist(err) {
		b.t.Fatal(err)
	}
	var out []childEvent
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var e childEvent
		var ns int64
		if n, _ := fmt.Sscanf(line, "%s %d %d", &e.kind, &e.pid, &ns); n == 3 {
			e.at = time.Unix(0, ns)
			if f := strings.SplitN(line, " ", 4); len(f) == 4 {
				e.note = f[3]
			}
			out = append(out, e)
		}
	}
	return out
}

// status is a shared destination's status.
func (b *testBridge) status(dest string) dispatch.Status {
	b.t.Helper()
	d := b.dispatchers[dest]
	if d == nil {
		b.t.Fatalf("no shared destination %q", dest)
	}
	return d.Status()
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	// mu guards buf.
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// client is a minimal Streamable HTTP client for one session. Its do is
// safe to use from any goroutine; must, post and the other helpers fail the
// test and belong on the test's goroutine.
type client struct {
	t   testing.TB
	url string
	sid string
	// http, when set, replaces httpClient (a test with its own transport).
	http *http.Client
}

func newClient(t testing.TB, url string) *client { return &client{t: t, url: url} }

// response is one HTTP answer.
type response struct {
	status int
	header http.Header
	body   []byte
}

// httpClient never follows redirects (the bridge must never redirect) and
// bounds every request.
var httpClient = &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// request sends one request and reads the whole answer. POST carries the
// MCP Content-Type and Accept, GET Accept: text/event-stream, and sid (when
// set) the session header; headers are name, value pairs, an empty value
// deleting the header. It never fails the test: goroutines use it.
func request(method, url, sid, body string, headers ...string) (response, error) {
	return requestWith(httpClient, method, url, sid, body, headers...)
}

// newRequest builds request's requests: POST with the MCP Content-Type and
// Accept, GET with Accept: text/event-stream, the session header when sid
// is set, then headers (name, value pairs; an empty value deletes).
func newRequest(ctx context.Context, method, url, sid, body string, headers ...string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	switch method {
	case http.MethodPost:
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
	case http.MethodGet:
		req.Header.Set("Accept", "text/event-stream")
	}
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] == "" {
			req.Header.Del(headers[i])
		} else {
			req.Header.Set(headers[i], headers[i+1])
		}
	}
	return req, nil
}

// requestWith is request through hc.
func requestWith(hc *http.Client, method, url, sid, body string, headers ...string) (response, error) {
	req, err := newRequest(context.Background(), method, url, sid, body, headers...)
	if err != nil {
		return response{}, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return response{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return response{}, fmt.Errorf("reading the answer to %s %s: %w", method, url, err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// mustRequest is request that fails the test on a transport error.
func mustRequest(t testing.TB, method, url, sid, body string, headers ...string) response {
	t.Helper()
	r, err := request(method, url, sid, body, headers...)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return r
}

// do sends a request on the client's session; safe from any goroutine.
func (c *client) do(method, body string, headers ...string) (response, error) {
	hc := c.http
	if hc == nil {
		hc = httpClient
	}
	return requestWith(hc, method, c.url, c.sid, body, headers...)
}

// must is do that fails the test on a transport error.
func (c *client) must(method, body string, headers ...string) response {
	c.t.Helper()
	r, err := c.do(method, body, headers...)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, c.url, err)
	}
	return r
}

func (c *client) post(body string, headers ...string) response {
	c.t.Helper()
	return c.must(http.MethodPost, body, headers...)
}

const initBody = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"sampling":{}},"clientInfo":{"name":"test","version":"1"}}}`

// initialize starts a session and sends notifications/initialized.
func (c *client) initialize() json.RawMessage {
	c.t.Helper()
	r := c.post(initBody)
	if r.status != http.StatusOK {
		c.t.Fatalf("initialize: status %d: %s", r.status, r.body)
	}
	c.sid = r.header.Get("Mcp-Session-Id")
	if c.sid == "" {
		c.t.Fatalf("initialize: no Mcp-Session-Id header")
	}
	if r := c.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); r.status != http.StatusAccepted {
		c.t.Fatalf("notifications/initialized: status %d: %s", r.status, r.body)
	}
	return r.body
}

// callTool calls a tool and returns the response; id is raw JSON.
func (c *client) callTool(id, name string, args any) response {
	c.t.Helper()
	return c.post(toolCallBody(id, name, args))
}

// toolCallBody is the body of a tools/call; id is raw JSON. (The one
// builder of tools/call bodies: two helper families had a copy
// each.)
func toolCallBody(id, name string, args any) string {
	a, _ := json.Marshal(args)
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, name, a)
}

// rpc is a decoded JSON-RPC response.
type rpc struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func decode(t testing.TB, b []byte) rpc {
	t.Helper()
	var r rpc
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("not JSON-RPC: %v: %s", err, b)
	}
	return r
}

// stats asks the fake child for its state.
type childStats struct {
	PID           int               `json:"pid"`
	Inits         int               `json:"inits"`
	Cancelled     []json.RawMessage `json:"cancelled"`
	Subscribes    map[string]int    `json:"subscribes"`
	Notifications []string          `json:"notifications"`
	InitParams    json.RawMessage   `json:"init_params"`
	Grandchildren []int             `json:"grandchildren"`
	InitVersions  []string          `json:"init_versions"`
	RootsAtInit   json.RawMessage   `json:"roots_at_init"`
	LastAsk       json.RawMessage   `json:"last_ask"`
	Calls         []string          `json:"calls"`
}

// waitCalled waits until the child (asked through c) has received a call of
// the tool name: a call in flight has reached the child.
func waitCalled(t testing.TB, c *client, name string) {
	t.Helper()
	waitFor(t, 10*time.Second, "the child to receive a call of "+name, func() bool {
		return slices.Contains(c.stats().Calls, name)
	})
}

func (c *client) stats() childStats {
	c.t.Helper()
	r := c.callTool(`"stats"`, "stats", nil)
	if r.status != http.StatusOK {
		c.t.Fatalf("stats: %d %s", r.status, r.body)
	}
	var s childStats
	if err := json.Unmarshal(decode(c.t, r.body).Result, &s); err != nil {
		c.t.Fatalf("stats: %v: %s", err, r.body)
	}
	return s
}

// waitFor polls cond until it holds or d passes.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// sseMessages decodes the JSON-RPC messages of an SSE body (priming events,
// which carry no data, are skipped).
func sseMessages(t testing.TB, body []byte) []rpc {
	t.Helper()
	var out []rpc
	for _, line := range strings.Split(string(body), "\n") {
		if data, ok := strings.CutPrefix(line, "data: "); ok && strings.TrimSpace(data) != "" {
			out = append(out, decode(t, []byte(data)))
		}
	}
	if len(out) == 0 {
		t.Fatalf("no messages in the SSE body %q", body)
	}
	return out
}

// mustTransportError is checkTransportError, fatal: it stops the test at
// the first thing wrong with the answer.
func mustTransportError(t testing.TB, what string, r response, status int, words ...string) string {
	t.Helper()
	before := t.Failed()
	msg := checkTransportError(t, what, r, status, 0, words...)
	if t.Failed() && !before {
		t.FailNow()
	}
	return msg
}

// resultOK asserts a 200 JSON-RPC result and returns it.
func resultOK(t testing.TB, what string, r response) json.RawMessage {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("%s: status %d: %s", what, r.status, r.body)
	}
	m := decode(t, r.body)
	if m.Error != nil || len(m.Result) == 0 {
		t.Fatalf("%s: no result: %s", what, r.body)
	}
	return m.Result
}

// echoCall calls echo in c's session and checks its answer and id.
func echoCall(t testing.TB, c *client, id, text string) {
	t.Helper()
	r := c.callTool(id, "echo", map[string]string{"text": text})
	res := resultOK(t, "echo "+text, r)
	want := fmt.Sprintf(`{"content":[{"text":%q,"type":"text"}]}`, text)
	if string(res) != want {
		t.Fatalf("echo %s: result %s, want %s", text, res, want)
	}
	if got := string(decode(t, r.body).ID); got != id {
		t.Fatalf("echo %s: id %s, want %s", text, got, id)
	}
}

// childWho is what the fake child's whoami tool answers.
type childWho struct {
	PID        int             `json:"pid"`
	Inits      int             `json:"inits"`
	UpstreamID json.RawMessage `json:"upstream_id"`
}

// whoamiCall calls whoami in c's session: which child answered.
func whoamiCall(t testing.TB, c *client) childWho {
	t.Helper()
	var w childWho
	res := resultOK(t, "whoami", c.callTool(`"who"`, "whoami", nil))
	if err := json.Unmarshal(res, &w); err != nil || w.PID == 0 {
		t.Fatalf("whoami: %v: %s", err, res)
	}
	return w
}

// checkRPC checks a JSON-RPC answer carried with HTTP 200: JSON content
// type, the session header, and the id byte for byte. It returns the decoded
// message. Safe for goroutines. sid "" skips the session header check.
func checkRPC(t *testing.T, what string, r response, sid, id string) (rpc, bool) {
	t.Helper()
	if r.status != http.StatusOK {
		t.Errorf("%s: status %d, want 200; body %s", what, r.status, r.body)
		return rpc{}, false
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s: Content-Type %q, want application/json", what, ct)
		return rpc{}, false
	}
	if sid != "" && r.header.Get("Mcp-Session-Id") != sid {
		t.Errorf("%s: Mcp-Session-Id %q, want %q", what, r.header.Get("Mcp-Session-Id"), sid)
	}
	var m rpc
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Errorf("%s: not JSON-RPC (%v): %s", what, err, r.body)
		return rpc{}, false
	}
	if m.JSONRPC != "2.0" {
		t.Errorf("%s: jsonrpc %q: %s", what, m.JSONRPC, r.body)
	}
	if string(m.ID) != id || !bytes.Contains(r.body, []byte(`"id":`+id)) {
		t.Errorf("%s: id %s, want exactly %s: %s", what, m.ID, id, r.body)
		return m, false
	}
	return m, true
}

// checkResult checks a successful JSON-RPC result and returns it.
func checkResult(t *testing.T, what string, r response, sid, id string) (json.RawMessage, bool) {
	t.Helper()
	m, ok := checkRPC(t, what, r, sid, id)
	if !ok {
		return nil, false
	}
	if m.Error != nil || len(m.Result) == 0 {
		t.Errorf("%s: want a result, got %s", what, r.body)
		return nil, false
	}
	return m.Result, true
}

// textOf returns the text of the first content item of a tool result.
func textOf(result json.RawMessage) string {
	var r struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	if json.Unmarshal(result, &r) != nil || len(r.Content) == 0 {
		return "<no text content: " + string(result) + ">"
	}
	return r.Content[0].Text
}

// fakeBridge is an in-process bridge with one destination, "fake", served
// by the scripted fake MCP server.
func fakeBridge(t *testing.T, opts bridge.Options) *testBridge {
	return newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{opts: opts})
}

// checkTransportError checks a transport error answer: the status, a JSON
// content type, and a JSON-RPC error body with "id": null, the given code
// (when non-zero) and a human-readable message containing every want.
// It returns the message. Safe for goroutines (uses Errorf only). The one
// transport-error check (mustTransportError is it, fatal).
func checkTransportError(t testing.TB, what string, r response, status, code int, want ...string) string {
	t.Helper()
	if r.status != status {
		t.Errorf("%s: status %d, want %d; body %s", what, r.status, status, r.body)
		return ""
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("%s: Content-Type %q, want application/json; body %s", what, ct, r.body)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(r.body, &top); err != nil {
		t.Errorf("%s: body is not a JSON object (%v): %q", what, err, r.body)
		return ""
	}
	if string(top["jsonrpc"]) != `"2.0"` {
		t.Errorf(`%s: "jsonrpc" is %s, want "2.0": %s`, what, top["jsonrpc"], r.body)
	}
	if id, ok := top["id"]; !ok || string(id) != "null" {
		t.Errorf(`%s: want "id": null, got %q (present %v): %s`, what, id, ok, r.body)
	}
	if _, ok := top["result"]; ok {
		t.Errorf("%s: error body carries a result: %s", what, r.body)
	}
	var e struct {
		Code    *int   `json:"code"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(top["error"], &e); err != nil || e.Code == nil {
		t.Errorf("%s: no JSON-RPC error object with a code: %s", what, r.body)
		return ""
	}
	if code != 0 && *e.Code != code {
		t.Errorf("%s: error code %d, want %d: %s", what, *e.Code, code, r.body)
	}
	if len(e.Message) < 15 || !strings.Contains(e.Message, " ") {
		t.Errorf("%s: error message %q is not a human-readable sentence", what, e.Message)
	}
	for _, w := range want {
		if !strings.Contains(e.Message, w) {
			t.Errorf("%s: error message %q does not mention %q", what, e.Message, w)
		}
	}
	return e.Message
}

func deleteSession(t testing.TB, c *client) {
	t.Helper()
	if r := c.must(http.MethodDelete, ""); r.status != http.StatusNoContent {
		t.Fatalf("DELETE: status %d: %s", r.status, r.body)
	}
}

// jsonEqual compares two JSON texts by value.
func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

// asyncResult is the outcome of a request sent from a goroutine.
type asyncResult struct {
	r   response
	err error
	at  time.Time
}

// postAsync sends a POST in a goroutine.
func postAsync(url, sid, body string, headers ...string) <-chan asyncResult {
	ch := make(chan asyncResult, 1)
	go func() {
		r, err := request(http.MethodPost, url, sid, body, headers...)
		ch <- asyncResult{r: r, err: err, at: time.Now()}
	}()
	return ch
}

// awaitAsync waits for a goroutine's answer.
func awaitAsync(t *testing.T, what string, ch <-chan asyncResult, within time.Duration) response {
	t.Helper()
	select {
	case res := <-ch:
		if res.err != nil {
			t.Fatalf("%s: %v", what, res.err)
		}
		return res.r
	case <-time.After(within):
		t.Fatalf("%s: no answer within %s (the request hangs)", what, within)
	}
	return response{}
}

// bearerTransport adds a bearer token to every request.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// authedClient is a client whose every request carries token.
func authedClient(t testing.TB, url, token string) *client {
	c := newClient(t, url)
	c.http = &http.Client{Timeout: 30 * time.Second, Transport: bearerTransport{token},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return c
}

// decodeAnswer is the JSON-RPC response of a POST answered with JSON or an
// SSE stream.
func decodeAnswer(t *testing.T, r response) rpc {
	t.Helper()
	if strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") {
		msgs := sseMessages(t, r.body)
		return msgs[len(msgs)-1]
	}
	return decode(t, r.body)
}

const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`

// modernCall posts a 2026-07-28 request with the headers a modern client
// sends; extra overrides them (an empty value drops one).
func modernCall(t *testing.T, url, id, method, params string, extra ...string) response {
	t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":%q,"params":%s}`, id, method, params)
	h := []string{"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", method}
	var p struct{ Name, URI string }
	_ = json.Unmarshal([]byte(params), &p)
	if p.Name != "" || p.URI != "" {
		h = append(h, "Mcp-Name", p.Name+p.URI)
	}
	return mustRequest(t, http.MethodPost, url, "", body, append(h, extra...)...)
}

func modernError(t *testing.T, what string, r response, status, code int, id string) rpc {
	t.Helper()
	m := decode(t, r.body)
	if r.status != status || m.Error == nil || m.Error.Code != code || string(m.ID) != id {
		t.Errorf("%s: %d %s; want %d with error %d and id %s", what, r.status, r.body, status, code, id)
	}
	if r.header.Get("Mcp-Session-Id") != "" {
		t.Errorf("%s: a modern request got a session", what)
	}
	return m
}

// jsonMember is member k of JSON object obj (nil when absent).
func jsonMember(obj json.RawMessage, k string) json.RawMessage {
	var m map[string]json.RawMessage
	_ = json.Unmarshal(obj, &m)
	return m[k]
}

// modernWhoami is a 2026-07-28 whoami with token: its child's pid.
func modernWhoami(t *testing.T, url, token string) (int, response) {
	t.Helper()
	r := modernCall(t, url, `"w"`, "tools/call", `{"name":"whoami","arguments":{},`+modernMeta+`}`, "Authorization", "Bearer "+token)
	var w childWho
	if r.status != http.StatusOK || jsonUnmarshal(jsonMember(decode(t, r.body).Result, "structuredContent"), &w) != nil && jsonUnmarshal(decode(t, r.body).Result, &w) != nil {
		return 0, r
	}
	return w.PID, r
}

// getenvCall calls the fake child's getenv tool for name in c's session:
// the value, or the tool error's text.
func getenvCall(t *testing.T, c *client, name string) (value string, isError bool, text string) {
	t.Helper()
	r := c.callTool(`"e"`, "getenv", map[string]string{"name": name})
	res := resultOK(t, "getenv", r)
	var v struct {
		Value   string `json:"value"`
		IsError bool   `json:"isError"`
	}
	_ = jsonUnmarshal(res, &v)
	return v.Value, v.IsError, textOf(res)
}

// raw sends one request to the bridge with exact headers (Host included) and
// returns the answer.
func raw(t *testing.T, b *testBridge, method, path, body string, headers ...string) response {
	t.Helper()
	req, err := http.NewRequest(method, b.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i] == "Host" {
			req.Host = headers[i+1]
			continue
		}
		req.Header.Set(headers[i], headers[i+1])
	}
	client := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var rb []byte
	if method == http.MethodHead || strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") && method == http.MethodHead {
		rb = nil
	} else {
		rb, _ = io.ReadAll(resp.Body)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: rb}
}

// scrape reads the bridge's Prometheus exposition into name{labels} (or
// name, for a series without labels) → value.
func scrape(t *testing.T, b *testBridge) map[string]float64 {
	t.Helper()
	return scrapeURL(t, b.srv.URL)
}

// scrapeURL reads the Prometheus exposition at base/metrics into
// name{labels} (or name, for a series without labels) → value.
func scrapeURL(t testing.TB, base string, headers ...string) map[string]float64 {
	t.Helper()
	r, err := request(http.MethodGet, base+"/metrics", "", "", headers...)
	if err != nil || r.status != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") {
		t.Fatalf("/metrics: %v %d %v", err, r.status, r.header)
	}
	out := map[string]float64{}
	for _, m := range anyMetricLine.FindAllStringSubmatch(string(r.body), -1) {
		v, _ := strconv.ParseFloat(m[3], 64)
		out[m[1]+m[2]] = v
	}
	return out
}

// anyMetricLine is a Prometheus sample with or without labels.
var anyMetricLine = regexp.MustCompile(`(?m)^([a-z_]+)(\{[^}]*\})? ([0-9.e+-]+)$`)

// metricsOf scrapes a running binary's /metrics.
func metricsOf(t *testing.T, p *binaryProc) map[string]float64 {
	t.Helper()
	return scrapeURL(t, p.base)
}
