// Package conformancefixture is a stdio MCP server that implements every
// tool, resource, prompt and behaviour the server scenarios of the official
// MCP conformance suite (@modelcontextprotocol/conformance 0.1.16,
// `conformance server --suite all`) ask of the server under test, so that
// the suite can run against the bridge fronting it.
//
// It speaks newline-delimited JSON-RPC 2.0 on stdin/stdout, written by hand
// with encoding/json. Requests are handled concurrently; the server sends
// notifications/progress with the caller's progressToken, notifications/
// message log entries, and its own sampling/createMessage and
// elicitation/create requests, waiting for the client's answers.
//
// Scenario → what the fixture provides (see scenarios.go for the payloads):
//
//	server-initialize              initialize (tools, resources{subscribe,listChanged}, prompts, logging, completions)
//	logging-set-level              logging/setLevel → {} (and log filtering by level)
//	ping                           ping → {}
//	completion-complete            completion/complete for ref/prompt test_prompt_with_arguments and the template
//	tools-list                     tools/list: every tool has name, description, inputSchema
//	tools-call-simple-text         test_simple_text
//	tools-call-image               test_image_content (1×1 PNG)
//	tools-call-audio               test_audio_content (audio/wav)
//	tools-call-embedded-resource   test_embedded_resource
//	tools-call-mixed-content       test_multiple_content_types
//	tools-call-with-logging        test_tool_with_logging (3 info log notifications, 50 ms apart)
//	tools-call-error               test_error_handling (isError: true)
//	tools-call-with-progress       test_tool_with_progress (progress 0, 50, 100 of 100)
//	tools-call-sampling            test_sampling (sampling/createMessage to the client)
//	tools-call-elicitation         test_elicitation (elicitation/create to the client)
//	json-schema-2020-12            json_schema_2020_12_tool ($schema, $defs, additionalProperties)
//	elicitation-sep1034-defaults   test_elicitation_sep1034_defaults
//	elicitation-sep1330-enums      test_elicitation_sep1330_enums
//	server-sse-polling             test_reconnection (answers after ReconnectDelay)
//	server-sse-multiple-streams    concurrent tools/list (nothing special in the child)
//	resources-list                 test://static-text, test://static-binary, test://watched-resource
//	resources-read-text            test://static-text
//	resources-read-binary          test://static-binary
//	resources-templates-read       test://template/{id}/data (+ resources/templates/list)
//	resources-subscribe            resources/subscribe → {} then notifications/resources/updated
//	resources-unsubscribe          resources/unsubscribe → {}
//	prompts-list                   prompts/list
//	prompts-get-simple             test_simple_prompt
//	prompts-get-with-args          test_prompt_with_arguments (arg1, arg2)
//	prompts-get-embedded-resource  test_prompt_with_embedded_resource (resourceUri)
//	prompts-get-with-image         test_prompt_with_image
//	dns-rebinding-protection       HTTP only: the bridge's Host/Origin checks
package conformancefixture

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"time"
)

// EnvVar selects the fixture: when it is "1", Serve runs the server and
// exits instead of returning.
const EnvVar = "STELAE_CONFORMANCE_FIXTURE"

// EnvReconnectDelay overrides how long test_reconnection takes before it
// answers (a Go duration, default DefaultReconnectDelay).
const EnvReconnectDelay = "STELAE_CONFORMANCE_RECONNECT_DELAY"

// DefaultReconnectDelay is how long test_reconnection takes. A stdio server
// cannot close the client's HTTP stream as the suite's reference server does;
// a call that runs longer than the bridge's switch-to-SSE delay (-keepalive,
// 15 s by default) is answered as an SSE stream, so the suite's
// server-sse-polling checks (priming event, retry field) see the bridge's SSE
// path. TestConformanceFixture uses 3 s with -keepalive 2s.
const DefaultReconnectDelay = 16 * time.Second

// Asking lists, as a YAML flow sequence for 'interactive:', the fixture's
// tools and prompts that ask the client things (sampling, elicitation,
// roots) during their calls.
const Asking = `[test_sampling, "test_elicitation*", "test_input_required_result_*", test_missing_capability, test_streaming_elicitation, confirm_delete, multi_input, test_tool_with_task]`

// Command returns how to start the fixture: the running test binary itself
// (whose TestMain calls Serve) with EnvVar set.
func Command() (command string, args []string, env map[string]string) {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	return exe, []string{"-test.run=^$"}, map[string]string{EnvVar: "1"}
}

// Serve runs the fixture on stdin/stdout when EnvVar is "1", then exits the
// process; otherwise it returns at once.
func Serve() {
	if os.Getenv(EnvVar) != "1" {
		return
	}
	opts := Options{ReconnectDelay: DefaultReconnectDelay, Modern: os.Getenv(EnvEra) == "2026"}
	if v := os.Getenv(EnvReconnectDelay); v != "" {
		if d, err := time.ParseDuration(v); err == nil {
			opts.ReconnectDelay = d
		}
	}
	if err := Run(os.Stdin, os.Stdout, opts); err != nil {
		fmt.Fprintln(os.Stderr, "conformance fixture:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// Options tune the fixture.
type Options struct {
	// ReconnectDelay is how long test_reconnection takes.
	ReconnectDelay time.Duration
	// ClientRequestTimeout bounds the wait for the client's answer to a
	// sampling or elicitation request (default 60 s).
	ClientRequestTimeout time.Duration
	// Modern: it speaks MCP 2026-07-28 only (modern.go).
	Modern bool
}

// Run serves one client on r/w until r ends. Requests in flight are
// cancelled when it returns.
func Run(r io.Reader, w io.Writer, opts Options) error {
	if opts.ClientRequestTimeout <= 0 {
		opts.ClientRequestTimeout = 60 * time.Second
	}
	s := &server{
		opts:     opts,
		out:      bufio.NewWriter(w),
		pending:  map[string]chan *message{},
		running:  map[string]context.CancelFunc{},
		subs:     map[string]bool{},
		logLevel: levelDebug,
		modern:   opts.Modern,
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer func() {
		cancel()
		s.wg.Wait()
	}()
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if line = bytes.TrimSpace(line); len(line) > 0 {
			s.receive(ctx, line)
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// message is one JSON-RPC message in either direction.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func (e *rpcError) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

// JSON-RPC and MCP error codes.
const (
	codeParse            = -32700
	codeInvalidRequest   = -32600
	codeMethodNotFound   = -32601
	codeInvalidParams    = -32602
	codeInternal         = -32603
	codeResourceNotFound = -32002
)

// server is the fixture's state.
type server struct {
	opts Options
	wg   sync.WaitGroup

	// outMu guards out: one message per line, never interleaved.
	outMu sync.Mutex
	out   *bufio.Writer

	// mu guards every field below.
	mu sync.Mutex
	// nextID numbers the fixture's own requests to the client.
	nextID int
	// pending maps the id of a request the fixture sent to where its answer goes.
	pending map[string]chan *message
	// running maps the id of a client request being handled to its cancel.
	running map[string]context.CancelFunc
	// clientCaps and protocolVersion come from initialize.
	clientCaps      map[string]json.RawMessage
	protocolVersion string
	// subs is the set of subscribed resource URIs.
	subs map[string]bool
	// logLevel is the minimum level of notifications/message sent.
	logLevel int
	// listens are the open subscriptions/listen (modern.go).
	listens map[string]listenSub
	// modern: it speaks MCP 2026-07-28 only (set once, at the start).
	modern bool
}

// receive handles one line from the client.
func (s *server) receive(ctx context.Context, line []byte) {
	var m message
	if err := json.Unmarshal(line, &m); err != nil || line[0] != '{' {
		s.send(message{JSONRPC: "2.0", ID: json.RawMessage("null"), Error: &rpcError{Code: codeParse, Message: "parse error: not a JSON-RPC object"}})
		return
	}
	switch {
	case m.Method != "" && len(m.ID) > 0:
		rctx, cancel := context.WithCancel(ctx)
		key := idKey(m.ID)
		s.mu.Lock()
		s.running[key] = cancel
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer func() {
				s.mu.Lock()
				delete(s.running, key)
				s.mu.Unlock()
				cancel()
			}()
			s.request(rctx, &m)
		}()
	case m.Method != "":
		s.notification(&m)
	case len(m.ID) > 0:
		s.mu.Lock()
		ch := s.pending[idKey(m.ID)]
		delete(s.pending, idKey(m.ID))
		s.mu.Unlock()
		if ch != nil {
			ch <- &m
		} else {
			fmt.Fprintf(os.Stderr, "conformance fixture: answer to an unknown request %s\n", m.ID)
		}
	default:
		s.send(message{JSONRPC: "2.0", ID: json.RawMessage("null"), Error: &rpcError{Code: codeInvalidRequest, Message: "invalid request: neither method nor id"}})
	}
}

// idKey normalises a JSON-RPC id for map lookups: 7 and "7" stay distinct.
func idKey(id json.RawMessage) string {
	var v any
	if err := json.Unmarshal(id, &v); err != nil {
		return string(id)
	}
	switch x := v.(type) {
	case string:
		return "s:" + x
	case float64:
		return "n:" + strconv.FormatFloat(x, 'g', -1, 64)
	}
	return string(id)
}

func (s *server) notification(m *message) {
	switch m.Method {
	case "notifications/cancelled":
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
			Reason    string          `json:"reason"`
		}
		if json.Unmarshal(m.Params, &p) == nil && len(p.RequestID) > 0 {
			s.mu.Lock()
			cancel := s.running[idKey(p.RequestID)]
			s.mu.Unlock()
			if cancel != nil {
				cancel()
			}
		}
	case "notifications/initialized", "notifications/roots/list_changed", "notifications/progress":
	default:
		fmt.Fprintf(os.Stderr, "conformance fixture: ignoring notification %s\n", m.Method)
	}
}

// send writes one message as one line.
func (s *server) send(m message) {
	m.JSONRPC = "2.0"
	b, err := json.Marshal(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance fixture: marshal:", err)
		return
	}
	s.outMu.Lock()
	defer s.outMu.Unlock()
	s.out.Write(b)
	s.out.WriteByte('\n')
	s.out.Flush()
}

func (s *server) reply(id json.RawMessage, result any) {
	b, err := json.Marshal(result)
	if err != nil {
		s.fail(id, &rpcError{Code: codeInternal, Message: err.Error()})
		return
	}
	s.send(message{ID: id, Result: b})
}

func (s *server) fail(id json.RawMessage, e *rpcError) {
	s.send(message{ID: id, Error: e})
}

// notify sends a notification.
func (s *server) notify(method string, params any) {
	b, _ := json.Marshal(params)
	s.send(message{Method: method, Params: b})
}

// call sends a request to the client and waits for its answer.
func (s *server) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	if e := envOf(ctx); e != nil {
		return e.ask(e.nextKey(), method, params)
	}
	s.mu.Lock()
	s.nextID++
	id := fmt.Sprintf("fixture-%d", s.nextID)
	s.mu.Unlock()
	return s.callID(ctx, id, method, params)
}

// callID sends the client a request with the given (string) id and waits
// for its answer; a request given up on is cancelled at the client.
func (s *server) callID(ctx context.Context, idText, method string, params any) (json.RawMessage, error) {
	if e := envOf(ctx); e != nil {
		return e.ask(idText, method, params)
	}
	b, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	id := json.RawMessage(strconv.Quote(idText))
	ch := make(chan *message, 1)
	s.mu.Lock()
	s.pending[idKey(id)] = ch
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.pending, idKey(id))
		s.mu.Unlock()
	}()
	s.send(message{ID: id, Method: method, Params: b})
	t := time.NewTimer(s.opts.ClientRequestTimeout)
	defer t.Stop()
	select {
	case r := <-ch:
		if r.Error != nil {
			return nil, r.Error
		}
		return r.Result, nil
	case <-ctx.Done():
		s.notify("notifications/cancelled", map[string]any{"requestId": id, "reason": "the tool call that needed it was cancelled"})
		return nil, ctx.Err()
	case <-t.C:
		s.notify("notifications/cancelled", map[string]any{"requestId": id, "reason": "no answer in time"})
		return nil, fmt.Errorf("no answer to %s within %s", method, s.opts.ClientRequestTimeout)
	}
}

// Log levels of notifications/message, least severe first.
const (
	levelDebug = iota
	levelInfo
	levelNotice
	levelWarning
	levelError
	levelCritical
	levelAlert
	levelEmergency
)

var levels = map[string]int{
	"debug": levelDebug, "info": levelInfo, "notice": levelNotice, "warning": levelWarning,
	"error": levelError, "critical": levelCritical, "alert": levelAlert, "emergency": levelEmergency,
}

// log sends notifications/message when level is at or above the set level
// (a 2026-07-28 request's own, none when it named none).
func (s *server) log(ctx context.Context, level, text string) {
	s.mu.Lock()
	min := s.logLevel
	s.mu.Unlock()
	if e := envOf(ctx); e != nil {
		min = e.logLevel
	}
	if min < 0 || levels[level] < min {
		return
	}
	s.notify("notifications/message", map[string]any{"level": level, "logger": "conformance-fixture", "data": text})
}

// clientCan reports whether the client declared a capability in initialize.
func (s *server) clientCan(ctx context.Context, capability string) bool {
	if e := envOf(ctx); e != nil {
		_, ok := e.caps[capability]
		return ok
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.clientCaps[capability]
	return ok
}

// sleep waits d or until ctx ends; it reports whether the full time passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
