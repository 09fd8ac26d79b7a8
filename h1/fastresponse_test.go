package h1

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// This file holds the response side of the fast path to net/http's: a
// handler scripted by bytes (FuzzFastResponse's input) is served by the
// fast path and by a plain http.Server, each over loopback TCP, with a
// second, plain request pipelined behind it, and what a client reads of
// both must agree (see sameAnswer for the one difference tolerated).

// A script is a sequence of 3-byte ops: kind, a, b (a trailing partial op
// is ignored). The kinds:
const (
	opWriteHeader   = iota // WriteHeader(scriptStatuses[a])
	opWrite                // Write scriptSizes[a] bytes of content scriptKinds[b]
	opFlush                // http.Flusher's Flush
	opFlushError           // http.ResponseController's Flush, its error logged
	opContentType          // Content-Type: scriptTypes[a]
	opContentLength        // Content-Length: a choice (scriptLength) against the bytes the script writes
	opClose                // Connection: close
	opValue                // X-Fuzz: scriptValues[a]
	opEncoding             // Content-Encoding: gzip
	opDelete               // Header().Del(scriptDeletes[a])
	opRawKey               // Header()[scriptRawKeys[a]] = {"v"}
	opRetain               // keep r.Header and r.Header["X-User"]: the next request's handler checks them
	opContext              // log whether the context carries ServerContextKey and LocalAddrContextKey
	opLeak                 // give w and r.Body to a goroutine that uses them while the next request is answered
	opKinds
)

var (
	scriptStatuses = []int{200, 201, 204, 299, 304, 404, 500, 100, 103, 199, 599}
	scriptSizes    = []int{0, 1, 7, 100, 511, 512, 2047, 2048, 2049, 4096, 65535, 65536, 70000, 140000}
	scriptKinds    = []string{"a", "<html>", `{"jsonrpc":`, "\x00\x01\x02", "%PDF-", "\xef\xbb\xbf<?xml"}
	scriptTypes    = []string{"application/json", "text/event-stream", "", "text/html; charset=utf-8"}
	scriptValues   = []string{"1", "a b", " lead", "trail ", "cr\r\nlf", "", "ünï"}
	scriptDeletes  = []string{"Content-Type", "Content-Length", "Connection", "X-Fuzz", "Content-Encoding"}
	scriptRawKeys  = []string{"Bad Name", "x-lower", "Date"}
)

// The Content-Length choices, against the total the script writes.
const (
	clRight = iota
	clShort // declares one more than it writes
	clLong  // declares one less
	clZero
	clHalf
	clShortMuch // declares 100 more
	clInvalid   // "x": net/http drops it
	clNegative  // "-1": net/http drops it
	clChoices
)

// maxScriptOps and maxScriptBytes bound a script's work.
const (
	maxScriptOps   = 32
	maxScriptBytes = 400 << 10
)

// scriptLength is the Content-Length value choice c declares for a script
// that writes total bytes.
func scriptLength(c, total int) string {
	switch c % clChoices {
	case clRight:
		return strconv.Itoa(total)
	case clShort:
		return strconv.Itoa(total + 1)
	case clLong:
		return strconv.Itoa(total - 1)
	case clZero:
		return "0"
	case clHalf:
		return strconv.Itoa(total / 2)
	case clShortMuch:
		return strconv.Itoa(total + 100)
	case clInvalid:
		return "x"
	default:
		return "-1"
	}
}

// scriptTotal is the number of bytes a script's writes carry.
func scriptTotal(script []byte) int {
	total := 0
	for i := 0; i+3 <= len(script) && i < 3*maxScriptOps; i += 3 {
		if script[i]%opKinds == opWrite {
			total += scriptSizes[int(script[i+1])%len(scriptSizes)]
		}
	}
	return min(total, maxScriptBytes)
}

// content is the n bytes of the script's write number seq, of kind k.
func content(n int, k byte, seq int) []byte {
	b := make([]byte, n)
	p := copy(b, scriptKinds[int(k)%len(scriptKinds)])
	for i := p; i < n; i++ {
		b[i] = byte('a' + (seq+i)%26)
	}
	return b
}

// script ops, for seeds that read as what they do.
func sWriteHeader(code int) []byte {
	return []byte{opWriteHeader, byte(slices.Index(scriptStatuses, code)), 0}
}
func sWrite(n int, kind byte) []byte {
	return []byte{opWrite, byte(slices.Index(scriptSizes, n)), kind}
}
func sOp(kind byte, a byte) []byte { return []byte{kind, a, 0} }
func script(ops ...[]byte) []byte  { return bytes.Join(ops, nil) }

// scriptRun is what one exchange's handlers saw and share; the handlers
// of a server find the current one in their scriptServer.
type scriptRun struct {
	// mu guards log, lateLog, retained and retainedUser.
	mu           sync.Mutex
	log          []string
	lateLog      []string // what opLeak's goroutines saw, whenever they ran
	retained     http.Header
	retainedUser []string
	plainRunning chan struct{} // closed by the plain request's handler
	over         chan struct{} // closed by the test once it read the exchange
	scriptDone   chan struct{} // closed when the script's handler returns
	// late counts the goroutines opLeak started: the plain request's
	// handler waits for them (so their uses come while it is answered),
	// and so does the test, before the run ends.
	late sync.WaitGroup
}

func (r *scriptRun) logf(format string, args ...any) {
	r.mu.Lock()
	r.log = append(r.log, fmt.Sprintf(format, args...))
	r.mu.Unlock()
}

// scriptServer serves scripts, on the fast path (fast) or net/http.
type scriptServer struct {
	fast  bool
	addr  string
	local net.Addr     // the listener's address: LocalAddrContextKey's value
	srv   *http.Server // ServerContextKey's value
	run   atomic.Pointer[scriptRun]
}

// startScriptServers starts a fast-path Server and a plain http.Server,
// both serving scripts on loopback, until the test ends.
func startScriptServers(t testing.TB) (fast, std *scriptServer) {
	fast, std = &scriptServer{fast: true}, &scriptServer{}
	s, addr := startTestServer(t, fast)
	fast.addr, fast.srv = addr, s.std
	fast.local, _ = net.ResolveTCPAddr("tcp", addr)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	std.addr, std.local = ln.Addr().String(), ln.Addr()
	std.srv = &http.Server{Handler: std, ErrorLog: log.New(io.Discard, "", 0)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = std.srv.Serve(ln)
	}()
	t.Cleanup(func() {
		std.srv.Close()
		<-done
	})
	return fast, std
}

func (s *scriptServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	run := s.run.Load()
	if _, fast := w.(*fastResponse); fast != s.fast {
		run.logf("%s served by the fast path: %v", r.URL.Path, fast)
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		run.logf("%s body: %v", r.URL.Path, err)
	}
	if r.URL.Path == "/plain" {
		s.servePlain(run, w, r)
		return
	}
	defer close(run.scriptDone)
	s.serveScript(run, w, r, body)
}

// servePlain answers the second request: "plain", after checking what the
// script's handler kept and letting its leaked goroutines run.
func (s *scriptServer) servePlain(run *scriptRun, w http.ResponseWriter, r *http.Request) {
	close(run.plainRunning)
	run.late.Wait()
	run.mu.Lock()
	if run.retained != nil {
		run.log = append(run.log, fmt.Sprintf("retained: X-User %q, slice %q, X-Only-First %q", run.retained["X-User"], run.retainedUser, run.retained["X-Only-First"]))
	}
	run.mu.Unlock()
	w.Write([]byte("plain"))
}

func (s *scriptServer) serveScript(run *scriptRun, w http.ResponseWriter, r *http.Request, script []byte) {
	total := scriptTotal(script)
	written := 0
	h := w.Header()
	for i, seq := 0, 0; i+3 <= len(script) && i < 3*maxScriptOps; i += 3 {
		a, b := script[i+1], script[i+2]
		switch script[i] % opKinds {
		case opWriteHeader:
			w.WriteHeader(scriptStatuses[int(a)%len(scriptStatuses)])
		case opWrite:
			n := scriptSizes[int(a)%len(scriptSizes)]
			if written+n > maxScriptBytes {
				continue
			}
			written += n
			seq++
			n, err := w.Write(content(n, b, seq))
			run.logf("write %d: %d %v", seq, n, err)
		case opFlush:
			w.(http.Flusher).Flush()
		case opFlushError:
			run.logf("flush: %v", http.NewResponseController(w).Flush())
		case opContentType:
			if v := scriptTypes[int(a)%len(scriptTypes)]; v == "" {
				h["Content-Type"] = nil // present, empty: net/http does not sniff
			} else {
				h.Set("Content-Type", v)
			}
		case opContentLength:
			h.Set("Content-Length", scriptLength(int(a), total))
		case opClose:
			h.Set("Connection", "close")
		case opValue:
			h.Set("X-Fuzz", scriptValues[int(a)%len(scriptValues)])
		case opEncoding:
			h.Set("Content-Encoding", "gzip")
		case opDelete:
			h.Del(scriptDeletes[int(a)%len(scriptDeletes)])
		case opRawKey:
			h[scriptRawKeys[int(a)%len(scriptRawKeys)]] = []string{"v"}
		case opRetain:
			run.mu.Lock()
			run.retained, run.retainedUser = r.Header, r.Header["X-User"]
			run.mu.Unlock()
		case opContext:
			srv, _ := r.Context().Value(http.ServerContextKey).(*http.Server)
			la, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
			run.logf("context: server %v, local address %v", srv == s.srv, la != nil && la.String() == s.local.String())
		case opLeak:
			s.leak(run, w, r)
		}
	}
}

// leak gives w and r.Body to a goroutine that uses them once the next
// request's handler runs (or the exchange is over): every use must fail
// and reach nothing. net/http makes no such promise (a late Write there
// goes into a pooled buffer that may be the next answer's), so the plain
// server logs what the contract says instead of running it.
func (s *scriptServer) leak(run *scriptRun, w http.ResponseWriter, r *http.Request) {
	const refused = "late use: refused"
	lateLog := func(format string, args ...any) {
		run.mu.Lock()
		run.lateLog = append(run.lateLog, fmt.Sprintf(format, args...))
		run.mu.Unlock()
	}
	if !s.fast {
		lateLog(refused)
		return
	}
	run.late.Add(1)
	go func() {
		defer run.late.Done()
		select {
		case <-run.plainRunning:
		case <-run.over:
		}
		<-run.scriptDone // "after the handler returned", also when no next request comes
		// (Not the header map: changing it after the handler returned
		// races with the answer's making, here as in net/http.)
		rc := http.NewResponseController(w)
		w.WriteHeader(http.StatusTeapot)
		_, werr := w.Write([]byte("LATE"))
		ferr := rc.Flush()
		w.(http.Flusher).Flush()
		derr := rc.SetWriteDeadline(time.Now().Add(time.Hour))
		_, rerr := r.Body.Read(make([]byte, 8))
		if werr == nil || ferr == nil || derr == nil || rerr == nil || rerr == io.EOF {
			lateLog("late use: reached: write %v, flush %v, deadline %v, body %v", werr, ferr, derr, rerr)
			return
		}
		lateLog(refused)
	}()
}

// answer is what a client reads of one response.
type answer struct {
	HeadErr string   // the head could not be read
	Interim []string // 1xx answers: status line and headers
	Status  string
	Header  http.Header // without Date
	Framing string      // "length", "chunked" or "none" (no body)
	Close   bool
	Body    string
	BodyErr string
}

// exchangeResult is what a client reads of a script's answer and of the
// plain request's behind it, and what the handlers logged.
type exchangeResult struct {
	First answer
	// Second is "intact", "closed" (the server closed the connection
	// after the first answer), or what came instead (a desync).
	Second string
	Log    []string
}

const plainRequest = "POST /plain HTTP/1.1\r\nHost: 127.0.0.1\r\nX-User: second\r\nContent-Length: 6\r\n\r\nsecret"

// scriptRequest is the POST that carries script.
func scriptRequest(script []byte) string {
	return fmt.Sprintf("POST /script HTTP/1.1\r\nHost: 127.0.0.1\r\nX-User: first\r\nX-Only-First: 1\r\nContent-Length: %d\r\n\r\n%s", len(script), script)
}

// play serves script on s, with the plain request pipelined behind it.
func (s *scriptServer) play(t testing.TB, script []byte) exchangeResult {
	t.Helper()
	run := &scriptRun{plainRunning: make(chan struct{}), over: make(chan struct{}), scriptDone: make(chan struct{})}
	s.run.Store(run)
	c, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.WriteString(c, scriptRequest(script)+plainRequest); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	var x exchangeResult
	x.First = readAnswer(br)
	x.Second = readPlain(br)
	close(run.over)
	select {
	case <-run.scriptDone:
	case <-time.After(20 * time.Second):
		t.Fatal("the script's handler did not return")
	}
	run.late.Wait()
	run.mu.Lock()
	x.Log = append(run.log, run.lateLog...)
	run.mu.Unlock()
	return x
}

func readAnswer(br *bufio.Reader) answer {
	var a answer
	resp, err := http.ReadResponse(br, nil)
	for err == nil && resp.StatusCode < 200 {
		a.Interim = append(a.Interim, resp.Status+" "+headerString(resp.Header))
		resp, err = http.ReadResponse(br, nil)
	}
	if err != nil {
		a.HeadErr = err.Error()
		return a
	}
	a.Status, a.Close = resp.Status, resp.Close
	a.Header = resp.Header.Clone()
	delete(a.Header, "Date")
	switch {
	case len(resp.TransferEncoding) > 0:
		a.Framing = strings.Join(resp.TransferEncoding, ",")
	case resp.ContentLength >= 0:
		a.Framing = "length"
	default:
		a.Framing = "none"
	}
	body, err := io.ReadAll(resp.Body)
	a.Body = string(body)
	if err != nil {
		a.BodyErr = err.Error()
	}
	return a
}

func headerString(h http.Header) string {
	var b strings.Builder
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range h {
			if !yield(k) {
				return
			}
		}
	}) {
		if k != "Date" {
			fmt.Fprintf(&b, "%s=%q ", k, h[k])
		}
	}
	return b.String()
}

// readPlain reads the plain request's answer.
func readPlain(br *bufio.Reader) string {
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) {
			return "closed"
		}
		return "unreadable: " + err.Error()
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 || string(body) != "plain" {
		return fmt.Sprintf("desync: %s %q %v", resp.Status, body, err)
	}
	return "intact"
}

// sameAnswer reports how what the fast path answered differs from what
// net/http answered ("" when it does not). One difference is tolerated:
// an answer whose handler declared no Content-Length and did not flush may
// carry a Content-Length from the fast path where net/http chunks it (it
// does past 2 KiB; the fast path holds up to 64 KiB and sends it in one
// write): the body is the same.
func sameAnswer(fast, std exchangeResult) string {
	f, s := fast.First, std.First
	if f.Framing == "length" && s.Framing == "chunked" && s.Header.Get("Content-Length") == "" {
		f.Header = f.Header.Clone()
		delete(f.Header, "Content-Length")
		f.Framing = s.Framing
	}
	var diffs []string
	if f.HeadErr != s.HeadErr {
		diffs = append(diffs, fmt.Sprintf("head unreadable: %q, net/http %q", f.HeadErr, s.HeadErr))
	}
	if !slices.Equal(f.Interim, s.Interim) {
		diffs = append(diffs, fmt.Sprintf("1xx answers: %q, net/http %q", f.Interim, s.Interim))
	}
	if f.Status != s.Status {
		diffs = append(diffs, fmt.Sprintf("status %q, net/http %q", f.Status, s.Status))
	}
	if hf, hs := headerString(f.Header), headerString(s.Header); hf != hs {
		diffs = append(diffs, fmt.Sprintf("header %s, net/http %s", hf, hs))
	}
	if f.Framing != s.Framing {
		diffs = append(diffs, fmt.Sprintf("framing %s, net/http %s", f.Framing, s.Framing))
	}
	if f.Close != s.Close {
		diffs = append(diffs, fmt.Sprintf("Connection: close %v, net/http %v", f.Close, s.Close))
	}
	if f.Body != s.Body {
		diffs = append(diffs, fmt.Sprintf("body of %d bytes %.80q, net/http %d bytes %.80q", len(f.Body), f.Body, len(s.Body), s.Body))
	}
	if f.BodyErr != s.BodyErr {
		diffs = append(diffs, fmt.Sprintf("body error %q, net/http %q", f.BodyErr, s.BodyErr))
	}
	if fast.Second != std.Second {
		diffs = append(diffs, fmt.Sprintf("next answer %s, net/http %s", fast.Second, std.Second))
	}
	if !slices.Equal(fast.Log, std.Log) {
		diffs = append(diffs, fmt.Sprintf("handler saw %q, net/http's %q", fast.Log, std.Log))
	}
	return strings.Join(diffs, "\n")
}

// compareScript plays script on both servers and fails t where the fast
// path's exchange differs from net/http's; it returns both.
func compareScript(t testing.TB, fast, std *scriptServer, script []byte) (f, s exchangeResult) {
	t.Helper()
	f, s = fast.play(t, script), std.play(t, script)
	if f.Second != "intact" && f.Second != "closed" {
		t.Errorf("script %v: the fast path desynced the connection: %s", script, f.Second)
	}
	if d := sameAnswer(f, s); d != "" {
		t.Errorf("script %v: the fast path differs from net/http:\n%s", script, d)
	}
	return f, s
}

// lengthSeeds are scripts that declare a Content-Length (right, short,
// long, invalid), flushed or not, with statuses that have no body.
var lengthSeeds = []scriptSeed{
	{"length right", script(sOp(opContentLength, clRight), sWrite(100, 2))},
	{"length short", script(sOp(opContentLength, clShort), sWrite(100, 2))},
	{"length short, flushed", script(sOp(opContentLength, clShort), sWrite(7, 0), sOp(opFlush, 0))},
	{"length long", script(sOp(opContentLength, clLong), sWrite(7, 0), sWrite(100, 0))},
	{"length long, flushed", script(sOp(opContentLength, clHalf), sWrite(7, 0), sOp(opFlushError, 0), sWrite(100, 0))},
	{"length long, one write", script(sOp(opContentLength, clLong), sWrite(100, 0))},
	{"length zero", script(sOp(opContentLength, clZero))},
	{"length invalid", script(sOp(opContentLength, clInvalid), sWrite(7, 0))},
	{"length negative", script(sOp(opContentLength, clNegative), sWrite(7, 0), sOp(opFlush, 0))},
	{"length after WriteHeader", script(sWriteHeader(201), sOp(opContentLength, clShortMuch), sWrite(7, 0))},
	{"204 with length", script(sOp(opContentLength, clShortMuch), sWriteHeader(204), sWrite(7, 0))},
	{"304 with length and type", script(sOp(opContentLength, clShortMuch), sOp(opContentType, 0), sWriteHeader(304), sWrite(7, 0))},
	{"over 64 KiB with length", script(sOp(opContentLength, clRight), sWrite(65535, 0), sWrite(4096, 0))},
	{"over 64 KiB with short length", script(sOp(opContentLength, clShort), sWrite(70000, 0))},
}

// responseSeeds are scripts for the rest of what net/http's answers hold
// to, and for the request's ownership: a retained header map (opRetain),
// a late writer (opLeak), the context's values (opContext).
var responseSeeds = []scriptSeed{
	{"nothing", nil},
	{"one write", script(sWrite(7, 0))},
	{"html sniffed", script(sWrite(100, 1))},
	{"204 flushed", script(sWriteHeader(204), sOp(opFlush, 0))},
	{"flush first", script(sOp(opFlush, 0), sWrite(7, 0))},
	{"stream", script(sOp(opContentType, 1), sWrite(100, 0), sOp(opFlush, 0), sWrite(7, 0), sOp(opFlushError, 0), sWrite(1, 0))},
	{"large", script(sWrite(140000, 3))},
	{"2 KiB edge", script(sWrite(2048, 1))},
	{"2 KiB + 1", script(sWrite(2049, 1))},
	{"close", script(sOp(opClose, 0), sWrite(7, 0))},
	{"close after WriteHeader", script(sWriteHeader(200), sOp(opClose, 0), sWrite(7, 0))},
	{"header after WriteHeader", script(sWriteHeader(200), sOp(opValue, 0), sOp(opContentType, 0), sWrite(7, 1))},
	{"unknown status", script(sWriteHeader(299))},
	{"unknown status 599", script(sWriteHeader(599), sWrite(7, 0))},
	{"early hints", script(sOp(opValue, 1), sWriteHeader(103), sOp(opValue, 0), sWrite(7, 0))},
	{"continue then 404", script(sWriteHeader(100), sWriteHeader(404), sWrite(1, 0))},
	{"1xx after the head", script(sWrite(1, 0), sWriteHeader(103))},
	{"encoded, not sniffed", script(sOp(opEncoding, 0), sWrite(100, 1))},
	{"empty type, not sniffed", script(sOp(opContentType, 2), sWrite(100, 1))},
	{"values", script(sOp(opValue, 4), sOp(opRawKey, 0), sOp(opRawKey, 1), sOp(opRawKey, 2), sWrite(1, 0))},
	{"retained header", script(sOp(opRetain, 0), sWrite(7, 0))},
	{"context values", script(sOp(opContext, 0))},
	{"late writer", script(sWrite(7, 0), sOp(opLeak, 0))},
	{"late writer, flushed", script(sWrite(7, 0), sOp(opFlush, 0), sOp(opLeak, 0))},
	{"late writer, closed", script(sOp(opClose, 0), sOp(opLeak, 0))},
}

type scriptSeed struct {
	name   string
	script []byte
}

// FuzzFastResponse holds the fast path's answers to net/http's: a handler
// scripted by the input (status or none, Content-Type and Content-Length
// right, short, long, invalid or absent, Connection: close, writes up to
// 140 KiB, flushes anywhere) is served by both, with a plain request
// pipelined behind; a client must read the same of both (sameAnswer), and
// the fast path must never desync the connection. Without -fuzz it plays
// its seeds.
func FuzzFastResponse(f *testing.F) {
	for _, s := range append(lengthSeeds, responseSeeds...) {
		f.Add(s.script)
	}
	fast, std := startScriptServers(f)
	f.Fuzz(func(t *testing.T, script []byte) {
		if len(script) > 3*maxScriptOps {
			script = script[:3*maxScriptOps]
		}
		compareScript(t, fast, std, script)
	})
}

// TestServerContentLength: a declared Content-Length is held as net/http
// holds it (lengthSeeds, against net/http): a handler that writes less gets
// its length sent and the connection closed after (never the next answer
// read as its body), one that writes more gets http.ErrContentLength for
// the excess, which is not sent, and the connection closed after; flushed
// or not; 204 and 304 send no length and keep the connection.
func TestServerContentLength(t *testing.T) {
	fast, std := startScriptServers(t)
	for _, s := range lengthSeeds {
		t.Run(s.name, func(t *testing.T) {
			x, _ := compareScript(t, fast, std, s.script)
			a := x.First
			check := func(ok bool, want string) {
				if !ok {
					t.Errorf("want %s; got %s, %s %q, body %d bytes (%s), next %s, handler saw %q", want, a.Status, a.Framing, a.Header, len(a.Body), a.BodyErr, x.Second, x.Log)
				}
			}
			switch s.name {
			case "length short":
				check(a.Header.Get("Content-Length") == "101" && a.Body == string(content(100, 2, 1)) && a.BodyErr == io.ErrUnexpectedEOF.Error() && x.Second == "closed",
					"Content-Length 101, the 100 bytes, unexpected EOF, connection closed")
			case "length short, flushed":
				check(a.Header.Get("Content-Length") == "8" && a.Body == string(content(7, 0, 1)) && a.BodyErr == io.ErrUnexpectedEOF.Error() && x.Second == "closed",
					"Content-Length 8, the 7 bytes, unexpected EOF, connection closed")
			case "length long, one write":
				check(a.Header.Get("Content-Length") == "99" && a.Body == "" && len(x.Log) == 1 && strings.Contains(x.Log[0], http.ErrContentLength.Error()) && x.Second == "closed",
					"Content-Length 99, no body sent, http.ErrContentLength, connection closed")
			case "length long, flushed":
				check(len(x.Log) == 3 && strings.Contains(x.Log[2], http.ErrContentLength.Error()) && a.Body == string(content(7, 0, 1)) && x.Second == "closed",
					"the 7 bytes before the refused write, http.ErrContentLength, connection closed")
			case "length right", "length zero", "over 64 KiB with length":
				check(a.BodyErr == "" && x.Second == "intact", "the body whole, the connection kept")
			case "204 with length", "304 with length and type":
				check(a.Header.Get("Content-Length") == "" && a.Body == "" && x.Second == "intact", "no Content-Length, no body, the connection kept")
			}
		})
	}
}
