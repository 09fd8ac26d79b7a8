// Package fakemcp is a scripted stdio MCP server for tests. A test binary
// calls Serve from TestMain so that it can re-execute itself as the child:
// Command returns the command line and environment for a given mode.
package fakemcp

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// EnvMode selects the fake server's behaviour; when it is set, Serve runs the
// server instead of returning.
const EnvMode = "STELAE_FAKE_MCP"

// EnvExtraTools, a number N, makes the server list N more tools ("extra001"
// …), which it does not answer (a profile of many tools).
const EnvExtraTools = "STELAE_FAKE_EXTRA_TOOLS"

// Modes.
const (
	// ModeServer is the full scripted server (see the tools below).
	ModeServer = "server"
	// ModeEcho answers every request at once with its "text" argument as a
	// text block (an empty result when it has none): the benchmark child.
	ModeEcho = "echo"
	// ModeEchoModern is ModeEcho speaking MCP 2026-07-28 only: it
	// answers server/discover, refuses initialize, and marks its results
	// complete (BenchmarkEchoChildEras).
	ModeEchoModern = "echo-modern"
	// ModeHTTPEcho serves the echo child's answers over HTTP itself, on a
	// loopback port it prints on stdout ("listening http://ADDR"), until
	// its stdin closes: the benchmarks' HTTP echo floor (no stdio hop).
	ModeHTTPEcho = "http-echo"
	// ModeRawHTTPEcho is ModeHTTPEcho on a minimal hand-written HTTP/1.1
	// server (keep-alive, Content-Length bodies, no background read, no
	// header map): what HTTP could cost without net/http, for the
	// benchmark that weighs replacing it.
	ModeRawHTTPEcho = "raw-http-echo"
	// ModeExitAtStart exits with status 3 before reading anything.
	ModeExitAtStart = "exit-at-start"
	// ModeStubborn ignores SIGTERM and stdin EOF: only SIGKILL stops it.
	ModeStubborn = "stubborn"
	// ModeSleeper sleeps forever: a grandchild.
	ModeSleeper = "sleeper"
	// ModeNoisy logs to stdout and never answers: for every line it
	// reads it writes a line that is not JSON-RPC (a server that logs to
	// stdout, or a command that is not an MCP server), until stdin closes.
	ModeNoisy = "noisy"
)

// Settings of the scripted server, read from its environment.
const (
	// EnvStopDelay delays the server's exit after its stdin ends by this
	// many milliseconds (a child slow to stop; it still exits on SIGTERM).
	EnvStopDelay = "STELAE_FAKE_STOP_DELAY_MS"
	// EnvStartDelay delays the server's start by this many milliseconds (a
	// slow npx download).
	EnvStartDelay = "STELAE_FAKE_START_DELAY_MS"
	// EnvInitVersions lists the protocol versions the server accepts in
	// initialize (comma-separated); any other is answered with an error.
	// "none" refuses every initialize.
	EnvInitVersions = "STELAE_FAKE_INIT_VERSIONS"
	// EnvRootsOnInit makes the server ask for roots/list as soon as it is
	// initialized, as server-filesystem does; the answer shows in stats.
	EnvRootsOnInit = "STELAE_FAKE_ROOTS_ON_INIT"
	// EnvJournal names a file the server appends a line to when it starts
	// ("start PID UNIXNANO"), just before a scripted exit ("exit PID
	// UNIXNANO"), and when ask_later got its answer ("asked PID UNIXNANO
	// ANSWER"): tests read these from the child itself, not from the
	// bridge's log.
	EnvJournal = "STELAE_FAKE_JOURNAL"
)

// journal appends one event to the EnvJournal file, when there is one.
func journal(event string) { journalNote(event, "") }

// journalNote appends an event with a note (one line; newlines become
// spaces).
func journalNote(event, note string) {
	path := os.Getenv(EnvJournal)
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return
	}
	// One write of one short line: O_APPEND keeps concurrent children's
	// lines whole.
	note = strings.ReplaceAll(note, "\n", " ")
	_, _ = fmt.Fprintf(f, "%s %d %d %s\n", event, os.Getpid(), time.Now().UnixNano(), note)
	_ = f.Close()
}

// exit records the exit in the journal and exits.
func exit(code int) {
	journal("exit")
	os.Exit(code)
}

// Command returns how to start the fake server in mode: the running test
// binary itself, with the mode in the environment.
func Command(mode string) (command string, args []string, env map[string]string) {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	return exe, []string{"-test.run=^$"}, map[string]string{EnvMode: mode}
}

// NoExitSleep makes the processes this one starts from now on — this test
// binary as a fake server, a reaper, a conformance fixture — exit at once:
// a -race binary sleeps a second in the race runtime's exit hook
// (GORACE atexit_sleep_ms, default 1000), so every child that stops by
// itself would wait out the bridge's stop grace and be signalled, every
// stop taking that long. Call it first in TestMain.
func NoExitSleep() {
	if g := os.Getenv("GORACE"); !strings.Contains(g, "atexit_sleep_ms") {
		os.Setenv("GORACE", strings.TrimSpace(g+" atexit_sleep_ms=0"))
	}
}

// Serve runs the fake server when EnvMode is set, then exits the process. It
// returns at once otherwise.
func Serve() {
	mode := os.Getenv(EnvMode)
	if mode == "" {
		return
	}
	if mode != ModeSleeper {
		journal("start")
	}
	switch mode {
	case ModeExitAtStart:
		fmt.Fprintln(os.Stderr, "fake: exiting at start as scripted")
		exit(3)
	case ModeSleeper:
		time.Sleep(time.Hour)
		os.Exit(0)
	case ModeNoisy:
		sc := bufio.NewScanner(os.Stdin)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			fmt.Println("Server running on stdio, waiting for requests")
		}
		os.Exit(0)
	case ModeEcho:
		echo(os.Stdin, os.Stdout, false)
		os.Exit(0)
	case ModeEchoModern:
		echo(os.Stdin, os.Stdout, true)
		os.Exit(0)
	case ModeGoSDK:
		goSDKServer()
		os.Exit(0)
	case ModeHTTPEcho:
		httpEcho()
		os.Exit(0)
	case ModeRawHTTPEcho:
		rawHTTPEcho()
		os.Exit(0)
	case ModeTortureSlow, ModeTortureShuffle, ModeTortureSequential, ModeTortureModern:
		torture(mode)
		os.Exit(0)
	case ModeServer, ModeStubborn:
		if ms, err := strconv.Atoi(os.Getenv(EnvStartDelay)); err == nil {
			time.Sleep(time.Duration(ms) * time.Millisecond)
		}
		s := newServer(os.Stdout)
		if mode == ModeStubborn {
			signal.Ignore(syscall.SIGTERM)
		}
		s.run(os.Stdin)
		if mode == ModeStubborn {
			time.Sleep(time.Hour)
		}
		if ms, err := strconv.Atoi(os.Getenv(EnvStopDelay)); err == nil {
			time.Sleep(time.Duration(ms) * time.Millisecond)
		}
		os.Exit(0)
	}
	fmt.Fprintln(os.Stderr, "fake: unknown mode", mode)
	os.Exit(2)
}

// echo answers each request line with {"jsonrpc":"2.0","id":ID,"result":{}}
// (initialize with a minimal result), reading the id without a full decode.
func echo(r io.Reader, w io.Writer, modern bool) {
	br := bufio.NewReaderSize(r, 64<<10)
	bw := bufio.NewWriterSize(w, 64<<10)
	var out []byte
	for {
		line, err := ReadLine(br)
		if err != nil {
			return
		}
		if idOf(line) == nil {
			continue // a notification
		}
		if modern {
			out = append(echoModernAnswer(out[:0], line), '\n')
		} else {
			out = append(echoAnswer(out[:0], line), '\n')
		}
		bw.Write(out)
		if br.Buffered() == 0 {
			bw.Flush()
		}
	}
}

// ReadLine reads one line from br without copying it when it fits br's
// buffer (the slice is valid until the next read), gathering a longer one.
func ReadLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if !errors.Is(err, bufio.ErrBufferFull) {
		return line, err
	}
	long := append([]byte(nil), line...)
	for errors.Is(err, bufio.ErrBufferFull) {
		line, err = br.ReadSlice('\n')
		long = append(long, line...)
	}
	return long, err
}

// echoAnswer appends the echo child's answer to a request line: its id,
// and as the result a text block with the request's "text" argument as
// written ({} when it has none; initialize gets a minimal result).
func echoAnswer(out, line []byte) []byte {
	out = append(out, `{"jsonrpc":"2.0","id":`...)
	out = append(out, idOf(line)...)
	if strings.Contains(string(line[:min(len(line), 80)]), `"initialize"`) {
		return append(out, `,"result":{"protocolVersion":"2025-03-26","capabilities":{},"serverInfo":{"name":"echo","version":"1"}}}`...)
	}
	const key = `"text":"`
	i := bytes.Index(line, []byte(key))
	if i < 0 {
		return append(out, `,"result":{}}`...)
	}
	start := i + len(key)
	end := start
	for end < len(line) && line[end] != '"' {
		if line[end] == '\\' {
			end++
		}
		end++
	}
	out = append(out, `,"result":{"content":[{"type":"text","text":"`...)
	out = append(out, line[start:min(end, len(line))]...)
	return append(out, `"}]}}`...)
}

// echoModernAnswer is echoAnswer of a child that speaks MCP 2026-07-28
// only.
func echoModernAnswer(out, line []byte) []byte {
	head := string(line[:min(len(line), 80)])
	switch {
	case strings.Contains(head, `"server/discover"`):
		out = append(append(append(out, `{"jsonrpc":"2.0","id":`...), idOf(line)...), `,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"echo-modern","version":"1"}}}}`...)
		return out
	case strings.Contains(head, `"initialize"`):
		out = append(append(append(out, `{"jsonrpc":"2.0","id":`...), idOf(line)...), `,"error":{"code":-32022,"message":"Unsupported protocol version","data":{"supported":["2026-07-28"]}}}`...)
		return out
	}
	start := len(out)
	out = echoAnswer(out, line)
	// The result, marked complete: {"result":{ → {"result":{"resultType":"complete",
	i := bytes.Index(out[start:], []byte(`"result":{`))
	if i < 0 {
		return out
	}
	at := start + i + len(`"result":{`)
	mark := `"resultType":"complete"`
	if out[at] != '}' {
		mark += ","
	}
	out = append(out, mark...)
	copy(out[at+len(mark):], out[at:len(out)-len(mark)])
	copy(out[at:], mark)
	return out
}

// httpEcho is the echo child's work answered over HTTP: the same
// answer (echoAnswer), written with net/http's defaults (one write carries
// headers and body; Content-Length set for a long one, as the bridge does).
func httpEcho() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake: listen:", err)
		os.Exit(1)
	}
	bufs := sync.Pool{New: func() any { return new(bytes.Buffer) }}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in := bufs.Get().(*bytes.Buffer)
		defer bufs.Put(in)
		in.Reset()
		if _, err := in.ReadFrom(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		out := echoAnswer(make([]byte, 0, 96), in.Bytes())
		w.Header().Set("Content-Type", "application/json")
		if len(out) > 2048 {
			w.Header().Set("Content-Length", strconv.Itoa(len(out)))
		}
		_, _ = w.Write(out)
	})}
	go func() { _ = srv.Serve(ln) }()
	fmt.Printf("listening http://%s\n", ln.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin) // until the test closes stdin
	_ = srv.Close()
}

// rawHTTPEcho serves the echo over a minimal HTTP/1.1 server: one
// goroutine per connection reading requests with a 4 KiB bufio.Reader,
// parsing only the request line's end and Content-Length, and writing each
// answer with one write.
func rawHTTPEcho() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake: listen:", err)
		os.Exit(1)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go rawHTTPConn(c)
		}
	}()
	fmt.Printf("listening http://%s\n", ln.Addr())
	_, _ = io.Copy(io.Discard, os.Stdin)
	_ = ln.Close()
}

func rawHTTPConn(c net.Conn) {
	defer c.Close()
	br := bufio.NewReaderSize(c, 4<<10)
	var body, out []byte
	for {
		length := -1
		for first := true; ; first = false {
			line, err := br.ReadSlice('\n')
			if err != nil {
				return
			}
			if first {
				continue // POST /path HTTP/1.1
			}
			if len(line) <= 2 {
				break
			}
			if len(line) > 15 && strings.EqualFold(string(line[:15]), "Content-Length:") {
				length, _ = strconv.Atoi(strings.TrimSpace(string(line[15:])))
			}
		}
		if length < 0 || length > 1<<20 {
			return
		}
		if cap(body) < length {
			body = make([]byte, length)
		}
		body = body[:length]
		if _, err := io.ReadFull(br, body); err != nil {
			return
		}
		answer := echoAnswer(make([]byte, 0, 96), body)
		out = append(out[:0], "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "...)
		out = strconv.AppendInt(out, int64(len(answer)), 10)
		out = append(append(out, "\r\n\r\n"...), answer...)
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}

// idOf finds the value of the top-level "id" in a bridge-written line, where
// it follows {"jsonrpc":"2.0",.
func idOf(line []byte) []byte {
	const key = `"id":`
	i := strings.Index(string(line), key)
	if i < 0 {
		return nil
	}
	rest := line[i+len(key):]
	end := 0
	for end < len(rest) && rest[end] != ',' && rest[end] != '}' {
		end++
	}
	return rest[:end]
}

type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

// server is the scripted server's state.
type server struct {
	// outMu guards out.
	outMu sync.Mutex
	out   *bufio.Writer

	// mu guards every field below.
	mu          sync.Mutex
	inits       int
	initParams  json.RawMessage
	cancelled   []json.RawMessage
	subscribes  map[string]int
	nextID      int
	waiting     map[string]waiter
	notifsSeen  []string
	grandchilds []int
	// hogged is what the hog tool holds.
	hogged [][]byte
	// initVersions are the protocolVersions of every initialize received.
	initVersions []string
	// rootsAtInit is the answer to the roots/list sent after initialized.
	rootsAtInit json.RawMessage
	// lastAsk is the answer to the last request "ask_later" sent.
	lastAsk json.RawMessage
	// calls are the names of the tools called, in order of arrival.
	calls []string
}

func newServer(w io.Writer) *server {
	return &server{out: bufio.NewWriter(w), subscribes: map[string]int{}, waiting: map[string]waiter{}}
}

func (s *server) send(v any) {
	b, _ := json.Marshal(v)
	s.sendRaw(b)
}

func (s *server) sendRaw(b []byte) {
	s.outMu.Lock()
	defer s.outMu.Unlock()
	s.out.Write(b)
	s.out.WriteByte('\n')
	s.out.Flush()
}

func (s *server) reply(id json.RawMessage, result any) {
	s.send(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

func (s *server) run(r io.Reader) {
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		line, err := br.ReadBytes('\n')
		if len(strings.TrimSpace(string(line))) > 0 {
			var m message
			if json.Unmarshal(line, &m) != nil {
				fmt.Fprintf(os.Stderr, "fake: bad line from bridge: %q\n", line)
			} else {
				s.handle(m)
			}
		}
		if err != nil {
			return
		}
	}
}

func (s *server) handle(m message) {
	switch {
	case m.Method == "" && len(m.ID) > 0:
		// A response to one of our requests.
		s.mu.Lock()
		w, ok := s.waiting[string(m.ID)]
		delete(s.waiting, string(m.ID))
		// Whether the call that asked was cancelled before this answer
		// came, in the order the bridge wrote them (this loop reads
		// stdin in order).
		stopped := w.call != nil && s.cancelledLocked(w.call)
		s.mu.Unlock()
		if ok {
			w.ch <- answer{message: m, stopped: stopped}
		}
	case len(m.ID) == 0:
		if m.Method == "notifications/initialized" && os.Getenv(EnvRootsOnInit) != "" {
			go func() {
				r := s.ask("roots/list", nil)
				s.mu.Lock()
				s.rootsAtInit = append(r.Result, r.Error...)
				s.mu.Unlock()
			}()
		}
		s.mu.Lock()
		s.notifsSeen = append(s.notifsSeen, m.Method)
		if m.Method == "notifications/cancelled" {
			var p struct {
				RequestID json.RawMessage `json:"requestId"`
			}
			json.Unmarshal(m.Params, &p)
			s.cancelled = append(s.cancelled, p.RequestID)
			journalNote("cancelled", string(p.RequestID))
		}
		s.mu.Unlock()
	default:
		go s.request(m)
	}
}

func (s *server) request(m message) {
	switch m.Method {
	case "initialize":
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		json.Unmarshal(m.Params, &p)
		s.mu.Lock()
		s.initVersions = append(s.initVersions, p.ProtocolVersion)
		s.mu.Unlock()
		if accepted := os.Getenv(EnvInitVersions); accepted != "" && !strings.Contains(","+accepted+",", ","+p.ProtocolVersion+",") {
			fmt.Fprintf(os.Stderr, "fake: refusing initialize at %s\n", p.ProtocolVersion)
			s.send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32602, "message": "unsupported protocol version " + p.ProtocolVersion}})
			return
		}
		s.mu.Lock()
		s.inits++
		s.initParams = m.Params
		s.mu.Unlock()
		s.reply(m.ID, map[string]any{
			"protocolVersion": p.ProtocolVersion,
			"capabilities":    map[string]any{"tools": map[string]any{"listChanged": true}, "resources": map[string]any{"subscribe": true}},
			"serverInfo":      map[string]any{"name": "fakemcp", "version": "1.0.0"},
		})
	case "tools/list":
		tools := []map[string]any{}
		for _, n := range []string{"echo", "whoami", "slow", "never", "progress", "sample", "list_changed", "crash", "big", "garbage", "spawn_grandchild", "stats", "notify", "search", "fetch", "ask", "ask_later", "stderr", "getenv", "hog", "fork_bomb", "traced"} {
			tool := map[string]any{"name": n, "description": "fake " + n, "inputSchema": map[string]any{"type": "object"}}
			switch n {
			case "slow", "never", "ask":
				// May run as tasks (MCP 2025-11-25 execution.taskSupport);
				// task_only must.
				tool["execution"] = map[string]any{"taskSupport": "optional"}
			}
			tools = append(tools, tool)
		}
		tools = append(tools, map[string]any{"name": "task_only", "description": "fake task_only (slow, as a task only)",
			"inputSchema": map[string]any{"type": "object"}, "execution": map[string]any{"taskSupport": "required"}})
		extra, _ := strconv.Atoi(os.Getenv(EnvExtraTools))
		for i := 1; i <= extra; i++ {
			tools = append(tools, map[string]any{"name": fmt.Sprintf("extra%03d", i), "description": "fake extra tool", "inputSchema": map[string]any{"type": "object"}})
		}
		s.reply(m.ID, map[string]any{"tools": tools})
	case "resources/subscribe", "resources/unsubscribe":
		var p struct {
			URI string `json:"uri"`
		}
		json.Unmarshal(m.Params, &p)
		s.mu.Lock()
		if m.Method == "resources/subscribe" {
			s.subscribes[p.URI]++
		} else {
			s.subscribes[p.URI]--
		}
		s.mu.Unlock()
		s.reply(m.ID, map[string]any{})
	case "tools/call":
		s.call(m)
	default:
		s.send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": "method not found: " + m.Method}})
	}
}

// answer is a client's answer to a request the server sent.
type answer struct {
	message
	requestID json.RawMessage // the id the server gave its request
	// stopped: the call that asked (askFor) had been cancelled when the
	// answer came.
	stopped bool
}

// waiter is a request the server sent, waiting for its answer: ch gets
// it; call is the id of the client call it was sent for (nil: none).
type waiter struct {
	ch   chan answer
	call json.RawMessage
}

// cancelledLocked reports whether the client cancelled its request id.
// s.mu must be held.
func (s *server) cancelledLocked(id json.RawMessage) bool {
	for _, c := range s.cancelled {
		if string(c) == string(id) {
			return true
		}
	}
	return false
}

// ask sends a request to the client and waits (20 s at most) for its answer.
func (s *server) ask(method string, params any) answer { return s.askFor(nil, method, params) }

// askFor is ask for the client call call.
func (s *server) askFor(call json.RawMessage, method string, params any) answer {
	s.mu.Lock()
	s.nextID++
	id := json.RawMessage(fmt.Sprintf(`"fake-%d"`, s.nextID))
	ch := make(chan answer, 1)
	s.waiting[string(id)] = waiter{ch: ch, call: call}
	s.mu.Unlock()
	req := map[string]any{"jsonrpc": "2.0", "id": id, "method": method}
	if params != nil {
		req["params"] = params
	}
	s.send(req)
	select {
	case r := <-ch:
		r.requestID = id
		return r
	case <-time.After(20 * time.Second):
		return answer{message: message{Error: json.RawMessage(`{"code":-1,"message":"no answer within 20s"}`)}, requestID: id}
	}
}

// orNull is raw, or null when empty.
func orNull(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("null")
	}
	return raw
}

func text(t string) map[string]any {
	return map[string]any{"content": []map[string]any{{"type": "text", "text": t}}}
}

// answered is a tool result carrying fields at its top level (where the
// tests read them) and, so that it is a valid CallToolResult for strict
// clients, the same fields as JSON in a text block.
func answered(fields map[string]any) map[string]any {
	b, _ := json.Marshal(fields)
	out := text(string(b))
	for k, v := range fields {
		out[k] = v
	}
	return out
}

func (s *server) call(m message) {
	var p struct {
		Name      string         `json:"name"`
		Arguments map[string]any `json:"arguments"`
		Meta      struct {
			ProgressToken json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
	}
	json.Unmarshal(m.Params, &p)
	s.mu.Lock()
	s.calls = append(s.calls, p.Name)
	s.mu.Unlock()
	arg := func(k string) string { v, _ := p.Arguments[k].(string); return v }
	num := func(k string) int { v, _ := p.Arguments[k].(float64); return int(v) }
	switch p.Name {
	case "echo":
		s.reply(m.ID, text(arg("text")))
	case "fail":
		// A tool's failure: a result marked isError (not listed).
		s.reply(m.ID, map[string]any{"content": []any{map[string]any{"type": "text", "text": arg("text")}}, "isError": true})
	case "params":
		// Answers with the params it got, as text, byte for byte.
		s.reply(m.ID, text(string(m.Params)))
	case "traced":
		// Works in a span of its own, under the request's trace (traced.go).
		s.reply(m.ID, text(tracedWork(m.Params)))
	case "search":
		// The shape ChatGPT's deep-research connectors expect: a JSON text
		// with results of id, title, url.
		res, _ := json.Marshal(map[string]any{"results": []map[string]string{{"id": "doc-1", "title": "About " + arg("query"), "url": "https://example.com/doc-1"}}})
		s.reply(m.ID, text(string(res)))
	case "fetch":
		doc, _ := json.Marshal(map[string]string{"id": arg("id"), "title": "Document " + arg("id"), "text": "full text of " + arg("id"), "url": "https://example.com/" + arg("id")})
		s.reply(m.ID, text(string(doc)))
	case "getenv":
		// The value of the environment variable "name" in this child
		// (a user's credential, in the tests of 'isolation: user').
		v, ok := os.LookupEnv(arg("name"))
		if arg("digest") == "sha256" {
			// Only its digest: the value never travels back (a test that
			// searches for it everywhere else).
			sum := sha256.Sum256([]byte(v))
			v = hex.EncodeToString(sum[:])
		}
		s.reply(m.ID, answered(map[string]any{"value": v, "set": ok, "pid": os.Getpid()}))
	case "whoami":
		s.mu.Lock()
		inits := s.inits
		s.mu.Unlock()
		s.reply(m.ID, answered(map[string]any{"pid": os.Getpid(), "inits": inits, "upstream_id": m.ID}))
	case "stats":
		s.mu.Lock()
		defer s.mu.Unlock()
		s.reply(m.ID, answered(map[string]any{"pid": os.Getpid(), "inits": s.inits, "cancelled": s.cancelled, "subscribes": s.subscribes, "notifications": s.notifsSeen, "init_params": s.initParams, "grandchildren": s.grandchilds, "init_versions": s.initVersions, "roots_at_init": s.rootsAtInit, "last_ask": s.lastAsk, "calls": s.calls}))
	case "slow", "task_only":
		time.Sleep(time.Duration(num("ms")) * time.Millisecond)
		s.reply(m.ID, text(arg("text")))
	case "never":
		// Never answers.
	case "progress":
		for i := 1; i <= num("steps"); i++ {
			s.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress", "params": map[string]any{"progressToken": p.Meta.ProgressToken, "progress": i, "total": num("steps")}})
			time.Sleep(time.Duration(num("ms")) * time.Millisecond)
		}
		s.reply(m.ID, text("done"))
	case "notify":
		// A notification to every session, e.g. resources/updated or
		// message; "count" of them (default 1).
		method := arg("method")
		var params any
		if u := arg("uri"); u != "" {
			params = map[string]any{"uri": u}
		}
		for range max(num("count"), 1) {
			s.send(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
		}
		s.reply(m.ID, text("sent"))
	case "log":
		// Sends "count" log messages of level "level" (default info) whose
		// data is "tag", "ms" milliseconds apart, each after a progress
		// notification when the call has a progress token; then answers.
		// With "later" set to 1 it answers first: the lines come when the
		// call is no longer in flight.
		if num("later") == 1 {
			s.reply(m.ID, text("logging later"))
		}
		level := arg("level")
		if level == "" {
			level = "info"
		}
		for i := 1; i <= num("count"); i++ {
			if p.Meta.ProgressToken != nil {
				s.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress", "params": map[string]any{"progressToken": p.Meta.ProgressToken, "progress": i, "message": arg("tag")}})
			}
			s.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/message", "params": map[string]any{"level": level, "logger": "fake", "data": arg("tag")}})
			time.Sleep(time.Duration(num("ms")) * time.Millisecond)
		}
		if num("later") != 1 {
			s.reply(m.ID, text("logged "+arg("tag")))
		}
	case "list_changed":
		s.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
		s.reply(m.ID, text("sent"))
	case "sample":
		r := s.ask("sampling/createMessage", map[string]any{
			"messages": []map[string]any{{"role": "user", "content": map[string]any{"type": "text", "text": arg("prompt")}}}, "maxTokens": 10})
		s.reply(m.ID, answered(map[string]any{"child_request_id": r.requestID, "answer": r.Result, "error": r.Error}))
	case "ask":
		// Sends the request named by "method" (roots/list,
		// elicitation/create, …) to the client, after "ms" milliseconds,
		// and answers with the reply.
		if ms := num("ms"); ms > 0 {
			journal("asking") // a test can start another call meanwhile
			time.Sleep(time.Duration(ms) * time.Millisecond)
		}
		// With "careful", it stops as a careful server does: when the
		// answer comes, it looks whether the call was cancelled by then
		// and if so does not answer; else it finishes its work ("work_ms"
		// milliseconds) and answers.
		var params any
		if p := arg("params"); p != "" {
			params = json.RawMessage(p)
		}
		r := s.askFor(m.ID, arg("method"), params)
		if careful, _ := p.Arguments["careful"].(bool); careful {
			if r.stopped {
				journal("stopped")
				return
			}
			time.Sleep(time.Duration(num("work_ms")) * time.Millisecond)
		}
		// With "then", it asks a second time, that method (a second
		// round), once the first is answered, and answers with both.
		if then := arg("then"); then != "" && r.Error == nil {
			first := r
			r = s.askFor(m.ID, then, json.RawMessage(arg("then_params")))
			r.Result = json.RawMessage(fmt.Sprintf(`{"first":%s,"second":%s}`, first.Result, orNull(r.Result)))
		}
		if p.Meta.ProgressToken != nil {
			s.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress", "params": map[string]any{"progressToken": p.Meta.ProgressToken, "progress": 1, "message": "answered"}})
		}
		s.reply(m.ID, answered(map[string]any{"answer": r.Result, "error": r.Error}))
	case "stderr":
		// Writes its text, line by line, to stderr.
		fmt.Fprintln(os.Stderr, arg("text"))
		s.reply(m.ID, text("written"))
	case "ask_later":
		// Answers at once, then sends the request named by "method" after
		// "ms" milliseconds, when the call is no longer in flight; the
		// answer shows in stats as last_ask.
		s.reply(m.ID, text("scheduled"))
		time.Sleep(time.Duration(num("ms")) * time.Millisecond)
		r := s.ask(arg("method"), nil)
		s.mu.Lock()
		s.lastAsk = append(append(json.RawMessage(nil), r.Result...), r.Error...)
		note := string(s.lastAsk)
		s.mu.Unlock()
		// Also in the journal: a test can read it without a call that
		// could itself become the addressee of a later request.
		journalNote("asked", note)
	case "crash":
		exit(7)
	case "big":
		n := num("bytes")
		pad := strings.Repeat("x", n)
		s.sendRaw([]byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"%s"}]}}`, m.ID, pad)))
	case "garbage":
		s.sendRaw([]byte("this is not json {"))
		s.sendRaw([]byte(`{"jsonrpc":"2.0","id":999999999,"result":{}}`))
		s.reply(m.ID, text("after garbage"))
	case "hog":
		// Takes mib MiB and touches every page, as a leaking server
		// does; under a memory cap the kernel stops the child here.
		b := make([]byte, num("mib")<<20)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		s.mu.Lock()
		s.hogged = append(s.hogged, b)
		s.mu.Unlock()
		s.reply(m.ID, text(fmt.Sprintf("holding %d MiB", len(b)>>20)))
	case "fork_bomb":
		// A grandchild shell that starts processes until the system
		// refuses: it reports "held" when a fork failed. The child
		// answers with its cgroup's pids counters (Linux, cgroup v1),
		// then ends the bomb.
		cmd := exec.Command("/bin/sh", "-c", "(while :; do sleep 300 >/dev/null 2>&1 & done) 2>/dev/null; echo held")
		cmd.SysProcAttr = bombAttr()
		out, err := cmd.Output()
		counters := pidsCounters()
		killBomb(cmd)
		s.reply(m.ID, text(fmt.Sprintf("%s; %v; %s", strings.TrimSpace(string(out)), err, counters)))
	case "spawn_grandchild":
		exe, _ := os.Executable()
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), EnvMode+"="+ModeSleeper)
		if b, _ := p.Arguments["setsid"].(bool); b {
			// Out of the child's process group and session, as a
			// daemonizing helper goes.
			cmd.SysProcAttr = setsidAttr()
		}
		if err := cmd.Start(); err != nil {
			s.reply(m.ID, text("spawn failed: "+err.Error()))
			return
		}
		s.mu.Lock()
		s.grandchilds = append(s.grandchilds, cmd.Process.Pid)
		s.mu.Unlock()
		s.reply(m.ID, map[string]any{"pid": cmd.Process.Pid})
	default:
		s.send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32602, "message": "unknown tool " + p.Name}})
	}
}
