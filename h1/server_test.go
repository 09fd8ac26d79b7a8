package h1

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"github.com/stelae-bridge/stelae-bridge/h1/h1test"
	"io"
	"net"
	"net/http"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/stelae-bridge/stelae-bridge/recycle"
)

// FuzzFastHead holds the fast path's head parser to net/http's: whatever
// it accepts, http.ReadRequest reads the same way (method, path, host,
// length, every header).
func FuzzFastHead(f *testing.F) {
	for _, seed := range []string{
		"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:9090\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n",
		"POST /a/mcp HTTP/1.1\r\nhost: x\r\ncontent-length: 10\r\naccept: application/json, text/event-stream\r\nmcp-session-id: abc\r\n\r\n",
		"POST / HTTP/1.1\r\nHost: [::1]:80\r\nContent-Length: 0\r\nX-A: 1\r\nX-A: 2\r\nConnection: keep-alive\r\n\r\n",
		"POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n",
		"POST /mcp HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n",
		"POST /mcp HTTP/1.1\r\nHost: a\r\n Content-Length: 1\r\n\r\n",
		"POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length:\t 7 \t\r\nAuthorization: Bearer x.y.z\r\n\r\n",
		"POST /mcp?x=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\n",
		"POST /%2e%2e/mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\n\r\n",
		"POST /mcp HTTP/1.0\r\nHost: a\r\nContent-Length: 1\r\n\r\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, head []byte) {
		end := bytes.Index(head, []byte("\r\n\r\n"))
		if end < 0 {
			return
		}
		head = head[:end+4]
		var h fastHead
		if !parseFastHead(head, &h, nil) {
			return
		}
		r, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(head)))
		if err != nil {
			t.Fatalf("the fast path takes %q; net/http refuses it: %v", head, err)
		}
		if r.Method != http.MethodPost || r.URL.Path != h.path || r.URL.RawQuery != "" || r.Host != h.host || r.ContentLength != h.contentLength || r.Proto != "HTTP/1.1" {
			t.Fatalf("%q: net/http reads %s %q?%q host %q length %d %s; the fast path %q host %q length %d", head, r.Method, r.URL.Path, r.URL.RawQuery, r.Host, r.ContentLength, r.Proto, h.path, h.host, h.contentLength)
		}
		if len(r.TransferEncoding) != 0 || r.Close {
			t.Fatalf("%q: net/http sees transfer encoding %v, close %v", head, r.TransferEncoding, r.Close)
		}
		if !reflect.DeepEqual(map[string][]string(r.Header), map[string][]string(h.header)) {
			t.Fatalf("%q: headers differ:\nnet/http  %q\nfast path %q", head, r.Header, h.header)
		}
	})
}

// served records which path served each request.
type served struct {
	// mu guards fast.
	mu   sync.Mutex
	fast []bool
}

func (s *served) add(w http.ResponseWriter) {
	_, fast := w.(*fastResponse)
	s.mu.Lock()
	s.fast = append(s.fast, fast)
	s.mu.Unlock()
}

func (s *served) get() []bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]bool(nil), s.fast...)
}

// startTestServer serves h on a loopback port until the test ends; tune
// may change the server before it starts.
func startTestServer(t testing.TB, h http.Handler, tune ...func(*Server)) (*Server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return startTestServerOn(t, ln, h, tune...)
}

// startTestServerOn is startTestServer on ln.
func startTestServerOn(t testing.TB, ln net.Listener, h http.Handler, tune ...func(*Server)) (*Server, string) {
	t.Helper()
	s := NewServer(h, hclog.NewNullLogger())
	for _, f := range tune {
		f(s)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		s.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return after Close")
		}
	})
	return s, ln.Addr().String()
}

// echoHandler answers a POST with its body and a GET with "get".
func echoHandler(rec *served) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.add(w)
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Path", r.URL.Path)
		if r.Method == http.MethodGet {
			body = []byte("get")
		}
		w.Write(body)
	})
}

// exchange writes raw to a new connection (in parts, with pause between
// them) and reads n responses.
func exchange(t *testing.T, addr string, n int, parts ...string) []*http.Response {
	t.Helper()
	c := dial(t, addr)
	for i, p := range parts {
		if i > 0 {
			time.Sleep(50 * time.Millisecond)
		}
		if _, err := io.WriteString(c, p); err != nil {
			t.Fatal(err)
		}
	}
	br := bufio.NewReader(c)
	var out []*http.Response
	for range n {
		resp, err := http.ReadResponse(br, nil)
		for err == nil && resp.StatusCode < 200 {
			resp, err = http.ReadResponse(br, nil) // 100 Continue
		}
		if err != nil {
			t.Fatalf("response %d: %v", len(out)+1, err)
		}
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("response %d body: %v", len(out)+1, err)
		}
		resp.Body = io.NopCloser(bytes.NewReader(b))
		out = append(out, resp)
	}
	return out
}

// dial connects to addr for the rest of the test, with a 10 s deadline on
// every read and write.
func dial(t testing.TB, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	return c
}

func bodyOf(t *testing.T, r *http.Response) string {
	t.Helper()
	b, _ := io.ReadAll(r.Body)
	return string(b)
}

// TestServerPaths: which requests the fast path serves and which go to
// net/http, and that every one is answered right either way, with the
// connection kept.
func TestServerPaths(t *testing.T) {
	big := strings.Repeat("x", 5000)
	head2 := h1test.Post("/mcp", "z", "X-Pad: "+strings.Repeat("p", 3400)+"\r\n")
	for _, tc := range []struct {
		name  string
		parts []string
		n     int
		fast  []bool
		want  []string
		close bool // net/http closes after the answer (HTTP/1.0)
	}{
		{"two posts", []string{h1test.Post("/mcp", `{"a":1}`) + h1test.Post("/b/mcp", `{"b":2}`)}, 2, []bool{true, true}, []string{`{"a":1}`, `{"b":2}`}, false},
		{"empty body", []string{h1test.Post("/mcp", "")}, 1, []bool{true}, []string{""}, false},
		{"get then post", []string{"GET /x HTTP/1.1\r\nHost: a\r\n\r\n" + h1test.Post("/mcp", "p")}, 2, []bool{false, false}, []string{"get", "p"}, false},
		{"post then get", []string{h1test.Post("/mcp", "p") + "GET /x HTTP/1.1\r\nHost: a\r\n\r\n"}, 2, []bool{true, false}, []string{"p", "get"}, false},
		{"chunked", []string{"POST /mcp HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"}, 1, []bool{false}, []string{"abc"}, false},
		// Either path (the server may read late, and find the body there).
		{"body after head", []string{"POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\n", "abc"}, 1, nil, []string{"abc"}, false},
		{"head in two parts", []string{"POST /mcp HTTP/1.1\r\nHost: a\r\n", "Content-Length: 3\r\n\r\nabc"}, 1, []bool{true}, []string{"abc"}, false},
		// The second head starts 1 KiB into the buffer and ends past its
		// end: the buffer moves what it holds to its start, and the fast
		// path still serves it.
		{"head past the buffer's end", []string{h1test.Post("/mcp", strings.Repeat("y", 1000)) + head2[:2000], head2[2000:]}, 2, []bool{true, true}, []string{strings.Repeat("y", 1000), "z"}, false},
		{"query", []string{h1test.Post("/mcp?x=1", "q")}, 1, []bool{false}, []string{"q"}, false},
		{"http/1.0", []string{"POST /mcp HTTP/1.0\r\nHost: a\r\nContent-Length: 1\r\n\r\nz"}, 1, []bool{false}, []string{"z"}, true},
		{"large head", []string{h1test.Post("/mcp", "h", "X-Big: "+big+"\r\n")}, 1, []bool{false}, []string{"h"}, false},
		{"expect", []string{h1test.Post("/mcp", "e", "Expect: 100-continue\r\n")}, 1, []bool{false}, []string{"e"}, false},
		{"bare LF", []string{"POST /mcp HTTP/1.1\nHost: a\nContent-Length: 1\n\nl"}, 1, []bool{false}, []string{"l"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &served{}
			_, addr := startTestServer(t, echoHandler(rec))
			resps := exchange(t, addr, tc.n, tc.parts...)
			for i, r := range resps {
				if r.StatusCode != 200 || bodyOf(t, r) != tc.want[i] {
					t.Errorf("response %d: %d %q, want 200 %q", i+1, r.StatusCode, bodyOf(t, r), tc.want[i])
				}
				if r.Close != tc.close {
					t.Errorf("response %d: close %v, want %v", i+1, r.Close, tc.close)
				}
			}
			if got := rec.get(); tc.fast != nil && !reflect.DeepEqual(got, tc.fast) {
				t.Errorf("served by the fast path: %v, want %v", got, tc.fast)
			}
		})
	}
}

// TestServerAnswers: the fast path's answers as a client reads them: one
// piece with Content-Length, chunked after a flush, the handler's own
// Content-Length kept, no body for 204, header values that cannot split
// the head, the Date and sniffed Content-Type net/http would add.
func TestServerAnswers(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/flush":
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write([]byte("data: 1\n\n"))
			w.(http.Flusher).Flush()
			w.Write([]byte("data: 2\n\n"))
			http.NewResponseController(w).Flush()
			w.Write([]byte("data: 3\n\n"))
		case "/length":
			w.Header().Set("Content-Length", "6")
			w.Write([]byte("abc"))
			w.(http.Flusher).Flush()
			w.Write([]byte("def"))
		case "/nocontent":
			w.WriteHeader(http.StatusNoContent)
			w.Write([]byte("dropped"))
		case "/split":
			w.Header().Set("X-Evil", "a\r\nSet-Cookie: x=1")
			w.WriteHeader(http.StatusAccepted)
		case "/sniff":
			w.Write([]byte("<html><body>hi</body></html>"))
		case "/large":
			w.Write(bytes.Repeat([]byte("y"), 200<<10))
		}
	})
	_, addr := startTestServer(t, h)
	resps := exchange(t, addr, 6, h1test.Post("/flush", "")+h1test.Post("/length", "")+h1test.Post("/nocontent", "")+h1test.Post("/split", "")+h1test.Post("/sniff", "")+h1test.Post("/large", ""))
	check := func(i int, cond bool, format string, args ...any) {
		if !cond {
			t.Errorf("response %d: "+format, append([]any{i + 1}, args...)...)
		}
	}
	r := resps[0]
	check(0, len(r.TransferEncoding) == 1 && r.TransferEncoding[0] == "chunked", "transfer encoding %v", r.TransferEncoding)
	check(0, bodyOf(t, r) == "data: 1\n\ndata: 2\n\ndata: 3\n\n", "body %q", bodyOf(t, r))
	r = resps[1]
	check(1, r.ContentLength == 6 && bodyOf(t, r) == "abcdef", "length %d body %q", r.ContentLength, bodyOf(t, r))
	r = resps[2]
	check(2, r.StatusCode == 204 && bodyOf(t, r) == "", "%d %q", r.StatusCode, bodyOf(t, r))
	r = resps[3]
	check(3, r.StatusCode == 202 && r.Header.Get("X-Evil") == "a  Set-Cookie: x=1" && r.Header.Get("Set-Cookie") == "", "%d %q", r.StatusCode, r.Header)
	check(3, r.ContentLength == 0, "length %d", r.ContentLength)
	r = resps[4]
	check(4, r.Header.Get("Content-Type") == "text/html; charset=utf-8", "content type %q", r.Header.Get("Content-Type"))
	if _, err := http.ParseTime(r.Header.Get("Date")); err != nil {
		t.Errorf("Date %q: %v", r.Header.Get("Date"), err)
	}
	r = resps[5]
	check(5, len(bodyOf(t, r)) == 200<<10, "body of %d bytes", len(bodyOf(t, r)))
}

// TestServerClientGoes: a client that goes while its request runs cancels
// the request's context; one that pipelines its next request does not,
// and both requests are answered.
func TestServerClientGoes(t *testing.T) {
	cancelled := make(chan struct{})
	release := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/wait":
			select {
			case <-r.Context().Done():
				close(cancelled)
			case <-time.After(10 * time.Second):
			}
		case "/slow":
			select {
			case <-release:
			case <-r.Context().Done():
				t.Error("a pipelined request cancelled the one before it")
			}
			w.Write([]byte("slow"))
		default:
			w.Write([]byte("next"))
		}
	})
	s, addr := startTestServer(t, h)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(c, h1test.Post("/wait", ""))
	waitConn(t, s, "the request to be watched", func(c *fastConn) bool { return c.watching })
	c.Close()
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the request's context was not cancelled when its client went")
	}

	// Pipelined: the second request arrives while the first runs.
	c2, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	io.WriteString(c2, h1test.Post("/slow", ""))
	waitConn(t, s, "the slow request to be watched", func(c *fastConn) bool { return c.watching })
	io.WriteString(c2, h1test.Post("/next", ""))
	// The watch reads the next request's first byte, keeps it and ends.
	waitConn(t, s, "the watch to keep the next request's first byte", func(c *fastConn) bool { return c.watched && !c.watching && c.cr.hasPending })
	close(release)
	_ = c2.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c2)
	for _, want := range []string{"slow", "next"} {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := bodyOf(t, resp); got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}

// TestServerPanic: a handler's panic closes its connection and nothing
// else.
func TestServerPanic(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/panic" {
			panic("boom")
		}
		w.Write([]byte("ok"))
	})
	_, addr := startTestServer(t, h)
	c := dial(t, addr)
	io.WriteString(c, h1test.Post("/panic", ""))
	if _, err := http.ReadResponse(bufio.NewReader(c), nil); err == nil {
		t.Error("a panicking handler's connection was answered")
	}
	if r := exchange(t, addr, 1, h1test.Post("/ok", "")); bodyOf(t, r[0]) != "ok" {
		t.Error("the server did not serve after a panic")
	}
}

// TestServerShutdown: Shutdown closes idle connections, lets the request in
// flight finish, answers it with Connection: close, and returns.
func TestServerShutdown(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(started)
			<-release
		}
		w.Write([]byte("done"))
	})
	s, addr := startTestServer(t, h)
	idle := dial(t, addr)
	io.WriteString(idle, h1test.Post("/x", ""))
	ibr := bufio.NewReader(idle)
	if resp, err := http.ReadResponse(ibr, nil); err != nil || bodyOf(t, resp) != "done" {
		t.Fatal(err)
	}
	busy := dial(t, addr)
	io.WriteString(busy, h1test.Post("/slow", ""))
	<-started
	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		shut <- s.Shutdown(ctx)
	}()
	if _, err := ibr.ReadByte(); err == nil {
		t.Error("an idle connection stayed open through Shutdown")
	}
	close(release)
	resp, err := http.ReadResponse(bufio.NewReader(busy), nil)
	if err != nil {
		t.Fatal(err)
	}
	if body := bodyOf(t, resp); body != "done" || !resp.Close {
		t.Errorf("the request in flight got %q, close %v", body, resp.Close)
	}
	if err := <-shut; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}

// TestServerManyClients: net/http clients at once, keep-alive, fast and
// handed-off requests mixed, every answer to its caller (run with -race).
func TestServerManyClients(t *testing.T) {
	rec := &served{}
	_, addr := startTestServer(t, echoHandler(rec))
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}, Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				want := fmt.Sprintf(`{"g":%d,"i":%d}`, g, i)
				var resp *http.Response
				var err error
				if i%10 == 9 {
					resp, err = client.Get("http://" + addr + "/get")
					want = "get"
				} else {
					resp, err = client.Post("http://"+addr+"/mcp", "application/json", strings.NewReader(want))
				}
				if err != nil {
					t.Error(err)
					return
				}
				got, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if string(got) != want {
					t.Errorf("got %q, want %q", got, want)
					return
				}
			}
		}()
	}
	wg.Wait()
	fast := 0
	for _, f := range rec.get() {
		if f {
			fast++
		}
	}
	t.Logf("%d of %d requests served by the fast path", fast, len(rec.get()))
	if fast == 0 {
		t.Error("no request took the fast path")
	}
}

// BenchmarkFastHead parses a typical MCP POST head (names as Node's fetch
// sends them: lower case).
func BenchmarkFastHead(b *testing.B) {
	head := []byte("POST /everything/mcp HTTP/1.1\r\nhost: 127.0.0.1:9090\r\nconnection: keep-alive\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\nmcp-session-id: 0b5a3c4e-9f1d-4a43-b7a2-6c1e8d2f0a11\r\nmcp-protocol-version: 2025-11-25\r\nuser-agent: node\r\naccept-encoding: gzip, deflate\r\ncontent-length: 96\r\n\r\n")
	b.ReportAllocs()
	var h fastHead
	var vals [12]string
	for b.Loop() {
		if !parseFastHead(head, &h, vals[:0]) {
			b.Fatal("not taken")
		}
	}
}

// TestServerHeadersPerRequest: a connection's requests never see each
// other's headers.
func TestServerHeadersPerRequest(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%q %q", r.Header.Values("X-Only-First"), r.Header.Values("X-Twice"))
	})
	_, addr := startTestServer(t, h)
	resps := exchange(t, addr, 2, h1test.Post("/mcp", "", "X-Only-First: 1\r\nX-Twice: a\r\nx-twice: b\r\n")+h1test.Post("/mcp", "", "X-Twice: c\r\n"))
	for i, want := range []string{`["1"] ["a" "b"]`, `[] ["c"]`} {
		if got := bodyOf(t, resps[i]); got != want {
			t.Errorf("request %d saw %s, want %s", i+1, got, want)
		}
	}
}

// TestServerWatchAtRequestEdges: requests that end around the moment their
// watch starts, back to back on keep-alive connections; every answer comes
// and none is cancelled (run with -race: one reader per connection).
func TestServerWatchAtRequestEdges(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		d, _ := time.ParseDuration(string(body))
		select {
		case <-time.After(d):
		case <-r.Context().Done():
			t.Error("a request was cancelled while its client waited")
		}
		w.Write(body)
	})
	_, addr := startTestServer(t, h)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var parts []string
			var want []string
			for i := range 12 {
				d := (watchAfter - 2*time.Millisecond + time.Duration((i*5+g)%9)*time.Millisecond/2).String()
				parts = append(parts, h1test.Post("/mcp", d))
				want = append(want, d)
			}
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(20 * time.Second))
			br := bufio.NewReader(c)
			for i, p := range parts {
				io.WriteString(c, p)
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Error(err)
					return
				}
				if got := bodyOf(t, resp); got != want[i] {
					t.Errorf("got %q, want %q", got, want[i])
				}
			}
		}()
	}
	wg.Wait()
}

// TestServerHeadTimeout: a head that never completes, on a connection's
// first request and on a later one, ends with the connection closed
// unanswered (no goroutine waits for it forever).
func TestServerHeadTimeout(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) })
	_, addr := startTestServer(t, h, func(s *Server) { s.headerTimeout, s.idleTimeout = 300*time.Millisecond, time.Second })
	for _, first := range []bool{true, false} {
		c := dial(t, addr)
		br := bufio.NewReader(c)
		if !first {
			io.WriteString(c, h1test.Post("/mcp", ""))
			if resp, err := http.ReadResponse(br, nil); err != nil || bodyOf(t, resp) != "ok" {
				t.Fatalf("first request: %v", err)
			}
		}
		io.WriteString(c, "POST /mcp HTTP/1.1\r\nHost: a\r\n")
		if _, err := br.ReadByte(); err == nil {
			t.Errorf("first request %v: an incomplete head was answered", first)
		} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Errorf("first request %v: the server kept the connection open for 10 s", first)
		}
		c.Close()
	}
}

// TestServerRetainedHeader: a handler that keeps r.Header, and a value
// slice of it, past its return finds both as its request had them after
// the next request on the same connection was read and served (net/http
// makes a header map per request; the fast path reused one per
// connection).
func TestServerRetainedHeader(t *testing.T) {
	type kept struct {
		h    http.Header
		user []string
	}
	keptc := make(chan kept, 3)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		keptc <- kept{r.Header, r.Header["X-User"]}
		w.Write([]byte(r.Header.Get("X-User")))
	})
	_, addr := startTestServer(t, h)
	// A first request with many fields: whatever a connection keeps for
	// header values has grown to its size before alice's.
	var many strings.Builder
	for i := range 10 {
		fmt.Fprintf(&many, "X-Pad-%d: p\r\n", i)
	}
	resps := exchange(t, addr, 3, h1test.Post("/mcp", "", "X-User: warm\r\n"+many.String())+
		h1test.Post("/mcp", "", "X-User: alice\r\nX-Only-Alice: 1\r\n")+h1test.Post("/mcp", "", "X-User: bob\r\nX-Only-Bob: 2\r\n"))
	for i, want := range []string{"warm", "alice", "bob"} {
		if got := bodyOf(t, resps[i]); got != want {
			t.Errorf("request %d saw X-User %q, want %q", i+1, got, want)
		}
	}
	<-keptc
	first, second := <-keptc, <-keptc // the third handler ran: the third head was read
	if got := first.h["X-User"]; len(got) != 1 || got[0] != "alice" {
		t.Errorf("the first request's kept header map has X-User %q, want [alice]", got)
	}
	if len(first.user) != 1 || first.user[0] != "alice" {
		t.Errorf("the first request's kept X-User slice holds %q, want [alice]", first.user)
	}
	if first.h.Get("X-Only-Alice") != "1" || first.h.Get("X-Only-Bob") != "" {
		t.Errorf("the first request's kept header map: %q", first.h)
	}
	if second.h.Get("X-Only-Alice") != "" || second.h.Get("X-User") != "bob" {
		t.Errorf("the second request's header map: %q", second.h)
	}
}

// TestServerLateWriter: a handler that gives w and r.Body to a goroutine,
// which uses them after the handler returned, while the next request on
// the connection (another user's, behind a proxy) is being answered: every
// late use fails, and the next answer is intact.
func TestServerLateWriter(t *testing.T) {
	type lateUse struct{ write, flush, deadline, body error }
	nextRunning, lateDone := make(chan struct{}), make(chan lateUse, 1)
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/leak":
			// Its body is left unread: a late read must not read on
			// into the next request's.
			w.Header().Set("X-Request", "first")
			w.Write([]byte("first"))
			wg.Add(1)
			go func() {
				defer wg.Done()
				select {
				case <-nextRunning:
				case <-time.After(10 * time.Second):
					t.Error("the next request's handler did not run")
				}
				var u lateUse
				rc := http.NewResponseController(w)
				w.Header().Set("X-Late", "1")
				w.WriteHeader(http.StatusTeapot)
				_, u.write = w.Write([]byte("LATE"))
				u.flush = rc.Flush()
				w.(http.Flusher).Flush()
				u.deadline = rc.SetWriteDeadline(time.Now().Add(time.Hour))
				var b [16]byte
				var n int
				n, u.body = r.Body.Read(b[:])
				if n > 0 {
					u.body = fmt.Errorf("read %q", b[:n])
				}
				lateDone <- u
			}()
		case "/next":
			close(nextRunning)
			var u lateUse
			select {
			case u = <-lateDone:
			case <-time.After(10 * time.Second):
				t.Error("the late goroutine did not end")
			}
			body, _ := io.ReadAll(r.Body)
			w.Write(body)
			if u.write == nil || u.flush == nil || u.deadline == nil || u.body == nil || u.body == io.EOF {
				t.Errorf("a late use reached the connection: write %v, flush %v, write deadline %v, body read %v", u.write, u.flush, u.deadline, u.body)
			}
		}
	})
	_, addr := startTestServer(t, h)
	resps := exchange(t, addr, 2, h1test.Post("/leak", "alice's")+h1test.Post("/next", "bob's secret"))
	if r := resps[0]; r.StatusCode != 200 || bodyOf(t, r) != "first" {
		t.Errorf("the first answer: %d %q", r.StatusCode, bodyOf(t, r))
	}
	r := resps[1]
	if r.StatusCode != 200 || bodyOf(t, r) != "bob's secret" || r.Header.Get("X-Late") != "" || r.Header.Get("X-Request") != "" {
		t.Errorf("the next answer was changed by the first request's late writer: %d %q %q", r.StatusCode, r.Header, bodyOf(t, r))
	}
}

// TestAnswerBufsPoisoned: an answer's buffers given back to bufsPool are
// poisoned under -race, so a reference kept past the hand-back (here, the
// test's own) reads 0xFE, never the next user's answer.
func TestAnswerBufsPoisoned(t *testing.T) {
	if !recycle.Enabled {
		t.Skip("poisoning is on only under -race")
	}
	w := &fastResponse{}
	w.take()
	w.body = append(w.body, "alice's answer"...)
	w.out = append(w.out, "HTTP/1.1 200 OK\r\n"...)
	kept, keptOut := w.body, w.out
	w.release()
	if w.bufs != nil || w.body != nil || w.out != nil {
		t.Fatal("release left the writer referring to its buffers")
	}
	if !recycle.Poisoned(kept) || !recycle.Poisoned(keptOut) {
		t.Errorf("given-back answer buffers hold %q and %q, want poison", kept, keptOut)
	}
}

// TestServerBaseContext: a fast-path request's context carries the
// *http.Server (the one the fast path hands off to, so both paths show the
// same) and the connection's local address, as net/http's requests do.
func TestServerBaseContext(t *testing.T) {
	type seen struct {
		fast bool
		srv  *http.Server
		addr net.Addr
	}
	seenc := make(chan seen, 2)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, fast := w.(*fastResponse)
		srv, _ := r.Context().Value(http.ServerContextKey).(*http.Server)
		addr, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
		seenc <- seen{fast, srv, addr}
	})
	s, addr := startTestServer(t, h)
	exchange(t, addr, 2, h1test.Post("/mcp", "")+"GET /x HTTP/1.1\r\nHost: a\r\n\r\n")
	for _, want := range []bool{true, false} {
		got := <-seenc
		if got.fast != want {
			t.Fatalf("served by the fast path: %v, want %v", got.fast, want)
		}
		if got.srv != s.std {
			t.Errorf("fast path %v: ServerContextKey is %p, want the Server's %p", want, got.srv, s.std)
		}
		if got.addr == nil || got.addr.String() != addr {
			t.Errorf("fast path %v: LocalAddrContextKey is %v, want %s", want, got.addr, addr)
		}
	}
}

// TestServerBodyLimit: a body is served on the fast path only when it
// arrived with its head within the read buffer; one a byte longer goes,
// with the bytes read, to net/http, and is answered all the same. At the
// limit of the shortest head (maxFastBody) and of an ordinary one.
func TestServerBodyLimit(t *testing.T) {
	var h fastHead
	if !parseFastHead([]byte(shortestFastHead), &h, nil) || h.contentLength != int64(maxFastBody) {
		t.Fatalf("shortestFastHead %q: parsed length %d, want maxFastBody %d", shortestFastHead, h.contentLength, maxFastBody)
	}
	shortest := func(n int) string {
		return fmt.Sprintf("POST / HTTP/1.1\r\nHost:a\r\nContent-Length:%d\r\n\r\n%s", n, strings.Repeat("s", n))
	}
	// An ordinary head whose request fills the buffer, with n = its body.
	n := connBufSize
	for len(h1test.Post("/mcp", strings.Repeat("o", n))) > connBufSize {
		n--
	}
	if len(h1test.Post("/mcp", strings.Repeat("o", n))) != connBufSize {
		t.Fatalf("no body of an ordinary POST fills the buffer exactly")
	}
	t.Logf("an ordinary head of %d bytes leaves %d for a body", connBufSize-n, n)
	for _, tc := range []struct {
		name string
		req  string
		body int
		fast bool
	}{
		{"shortest head, maxFastBody", shortest(maxFastBody), maxFastBody, true},
		{"shortest head, one more", shortest(maxFastBody + 1), maxFastBody + 1, false},
		{"ordinary head, the buffer full", h1test.Post("/mcp", strings.Repeat("o", n)), n, true},
		{"ordinary head, one more", h1test.Post("/mcp", strings.Repeat("o", n+1)), n + 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &served{}
			_, addr := startTestServer(t, echoHandler(rec))
			// One write: the request arrives at once, so where it goes
			// depends on its size only.
			r := exchange(t, addr, 1, tc.req)[0]
			if got := bodyOf(t, r); r.StatusCode != 200 || len(got) != tc.body {
				t.Errorf("answered %d with %d bytes, want 200 with the %d of the body", r.StatusCode, len(got), tc.body)
			}
			if got := rec.get(); len(got) != 1 || got[0] != tc.fast {
				t.Errorf("served by the fast path: %v, want %v", got, tc.fast)
			}
		})
	}
}

// stdServer serves h with net/http alone on a loopback port until the test
// ends: the reference the fast path is held to.
func stdServer(t testing.TB, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close(); <-done })
	return ln.Addr().String()
}

// TestServerHalfClose: a client that sends its request and then closes
// its side for writing (CloseWrite) gets its answer, as from net/http —
// even when the request runs long enough to be watched, which reads the
// client's EOF (and, as net/http's background read, cancels the request's
// context). A client that pipelines two requests before its half-close
// gets both answers, as from net/http: what was read before the EOF is
// served before the connection closes.
func TestServerHalfClose(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/slow" {
			// Until the EOF is seen (the context ends), or long past the
			// watch's start.
			select {
			case <-r.Context().Done():
			case <-time.After(20 * watchAfter):
			}
		}
		w.Write([]byte("answer " + r.URL.Path))
	})
	_, fast := startTestServer(t, h)
	std := stdServer(t, h)
	for _, reqs := range [][]string{{"/quick"}, {"/slow"}, {"/quick", "/quick"}, {"/slow", "/quick"}, {"/quick", "/slow"}, {"/slow", "/slow", "/quick"}} {
		for _, srv := range []struct{ name, addr string }{{"net/http", std}, {"fast path", fast}} {
			c := dial(t, srv.addr)
			var raw strings.Builder
			for _, path := range reqs {
				raw.WriteString(h1test.Post(path, "{}"))
			}
			io.WriteString(c, raw.String())
			if err := c.(*net.TCPConn).CloseWrite(); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(c)
			for i, path := range reqs {
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Errorf("%s, %v: no answer %d after the client's half-close: %v", srv.name, reqs, i+1, err)
					break
				}
				if got := bodyOf(t, resp); resp.StatusCode != 200 || got != "answer "+path {
					t.Errorf("%s, %v: answer %d is %d %q, want 200 \"answer %s\"", srv.name, reqs, i+1, resp.StatusCode, got, path)
				}
			}
			if b, err := br.ReadByte(); err == nil {
				t.Errorf("%s, %v: the connection goes on after the answers (%q)", srv.name, reqs, b)
			}
		}
	}
}

// TestServerEmptyLinesAfterPost: after a POST, net/http skips up to four
// CR or LF bytes before the next request line (RFC 9112 §2.2: a client may
// send a CRLF after a POST body); the fast path does the same, and a fifth
// gets the same 400 as from net/http.
func TestServerEmptyLinesAfterPost(t *testing.T) {
	rec := &served{}
	h := echoHandler(rec)
	_, fast := startTestServer(t, h)
	std := stdServer(t, h)
	// statuses writes raw to a new connection and reads answers until the
	// connection closes.
	statuses := func(addr, raw string) []int {
		c := dial(t, addr)
		io.WriteString(c, raw)
		br := bufio.NewReader(c)
		var got []int
		for {
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				return got
			}
			io.Copy(io.Discard, resp.Body)
			got = append(got, resp.StatusCode)
			if resp.Close {
				return got
			}
		}
	}
	p := h1test.Post("/mcp", `{"a":1}`)
	for _, tc := range []struct {
		name string
		raw  string
		want []int
	}{
		{"CRLF", p + "\r\n" + p + p, []int{200, 200, 200}},
		{"LF", p + "\n" + p, []int{200, 200}},
		{"two CRLF", p + "\r\n\r\n" + p, []int{200, 200}},
		{"five bytes", p + "\r\n\r\n\n" + p, []int{200, 400}},
		{"CRLF first", "\r\n" + p, []int{400}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, srv := range []struct{ name, addr string }{{"net/http", std}, {"fast path", fast}} {
				if got := statuses(srv.addr, tc.raw+"GET /close HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"); !reflect.DeepEqual(got[:min(len(got), len(tc.want))], tc.want) {
					t.Errorf("%s answered %v, want %v first", srv.name, got, tc.want)
				}
			}
		})
	}
	// The same when the CRLF comes on its own, after the answer: after a
	// POST the fast path served, and after one net/http served (a query),
	// whose connection came back to the fast path idle.
	rec2 := &served{}
	_, fast2 := startTestServer(t, echoHandler(rec2))
	for _, p := range []string{p, h1test.Post("/mcp?q", `{"a":1}`)} {
		c := dial(t, fast2)
		br := bufio.NewReader(c)
		for i := range 3 {
			io.WriteString(c, p)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("%q, request %d: %v", p[:12], i+1, err)
			}
			if got := bodyOf(t, resp); resp.StatusCode != 200 || got != `{"a":1}` {
				t.Fatalf("%q, request %d: %d %q", p[:12], i+1, resp.StatusCode, got)
			}
			io.WriteString(c, "\r\n")
		}
	}
	if got := rec2.get(); !reflect.DeepEqual(got, []bool{true, true, true, false, false, false}) {
		t.Errorf("served by the fast path: %v, want the three plain POSTs (not those with a query)", got)
	}
	// After a GET net/http skips nothing: neither does a connection back
	// from it.
	for _, srv := range []struct{ name, addr string }{{"net/http", std}, {"fast path", fast}} {
		c := dial(t, srv.addr)
		br := bufio.NewReader(c)
		var got []int
		for _, req := range []string{"GET /g HTTP/1.1\r\nHost: a\r\n\r\n", "\r\n" + p} {
			io.WriteString(c, req)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				break
			}
			io.Copy(io.Discard, resp.Body)
			got = append(got, resp.StatusCode)
		}
		if want := []int{200, 400}; !reflect.DeepEqual(got, want) {
			t.Errorf("%s: GET, then CRLF and a POST: %v, want %v", srv.name, got, want)
		}
	}
}

// FuzzBetweenRequests holds the fast path to net/http on what may come
// between two POSTs on a connection (empty lines, spaces, stray bytes):
// the same answers, in the same order, until the connection closes.
func FuzzBetweenRequests(f *testing.F) {
	for _, seed := range []string{"", "\r\n", "\n", "\r\n\r\n", "\r\n\r\n\r\n", "\r", " \r\n", "\r\nX", "\n\n\n\n\n"} {
		f.Add([]byte(seed))
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Write([]byte(r.Method))
	})
	_, fast := startTestServer(f, h)
	std := stdServer(f, h)
	p := h1test.Post("/mcp", `{"a":1}`)
	f.Fuzz(func(t *testing.T, between []byte) {
		if len(between) > 8 {
			return
		}
		for _, b := range between {
			if !strings.ContainsRune("\r\n \tX", rune(b)) {
				return
			}
		}
		raw := p + string(between) + p + "GET /close HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"
		answers := func(addr string) []string {
			c := dial(t, addr)
			io.WriteString(c, raw)
			br := bufio.NewReader(c)
			var got []string
			for {
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					return got
				}
				b, _ := io.ReadAll(resp.Body)
				got = append(got, fmt.Sprintf("%d %s", resp.StatusCode, b))
				if resp.Close {
					return got
				}
			}
		}
		if f, s := answers(fast), answers(std); !reflect.DeepEqual(f, s) {
			t.Fatalf("%q between two POSTs: the fast path answers %q, net/http %q", between, f, s)
		}
	})
}

// TestServerIdleHoldsNoRequest: a connection waiting for its next request
// keeps nothing of the last one: many idle keep-alive connections after
// header-heavy requests cost what they cost after light ones — on the fast
// path (a head of 200 fields that fits its buffer), and after a head too
// large for it went, with the bytes read, to net/http (whose idle
// connections hold their own buffers either way).
func TestServerIdleHoldsNoRequest(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "2")
		w.Write([]byte("ok"))
	})
	srv, addr := startTestServer(t, h)
	const conns = 200
	open := 0 // connections open
	fields := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "X-F%04d: v\r\n", i)
		}
		return b.String()
	}
	if n := len(h1test.Post("/mcp", "{}", fields(200))); n > connBufSize {
		t.Fatalf("the fast path's header-heavy request (%d bytes) would not take the fast path", n)
	}
	var buf [1024]byte
	// idle opens conns connections, sends req on each and reads its
	// answer; then they are idle (those net/http answered back on the fast
	// path, after its backAfter), and the heap is measured (with req empty,
	// only measured).
	idle := func(req string) uint64 {
		for i := 0; i < conns && req != ""; i++ {
			open++
			c := dial(t, addr)
			io.WriteString(c, req)
			n := 0
			for !bytes.HasSuffix(buf[:n], []byte("\r\n\r\nok")) {
				m, err := c.Read(buf[n:])
				if err != nil {
					t.Fatalf("reading the answer: %v (%q)", err, buf[:n])
				}
				n += m
			}
		}
		waitFast(t, srv, open)
		var ms runtime.MemStats
		runtime.GC()
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	idle(h1test.Post("/mcp", "{}")) // the pools, goroutines and test's structures warm
	fastLight := int64(-1)
	for _, tc := range []struct{ name, light, heavy string }{
		{"fast path", h1test.Post("/mcp", "{}"), h1test.Post("/mcp", "{}", fields(200))},
		// A query sends a light request to net/http; 2,000 fields (24 KiB) a heavy one.
		{"handed to net/http", h1test.Post("/mcp?q", "{}"), h1test.Post("/mcp", "{}", fields(2000))},
	} {
		before := idle("")
		light := idle(tc.light)
		heavy := idle(tc.heavy)
		lightConn, heavyConn := (int64(light)-int64(before))/conns, (int64(heavy)-int64(light))/conns
		t.Logf("%s: an idle connection holds %d bytes after a light request, %d after a header-heavy one", tc.name, lightConn, heavyConn)
		if heavyConn-lightConn > 1<<10 {
			t.Errorf("%s: an idle connection holds %d bytes more after a header-heavy request than after a light one; want under 1 KiB", tc.name, heavyConn-lightConn)
		}
		if fastLight < 0 {
			fastLight = lightConn
		} else if lightConn-fastLight > 1<<10 {
			// net/http's buffers (8 KiB) went back to its pools, with the
			// connection to the fast path.
			t.Errorf("%s: an idle connection net/http answered holds %d bytes more than one the fast path answered; want under 1 KiB", tc.name, lightConn-fastLight)
		}
	}
}

// TestServerBackFromNetHTTP: a connection net/http answered comes back to
// the fast path only when nothing of its next request has been read; a
// next request begun in the same segment as the last (pipelined, its head
// cut at a line's end or not, or one byte of it) is read on by net/http,
// whatever comes later.
func TestServerBackFromNetHTTP(t *testing.T) {
	rec := &served{}
	_, addr := startTestServer(t, echoHandler(rec))
	viaStd := h1test.Post("/mcp?q", `{"n":1}`)
	next := h1test.Post("/mcp", `{"n":2}`)
	for _, cut := range []int{1, 3, 4, strings.Index(next, "\r\n") + 2, strings.Index(next, "Content-Type"), len(next) - 3} {
		c := dial(t, addr)
		br := bufio.NewReader(c)
		io.WriteString(c, viaStd+next[:cut])
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("cut %d: first answer: %v", cut, err)
		}
		if got := bodyOf(t, resp); got != `{"n":1}` {
			t.Fatalf("cut %d: first answer %q", cut, got)
		}
		time.Sleep(20 * time.Millisecond) // net/http waits, with part of the next request read
		io.WriteString(c, next[cut:])
		resp, err = http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("cut %d: the next request, begun with the first and ended later, got no answer: %v", cut, err)
		}
		if got := bodyOf(t, resp); resp.StatusCode != 200 || got != `{"n":2}` {
			t.Errorf("cut %d: the next request got %d %q", cut, resp.StatusCode, got)
		}
		c.Close()
	}
	// Nothing of the next request read: a next request that follows at
	// once net/http serves; once the connection waited for backAfter, it
	// is back on the fast path, which serves the next POST.
	rec = &served{}
	srv, addr := startTestServer(t, echoHandler(rec))
	roundTrips(t, srv, addr, []string{viaStd, viaStd, next}, 2)
	if got := rec.get(); !reflect.DeepEqual(got, []bool{false, false, true}) {
		t.Errorf("served by the fast path: %v, want [false false true] (the connection back from net/http)", got)
	}
	// Back from net/http, the connection skips empty lines after a POST
	// net/http served, and not after a GET, as net/http would have.
	for _, tc := range []struct {
		first string
		want  int
	}{{viaStd, 200}, {"GET /g HTTP/1.1\r\nHost: a\r\n\r\n", 400}} {
		srv, addr := startTestServer(t, echoHandler(&served{}))
		got := roundTrips(t, srv, addr, []string{tc.first, "\r\n" + next}, 1)
		if got[1] != tc.want {
			t.Errorf("%q, back on the fast path, then CRLF and a POST: %v, want %d last", tc.first[:10], got, tc.want)
		}
	}
}

// roundTrips writes reqs on one connection to addr, each once the answer
// to the one before is read, first waiting for the connection to be back
// on srv's fast path before request fastAt; it returns the statuses.
func roundTrips(t *testing.T, srv *Server, addr string, reqs []string, fastAt int) []int {
	t.Helper()
	c := dial(t, addr)
	br := bufio.NewReader(c)
	var got []int
	for i, req := range reqs {
		if i == fastAt {
			waitFast(t, srv, 1)
		}
		io.WriteString(c, req)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		got = append(got, resp.StatusCode)
	}
	return got
}

// waitFast waits until s serves n connections on the fast path (those
// net/http answered come back after backAfter).
// waitConn waits until a fast-path connection of s is in the state ok
// reports (read under the connection's wmu), for up to 10 s.
func waitConn(t testing.TB, s *Server, what string, ok func(*fastConn) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		found := false
		s.mu.Lock()
		for c := range s.conns {
			c.wmu.Lock()
			found = found || ok(c)
			c.wmu.Unlock()
		}
		s.mu.Unlock()
		if found {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited 10 s for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func waitFast(t testing.TB, s *Server, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.mu.Lock()
		got := len(s.conns)
		s.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections on the fast path after 10 s, want %d", got, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
