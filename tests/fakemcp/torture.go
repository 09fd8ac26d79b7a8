package fakemcp

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The torture child: the stdio server of the cross-user torture test
// (tests/torture_test.go). It serves one tool, TortureTool, whose answer
// proves what the child received: the sha256 of the raw bytes of the call's
// "arguments" and the call's tag, and a text derived from the tag
// (TortureText). Everything else it sends for a call — progress, log lines,
// sampling and elicitation requests — carries the call's tag, so a client
// can tell whose it is.
//
// It writes to its journal (EnvJournal), besides "start" and "exit":
// "badline" for a line that is not a JSON-RPC message (a message cut short
// or spliced with another), "dup TAG" for a tag received twice, "wrong TAG
// GOT" when a request it sent for TAG was answered for GOT, and
// "cancelled TAG" when the bridge cancels a call (it answers half of them
// with an error, and never answers the others); and "ask TAG ID" as it
// sends a request for TAG, "refused TAG ERROR" when the request was
// answered with an error, "unanswered TAG" when it was not answered
// within 30 s; and, as it starts with EnvTortureSecret set, "credential
// DIGEST" (the digest TortureResult.Secret reports).

// Torture modes.
const (
	// ModeTortureSlow reads its stdin slowly: it sleeps 0–3 ms after each
	// line and stalls 100–400 ms every 20–80 lines, so that the bridge's
	// stdin queue fills up and batches many messages at once.
	ModeTortureSlow = "torture-slow"
	// ModeTortureShuffle reads at full speed, handles every request at
	// once and answers each after a random delay (0–15 ms, twice), so its
	// answers and notifications come out of order.
	ModeTortureShuffle = "torture-shuffle"
	// ModeTortureSequential is a server of the simplest kind: one loop
	// reads a message, handles it and writes what it has to write before
	// it reads the next; a request it sends to the client is not waited
	// for (Asked is "sent"). Its stdin is a pipe of one page (4 KiB, on
	// Linux), so that one request fills it; a call with WaitStdin stalls
	// until that many bytes wait on stdin, one with HoldMS stalls that
	// long (reading nothing either way).
	ModeTortureSequential = "torture-sequential"
	// ModeTortureModern is ModeTortureShuffle speaking MCP 2026-07-28
	// only (issue 38): it answers server/discover and refuses
	// initialize; its log lines go only to calls whose _meta names a
	// level; what it asks comes back as the call's answer
	// (input_required, the tag in its requestState), and the retry's
	// answer is checked as a 2025 answer is ("wrong TAG GOT").
	ModeTortureModern = "torture-modern"
)

// EnvTortureSecret is the torture child's credential (a user's own, on a
// destination with a child per user): its answers report its digest
// (TortureResult.Secret), never its value.
const EnvTortureSecret = "TORTURE_SECRET"

// The torture child's tools: TortureTool, and TortureAskTool, which does
// the same under another name, so that a destination can name it in
// 'interactive:' (the tools that ask their clients things).
const (
	TortureTool    = "torture"
	TortureAskTool = "torture_asks"
)

// TortureArgs are TortureTool's arguments.
type TortureArgs struct {
	// Tag names the call and its user (tests/torture_test.go); it is
	// made of letters, digits and ".@#-".
	Tag string `json:"tag"`
	// Pad is filler that gives the request its size.
	Pad string `json:"pad,omitempty"`
	// Answer is the length of the answer's text (TortureText).
	Answer int `json:"answer,omitempty"`
	// Progress is how many progress notifications to send (when the call
	// has a progress token), each with the tag as its message; Logs how
	// many log lines (notifications/message), each with the tag as data.
	Progress int `json:"progress,omitempty"`
	Logs     int `json:"logs,omitempty"`
	// Ask is "sampling" or "elicitation": the child sends that request,
	// with the tag in it, and waits for its answer.
	Ask string `json:"ask,omitempty"`
	// HoldMS: the call sends one progress notification (message: the tag)
	// and then waits this long, or until it is cancelled, before it
	// answers.
	HoldMS int `json:"hold_ms,omitempty"`
	// Exit makes the child exit (status 7) as it receives the call.
	Exit bool `json:"exit,omitempty"`
	// IgnoreCancelMS: the call sends one progress notification (message:
	// the tag), then goes on with its work this many milliseconds later
	// whether it was cancelled or not — as a server does that does not
	// implement cancellation, or is slow to notice it.
	IgnoreCancelMS int `json:"ignore_cancel_ms,omitempty"`
	// WaitStdin (ModeTortureSequential): before anything else the call
	// waits, reading nothing, until this many bytes wait on stdin (20 s
	// at most); its journal says "stalling TAG" as it starts to wait.
	WaitStdin int `json:"wait_stdin,omitempty"`
}

// TortureResult is what TortureTool answers, besides its content (one text
// block of TortureText(Tag, Answer)).
type TortureResult struct {
	Tag string `json:"tag"`
	// Digest is the hex sha256 of the call's raw "arguments" bytes, as the
	// child received them.
	Digest string `json:"digest"`
	// Asked is what became of the request Ask sent: "delivered" (answered
	// for this tag), "refused" (answered with an error: nobody could take
	// it), or "wrong:" and the tag the answer carried.
	Asked string `json:"asked,omitempty"`
	PID   int    `json:"pid"`
	// Secret is the hex sha256 of the child's EnvTortureSecret, when set:
	// whose child answered. (Not named "secret": the audit of bodies
	// redacts such members, and the test looks for it in the log.)
	Secret string `json:"env_sha256,omitempty"`
}

// tortureSecret is the digest TortureResult.Secret reports ("" when
// EnvTortureSecret is not set).
var tortureSecret string

// Answers to the torture child's requests carry the tag they answer:
// a sampling result's text is TortureSamplingText(tag), an accepted
// elicitation's content is {"tag": tag}.
func TortureSamplingText(tag string) string { return "answer:" + tag }

// TortureText is the text of the answer to the call tagged tag: the tag
// and a separator repeated to n bytes.
func TortureText(tag string, n int) string {
	if n <= 0 {
		return ""
	}
	unit := tag + "~"
	return strings.Repeat(unit, n/len(unit)+1)[:n]
}

// tortureChild is the torture child's state.
type tortureChild struct {
	shuffle, modern bool

	// outMu guards out.
	outMu sync.Mutex
	out   *bufio.Writer

	// mu guards every field below.
	mu      sync.Mutex
	nextID  int
	waiting map[string]chan message
	// calls are the tools/calls in progress by the bridge's request id:
	// the tag, and a channel closed when the call is cancelled.
	calls map[string]*tortureCall
	seen  map[string]bool
}

type tortureCall struct {
	tag       string
	cancelled chan struct{}
	once      sync.Once
}

func (c *tortureCall) cancel() { c.once.Do(func() { close(c.cancelled) }) }

// torture serves the torture child on stdin and stdout until stdin ends.
func torture(mode string) {
	if mode == ModeTortureSequential {
		tortureSequential()
		return
	}
	if v, ok := os.LookupEnv(EnvTortureSecret); ok {
		sum := sha256.Sum256([]byte(v))
		tortureSecret = hex.EncodeToString(sum[:])
		journalNote("credential", tortureSecret)
	}
	t := &tortureChild{
		shuffle: mode == ModeTortureShuffle || mode == ModeTortureModern,
		modern:  mode == ModeTortureModern,
		out:     bufio.NewWriterSize(os.Stdout, 64<<10),
		waiting: map[string]chan message{},
		calls:   map[string]*tortureCall{},
		seen:    map[string]bool{},
	}
	br := bufio.NewReaderSize(os.Stdin, 64<<10)
	stallIn := 20 + rand.IntN(60)
	for {
		line, err := ReadLine(br)
		if len(bytes.TrimSpace(line)) > 0 {
			t.handle(bytes.Clone(line))
		}
		if err != nil {
			return
		}
		if mode == ModeTortureSlow {
			time.Sleep(time.Duration(rand.IntN(3001)) * time.Microsecond)
			if stallIn--; stallIn == 0 {
				stallIn = 20 + rand.IntN(60)
				time.Sleep(time.Duration(100+rand.IntN(300)) * time.Millisecond)
			}
		}
	}
}

func (t *tortureChild) send(v any) {
	b, _ := json.Marshal(v)
	t.sendRaw(b)
}

func (t *tortureChild) sendRaw(b []byte) {
	t.outMu.Lock()
	defer t.outMu.Unlock()
	t.out.Write(b)
	t.out.WriteByte('\n')
	t.out.Flush()
}

func (t *tortureChild) handle(line []byte) {
	var m message
	if err := json.Unmarshal(line, &m); err != nil || m.JSONRPC != "2.0" {
		// A message cut short, or spliced with another's bytes.
		journalNote("badline", fmt.Sprintf("%d bytes %q…%q", len(line), line[:min(len(line), 60)], line[max(0, len(line)-30):]))
		return
	}
	switch {
	case m.Method == "" && len(m.ID) > 0:
		t.mu.Lock()
		ch := t.waiting[string(m.ID)]
		delete(t.waiting, string(m.ID))
		t.mu.Unlock()
		if ch != nil {
			ch <- m
		}
	case len(m.ID) == 0:
		if m.Method == "notifications/cancelled" {
			var p struct {
				RequestID json.RawMessage `json:"requestId"`
			}
			_ = json.Unmarshal(m.Params, &p)
			t.mu.Lock()
			c := t.calls[string(p.RequestID)]
			t.mu.Unlock()
			if c != nil {
				journalNote("cancelled", c.tag)
				c.cancel()
				// Many servers never answer a cancelled request; some do,
				// from the loop that reads stdin, which then waits for
				// its stdout to be read (the bridge must keep reading it
				// meanwhile: TestTortureReaderNeverWaitsOnStdin).
				if rand.IntN(2) == 0 {
					t.fail(p.RequestID, -32800, "cancelled")
				}
			}
		}
	default:
		go t.request(m)
	}
}

func (t *tortureChild) reply(id json.RawMessage, result any) {
	t.send(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

func (t *tortureChild) fail(id json.RawMessage, code int, msg string) {
	t.send(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
}

func (t *tortureChild) request(m message) {
	if t.modern {
		switch m.Method {
		case "server/discover":
			t.reply(m.ID, map[string]any{"supportedVersions": []string{"2026-07-28"}, "resultType": "complete",
				"capabilities": map[string]any{"tools": map[string]any{}, "logging": map[string]any{}},
				"_meta":        map[string]any{"io.modelcontextprotocol/serverInfo": map[string]any{"name": "torture-modern", "version": "1"}}})
			return
		case "initialize":
			t.send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32022, "message": "Unsupported protocol version", "data": map[string]any{"supported": []string{"2026-07-28"}}}})
			return
		}
	}
	switch m.Method {
	case "initialize":
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(m.Params, &p)
		t.reply(m.ID, map[string]any{
			"protocolVersion": p.ProtocolVersion,
			"capabilities":    map[string]any{"tools": map[string]any{}, "logging": map[string]any{}},
			"serverInfo":      map[string]any{"name": "torture", "version": "1"},
		})
	case "ping":
		t.reply(m.ID, map[string]any{})
	case "tools/list":
		var tools []map[string]any
		for _, name := range []string{TortureTool, TortureAskTool} {
			tools = append(tools, map[string]any{"name": name, "description": "torture", "inputSchema": map[string]any{"type": "object"}})
		}
		t.reply(m.ID, map[string]any{"tools": tools})
	case "tools/call":
		t.call(m)
	default:
		t.fail(m.ID, -32601, "method not found: "+m.Method)
	}
}

// pause sleeps up to 15 ms in shuffle mode; false when the call was
// cancelled meanwhile.
func (t *tortureChild) pause(c *tortureCall) bool {
	if !t.shuffle {
		return true
	}
	select {
	case <-time.After(time.Duration(rand.IntN(15001)) * time.Microsecond):
		return true
	case <-c.cancelled:
		return false
	}
}

func (t *tortureChild) call(m message) {
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Meta      struct {
			ProgressToken json.RawMessage `json:"progressToken"`
			Version       string          `json:"io.modelcontextprotocol/protocolVersion"`
			LogLevel      string          `json:"io.modelcontextprotocol/logLevel"`
		} `json:"_meta"`
		InputResponses map[string]json.RawMessage `json:"inputResponses"`
		RequestState   string                     `json:"requestState"`
	}
	_ = json.Unmarshal(m.Params, &p)
	if t.modern && p.Meta.Version != "2026-07-28" {
		journalNote("badenvelope", string(m.Params[:min(len(m.Params), 200)]))
		t.fail(m.ID, -32022, "the request did not name protocol version 2026-07-28")
		return
	}
	if p.Name != TortureTool && p.Name != TortureAskTool {
		t.fail(m.ID, -32602, "unknown tool "+p.Name)
		return
	}
	sum := sha256.Sum256(p.Arguments)
	var a TortureArgs
	if err := json.Unmarshal(p.Arguments, &a); err != nil || a.Tag == "" {
		journalNote("badargs", fmt.Sprintf("%d bytes: %v", len(p.Arguments), err))
		t.fail(m.ID, -32602, "bad arguments")
		return
	}
	c := &tortureCall{tag: a.Tag, cancelled: make(chan struct{})}
	retry := t.modern && p.RequestState != ""
	t.mu.Lock()
	dup := t.seen[a.Tag] && !retry // a 2026 retry repeats its call's tag
	t.seen[a.Tag] = true
	t.calls[string(m.ID)] = c
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		delete(t.calls, string(m.ID))
		t.mu.Unlock()
	}()
	if dup {
		journalNote("dup", a.Tag)
	}
	if a.Exit {
		exit(7)
	}
	if a.IgnoreCancelMS > 0 {
		if p.Meta.ProgressToken != nil {
			t.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress", "params": map[string]any{"progressToken": p.Meta.ProgressToken, "progress": 0, "message": a.Tag}})
		}
		time.Sleep(time.Duration(a.IgnoreCancelMS) * time.Millisecond)
		// The rest of the work takes no notice of a cancellation.
		c = &tortureCall{tag: a.Tag, cancelled: make(chan struct{})}
	}
	if !t.pause(c) {
		return
	}
	for i := range max(a.Progress, a.Logs) {
		if i < a.Progress && p.Meta.ProgressToken != nil {
			t.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress", "params": map[string]any{"progressToken": p.Meta.ProgressToken, "progress": i + 1, "message": a.Tag}})
		}
		if i < a.Logs && (!t.modern || p.Meta.LogLevel != "") {
			t.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/message", "params": map[string]any{"level": "info", "logger": "torture", "data": a.Tag}})
		}
		if t.shuffle {
			time.Sleep(time.Duration(rand.IntN(2001)) * time.Microsecond)
		}
	}
	res := TortureResult{Tag: a.Tag, Digest: hex.EncodeToString(sum[:]), PID: os.Getpid(), Secret: tortureSecret}
	if a.Ask != "" && t.modern {
		if !retry {
			journalNote("ask", c.tag+" input_required")
			t.reply(m.ID, map[string]any{"resultType": "input_required", "requestState": "torture:" + a.Tag,
				"inputRequests": map[string]any{"ask": tortureAsk(c.tag, a.Ask)}})
			return
		}
		if p.RequestState != "torture:"+a.Tag {
			journalNote("wrong", c.tag+" state:"+p.RequestState)
		}
		res.Asked = t.checkAnswer(c, a.Ask, p.InputResponses["ask"])
	} else if a.Ask != "" {
		var ok bool
		if res.Asked, ok = t.ask(c, a.Ask); !ok {
			return // cancelled: no answer
		}
	}
	if a.HoldMS > 0 {
		if p.Meta.ProgressToken != nil {
			t.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress", "params": map[string]any{"progressToken": p.Meta.ProgressToken, "progress": 0, "message": a.Tag}})
		}
		select {
		case <-time.After(time.Duration(a.HoldMS) * time.Millisecond):
		case <-c.cancelled:
			return
		}
	}
	if !t.pause(c) {
		return
	}
	select {
	case <-c.cancelled:
		return
	default:
	}
	t.sendRaw(tortureAnswer(m.ID, res, TortureText(a.Tag, a.Answer)))
}

// ask sends the call's sampling or elicitation request and waits for its
// answer; false when the call was cancelled first.
func (t *tortureChild) ask(c *tortureCall, kind string) (string, bool) {
	req := tortureAsk(c.tag, kind)
	if req == nil {
		return "unknown ask " + kind, true
	}
	method, params := req["method"], req["params"]
	t.mu.Lock()
	t.nextID++
	id := json.RawMessage(`"t-` + strconv.Itoa(t.nextID) + `"`)
	ch := make(chan message, 1)
	t.waiting[string(id)] = ch
	t.mu.Unlock()
	journalNote("ask", c.tag+" "+string(id))
	t.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	var r message
	select {
	case r = <-ch:
	case <-c.cancelled:
		return "", false
	case <-time.After(30 * time.Second):
		journalNote("unanswered", c.tag)
		return "unanswered", true
	}
	if len(r.Error) > 0 {
		journalNote("refused", c.tag+" "+string(r.Error))
		return "refused", true
	}
	return t.checkAnswer(c, kind, r.Result), true
}

// tortureAsk is the request a call tagged tag makes of kind ("sampling",
// "elicitation"), as {"method", "params"}; nil for another kind.
func tortureAsk(tag, kind string) map[string]any {
	switch kind {
	case "sampling":
		return map[string]any{"method": "sampling/createMessage", "params": map[string]any{"messages": []map[string]any{{"role": "user", "content": map[string]any{"type": "text", "text": tag}}}, "maxTokens": 5}}
	case "elicitation":
		return map[string]any{"method": "elicitation/create", "params": map[string]any{"message": tag, "requestedSchema": map[string]any{"type": "object", "properties": map[string]any{"tag": map[string]any{"type": "string"}}}}}
	}
	return nil
}

// checkAnswer is what became of a call's request of kind, answered with
// result: "delivered" when it was answered for the call's own tag.
func (t *tortureChild) checkAnswer(c *tortureCall, kind string, result json.RawMessage) string {
	if result == nil {
		journalNote("unanswered", c.tag)
		return "unanswered"
	}
	var got struct {
		Content struct {
			Text string `json:"text"`
			Tag  string `json:"tag"`
		} `json:"content"`
	}
	_ = json.Unmarshal(result, &got)
	answeredFor := strings.TrimPrefix(got.Content.Text, "answer:")
	if kind == "elicitation" {
		answeredFor = got.Content.Tag
	}
	if answeredFor != c.tag {
		journalNote("wrong", c.tag+" "+answeredFor)
		return "wrong:" + answeredFor
	}
	return "delivered"
}

// tortureAnswer is the response to a torture call: its result's fields
// and one text block, written without a JSON encoder's pass over a text
// of several MiB (a tag needs no escaping).
func tortureAnswer(id json.RawMessage, res TortureResult, text string) []byte {
	fields, _ := json.Marshal(res)
	out := make([]byte, 0, len(text)+len(fields)+len(id)+80)
	out = append(out, `{"jsonrpc":"2.0","id":`...)
	out = append(out, id...)
	out = append(out, `,"result":{"content":[{"type":"text","text":"`...)
	out = append(out, text...)
	out = append(out, `"}],`...)
	out = append(out, fields[1:]...) // the fields without their '{'
	return append(out, '}')
}

// tortureSequential serves ModeTortureSequential until stdin ends.
func tortureSequential() {
	// One page of pipe: one request fills it.
	shrinkStdin()
	br := bufio.NewReaderSize(os.Stdin, 64<<10)
	out := os.Stdout
	send := func(b []byte) { _, _ = out.Write(append(b, '\n')) }
	asked := 0
	for {
		line, err := ReadLine(br)
		var m message
		if len(bytes.TrimSpace(line)) > 0 && json.Unmarshal(line, &m) == nil && m.Method != "" && len(m.ID) > 0 {
			switch m.Method {
			case "initialize":
				b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{"tools": map[string]any{}}, "serverInfo": map[string]any{"name": "sequential", "version": "1"}}})
				send(b)
			case "tools/list":
				b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{"tools": []map[string]any{{"name": TortureTool, "inputSchema": map[string]any{"type": "object"}}, {"name": TortureAskTool, "inputSchema": map[string]any{"type": "object"}}}}})
				send(b)
			case "tools/call":
				var p struct {
					Arguments json.RawMessage `json:"arguments"`
				}
				_ = json.Unmarshal(m.Params, &p)
				var a TortureArgs
				_ = json.Unmarshal(p.Arguments, &a)
				sum := sha256.Sum256(p.Arguments)
				res := TortureResult{Tag: a.Tag, Digest: hex.EncodeToString(sum[:]), PID: os.Getpid()}
				if a.HoldMS > 0 {
					journalNote("stalling", a.Tag)
					time.Sleep(time.Duration(a.HoldMS) * time.Millisecond)
				}
				if a.WaitStdin > 0 {
					journalNote("stalling", a.Tag)
					for deadline := time.Now().Add(20 * time.Second); stdinWaiting() < a.WaitStdin && time.Now().Before(deadline); {
						time.Sleep(5 * time.Millisecond)
					}
				}
				if a.Ask == "sampling" {
					asked++
					b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": "s-" + strconv.Itoa(asked), "method": "sampling/createMessage",
						"params": map[string]any{"messages": []map[string]any{{"role": "user", "content": map[string]any{"type": "text", "text": a.Tag}}}, "maxTokens": 5}})
					send(b)
					res.Asked = "sent"
				}
				send(tortureAnswer(m.ID, res, TortureText(a.Tag, a.Answer)))
			default:
				b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": "method not found"}})
				send(b)
			}
		}
		if err != nil {
			return
		}
	}
}
