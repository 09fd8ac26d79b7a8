//go:build unix

package tests

// The tasks extension (io.modelcontextprotocol/tasks) run by the bridge: on the fake child (whose
// slow, never and ask tools allow tasks, task_only requires one) with ttl, ownership, caps and
// shutdown; and on the official server-everything, whose own tasks stay with their user.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stelae-bridge/stelae-bridge/bridge"
	"github.com/stelae-bridge/stelae-bridge/config"
	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
	"github.com/stelae-bridge/stelae-bridge/tests/testissuer"
)

// taskMeta is a modern _meta declaring the tasks extension and elicitation.
const taskMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}}`

// taskView is what tasks/get and CreateTaskResult carry.
type taskView struct {
	ResultType     string                     `json:"resultType"`
	TaskID         string                     `json:"taskId"`
	Status         string                     `json:"status"`
	CreatedAt      string                     `json:"createdAt"`
	LastUpdatedAt  string                     `json:"lastUpdatedAt"`
	TTLMs          *int64                     `json:"ttlMs"`
	PollIntervalMs int64                      `json:"pollIntervalMs"`
	Result         json.RawMessage            `json:"result"`
	Error          *rpcErr                    `json:"error"`
	InputRequests  map[string]json.RawMessage `json:"inputRequests"`
	RequestState   string                     `json:"requestState"`
	Content        json.RawMessage            `json:"content"`
}

type rpcErr struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

// taskCall posts a modern request and decodes its result (or error).
func taskCall(t *testing.T, url, id, method, params string, headers ...string) (taskView, *rpcErr, response) {
	t.Helper()
	h := append([]string{}, headers...)
	var p struct {
		TaskID string `json:"taskId"`
	}
	_ = json.Unmarshal([]byte(params), &p)
	if p.TaskID != "" {
		h = append([]string{"Mcp-Name", p.TaskID}, h...)
	}
	r := modernCall(t, url, id, method, params, h...)
	var m struct {
		ID     json.RawMessage `json:"id"`
		Result taskView        `json:"result"`
		Error  *rpcErr         `json:"error"`
	}
	if err := json.Unmarshal(r.body, &m); err != nil || string(m.ID) != id {
		t.Fatalf("%s: %d %s", method, r.status, r.body)
	}
	return m.Result, m.Error, r
}

// taskGet polls tasks/get until cond holds (or fails the test).
func taskGet(t *testing.T, url, taskID, what string, cond func(taskView) bool, headers ...string) taskView {
	t.Helper()
	var v taskView
	waitFor(t, 20*time.Second, what, func() bool {
		var e *rpcErr
		v, e, _ = taskCall(t, url, `"get"`, "tasks/get", fmt.Sprintf(`{"taskId":%q,%s}`, taskID, taskMeta), headers...)
		if e != nil {
			t.Fatalf("tasks/get %s: %d %s", taskID, e.Code, e.Message)
		}
		return cond(v)
	})
	return v
}

func TestModernTasks(t *testing.T) {
	b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{taskAfter: 200 * time.Millisecond})
	url := b.url("fake")
	c := newClient(t, url)
	c.initialize() // starts the child: the bridge reads its tool list

	// server/discover offers the extension.
	r := modernCall(t, url, "1", "server/discover", "{"+taskMeta+"}")
	if !strings.Contains(string(r.body), `"extensions":{"io.modelcontextprotocol/tasks":{}}`) {
		t.Errorf("server/discover does not offer the tasks extension: %s", r.body)
	}
	waitFor(t, 10*time.Second, "the tool catalogue", func() bool {
		_, e, _ := taskCall(t, url, "2", "tools/call", `{"name":"task_only","arguments":{"ms":1},`+modernMeta+`}`)
		return e != nil
	})

	t.Run("answer within tasks.after: no task", func(t *testing.T) {
		v, e, _ := taskCall(t, url, "3", "tools/call", `{"name":"slow","arguments":{"ms":10,"text":"quick"},`+taskMeta+`}`)
		if e != nil || v.ResultType != "complete" || v.TaskID != "" || !strings.Contains(string(v.Content), "quick") {
			t.Errorf("a quick task-supporting call: %+v %v", v, e)
		}
	})

	t.Run("a tool without task support is never a task", func(t *testing.T) {
		v, e, _ := taskCall(t, url, "4", "tools/call", `{"name":"echo","arguments":{"text":"sync"},`+taskMeta+`}`)
		if e != nil || v.ResultType != "complete" || v.TaskID != "" {
			t.Errorf("echo: %+v %v", v, e)
		}
	})

	t.Run("a client without the extension gets a plain answer", func(t *testing.T) {
		v, e, _ := taskCall(t, url, "5", "tools/call", `{"name":"slow","arguments":{"ms":600,"text":"plain"},`+modernMeta+`}`)
		if e != nil || v.ResultType != "complete" || v.TaskID != "" || !strings.Contains(string(v.Content), "plain") {
			t.Errorf("slow without the extension: %+v %v", v, e)
		}
	})

	t.Run("a task-only tool refuses a client without the extension", func(t *testing.T) {
		_, e, r := taskCall(t, url, "6", "tools/call", `{"name":"task_only","arguments":{"ms":1},`+modernMeta+`}`)
		if r.status != 400 || e == nil || e.Code != -32021 || !strings.Contains(string(e.Data), `"requiredCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}`) {
			t.Errorf("task_only without the extension: %d %s", r.status, r.body)
		}
	})

	t.Run("completed", func(t *testing.T) {
		v, e, _ := taskCall(t, url, "7", "tools/call", `{"name":"task_only","arguments":{"ms":700,"text":"done later"},`+taskMeta+`}`)
		if e != nil || v.ResultType != "task" || v.TaskID == "" || v.Status != "working" || v.Result != nil || v.TTLMs == nil || *v.TTLMs != time.Hour.Milliseconds() ||
			v.PollIntervalMs <= 0 || !strings.HasSuffix(v.CreatedAt, "Z") {
			t.Fatalf("CreateTaskResult: %+v %v", v, e)
		}
		// At once, the task is there.
		if now, e, _ := taskCall(t, url, "8", "tools/get", fmt.Sprintf(`{"taskId":%q,%s}`, v.TaskID, taskMeta)); e == nil || now.TaskID != "" {
			t.Errorf("tools/get is no method: %+v", now)
		}
		got := taskGet(t, url, v.TaskID, "the task to complete", func(v taskView) bool { return v.Status == "completed" })
		if got.ResultType != "complete" || !strings.Contains(string(got.Result), "done later") || got.Error != nil {
			t.Errorf("completed task: %+v", got)
		}
	})

	t.Run("cancelled at the child", func(t *testing.T) {
		v, e, _ := taskCall(t, url, "9", "tools/call", `{"name":"never","arguments":{},`+taskMeta+`}`)
		if e != nil || v.TaskID == "" {
			t.Fatalf("never: %+v %v", v, e)
		}
		if g := taskGet(t, url, v.TaskID, "working", func(v taskView) bool { return true }); g.Status != "working" {
			t.Errorf("status %q; want working", g.Status)
		}
		before := len(c.stats().Cancelled)
		ack, e, _ := taskCall(t, url, "10", "tasks/cancel", fmt.Sprintf(`{"taskId":%q,%s}`, v.TaskID, taskMeta))
		if e != nil || ack.ResultType != "complete" || ack.TaskID != "" || ack.Status != "" {
			t.Errorf("cancel ack: %+v %v", ack, e)
		}
		taskGet(t, url, v.TaskID, "cancelled", func(v taskView) bool { return v.Status == "cancelled" })
		waitFor(t, 10*time.Second, "the child to see the cancellation", func() bool { return len(c.stats().Cancelled) > before })
		// Idempotent on a terminal task.
		if ack, e, _ := taskCall(t, url, "11", "tasks/cancel", fmt.Sprintf(`{"taskId":%q,%s}`, v.TaskID, taskMeta)); e != nil || ack.ResultType != "complete" {
			t.Errorf("second cancel: %+v %v", ack, e)
		}
	})

	t.Run("input required, answered by tasks/update", func(t *testing.T) {
		// The cancelled task's call counts as in flight until the child
		// answers it or its grace passes (the fake never answers it): a
		// request the child sent meanwhile could be that call's, and
		// would be refused to this one.
		waitFor(t, 10*time.Second, "the cancelled call's grace to pass", func() bool { return b.status("fake").Abandoned == 0 })
		params := `{"name":"ask","arguments":{"ms":600,"method":"elicitation/create","params":"{\"message\":\"name?\",\"requestedSchema\":{\"type\":\"object\"}}"},` + taskMeta + `}`
		v, e, _ := taskCall(t, url, "12", "tools/call", params)
		if e != nil || v.TaskID == "" {
			t.Fatalf("ask: %+v %v", v, e)
		}
		g := taskGet(t, url, v.TaskID, "input_required", func(v taskView) bool { return v.Status == "input_required" })
		if len(g.InputRequests) != 1 {
			t.Fatalf("input requests: %v", g.InputRequests)
		}
		var key string
		for k, req := range g.InputRequests {
			key = k
			if !strings.Contains(string(req), `"method":"elicitation/create"`) || !strings.Contains(string(req), "name?") {
				t.Errorf("input request %s: %s", k, req)
			}
		}
		// An unknown key is ignored; the right one answers the child.
		upd := fmt.Sprintf(`{"taskId":%q,"inputResponses":{"nope":{"action":"decline"},%q:{"action":"accept","content":{"name":"Ada"}}},%s}`, v.TaskID, key, taskMeta)
		if ack, e, _ := taskCall(t, url, "13", "tasks/update", upd); e != nil || ack.ResultType != "complete" || ack.Status != "" {
			t.Errorf("update ack: %+v %v", ack, e)
		}
		done := taskGet(t, url, v.TaskID, "completed", func(v taskView) bool { return v.Status == "completed" })
		if !strings.Contains(string(done.Result), "Ada") {
			t.Errorf("result after the update: %s", done.Result)
		}
	})

	t.Run("the task surface needs the extension, a known task and matching headers", func(t *testing.T) {
		_, e, r := taskCall(t, url, "14", "tasks/get", `{"taskId":"x",`+modernMeta+`}`)
		if r.status != 400 || e == nil || e.Code != -32021 {
			t.Errorf("tasks/get without the extension: %d %s", r.status, r.body)
		}
		if _, e, _ := taskCall(t, url, "15", "tasks/get", `{"taskId":"no-such-task",`+taskMeta+`}`); e == nil || e.Code != -32602 {
			t.Errorf("unknown task: %+v", e)
		}
		if _, e, r := taskCall(t, url, "16", "tasks/get", `{"taskId":"a",`+taskMeta+`}`, "Mcp-Name", "b"); r.status != 400 || e == nil || e.Code != -32020 {
			t.Errorf("Mcp-Name differing from the task id: %d %s", r.status, r.body)
		}
		for _, m := range []string{"tasks/result", "tasks/list"} {
			if _, e, r := taskCall(t, url, "17", m, `{"taskId":"a",`+taskMeta+`}`); r.status != 404 || e == nil || e.Code != -32601 {
				t.Errorf("%s: %d %s", m, r.status, r.body)
			}
		}
		if _, e, _ := taskCall(t, url, "18", "tasks/update", `{"taskId":"a",`+taskMeta+`}`); e == nil || e.Code != -32602 {
			t.Errorf("tasks/update without inputResponses: %+v", e)
		}
	})
}

// TestTaskTTL: a task is forgotten when its ttl ends, and its call is
// cancelled at the child.
func TestTaskTTL(t *testing.T) {
	b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{taskAfter: 100 * time.Millisecond, taskTTL: 1500 * time.Millisecond})
	url := b.url("fake")
	c := newClient(t, url)
	c.initialize()
	waitCatalogue(t, b, "fake")
	var v taskView
	waitFor(t, 10*time.Second, "a task", func() bool {
		var e *rpcErr
		v, e, _ = taskCall(t, url, "1", "tools/call", `{"name":"never","arguments":{},`+taskMeta+`}`)
		return e == nil && v.TaskID != ""
	})
	if v.TTLMs == nil || *v.TTLMs != 1500 {
		t.Errorf("ttlMs %v; want 1500", v.TTLMs)
	}
	before := len(c.stats().Cancelled)
	waitFor(t, 20*time.Second, "the task to be forgotten", func() bool {
		_, e, _ := taskCall(t, url, `"get"`, "tasks/get", fmt.Sprintf(`{"taskId":%q,%s}`, v.TaskID, taskMeta))
		return e != nil && e.Code == -32602
	})
	waitFor(t, 10*time.Second, "the child to see the cancellation", func() bool { return len(c.stats().Cancelled) > before })
}

// waitCatalogue waits until the bridge knows dest's tools. A call becomes
// a task only when the catalogue says its tool supports tasks: one made
// before the child's tools/list was answered (a loaded machine) runs as a
// plain call, and a tool that never answers then takes the whole request
// timeout (TestTaskTTL failed so under two CPU hogs).
func waitCatalogue(t *testing.T, b *testBridge, dest string) {
	t.Helper()
	waitFor(t, 10*time.Second, dest+"'s tool catalogue", func() bool {
		_, known := b.dispatchers[dest].Tools()
		return known
	})
}

// TestTaskBelongsToItsPrincipal: behind OAuth, a task is visible only to
// the subject and client that created it.
func TestTaskBelongsToItsPrincipal(t *testing.T) {
	iss := newIssuer(t)
	b := newBridge(t, map[string]string{"notes": fakemcp.ModeServer}, bridgeConfig{
		auth: &config.Auth{Issuer: iss.URL, Scopes: []string{"mcp"}}, taskAfter: 100 * time.Millisecond,
	})
	notes := b.url("notes")
	bearer := func(sub string) []string {
		return []string{"Authorization", "Bearer " + iss.Token(testissuer.Claims{Subject: sub, Audience: []string{notes}, Scope: "mcp", ClientID: "c"})}
	}
	alice, bob := bearer("alice"), bearer("bob")
	var v taskView
	waitFor(t, 20*time.Second, "a task", func() bool {
		var e *rpcErr
		v, e, _ = taskCall(t, notes, "1", "tools/call", `{"name":"never","arguments":{},`+taskMeta+`}`, alice...)
		return e == nil && v.TaskID != ""
	})
	taskGet(t, notes, v.TaskID, "alice sees her task", func(v taskView) bool { return v.Status == "working" }, alice...)
	for _, m := range []string{"tasks/get", "tasks/cancel"} {
		if _, e, _ := taskCall(t, notes, "2", m, fmt.Sprintf(`{"taskId":%q,%s}`, v.TaskID, taskMeta), bob...); e == nil || e.Code != -32602 {
			t.Errorf("bob's %s of alice's task: %+v; want -32602 (unknown task)", m, e)
		}
	}
	if g := taskGet(t, notes, v.TaskID, "alice's task", func(taskView) bool { return true }, alice...); g.Status != "working" {
		t.Errorf("after bob's cancel alice's task is %q", g.Status)
	}
}

// TestTasksEndWithTheBridge: closing the bridge with tasks running cancels
// them at the child and leaves nothing behind.
func TestTasksEndWithTheBridge(t *testing.T) {
	b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{taskAfter: 100 * time.Millisecond})
	url := b.url("fake")
	c := newClient(t, url)
	c.initialize()
	waitCatalogue(t, b, "fake")
	for i := range 3 {
		waitFor(t, 10*time.Second, "a task", func() bool {
			v, e, _ := taskCall(t, url, fmt.Sprint(i), "tools/call", `{"name":"never","arguments":{},`+taskMeta+`}`)
			return e == nil && v.TaskID != ""
		})
	}
	done := make(chan struct{})
	go func() {
		b.close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the bridge did not close within 30 s with tasks running")
	}
	if r, err := request(http.MethodPost, url, "", "{}"); err == nil {
		t.Errorf("the bridge still answers after close: %d", r.status)
	}
}

// TestTasksOnServerEverything: the official server-everything declares
// simulate-research-query task-required and runs it only as a task of its
// own (MCP 2025-11-25). Through the bridge a 2026-07-28 client gets a task
// of the bridge's, backed by the child's: its elicitation comes as an input
// request (without the child's related-task key), tasks/update answers it,
// the result is the child's; tasks/cancel cancels the child's task.
func TestTasksOnServerEverything(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the official server-everything (Node.js)")
	}
	p := startEverything(t)
	url := p.base + "/everything/mcp"
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}}`
	// The first request starts the child (which asks for roots at once, a
	// request attributed to the call in flight); the bridge reads its tool
	// list, then refuses the task-required tool to a client without the
	// extension.
	waitFor(t, 60*time.Second, "the tool catalogue", func() bool {
		_, e, _ := taskCall(t, url, "1", "tools/call", `{"name":"simulate-research-query","arguments":{"topic":"go"},`+modernMeta+`}`)
		return e != nil && e.Code == -32021 && strings.Contains(e.Message, "runs only as a task")
	})
	// server-everything asks for the roots 350 ms after its handshake, a
	// request the bridge attributes to the call in flight: a call of a
	// client that can answer it, running past that, takes it (as MRTR
	// input) so that it does not fall on the task below.
	rootsMeta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{}}}`
	long := `{"name":"trigger-long-running-operation","arguments":{"duration":1,"steps":1},` + rootsMeta + `}`
	lr, e, _ := taskCall(t, url, "0", "tools/call", long)
	if e != nil {
		t.Fatalf("trigger-long-running-operation: %+v", e)
	}
	if lr.ResultType == "input_required" {
		var key string
		for k := range lr.InputRequests {
			key = k
		}
		retry := fmt.Sprintf(`{"name":"trigger-long-running-operation","arguments":{"duration":1,"steps":1},"inputResponses":{%q:{"roots":[]}},"requestState":%q,%s}`, key, lr.RequestState, rootsMeta)
		if lr, e, _ = taskCall(t, url, "0", "tools/call", retry); e != nil {
			t.Fatalf("the retry with the roots: %+v", e)
		}
	}
	if lr.ResultType != "complete" {
		t.Fatalf("trigger-long-running-operation: %+v", lr)
	}

	v, e, _ := taskCall(t, url, "2", "tools/call", `{"name":"simulate-research-query","arguments":{"topic":"go","ambiguous":true},`+meta+`}`)
	if e != nil || v.ResultType != "task" || v.TaskID == "" {
		t.Fatalf("simulate-research-query: %+v %v", v, e)
	}
	get := func(what string, cond func(taskView) bool) taskView {
		t.Helper()
		var g taskView
		waitFor(t, 30*time.Second, what, func() bool {
			var e *rpcErr
			g, e, _ = taskCall(t, url, `"g"`, "tasks/get", fmt.Sprintf(`{"taskId":%q,%s}`, v.TaskID, meta))
			if e != nil {
				t.Fatalf("tasks/get: %+v", e)
			}
			return cond(g)
		})
		return g
	}
	g := get("input_required", func(g taskView) bool { return g.Status == "input_required" })
	var key string
	for k, req := range g.InputRequests {
		key = k
		if !strings.Contains(string(req), `"elicitation/create"`) || strings.Contains(string(req), "related-task") {
			t.Errorf("input request %s: %s", k, req)
		}
	}
	if len(g.InputRequests) != 1 {
		t.Fatalf("input requests: %v", g.InputRequests)
	}
	upd := fmt.Sprintf(`{"taskId":%q,"inputResponses":{%q:{"action":"accept","content":{"interpretation":"technical"}}},%s}`, v.TaskID, key, meta)
	if ack, e, _ := taskCall(t, url, "3", "tasks/update", upd); e != nil || ack.ResultType != "complete" {
		t.Fatalf("tasks/update: %+v %v", ack, e)
	}
	done := get("completed", func(g taskView) bool { return g.Status == "completed" || g.Status == "failed" })
	if done.Status != "completed" || !strings.Contains(string(done.Result), "technical") || strings.Contains(string(done.Result), "related-task") {
		t.Errorf("the finished task: %s %s %+v", done.Status, done.Result, done.Error)
	}

	// Cancelled: the bridge's task at once.
	v, e, _ = taskCall(t, url, "4", "tools/call", `{"name":"simulate-research-query","arguments":{"topic":"cancel me"},`+meta+`}`)
	if e != nil || v.TaskID == "" {
		t.Fatalf("second call: %+v %v", v, e)
	}
	if ack, e, _ := taskCall(t, url, "5", "tasks/cancel", fmt.Sprintf(`{"taskId":%q,%s}`, v.TaskID, meta)); e != nil || ack.ResultType != "complete" {
		t.Fatalf("tasks/cancel: %+v %v", ack, e)
	}
	get("cancelled", func(g taskView) bool { return g.Status == "cancelled" })
}

// TestTasksPerPrincipal: one token holds at most 100 tasks; past it its
// task-supporting calls are answered synchronously while another token
// still gets tasks, and an ended task of its own is forgotten to make room
// (issue 21: one principal could hold all 1,000 slots for the ttl).
func TestTasksPerPrincipal(t *testing.T) {
	b := newBridge(t, map[string]string{"fake": fakemcp.ModeServer}, bridgeConfig{
		taskAfter: 50 * time.Millisecond,
		opts:      bridge.Options{AuthTokens: []string{"tok-alice", "tok-bob"}, RequestTimeout: 2 * time.Second},
	})
	url := b.url("fake")
	alice, bob := []string{"Authorization", "Bearer tok-alice"}, []string{"Authorization", "Bearer tok-bob"}
	newTask := func(id string, who []string) (taskView, *rpcErr, response) {
		return taskCall(t, url, id, "tools/call", `{"name":"never","arguments":{},`+taskMeta+`}`, who...)
	}
	waitFor(t, 20*time.Second, "the child to be up", func() bool {
		v, e, _ := newTask(`"first"`, alice)
		return e == nil && v.TaskID != ""
	})
	const quota = 100
	ids := make(chan string, quota)
	ids <- "kept"
	var wg sync.WaitGroup
	var failed atomic.Int32
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < quota-1; i += 8 {
				v, e, r := newTask(strconv.Itoa(i), alice)
				if e != nil || v.TaskID == "" {
					failed.Add(1)
					t.Errorf("alice's task %d: %d %s", i+2, r.status, r.body)
					return
				}
				ids <- v.TaskID
			}
		}()
	}
	wg.Wait()
	if failed.Load() > 0 {
		t.FailNow()
	}
	// Answered synchronously: never answers, so 504 at the request
	// timeout, and no task.
	if r := modernCall(t, url, "1000", "tools/call", `{"name":"never","arguments":{},`+taskMeta+`}`, alice...); r.status != http.StatusGatewayTimeout || strings.Contains(string(r.body), "taskId") {
		t.Fatalf("alice's task %d: %d %s; want it answered synchronously", quota+1, r.status, r.body)
	}
	if v, e, r := newTask("1001", bob); e != nil || v.TaskID == "" {
		t.Fatalf("bob's task beside alice's %d: %d %s", quota, r.status, r.body)
	}
	// One of alice's ends: it is forgotten for her next one.
	<-ids
	one := <-ids
	if _, e, r := taskCall(t, url, "1002", "tasks/cancel", fmt.Sprintf(`{"taskId":%q,%s}`, one, taskMeta), alice...); e != nil {
		t.Fatalf("tasks/cancel: %d %s", r.status, r.body)
	}
	if v, e, r := newTask("1003", alice); e != nil || v.TaskID == "" {
		t.Fatalf("alice's task after one of hers ended: %d %s", r.status, r.body)
	}
}

// TestEverythingTasksStayWithTheirUser: the official server-everything
// runs simulate-research-query as a task of its own (MCP 2025-11-25) for a
// 2025 session's call; on the shared child, another user's session neither
// lists that task nor reads its result, while its owner does. (Through
// the shipped configuration a second user read the first's report by its
// task id, and saw every task in tasks/list.)
func TestEverythingTasksStayWithTheirUser(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the official server-everything (Node.js)")
	}
	p := startEverything(t)
	url := p.base + "/everything/mcp"
	const init = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"tasks":{}},"clientInfo":{"name":"tasks","version":"1"}}}`
	session := func() *client {
		c := newClient(t, url)
		r := c.post(init)
		if c.sid = r.header.Get("Mcp-Session-Id"); r.status != http.StatusOK || c.sid == "" {
			t.Fatalf("initialize: %d %s", r.status, r.body)
		}
		c.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		return c
	}
	a, b := session(), session()
	var created struct {
		Result struct {
			Task struct{ TaskID string }
		}
	}
	r := a.post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"simulate-research-query","arguments":{"topic":"a's secret topic"},"task":{"ttl":60000}}}`)
	if err := json.Unmarshal(r.body, &created); err != nil || created.Result.Task.TaskID == "" {
		t.Fatalf("a's task: %d %s", r.status, r.body)
	}
	id := created.Result.Task.TaskID
	if r := b.post(`{"jsonrpc":"2.0","id":2,"method":"tasks/list","params":{}}`); r.status != http.StatusOK || strings.Contains(string(r.body), id) {
		t.Errorf("b's tasks/list shows a's task: %d %s", r.status, r.body)
	}
	if r := a.post(`{"jsonrpc":"2.0","id":2,"method":"tasks/list","params":{}}`); !strings.Contains(string(r.body), id) {
		t.Errorf("a's tasks/list lacks its task: %d %s", r.status, r.body)
	}
	for _, m := range []string{"tasks/result", "tasks/get", "tasks/cancel"} {
		r := b.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":3,"method":%q,"params":{"taskId":%q}}`, m, id))
		if rp := decode(t, r.body); rp.Error == nil || !strings.Contains(rp.Error.Message, "unknown task") || strings.Contains(string(r.body), "secret") {
			t.Errorf("b's %s of a's task: %d %s; want unknown task", m, r.status, r.body)
		}
	}
	// The owner reads its result (tasks/result waits for the task's end).
	r = a.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":4,"method":"tasks/result","params":{"taskId":%q}}`, id))
	if !strings.Contains(string(r.body), "a's secret topic") {
		t.Errorf("a's tasks/result: %d %s", r.status, r.body)
	}
}
