//go:build unix

package tests

// A fleet of three bridges of one destinations file (deploy/fleet) behind HAProxy and nginx: every
// era through the balancer, 421 for another instance's destination, a killed instance, a rolling
// restart. Its helpers (testFleet, fleetInstance, haproxyBinary, appendFile) serve
// fleetusers_test.go too.

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

// haproxyBinary finds Debian's haproxy (debianProgram).
func haproxyBinary(t *testing.T) string {
	return debianProgram(t, "haproxy", "the fleet behind HAProxy", "haproxy", "/usr/sbin/haproxy")
}

// fleetInstance is one bridge of the fleet: its socket (held by the test
// as systemd holds a socket unit's, so a restart loses no connection),
// state directory and process.
type fleetInstance struct {
	name, addr, state string
	sock              *os.File
	proc              *binaryProc
}

type testFleet struct {
	t         *testing.T
	config    string
	instances map[string]*fleetInstance
	// lb is the balancer's base URL.
	lb string
}

// startFleet starts instances a, b and c of deploy/fleet's layout (notes
// on a; files and scratch on b; search and scratch on c; scratch
// isolated per session) with fake servers, and HAProxy with
// deploy/fleet/haproxy.cfg, its addresses replaced by the test's.
func startFleet(t *testing.T) *testFleet {
	t.Helper()
	bin := haproxyBinary(t)
	f := startInstances(t)
	path := f.balancerConfig("haproxy.cfg")
	f.run(exec.Command(bin, "-db", "-f", path), "haproxy")
	return f
}

// startInstances starts the fleet's three bridges.
func startInstances(t *testing.T) *testFleet {
	t.Helper()
	f := &testFleet{t: t, instances: map[string]*fleetInstance{}}
	for _, n := range []string{"a", "b", "c"} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		sock, err := ln.(*net.TCPListener).File()
		in := &fleetInstance{name: n, addr: ln.Addr().String(), state: t.TempDir(), sock: sock}
		ln.Close()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sock.Close() })
		f.instances[n] = in
	}
	modes := map[string]string{"notes": fakemcp.ModeServer, "files": fakemcp.ModeServer, "search": fakemcp.ModeServer, "scratch": fakemcp.ModeServer}
	f.config = destinationsFile(t, modes, map[string]string{"scratch": "    isolation: session\n"})
	fleet := fmt.Sprintf("default: notes\ninstances:\n  a: {url: \"http://%s\", serves: [notes]}\n  b: {url: \"http://%s\", serves: [files, scratch]}\n  c: {url: \"http://%s\", serves: [search, scratch]}\n",
		f.instances["a"].addr, f.instances["b"].addr, f.instances["c"].addr)
	appendFile(t, f.config, fleet)
	for _, n := range []string{"a", "b", "c"} {
		f.start(n)
	}
	return f
}

// balancerConfig writes deploy/fleet's file name with the test's
// addresses (the balancer's own in f.lb) and returns its path.
func (f *testFleet) balancerConfig(name string) string {
	t := f.t
	t.Helper()
	cfg, err := os.ReadFile("../deploy/fleet/" + name)
	if err != nil {
		t.Fatal(err)
	}
	lbAddr := freeAddr(t)
	f.lb = "http://" + lbAddr
	text := strings.NewReplacer("127.0.0.1:9090", lbAddr, "127.0.0.1:9101", f.instances["a"].addr, "127.0.0.1:9102", f.instances["b"].addr,
		"127.0.0.1:9103", f.instances["c"].addr).Replace(string(cfg))
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// run starts the balancer cmd, stopped at the test's end, and waits for
// it to serve.
func (f *testFleet) run(cmd *exec.Cmd, what string) {
	t := f.t
	t.Helper()
	logs := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	// Its own process group, killed whole: nginx's workers outlive a
	// killed master (and hold the output pipes).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		if t.Failed() {
			t.Logf("%s:\n%s", what, logs)
		}
	})
	waitFor(t, 20*time.Second, what+" to serve", func() bool {
		r, err := request(http.MethodGet, f.lb+"/readyz", "", "")
		return err == nil && r.status == 200
	})
}

// appendFile appends text to the file at path.
func appendFile(t *testing.T, path, text string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err == nil {
		err = os.WriteFile(path, append(data, text...), 0o600)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// start starts instance n on its socket and state directory.
func (f *testFleet) start(n string) {
	f.t.Helper()
	in := f.instances[n]
	in.proc = socketBridge(f.t, in.sock, f.config, "-instance", n, "-state-dir", in.state, "-drain-timeout", "20s")
}

// url is the balancer's URL of a destination's endpoint.
func (f *testFleet) url(dest string) string { return f.lb + "/" + dest + "/mcp" }

// everyEra drives every destination through the balancer: a 2025
// session and a 2026-07-28 call each (scratch: sessions only, several,
// each kept on its instance), the default at /mcp, an MRTR round on
// search and a listen stream on files. It returns the sessions.
func (f *testFleet) everyEra() map[string]*client {
	t := f.t
	t.Helper()
	sessions := map[string]*client{}
	for _, dest := range []string{"notes", "files", "search", "scratch"} {
		c := newClient(t, f.url(dest))
		c.initialize()
		echoCall(t, c, `1`, "2025 on "+dest)
		sessions[dest] = c
		if dest == "scratch" {
			continue // a child per session: 2025 sessions only
		}
		r := modernCall(t, f.url(dest), `2`, "tools/call", `{"name":"echo","arguments":{"text":"2026 on `+dest+`"},`+modernMeta+`}`)
		if r.status != 200 || !strings.Contains(string(r.body), "2026 on "+dest) {
			t.Errorf("%s: a 2026-07-28 call through the balancer: %d %s", dest, r.status, r.body)
		}
	}
	// The default, at /mcp, is notes (instance a's).
	if w := whoamiCall(t, sessions["notes"]); w.PID == 0 {
		t.Errorf("notes' child: %+v", w)
	}
	def := newClient(t, f.lb+"/mcp")
	def.initialize()
	echoCall(t, def, `1`, "default")
	// An MRTR round on search (c's): the retry reaches the instance that
	// parked the call.
	args := `"arguments":{"method":"sampling/createMessage","params":"{\"messages\":[{\"role\":\"user\",\"content\":{\"type\":\"text\",\"text\":\"hi\"}}],\"maxTokens\":5}"}`
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{}}}`
	key, state := inputRequired(t, modernCall(t, f.url("search"), `"ask-1"`, "tools/call", `{"name":"ask",`+args+`,`+meta+`}`))
	retry := fmt.Sprintf(`{"name":"ask",%s,"inputResponses":{%q:{"role":"assistant","content":{"type":"text","text":"answered"},"model":"m"}},"requestState":%q,%s}`, args, key, state, meta)
	if r := modernCall(t, f.url("search"), `"ask-2"`, "tools/call", retry); r.status != 200 || !strings.Contains(string(r.body), "answered") {
		t.Errorf("the MRTR retry through the balancer: %d %s", r.status, r.body)
	}
	// A listen stream on files (b's) through the balancer.
	st := openSSE(t, http.MethodPost, f.url("files"), "", `{"jsonrpc":"2.0","id":"sub-1","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},`+modernMeta+`}}`,
		"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "subscriptions/listen")
	if ack := st.event(t, 10*time.Second); !strings.Contains(string(ack.data), "notifications/subscriptions/acknowledged") {
		t.Errorf("listen through the balancer: %s", ack.data)
	}
	if r := sessions["files"].callTool(`3`, "list_changed", nil); r.status != 200 {
		t.Fatalf("list_changed: %d %s", r.status, r.body)
	}
	st.next(t, "notifications/tools/list_changed", 10*time.Second)

	// scratch runs on b and c, each session on the instance that made it:
	// several sessions, each answering again and again (a session sent
	// to the other instance would get 404).
	for i := range 6 {
		c := newClient(t, f.url("scratch"))
		c.initialize()
		for j := range 5 {
			echoCall(t, c, fmt.Sprint(j+1), fmt.Sprintf("scratch %d/%d", i, j))
		}
	}

	return sessions
}

// TestFleetBehindHAProxy: three instances of one destinations file behind
// HAProxy (deploy/fleet/haproxy.cfg): 2025 sessions, 2026-07-28 requests,
// an MRTR round and a listen stream on every destination through the
// balancer; a session-isolated destination on two instances keeps each
// session on its own; a request sent to an instance that does not own
// its destination gets 421 naming the owner; a SIGKILLed instance's
// destinations answer 503 with Retry-After until it is back while the
// others go on; and a rolling restart of all three under load fails no
// call and loses no session.
func TestFleetBehindHAProxy(t *testing.T) {
	f := startFleet(t)

	sessions := f.everyEra()

	// Each instance says which it is, and serves only its own.
	for n, in := range f.instances {
		var h struct {
			Instance     string                     `json:"instance"`
			Destinations map[string]json.RawMessage `json:"destinations"`
		}
		r := mustRequest(t, http.MethodGet, "http://"+in.addr+"/healthz", "", "")
		if err := json.Unmarshal(r.body, &h); err != nil || h.Instance != n || len(h.Destinations) != map[string]int{"a": 1, "b": 2, "c": 2}[n] {
			t.Errorf("instance %s's /healthz: %v %s", n, err, r.body)
		}
	}
	// An instance asked for a destination it does not own: 421 naming
	// the owner, and no child started for it.
	for _, tc := range []struct{ at, dest, owner string }{{"a", "search", "c"}, {"c", "notes", "a"}, {"a", "files", "b"}} {
		r := mustRequest(t, http.MethodPost, "http://"+f.instances[tc.at].addr+"/"+tc.dest+"/mcp", "", initBody)
		if r.status != http.StatusMisdirectedRequest || r.header.Get("Stelae-Owner") != tc.owner || !strings.Contains(string(r.body), "instance "+tc.owner) {
			t.Errorf("%s asked for %s: %d owner %q %s", tc.at, tc.dest, r.status, r.header.Get("Stelae-Owner"), r.body)
		}
	}

	// c is killed: search answers 503 with Retry-After once HAProxy sees
	// it down (a request sent before waits in c's socket for the new c);
	// notes and files go on; c back, search serves again.
	c := f.instances["c"]
	_ = c.proc.cmd.Process.Kill()
	<-c.proc.done
	probe := &http.Client{Timeout: 3 * time.Second}
	waitFor(t, 30*time.Second, "search to answer 503 with Retry-After", func() bool {
		r, err := requestWith(probe, http.MethodPost, f.url("search"), "", initBody)
		return err == nil && r.status == http.StatusServiceUnavailable && r.header.Get("Retry-After") != ""
	})
	echoCall(t, sessions["notes"], `10`, "notes while c is down")
	echoCall(t, sessions["files"], `10`, "files while c is down")
	f.start("c")
	waitFor(t, 30*time.Second, "search to serve again", func() bool {
		r, err := request(http.MethodPost, f.url("search"), "", initBody)
		return err == nil && r.status == http.StatusOK
	})
	search := newClient(t, f.url("search"))
	search.initialize()

	// A rolling restart under load: each instance in turn stopped (SIGTERM:
	// it drains) and started again on its socket and state directory,
	// while 2025 sessions and 2026-07-28 clients call every destination
	// with a shared child every 20 ms.
	var (
		mu       sync.Mutex // guards failures and calls
		failures []string
		calls    int
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	load := map[string]*client{"notes": sessions["notes"], "files": sessions["files"], "search": search}
	for dest, s := range load {
		for _, era := range []string{"2025", "2026"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					case <-time.After(20 * time.Millisecond):
					}
					text := fmt.Sprintf("%s %s %d", dest, era, i)
					var r response
					var err error
					if era == "2025" {
						r, err = s.do(http.MethodPost, toolCallBody(fmt.Sprint(100+i), "echo", map[string]string{"text": text}))
					} else {
						r, err = request(http.MethodPost, f.url(dest), "", fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"text":%q},%s}}`, i, text, modernMeta),
							"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "echo")
					}
					mu.Lock()
					calls++
					if err != nil || r.status != 200 || !strings.Contains(string(r.body), text) {
						failures = append(failures, fmt.Sprintf("%s %s call %d: %v %d %s", dest, era, i, err, r.status, r.body))
					}
					mu.Unlock()
				}
			}()
		}
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return calls }
	waitFor(t, 30*time.Second, "the load to run", func() bool { return count() > 60 })
	// Twice round: each restart is a chance for a request to meet an
	// instance going away (a 503 on a kept connection was met in about
	// every other round).
	for range 2 {
		for _, n := range []string{"a", "b", "c"} {
			before := count()
			stopBinary(t, f.instances[n].proc)
			f.start(n)
			waitFor(t, 30*time.Second, "calls after restarting "+n, func() bool { return count() > before+60 })
		}
	}
	close(stop)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	for _, fl := range failures {
		t.Error(fl)
	}
	t.Logf("rolling restart of a, b and c, twice: %d calls, %d failed", calls, len(failures))
	// No session was lost: each answers on the new instances.
	for dest, s := range load {
		echoCall(t, s, `1000`, "after the rolling restart on "+dest)
	}
}

// nginxBinary finds Debian's nginx (debianProgram).
func nginxBinary(t *testing.T) string {
	return debianProgram(t, "nginx", "the fleet behind nginx", "nginx", "/usr/sbin/nginx")
}

// TestFleetBehindNginx: the same fleet behind nginx
// (deploy/fleet/nginx.conf): every era on every destination, a listen
// stream unbuffered, the session-isolated destination's sessions (on
// one of its instances: nginx cannot keep a session where it was made).
func TestFleetBehindNginx(t *testing.T) {
	bin := nginxBinary(t)
	f := startInstances(t)
	path := f.balancerConfig("nginx.conf")
	prefix := t.TempDir()
	if err := os.MkdirAll(filepath.Join(prefix, "tmp"), 0o755); err != nil {
		t.Fatal(err)
	}
	f.run(exec.Command(bin, "-p", prefix+"/", "-c", path, "-g", "daemon off;"), "nginx")
	f.everyEra()
}
