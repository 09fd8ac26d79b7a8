//go:build unix

package tests

// Benchmarks of the bridge binary beside its floors (the echo child over stdio, a plain HTTP echo
// server): echo calls at several loads, with OAuth, per protocol era, through a profile, and 1 MiB
// payloads; and their load generator (rawConn, dialRaw, dialAll, measureEcho, measureEchoAt).

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
	"github.com/stelae-bridge/stelae-bridge/tests/testissuer"
)

// load describes one benchmark shape: sessions × calls in flight per session.
type load struct {
	sessions, inflight int
}

func (l load) String() string { return fmt.Sprintf("%dx%d", l.sessions, l.inflight) }

// result is what one run measured.
type result struct {
	calls    int
	errors   int64
	elapsed  time.Duration
	p50, p99 time.Duration
	max      time.Duration
}

func (r result) perSecond() float64 { return float64(r.calls) / r.elapsed.Seconds() }

func (r result) report(b *testing.B) {
	b.ReportMetric(r.perSecond(), "calls/s")
	b.ReportMetric(float64(r.p50.Microseconds())/1000, "p50_ms")
	b.ReportMetric(float64(r.p99.Microseconds())/1000, "p99_ms")
	b.ReportMetric(float64(r.max.Microseconds())/1000, "max_ms")
	b.ReportMetric(float64(r.errors), "errors")
	b.ReportMetric(0, "ns/op")
}

// drive runs n calls spread over workers, each call timed by do.
func drive(n, workers int, do func(worker, i int) error) result {
	lat := make([][]time.Duration, workers)
	var errs atomic.Int64
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1))
				if i > n {
					return
				}
				t0 := time.Now()
				if err := do(w, i); err != nil {
					errs.Add(1)
				}
				lat[w] = append(lat[w], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	all := slices.Concat(lat...)
	slices.Sort(all)
	r := result{calls: n, errors: errs.Load(), elapsed: elapsed}
	if len(all) > 0 {
		r.p50 = all[len(all)/2]
		r.p99 = all[len(all)*99/100]
		r.max = all[len(all)-1]
	}
	return r
}

// directChild drives the echo child over its stdio with calls in flight, as
// a minimal multiplexer would: the floor the bridge is compared with.
type directChild struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	wmu  sync.Mutex // guards in and wbuf
	wbuf []byte
	pmu  sync.Mutex // guards waiting
	wait map[string]chan struct{}
	seq  atomic.Int64
	// params are the calls' params (raw JSON).
	params string
}

// echoParams are the benchmarks' 64-byte echo call's params.
const echoParams = `{"name":"echo","arguments":{"text":"hi"}}`

// startDirect starts the echo child (fakemcp.ModeEcho) for calls with
// echoParams.
func startDirect(b *testing.B) *directChild { return startDirectMode(b, fakemcp.ModeEcho, echoParams) }

// startDirectMode starts a fake child of mode for tools/call requests with
// params.
func startDirectMode(b *testing.B, mode, params string) *directChild {
	command, args, env := fakemcp.Command(mode)
	cmd := exec.Command(command, args...)
	for k, v := range env {
		cmd.Env = append(cmd.Environ(), k+"="+v)
	}
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	d := &directChild{cmd: cmd, in: in, wait: map[string]chan struct{}{}, params: params}
	go func() {
		br := bufio.NewReaderSize(out, 64<<10)
		for {
			line, err := fakemcp.ReadLine(br)
			if err != nil {
				return
			}
			i := bytes.Index(line, []byte(`"id":`))
			j := bytes.IndexByte(line[i+5:], ',')
			d.pmu.Lock()
			ch := d.wait[string(line[i+5:i+5+j])]
			delete(d.wait, string(line[i+5:i+5+j]))
			d.pmu.Unlock()
			if ch != nil {
				close(ch)
			}
		}
	}()
	b.Cleanup(func() { in.Close(); cmd.Wait() })
	return d
}

func (d *directChild) call() error {
	id := strconv.FormatInt(d.seq.Add(1), 10)
	ch := make(chan struct{})
	d.pmu.Lock()
	d.wait[id] = ch
	d.pmu.Unlock()
	d.wmu.Lock()
	d.wbuf = append(append(append(d.wbuf[:0], `{"jsonrpc":"2.0","id":`...), id...), `,"method":"tools/call","params":`...)
	d.wbuf = append(append(d.wbuf, d.params...), "}\n"...)
	_, err := d.in.Write(d.wbuf)
	d.wmu.Unlock()
	if err != nil {
		return err
	}
	select {
	case <-ch:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("no answer")
	}
}

// rawConn is a minimal HTTP/1.1 keep-alive client for load generation: it
// writes prebuilt requests and reads just enough of each response, so the
// figures measure the bridge rather than the load generator (as wrk does).
type rawConn struct {
	c   net.Conn
	br  *bufio.Reader
	req []byte
	// auth, when set, is sent as the Authorization header.
	auth string
	// host is the Host header: the bridge's host:port, as a browser or SDK
	// sends it (OAuth audiences are built from it).
	host string
	// headers are more header lines, each ending in \r\n.
	headers string
}

func dialRaw(base string) (*rawConn, error) {
	u, err := neturl.Parse(base)
	if err != nil {
		return nil, err
	}
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		return nil, err
	}
	return &rawConn{c: c, br: bufio.NewReaderSize(c, 16<<10), host: u.Host}, nil
}

// post sends one POST and returns the status code; the body is discarded.
func (rc *rawConn) post(path, sid string, body []byte) (int, error) {
	rc.req = append(rc.req[:0], "POST "...)
	rc.req = append(rc.req, path...)
	rc.req = append(rc.req, " HTTP/1.1\r\nHost: "...)
	rc.req = append(rc.req, rc.host...)
	rc.req = append(rc.req, "\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream"...)
	if sid != "" {
		rc.req = append(rc.req, "\r\nMcp-Session-Id: "...)
		rc.req = append(rc.req, sid...)
	}
	if rc.auth != "" {
		rc.req = append(rc.req, "\r\nAuthorization: "...)
		rc.req = append(rc.req, rc.auth...)
	}
	rc.req = append(rc.req, "\r\n"...)
	rc.req = append(rc.req, rc.headers...)
	rc.req = append(rc.req, "Content-Length: "...)
	rc.req = strconv.AppendInt(rc.req, int64(len(body)), 10)
	rc.req = append(rc.req, "\r\n\r\n"...)
	rc.req = append(rc.req, body...)
	if _, err := rc.c.Write(rc.req); err != nil {
		return 0, err
	}
	status, length := 0, -1
	for first := true; ; first = false {
		line, err := rc.br.ReadSlice('\n')
		if err != nil {
			return 0, err
		}
		if first {
			if len(line) < 12 {
				return 0, fmt.Errorf("bad status line %q", line)
			}
			status, _ = strconv.Atoi(string(line[9:12]))
			continue
		}
		if len(line) <= 2 {
			break
		}
		if len(line) > 16 && (line[0] == 'C' || line[0] == 'c') && bytes.EqualFold(line[:15], []byte("Content-Length:")) {
			length, _ = strconv.Atoi(string(bytes.TrimSpace(line[15:])))
		}
	}
	if length < 0 {
		return 0, fmt.Errorf("response without Content-Length")
	}
	_, err := rc.br.Discard(length)
	return status, err
}

// postOK is post that wants a 200.
func (rc *rawConn) postOK(path, sid string, body []byte) error {
	status, err := rc.post(path, sid, body)
	if err == nil && status != http.StatusOK {
		err = fmt.Errorf("status %d", status)
	}
	return err
}

// warmUp makes one call on each of workers' connections.
func warmUp(b *testing.B, workers int, call func(worker, i int) error) {
	for w := range workers {
		if err := call(w, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEcho measures the bridge binary beside its two floors, in one
// run, with the same 64-byte echo calls from this process (a load generator
// apart from every server it drives):
//   - stdio-floor: the echo child driven directly over stdio;
//   - http-floor: the echo child's work answered over HTTP by a plain
//     net/http server in a process of its own (no stdio hop);
//   - bridge: the binary with its default settings (access log at info)
//     fronting the echo child.
//
// Each run reports calls/s, p50/p99, the CPU per call of the serving process
// tree (for the bridge: bridge, reaper and child) and its RSS; the bridge
// runs also report their ratios to the floors at the same load, measured
// just before them (x_http_floor: calls/s ÷ the HTTP floor's; cpu_x_floors:
// CPU per call ÷ the HTTP floor's + the stdio floor's; p50_added_ms: p50 −
// the stdio floor's). The runs go in interleaved rounds (STELAE_BENCH_ROUNDS,
// default 3: each load's floors and bridge one after the other, then the
// next load, then the next round), and the median/ lines report the median
// of each figure over the rounds (of the ratios, the median of each round's
// ratio). Run without -race:
//
//	go test -run '^$' -bench 'BenchmarkEcho$' -benchtime 40000x ./tests/
func BenchmarkEcho(b *testing.B) {
	loads := []load{{1, 1}, {1, 16}, {8, 64}}
	rounds := 3
	if v := os.Getenv("STELAE_BENCH_ROUNDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("STELAE_BENCH_ROUNDS=%q: want a count of rounds, 1 or more", v)
		}
		rounds = n
	}
	dests := fakeDestinations(b, map[string]string{"echo": fakemcp.ModeEcho})
	// runs["bridge/1x16"][round] and so on; a benchmark function runs once
	// with b.N = 1 before its measured run, which then takes its place.
	runs := map[string][]*floorRun{}
	keep := func(key string, round int, f *floorRun) {
		if runs[key] == nil {
			runs[key] = make([]*floorRun, rounds)
		}
		runs[key][round] = f
	}
	for round := range rounds {
		// A bridge of its own per round: its peak RSS at a load is then
		// that of the loads up to it (they go from the lightest).
		p := startBinary(b, dests, "-max-sessions", "64")
		for _, l := range loads {
			floors := map[string]*floorRun{}
			prefix := fmt.Sprintf("round%d/", round+1)
			b.Run(prefix+"stdio-floor/"+l.String(), func(b *testing.B) {
				d := startDirect(b)
				if err := d.call(); err != nil { // warm up
					b.Fatal(err)
				}
				f := measure(b, d.cmd.Process.Pid, l.sessions*l.inflight, func(int, int) error { return d.call() })
				floors["stdio/"+l.String()] = f
				keep("stdio-floor/"+l.String(), round, f)
			})
			b.Run(prefix+"http-floor/"+l.String(), func(b *testing.B) {
				f := measureHTTPEcho(b, fakemcp.ModeHTTPEcho, l)
				floors["http/"+l.String()] = f
				keep("http-floor/"+l.String(), round, f)
			})
			f := benchBridgeLoad(b, prefix, p, "", l, floors)
			keep("bridge/"+l.String(), round, f)
		}
		// Stopped at once, not at the benchmark's end: an idle bridge
		// still takes memory and wake-ups from the later rounds.
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.done
	}
	for _, l := range loads {
		for _, what := range []string{"stdio-floor", "http-floor", "bridge"} {
			key := what + "/" + l.String()
			b.Run("median/"+key, func(b *testing.B) { reportMedians(b, runs[key]) })
		}
	}
	// Not a floor: the same echo on a minimal hand-written HTTP/1.1 server,
	// to weigh what replacing net/http could save.
	for _, l := range loads {
		b.Run("raw-http/"+l.String(), func(b *testing.B) { measureHTTPEcho(b, fakemcp.ModeRawHTTPEcho, l) })
	}
}

// reportMedians reports the median of each figure of runs (rounds that did
// not run, nil, are left out).
func reportMedians(b *testing.B, runs []*floorRun) {
	runs = slices.DeleteFunc(slices.Clone(runs), func(f *floorRun) bool { return f == nil })
	if len(runs) == 0 {
		b.Skip("no rounds ran")
	}
	median := func(of func(*floorRun) float64) float64 {
		v := make([]float64, len(runs))
		for i, f := range runs {
			v[i] = of(f)
		}
		slices.Sort(v)
		if len(v)%2 == 1 {
			return v[len(v)/2]
		}
		return (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(median(func(f *floorRun) float64 { return f.perSecond() }), "calls/s")
	b.ReportMetric(median(func(f *floorRun) float64 { return ms(f.p50) }), "p50_ms")
	b.ReportMetric(median(func(f *floorRun) float64 { return ms(f.p99) }), "p99_ms")
	b.ReportMetric(median(func(f *floorRun) float64 { return float64(f.cpuPerCall.Nanoseconds()) / 1000 }), "tree_cpu_us/call")
	b.ReportMetric(median(func(f *floorRun) float64 { return float64(f.errors) }), "errors")
	if runs[0].ratios != nil {
		for name := range runs[0].ratios {
			b.ReportMetric(median(func(f *floorRun) float64 { return f.ratios[name] }), name)
		}
		b.ReportMetric(median(func(f *floorRun) float64 { return f.peakRSS }), "peak_rss_MiB")
	}
	b.ReportMetric(float64(len(runs)), "rounds")
	b.ReportMetric(0, "ns/op")
}

// floorRun is what one measured run found.
type floorRun struct {
	result
	cpuPerCall time.Duration // of the serving process tree
	// For the bridge: its ratios to the floors (by metric name) and its
	// peak RSS in MiB.
	ratios  map[string]float64
	peakRSS float64
}

// measure times b.N calls over workers against the process tree of pid
// and reports calls/s, latencies, the tree's CPU per call and its RSS.
func measure(b *testing.B, pid, workers int, call func(worker, i int) error) *floorRun {
	cpu0, own0 := treeCPU(pid), cpuTime(pid)
	b.ResetTimer()
	r := drive(b.N, workers, call)
	b.StopTimer()
	f := &floorRun{result: r, cpuPerCall: (treeCPU(pid) - cpu0) / time.Duration(b.N)}
	r.report(b)
	b.ReportMetric(float64(f.cpuPerCall.Nanoseconds())/1000, "tree_cpu_us/call")
	// The serving process alone (for the bridge: without its reaper and
	// child).
	b.ReportMetric(float64(((cpuTime(pid)-own0)/time.Duration(b.N)).Nanoseconds())/1000, "proc_cpu_us/call")
	b.ReportMetric(float64(treeRSS(pid))/(1<<20), "tree_rss_MiB")
	return f
}

// measureHTTPEcho measures the 64-byte echo calls of load l against an HTTP
// echo server of mode (startHTTPFloor).
func measureHTTPEcho(b *testing.B, mode string, l load) *floorRun {
	pid, base := startHTTPFloor(b, mode)
	conns := dialAll(b, base, l.sessions*l.inflight)
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`)
	call := func(w, _ int) error { return conns[w].postOK("/", "", body) }
	warmUp(b, len(conns), call)
	return measure(b, pid, len(conns), call)
}

// startHTTPFloor starts an HTTP echo server (fakemcp.ModeHTTPEcho: the
// floor; ModeRawHTTPEcho) and returns its pid and base URL; it is stopped
// when the benchmark ends.
func startHTTPFloor(b *testing.B, mode string) (int, string) {
	command, args, env := fakemcp.Command(mode)
	cmd := exec.Command(command, args...)
	cmd.Env = cmd.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { in.Close(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	base, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if err != nil || !ok {
		b.Fatalf("the HTTP floor did not start: %q %v", line, err)
	}
	return cmd.Process.Pid, base
}

// dialAll opens n keep-alive connections to base, closed when the
// benchmark ends.
func dialAll(b *testing.B, base string, n int) []*rawConn {
	conns := make([]*rawConn, n)
	for w := range conns {
		rc, err := dialRaw(base)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { rc.c.Close() })
		conns[w] = rc
	}
	return conns
}

// BenchmarkEchoOAuth is BenchmarkEcho's bridge runs with every call carrying
// an OAuth access token the bridge validates (signature, claims, audience),
// beside the same runs without OAuth, to price validation:
//
//	go test -run '^$' -bench BenchmarkEchoOAuth -benchtime 40000x ./tests/
func BenchmarkEchoOAuth(b *testing.B) {
	iss := testissuer.New()
	defer iss.Close()
	plain := fakeDestinations(b, map[string]string{"echo": fakemcp.ModeEcho})
	data, err := os.ReadFile(plain)
	if err != nil {
		b.Fatal(err)
	}
	protected := filepath.Join(b.TempDir(), "oauth.yaml")
	if err := os.WriteFile(protected, append([]byte("auth:\n  issuer: "+iss.URL+"\n  scopes: [mcp]\n"), data...), 0o600); err != nil {
		b.Fatal(err)
	}
	loads := []load{{1, 16}, {8, 64}}
	b.Run("off", func(b *testing.B) {
		benchBridge(b, startBinary(b, plain, "-max-sessions", "64"), "", loads, nil)
	})
	b.Run("on", func(b *testing.B) {
		p := startBinary(b, protected, "-max-sessions", "64")
		tok := iss.Token(testissuer.Claims{Subject: "bench", Audience: []string{p.base + "/echo/mcp"}, Scope: "mcp", ClientID: "bench"})
		benchBridge(b, p, "Bearer "+tok, loads, nil)
	})
}

// benchBridge drives the bridge binary p at each load, every request
// carrying auth (when set) as its Authorization header; with floors (by
// "stdio/LOAD" and "http/LOAD") it also reports its ratios to them.
func benchBridge(b *testing.B, p *binaryProc, auth string, loads []load, floors map[string]*floorRun) {
	for _, l := range loads {
		benchBridgeLoad(b, "", p, auth, l, floors)
	}
}

// benchBridgeLoad is benchBridge at one load, its run named prefix +
// "bridge/" + the load; it returns the measured run.
func benchBridgeLoad(b *testing.B, prefix string, p *binaryProc, auth string, l load, floors map[string]*floorRun) *floorRun {
	url := p.base + "/echo/mcp"
	var f *floorRun
	b.Run(prefix+"bridge/"+l.String(), func(b *testing.B) {
		sids := make([]string, l.sessions)
		for i := range sids {
			c := newClient(b, url)
			if auth != "" {
				r := c.post(initBody, "Authorization", auth)
				c.sid = r.header.Get("Mcp-Session-Id")
				if r.status != http.StatusOK || c.sid == "" {
					b.Fatalf("initialize: %d %s", r.status, r.body)
				}
			} else {
				c.initialize()
			}
			sids[i] = c.sid
		}
		conns := dialAll(b, p.base, l.sessions*l.inflight)
		for _, rc := range conns {
			rc.auth = auth
		}
		f = measureEcho(b, p, conns, func(w int) string { return sids[w%l.sessions] }, "")
		f.peakRSS = float64(procStatusBytes(p.cmd.Process.Pid, "VmHWM")) / (1 << 20)
		b.ReportMetric(f.peakRSS, "peak_rss_MiB")
		if hf, sf := floors["http/"+l.String()], floors["stdio/"+l.String()]; hf != nil && sf != nil {
			f.ratios = map[string]float64{
				"x_http_floor": f.perSecond() / hf.perSecond(),
				"cpu_x_floors": float64(f.cpuPerCall) / float64(hf.cpuPerCall+sf.cpuPerCall),
				"p50_added_ms": float64((f.p50 - sf.p50).Microseconds()) / 1000,
			}
			for name, v := range f.ratios {
				b.ReportMetric(v, name)
			}
		}
		for _, sid := range sids {
			c := newClient(b, url)
			c.sid = sid
			c.must(http.MethodDelete, "", "Authorization", auth)
		}
	})
	return f
}

// BenchmarkEchoEras compares, on one bridge binary and one echo child, echo
// calls of 2025 sessions with the same calls as MCP 2026-07-28 requests (no
// session; the reserved _meta stripped, the result marked complete), at
// 1×16, in interleaved rounds. Run without -race:
//
//	go test -run '^$' -bench BenchmarkEchoEras -benchtime 60000x ./tests/
func BenchmarkEchoEras(b *testing.B) {
	p := startBinary(b, fakeDestinations(b, map[string]string{"echo": fakemcp.ModeEcho}), "-max-sessions", "64")
	const workers = 16
	c := newClient(b, p.base+"/echo/mcp")
	c.initialize()
	defer c.must(http.MethodDelete, "")
	const modernHeaders = "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: echo\r\n"
	const modernMeta = `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	for round := 1; round <= 3; round++ {
		for _, era := range []string{"2025", "2026"} {
			b.Run(fmt.Sprintf("%s/1x16/round%d", era, round), func(b *testing.B) {
				conns := dialAll(b, p.base, workers)
				sid, meta := c.sid, ""
				for _, rc := range conns {
					if era == "2026" {
						rc.headers = modernHeaders
					}
				}
				if era == "2026" {
					sid, meta = "", modernMeta
				}
				measureEcho(b, p, conns, func(int) string { return sid }, meta)
			})
		}
	}
}

// BenchmarkEchoProfile: echo calls in 2025 sessions, 16 at a time, at a
// destination's own endpoint and through a profile whose one member it is
// (its tools unprefixed, so the same requests serve both), interleaved:
// what the profile's hop (its dispatcher and child, in the bridge's
// process) costs.
//
//	go test -run '^$' -bench BenchmarkEchoProfile -benchtime 40000x ./tests/
func BenchmarkEchoProfile(b *testing.B) {
	// The scripted server (it lists its tools, which a profile routes by;
	// the echo child lists none), at both endpoints.
	path := destinationsFile(b, map[string]string{"echo": fakemcp.ModeServer}, map[string]string{"echo": "    prefix: \"\"\n"})
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(path, append(data, "profiles:\n  one: {destinations: [echo]}\n"...), 0o600); err != nil {
		b.Fatal(err)
	}
	p := startBinary(b, path, "-max-sessions", "64")
	const workers = 16
	for round := 1; round <= 3; round++ {
		for _, at := range []string{"/echo/mcp", "/p/one/mcp"} {
			name := "destination"
			if at != "/echo/mcp" {
				name = "profile"
			}
			b.Run(fmt.Sprintf("%s/1x16/round%d", name, round), func(b *testing.B) {
				c := newClient(b, p.base+at)
				c.initialize()
				defer c.must(http.MethodDelete, "")
				echoCall(b, c, `"check"`, "hi") // the path answers, not an error
				measureEchoAt(b, p, at, dialAll(b, p.base, workers), func(int) string { return c.sid }, "")
			})
		}
	}
}

// measureEcho times b.N echo calls of the bridge binary p spread over conns
// (one worker each), on the session sid(worker) ("" for none), with meta
// appended to the params (a modern request's _meta), after one warm-up
// call per connection; it reports the figures and the CPU time per call of
// the bridge's process tree (bridge, reaper, child).
func measureEcho(b *testing.B, p *binaryProc, conns []*rawConn, sid func(worker int) string, meta string) *floorRun {
	return measureEchoAt(b, p, "/echo/mcp", conns, sid, meta)
}

// measureEchoAt is measureEcho at the endpoint path.
func measureEchoAt(b *testing.B, p *binaryProc, path string, conns []*rawConn, sid func(worker int) string, meta string) *floorRun {
	bodies := make([][]byte, len(conns))
	call := func(w, i int) error {
		bodies[w] = append(bodies[w][:0], `{"jsonrpc":"2.0","id":`...)
		bodies[w] = strconv.AppendInt(bodies[w], int64(i), 10)
		bodies[w] = append(bodies[w], `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}`...)
		bodies[w] = append(bodies[w], meta...)
		bodies[w] = append(bodies[w], "}}"...)
		return conns[w].postOK(path, sid(w), bodies[w])
	}
	warmUp(b, len(conns), call)
	return measure(b, p.cmd.Process.Pid, len(conns), call)
}

// BenchmarkEchoPayload sends 1 MiB both ways (the echo child answers with
// its text) through the bridge and directly over the child's stdio, one
// call at a time and four:
//
//	go test -run '^$' -bench BenchmarkEchoPayload -benchtime 200x ./tests/
func BenchmarkEchoPayload(b *testing.B) {
	text := strings.Repeat("x", 1<<20)
	params := `{"name":"echo","arguments":{"text":"` + text + `"}}`
	floors := map[int]*floorRun{}
	for _, workers := range []int{1, 4} {
		b.Run(fmt.Sprintf("stdio-floor/1x%d", workers), func(b *testing.B) {
			d := startDirectMode(b, fakemcp.ModeEcho, params)
			if err := d.call(); err != nil {
				b.Fatal(err)
			}
			floors[workers] = measure(b, d.cmd.Process.Pid, workers, func(int, int) error { return d.call() })
		})
	}
	p := startBinary(b, fakeDestinations(b, map[string]string{"echo": fakemcp.ModeEcho}), "-max-sessions", "64")
	for _, workers := range []int{1, 4} {
		b.Run(fmt.Sprintf("bridge/1x%d", workers), func(b *testing.B) {
			c := newClient(b, p.base+"/echo/mcp")
			c.initialize()
			conns := dialAll(b, p.base, workers)
			body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + params + `}`)
			call := func(w, _ int) error { return conns[w].postOK("/echo/mcp", c.sid, body) }
			warmUp(b, len(conns), call)
			f := measure(b, p.cmd.Process.Pid, workers, call)
			if sf := floors[workers]; sf != nil {
				b.ReportMetric(f.perSecond()/sf.perSecond(), "x_stdio_floor")
			}
		})
	}
}

// BenchmarkEchoChildEras compares a child of the 2025 era with the same
// echo child speaking MCP 2026-07-28 only (fakemcp.ModeEchoModern), on one
// bridge binary: 2025 sessions' echo calls (to the 2026 child, each a
// request with the session's envelope) and 2026-07-28 requests' (to the
// 2025 child, translated; to the 2026 child, passed through), at 1×16 and
// 8×64, in interleaved rounds. Run without -race:
//
//	go test -run '^$' -bench BenchmarkEchoChildEras -benchtime 20000x ./tests/
func BenchmarkEchoChildEras(b *testing.B) {
	p := startBinary(b, fakeDestinations(b, map[string]string{"echo": fakemcp.ModeEcho, "echo26": fakemcp.ModeEchoModern}), "-max-sessions", "64")
	const modernHeaders = "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: echo\r\n"
	const modernMeta = `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	for _, dest := range []string{"echo", "echo26"} {
		c := newClient(b, p.base+"/"+dest+"/mcp")
		c.initialize()
		if r := c.callTool(`"check"`, "echo", map[string]string{"text": "hi"}); !strings.Contains(string(r.body), `"text":"hi"`) || strings.Contains(string(r.body), `"error"`) {
			b.Fatalf("%s: %d %s", dest, r.status, r.body) // the child answers, not an error
		}
		if speaks, want := verboseHealth(b, p)[dest].ChildSpeaks, map[string]string{"echo": "2025", "echo26": "2026-07-28"}[dest]; speaks != want {
			b.Fatalf("%s's child is spoken to in %q, not %q", dest, speaks, want)
		}
		c.must(http.MethodDelete, "")
	}
	for round := 1; round <= 3; round++ {
		for _, l := range []load{{1, 16}, {8, 64}} {
			for _, dest := range []string{"echo", "echo26"} {
				for _, client := range []string{"2025", "2026"} {
					child := map[string]string{"echo": "child2025", "echo26": "child2026"}[dest]
					b.Run(fmt.Sprintf("%s/client%s/%s/round%d", child, client, l, round), func(b *testing.B) {
						path := "/" + dest + "/mcp"
						sids := make([]string, l.sessions)
						if client == "2025" {
							for i := range sids {
								c := newClient(b, p.base+path)
								c.initialize()
								sids[i] = c.sid
								defer c.must(http.MethodDelete, "")
							}
						}
						conns := dialAll(b, p.base, l.sessions*l.inflight)
						meta := ""
						if client == "2026" {
							meta = modernMeta
							for _, rc := range conns {
								rc.headers = modernHeaders
							}
						}
						measureEchoAt(b, p, path, conns, func(w int) string { return sids[w%l.sessions] }, meta)
					})
				}
			}
		}
	}
}

// BenchmarkEchoTracing: 2025 session echo calls at 1×16 with each request
// carrying a traceparent, on a bridge with tracing off and one with
// tracing on (OTEL_TRACES_EXPORTER=otlp, every request sampled, the batch
// exporter sending to a loopback OTLP receiver), in interleaved rounds:
// what a traced call costs, in CPU per call of the bridge's process tree.
//
//	go test -run '^$' -bench BenchmarkEchoTracing -benchtime 30000x ./tests/
func BenchmarkEchoTracing(b *testing.B) {
	rcv := startOTLPReceiver(b)
	cfg := fakeDestinations(b, map[string]string{"echo": fakemcp.ModeEcho})
	off := startBinary(b, cfg, "-max-sessions", "64")
	cmd := exec.Command(bridgeBinary(b), "-config", cfg, "-listen", "127.0.0.1:0", "-state-dir", b.TempDir(), "-max-sessions", "64")
	cmd.Env = append(os.Environ(), "OTEL_TRACES_EXPORTER=otlp", "OTEL_EXPORTER_OTLP_ENDPOINT="+rcv.url, "OTEL_TRACES_SAMPLER=always_on")
	on := runBinary(b, cmd)
	echoOffOn(b, off, on, "traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\n")
	rcv.mu.Lock()
	n := len(rcv.spans)
	rcv.mu.Unlock()
	b.Logf("the receiver got %d spans", n)
}

// BenchmarkEchoAudit is the cost of the audit trail (-audit-log): the
// same echo calls on a bridge without it and on one writing every call's
// line to a file, interleaved, 3 rounds. What the trail dropped (its
// queue full) is reported: a dropped line is a cost too.
func BenchmarkEchoAudit(b *testing.B) {
	cfg := fakeDestinations(b, map[string]string{"echo": fakemcp.ModeEcho})
	off := startBinary(b, cfg, "-max-sessions", "64")
	trail := filepath.Join(b.TempDir(), "audit.jsonl")
	on := startBinary(b, cfg, "-max-sessions", "64", "-audit-log", trail)
	echoOffOn(b, off, on, "")
	m := scrapeURL(b, on.base)
	b.Logf("the trail wrote %v lines and dropped %v", m["stelae_audit_records_total"], m["stelae_audit_dropped_total"])
}

// echoOffOn measures echo calls on two bridges that differ by one feature
// (off and on), interleaved, 3 rounds of 16 connections on one session
// each; headers go with every request.
func echoOffOn(b *testing.B, off, on *binaryProc, headers string) {
	const workers = 16
	for round := 1; round <= 3; round++ {
		for _, tc := range []struct {
			name string
			p    *binaryProc
		}{{"off", off}, {"on", on}} {
			b.Run(fmt.Sprintf("%s/1x16/round%d", tc.name, round), func(b *testing.B) {
				c := newClient(b, tc.p.base+"/echo/mcp")
				c.initialize()
				defer c.must(http.MethodDelete, "")
				conns := dialAll(b, tc.p.base, workers)
				for _, rc := range conns {
					rc.headers = headers
				}
				measureEcho(b, tc.p, conns, func(int) string { return c.sid }, "")
			})
		}
	}
}
