package tests

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
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
}

func startDirect(b *testing.B) *directChild {
	command, args, env := fakemcp.Command(fakemcp.ModeEcho)
	cmd := exec.Command(command, args...)
	for k, v := range env {
		cmd.Env = append(cmd.Environ(), k+"="+v)
	}
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	d := &directChild{cmd: cmd, in: in, wait: map[string]chan struct{}{}}
	go func() {
		br := bufio.NewReaderSize(out, 64<<10)
		for {
			line, err := br.ReadSlice('\n')
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
	d.wbuf = append(append(append(d.wbuf[:0], `{"jsonrpc":"2.0","id":`...), id...), `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`+"\n"...)
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

// BenchmarkEcho compares calls through the bridge binary over loopback HTTP
// with the same echo child driven directly over stdio. Run without -race:
//
//	go test -run '^$' -bench BenchmarkEcho -benchtime 20000x ./tests/
func BenchmarkEcho(b *testing.B) {
	b.Run("direct/1x16", func(b *testing.B) {
		d := startDirect(b)
		d.call() // warm up
		b.ResetTimer()
		drive(b.N, 16, func(int, int) error { return d.call() }).report(b)
	})
	// The ceiling for any bridge built on net/http here: a handler that
	// answers at once, driven by the same client, no child behind it.
	b.Run("nethttp-noop/1x16", func(b *testing.B) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
		}))
		defer srv.Close()
		conns := make([]*rawConn, 16)
		for w := range conns {
			rc, err := dialRaw(srv.URL)
			if err != nil {
				b.Fatal(err)
			}
			defer rc.c.Close()
			conns[w] = rc
		}
		body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`)
		b.ResetTimer()
		drive(b.N, 16, func(w, _ int) error {
			_, err := conns[w].post("/", "s", body)
			return err
		}).report(b)
	})
	// The bridge with its default settings (access log at info level).
	p := startBinary(b, fakeDestinations(b, map[string]string{"echo": fakemcp.ModeEcho}), "-max-sessions", "64")
	benchBridge(b, p, "", []load{{1, 1}, {1, 16}, {8, 64}})
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
		benchBridge(b, startBinary(b, plain, "-max-sessions", "64"), "", loads)
	})
	b.Run("on", func(b *testing.B) {
		p := startBinary(b, protected, "-max-sessions", "64")
		tok := iss.Token(testissuer.Claims{Subject: "bench", Audience: []string{p.base + "/echo/mcp"}, Scope: "mcp", ClientID: "bench"})
		benchBridge(b, p, "Bearer "+tok, loads)
	})
}

// benchBridge drives the bridge binary p at each load, every request
// carrying auth (when set) as its Authorization header.
func benchBridge(b *testing.B, p *binaryProc, auth string, loads []load) {
	url := p.base + "/echo/mcp"
	for _, l := range loads {
		b.Run("bridge/"+l.String(), func(b *testing.B) {
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
			workers := l.sessions * l.inflight
			conns := make([]*rawConn, workers)
			for w := range conns {
				rc, err := dialRaw(p.base)
				if err != nil {
					b.Fatal(err)
				}
				rc.auth = auth
				defer rc.c.Close()
				conns[w] = rc
			}
			measureEcho(b, p, conns, func(w int) string { return sids[w%l.sessions] }, "")
			b.ReportMetric(float64(procStatusBytes(p.cmd.Process.Pid, "VmRSS"))/(1<<20), "rss_MiB")
			b.ReportMetric(float64(procStatusBytes(p.cmd.Process.Pid, "VmHWM"))/(1<<20), "peak_rss_MiB")
			for _, sid := range sids {
				c := newClient(b, url)
				c.sid = sid
				c.must(http.MethodDelete, "", "Authorization", auth)
			}
		})
	}
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
				conns := make([]*rawConn, workers)
				sid, meta := c.sid, ""
				for w := range conns {
					rc, err := dialRaw(p.base)
					if err != nil {
						b.Fatal(err)
					}
					defer rc.c.Close()
					if era == "2026" {
						rc.headers = modernHeaders
					}
					conns[w] = rc
				}
				if era == "2026" {
					sid, meta = "", modernMeta
				}
				measureEcho(b, p, conns, func(int) string { return sid }, meta)
			})
		}
	}
}

// measureEcho times b.N echo calls of the bridge binary p spread over conns
// (one worker each), on the session sid(worker) ("" for none), with meta
// appended to the params (a modern request's _meta), after one warm-up
// call per connection; it reports the figures and the bridge's CPU time
// per call.
func measureEcho(b *testing.B, p *binaryProc, conns []*rawConn, sid func(worker int) string, meta string) {
	bodies := make([][]byte, len(conns))
	call := func(w, i int) error {
		bodies[w] = append(bodies[w][:0], `{"jsonrpc":"2.0","id":`...)
		bodies[w] = strconv.AppendInt(bodies[w], int64(i), 10)
		bodies[w] = append(bodies[w], `,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}`...)
		bodies[w] = append(bodies[w], meta...)
		bodies[w] = append(bodies[w], "}}"...)
		status, err := conns[w].post("/echo/mcp", sid(w), bodies[w])
		if err == nil && status != http.StatusOK {
			err = fmt.Errorf("status %d", status)
		}
		return err
	}
	for w := range conns {
		if err := call(w, 0); err != nil {
			b.Fatal(err)
		}
	}
	cpu0 := cpuTime(p.cmd.Process.Pid)
	b.ResetTimer()
	r := drive(b.N, len(conns), call)
	b.StopTimer()
	r.report(b)
	b.ReportMetric(float64((cpuTime(p.cmd.Process.Pid)-cpu0).Microseconds())/float64(b.N), "bridge_cpu_us/call")
}
