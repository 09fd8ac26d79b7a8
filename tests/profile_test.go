//go:build unix

package tests

// Profiles (/p/{name}/mcp): members' tools under prefixes on the members' own children, the SDK
// clients and the Inspector through one URL, npm servers as members, the 2026-07-28 era, name
// collisions, many users at once, an isolated member, and reloads.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

// profileFile is a destinations file with two fake destinations, alpha
// (prefixed with its name) and beta ('prefix: b'), and the profile "both"
// combining them, which hides alpha's crash tool and is the default.
func profileFile(t *testing.T) string {
	t.Helper()
	path := destinationsFile(t, map[string]string{"alpha": fakemcp.ModeServer, "beta": fakemcp.ModeServer}, map[string]string{"beta": "    prefix: b\n"})
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data = append(data, "profiles:\n  both:\n    destinations: [alpha, beta]\n    tools: {deny: [alpha__crash]}\ndefault: both\n"...)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// whoamiAs calls the fake server's whoami under the name tool (a
// profile's) and returns the pid of the child that answered.
func whoamiAs(t *testing.T, c *client, tool string) int {
	t.Helper()
	var w childWho
	if err := json.Unmarshal([]byte(textOf(resultOK(t, tool, c.callTool(`"w"`, tool, nil)))), &w); err != nil || w.PID == 0 {
		t.Fatalf("%s: %v", tool, err)
	}
	return w.PID
}

// toolNames lists the names of a tools/list answer.
func toolNames(t *testing.T, r response) []string {
	t.Helper()
	var res struct {
		Tools []struct {
			Name      string          `json:"name"`
			Execution json.RawMessage `json:"execution"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(resultOK(t, "tools/list", r), &res); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tool := range res.Tools {
		out = append(out, tool.Name)
	}
	return out
}

// TestProfileServesItsMembers: a profile at /p/both/mcp (and /mcp, its
// default) serves its members' tools under their prefixes on the members'
// own shared children, with nothing listed unprefixed and the hidden tool
// neither listed nor callable; progress reaches the caller with its token;
// a 2026-07-28 request is served too; a member's list change reaches the
// profile's session; and when a member's child is killed the other
// member's calls go on, and the killed one's come back with its restart.
func TestProfileServesItsMembers(t *testing.T) {
	p := startBinary(t, profileFile(t))
	url := p.base + "/p/both/mcp"
	c := newClient(t, url)
	init := c.initialize()
	if !strings.Contains(string(init), `"name":"stelae-bridge profile both"`) || !strings.Contains(string(init), `"subscribe":true`) {
		t.Errorf("the profile's initialize: %s", init)
	}

	names := toolNames(t, c.post(`{"jsonrpc":"2.0","id":"l","method":"tools/list"}`))
	var alpha, beta int
	for _, n := range names {
		switch {
		case strings.HasPrefix(n, "alpha__"):
			alpha++
		case strings.HasPrefix(n, "b__"):
			beta++
		default:
			t.Errorf("the profile lists %q, unprefixed", n)
		}
		if n == "alpha__crash" {
			t.Error("the profile lists the tool it hides")
		}
	}
	if alpha == 0 || beta != alpha+1 {
		t.Errorf("the profile lists %d of alpha's tools and %d of beta's: %v", alpha, beta, names)
	}

	// The bridge's own description names the profile.
	if r := mustRequest(t, http.MethodGet, p.base+"/", "", ""); !strings.Contains(string(r.body), `"url": "`+p.base+`/p/both/mcp"`) {
		t.Errorf("GET / does not list the profile: %s", r.body)
	}
	if r := mustRequest(t, http.MethodGet, p.base+"/.well-known/mcp/manifest.json", "", ""); !strings.Contains(string(r.body), `"url": "`+p.base+`/p/both/mcp"`) {
		t.Errorf("the manifest does not list the profile: %s", r.body)
	}

	// Calls reach the member the name says, on its shared child.
	alphaPID, betaPID := whoamiAs(t, c, "alpha__whoami"), whoamiAs(t, c, "b__whoami")
	direct := newClient(t, p.base+"/alpha/mcp")
	direct.initialize()
	if alphaPID == betaPID || whoamiCall(t, direct).PID != alphaPID {
		t.Errorf("alpha__whoami ran in pid %d, b__whoami in %d, alpha's own endpoint in %d: want alpha's shared child for the first", alphaPID, betaPID, whoamiCall(t, direct).PID)
	}
	t.Logf("the profile lists %d tools (%d of alpha's, %d of beta's); alpha's child is pid %d, beta's %d", len(names), alpha, beta, alphaPID, betaPID)
	if got := textOf(resultOK(t, "b__echo", c.callTool(`"e"`, "b__echo", map[string]string{"text": "through the profile"}))); got != "through the profile" {
		t.Errorf("b__echo answered %q", got)
	}
	for _, tool := range []string{"echo", "alpha__crash", "beta__echo"} {
		r := c.callTool(`"x"`, tool, nil)
		if m := decode(t, r.body); m.Error == nil || !strings.Contains(m.Error.Message, "not available") {
			t.Errorf("a call of %q: %d %s; want an error saying it is not available", tool, r.status, r.body)
		}
	}

	// Progress, with the client's own token.
	st := openSSE(t, http.MethodPost, url, c.sid, `{"jsonrpc":"2.0","id":"p","method":"tools/call","params":{"name":"b__progress","arguments":{"steps":3,"ms":10},"_meta":{"progressToken":"my-token"}}}`)
	for i := 0; i < 3; i++ {
		m := st.next(t, "notifications/progress", 10*time.Second)
		if !strings.Contains(string(m.Params), `"progressToken":"my-token"`) {
			t.Errorf("progress with params %s", m.Params)
		}
	}
	st.close()

	// The 2026-07-28 era, at the default /mcp.
	r := modernCall(t, p.base+"/mcp", `"m"`, "tools/call", `{"name":"alpha__echo","arguments":{"text":"modern"},`+modernMeta+`}`)
	if got := textOf(resultOK(t, "a 2026-07-28 call at /mcp", r)); got != "modern" {
		t.Errorf("a 2026-07-28 call at /mcp: %s", r.body)
	}

	// A member's list change reaches the profile's session.
	get := c.openStream()
	defer get.close()
	resultOK(t, "alpha__list_changed", c.callTool(`"lc"`, "alpha__list_changed", nil))
	get.next(t, "notifications/tools/list_changed", 10*time.Second)

	// A member killed: the other's calls go on; its own come back.
	if err := syscall.Kill(alphaPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if got := textOf(resultOK(t, "b__echo after alpha's child died", c.callTool(`"k"`, "b__echo", map[string]string{"text": "still here"}))); got != "still here" {
			t.Fatalf("b__echo after alpha's child died: %q", got)
		}
	}
	waitFor(t, 20*time.Second, "alpha's tools through the profile after its restart", func() bool {
		r := c.callTool(`"a"`, "alpha__echo", map[string]string{"text": "back"})
		m := decode(t, r.body)
		return r.status == http.StatusOK && m.Error == nil && textOf(m.Result) == "back"
	})
}

// TestProfileWithSDKClients: the official clients through one profile URL
// — the Go SDK client (its 2026-07-28 era), the TypeScript SDK client 1.x
// (a 2025 session) and 2.x (auto mode: 2026-07-28), and the Inspector's
// CLI — list the members' tools under their prefixes and call them.
func TestProfileWithSDKClients(t *testing.T) {
	node := node24(t)
	p := startBinary(t, profileFile(t))
	url := p.base + "/p/both/mcp"

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs := goSDKSession(t, ctx, url, "stelae-profile-test", 0)
	listed, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range listed.Tools {
		names = append(names, tool.Name)
	}
	if !slices.Contains(names, "alpha__echo") || !slices.Contains(names, "b__echo") || slices.Contains(names, "echo") {
		t.Errorf("the Go SDK client lists %v", names)
	}
	for _, tool := range []string{"alpha__echo", "b__echo"} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"text": "go " + tool}})
		if err != nil || res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "go "+tool {
			t.Errorf("the Go SDK client's %s: %v %+v", tool, err, res)
		}
	}

	run := runClientScript(node, "ts-session.mjs", url, "--call", `alpha__echo {"text":"ts a"}`, "--call", `b__echo {"text":"ts b"}`)
	var s tsSession
	if err := json.Unmarshal([]byte(run.last), &s); err != nil || !s.OK {
		t.Fatalf("ts-session: %v %v\nstdout: %s\nstderr: %s", run.err, err, run.stdout, run.stderr)
	}
	if !slices.Contains(s.Tools, "alpha__echo") || !slices.Contains(s.Tools, "b__whoami") || slices.Contains(s.Tools, "whoami") {
		t.Errorf("the TypeScript SDK client lists %v", s.Tools)
	}
	for i, want := range []string{"ts a", "ts b"} {
		if len(s.Calls) != 2 || s.Calls[i].Error != "" || len(s.Calls[i].Result.Content) != 1 || s.Calls[i].Result.Content[0].Text != want {
			t.Errorf("the TypeScript SDK client's calls: %+v; want %q for call %d", s.Calls, want, i)
			break
		}
	}

	// The TypeScript SDK v2 client in auto mode (2026-07-28) on beta's
	// tools: list, call, progress, elicitation and sampling through
	// input_required, listen, and an aborted call the child sees cancelled.
	v2 := runClientScript(node, "ts-v2-client.mjs", url, "--mode", "auto", "--prefix", "b__", "--deadline", "60000")
	var s2 tsV2Summary
	if err := json.Unmarshal([]byte(v2.last), &s2); err != nil || !s2.OK {
		t.Errorf("the TypeScript SDK v2 client through the profile: %v %v\nfailures: %v\nstderr: %s", v2.err, err, s2.Failures, v2.stderr)
	}

	// The Inspector's CLI.
	listed2 := runInspector(t, url, "--method", "tools/list")
	if tools, _ := listed2["tools"].([]any); len(tools) != len(names) {
		t.Errorf("the Inspector lists %d tools; the Go SDK client %d", len(tools), len(names))
	}
	called := runInspector(t, url, "--method", "tools/call", "--tool-name", "alpha__echo", "--tool-arg", "text=from the inspector")
	if !strings.Contains(fmt.Sprint(called["content"]), "from the inspector") {
		t.Errorf("the Inspector's alpha__echo: %v", called)
	}
}

// listedLen is how many tools a Go SDK list has (none when nil).
func listedLen(l *mcp.ListToolsResult) int {
	if l == nil {
		return 0
	}
	return len(l.Tools)
}

// destDetails is what /healthz?verbose says of a destination, as far as
// the tests read it.
type destDetails struct {
	PID         int    `json:"pid"`
	ChildSpeaks string `json:"child_speaks"`
	State       string `json:"state"`
}

// verboseHealth is /healthz?verbose's destinations.
func verboseHealth(t testing.TB, p *binaryProc) map[string]destDetails {
	t.Helper()
	var h struct {
		Destinations map[string]destDetails `json:"destinations"`
	}
	r := mustRequest(t, http.MethodGet, p.base+"/healthz?verbose", "", "")
	if err := json.Unmarshal(r.body, &h); err != nil {
		t.Fatalf("/healthz?verbose: %v %s", err, r.body)
	}
	return h.Destinations
}

// destPID is a destination's child's pid as /healthz?verbose says.
func destPID(t *testing.T, p *binaryProc, dest string) int {
	t.Helper()
	return verboseHealth(t, p)[dest].PID
}

// TestProfileWithNpmServers: one profile of three servers from npm —
// server-everything, server-filesystem with 'roots:' and server-memory —
// listed and called through one URL (by a raw client, the Go SDK client
// and the Inspector's CLI): prefixed names (the hidden get-env
// neither listed nor callable), each member's own tools (filesystem sees
// its configured root), progress, a sampling round trip (the TypeScript
// SDK client answers it), a resource read (listed and by template), a
// subscription whose updates reach only the session that subscribed, and
// server-memory's child killed while calls to the other two go on.
func TestProfileWithNpmServers(t *testing.T) {
	node := node24(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "note.txt"), []byte("a note"), 0o600); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(t.TempDir(), "destinations.yaml")
	yaml := fmt.Sprintf(`destinations:
  everything: {command: %q}
  filesystem: {command: %q, roots: [%q]}
  memory: {command: %q, env: {MEMORY_FILE_PATH: %q}}
profiles:
  work:
    destinations: [everything, filesystem, memory]
    tools: {deny: [everything__get-env]}
`, everythingBin(t), filesystemBin(t), dir, filepath.Join(filepath.Dir(everythingBin(t)), "mcp-server-memory"), filepath.Join(t.TempDir(), "memory.jsonl"))
	if err := os.WriteFile(config, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startBinary(t, config)
	url := p.base + "/p/work/mcp"
	a, b := newClient(t, url), newClient(t, url)
	a.initialize()
	b.initialize()

	names := toolNames(t, a.post(`{"jsonrpc":"2.0","id":"l","method":"tools/list"}`))
	for _, want := range []string{"everything__echo", "everything__trigger-long-running-operation", "filesystem__read_text_file", "memory__create_entities"} {
		if !slices.Contains(names, want) {
			t.Errorf("the profile does not list %s: %v", want, names)
		}
	}
	for _, n := range names {
		if !strings.HasPrefix(n, "everything__") && !strings.HasPrefix(n, "filesystem__") && !strings.HasPrefix(n, "memory__") || n == "everything__get-env" {
			t.Errorf("the profile lists %q", n)
		}
	}
	if r := a.callTool(`"env"`, "everything__get-env", nil); !strings.Contains(string(r.body), "not available") {
		t.Errorf("everything__get-env, hidden: %s", r.body)
	}
	call := func(c *client, tool string, args any) string {
		t.Helper()
		if args == nil {
			args = map[string]any{}
		}
		return textOf(resultOK(t, tool, c.callTool(`"c"`, tool, args)))
	}
	if got := call(a, "filesystem__list_allowed_directories", nil); !strings.Contains(got, dir) {
		t.Errorf("filesystem__list_allowed_directories: %q; want the configured root %s", got, dir)
	}
	if got := call(a, "filesystem__read_text_file", map[string]string{"path": filepath.Join(dir, "note.txt")}); got != "a note" {
		t.Errorf("filesystem__read_text_file: %q", got)
	}
	call(a, "memory__create_entities", map[string]any{"entities": []map[string]any{{"name": "profile-test", "entityType": "test", "observations": []string{"seen"}}}})
	if got := call(b, "memory__read_graph", nil); !strings.Contains(got, "profile-test") {
		t.Errorf("memory__read_graph: %q", got)
	}

	// Progress, with the caller's token.
	st := openSSE(t, http.MethodPost, url, a.sid, `{"jsonrpc":"2.0","id":"p","method":"tools/call","params":{"name":"everything__trigger-long-running-operation","arguments":{"duration":1,"steps":2},"_meta":{"progressToken":"work-progress"}}}`)
	if m := st.next(t, "notifications/progress", 20*time.Second); !strings.Contains(string(m.Params), `"progressToken":"work-progress"`) {
		t.Errorf("progress: %s", m.Params)
	}
	st.close()

	// Resources: a listed one and one of a template.
	for _, uri := range []string{"demo://resource/static/document/features.md", "demo://resource/dynamic/text/7"} {
		r := a.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":"r","method":"resources/read","params":{"uri":%q}}`, uri))
		if res := resultOK(t, "resources/read "+uri, r); !strings.Contains(string(res), `"contents"`) {
			t.Errorf("resources/read %s: %s", uri, res)
		}
	}

	// A subscription: a's, not b's.
	const watched = "demo://resource/static/document/features.md"
	if m := decodeAnswer(t, a.post(`{"jsonrpc":"2.0","id":"s","method":"resources/subscribe","params":{"uri":"`+watched+`"}}`)); m.Error != nil || m.Result == nil {
		t.Fatalf("resources/subscribe: %+v", m)
	}
	aStream, bStream := a.openStream(), b.openStream()
	defer aStream.close()
	defer bStream.close()
	call(a, "everything__toggle-subscriber-updates", nil)
	if m := aStream.next(t, "notifications/resources/updated", 20*time.Second); !strings.Contains(string(m.Params), watched) {
		t.Errorf("the update a subscribed to: %s", m.Params)
	}
	bStream.none(t, "notifications/resources/updated", 500*time.Millisecond)

	// Sampling, answered by the TypeScript SDK client through the profile.
	run := runClientScript(node, "ts-session.mjs", url, "--caps", "sampling", "--label", "work", "--call", `everything__trigger-sampling-request {"prompt":"hello","maxTokens":5}`)
	var s tsSession
	if err := json.Unmarshal([]byte(run.last), &s); err != nil || !s.OK || s.SamplingRequests != 1 || len(s.Calls) != 1 || !strings.Contains(fmt.Sprint(s.Calls[0].Result.Content), "sampled by work") {
		t.Errorf("sampling through the profile: %v %v %+v\nstderr: %s", run.err, err, s, run.stderr)
	}

	// The Go SDK client and the Inspector's CLI list and call all three.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs := goSDKSession(t, ctx, url, "stelae-profile-npm", 0)
	if listed, err := cs.ListTools(ctx, nil); err != nil || len(listed.Tools) != len(names) {
		t.Errorf("the Go SDK client lists %v tools (%v); raw tools/list %d", listedLen(listed), err, len(names))
	}
	for tool, args := range map[string]map[string]any{"everything__get-sum": {"a": 2, "b": 3}, "filesystem__list_allowed_directories": {}, "memory__read_graph": {}} {
		if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args}); err != nil || res.IsError {
			t.Errorf("the Go SDK client's %s: %v %+v", tool, err, res)
		}
	}
	if tools, _ := runInspector(t, url, "--method", "tools/list")["tools"].([]any); len(tools) != len(names) {
		t.Errorf("the Inspector lists %d tools; want %d", len(tools), len(names))
	}
	if out := runInspector(t, url, "--method", "tools/call", "--tool-name", "everything__echo", "--tool-arg", "message=inspected"); !strings.Contains(fmt.Sprint(out["content"]), "inspected") {
		t.Errorf("the Inspector's everything__echo: %v", out)
	}

	// server-memory's child killed: the other members' calls go on.
	pid := destPID(t, p, "memory")
	if pid == 0 {
		t.Fatal("no pid for memory's child")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if got := call(b, "everything__echo", map[string]string{"message": "on"}); !strings.Contains(got, "on") {
			t.Errorf("everything__echo with memory's child killed: %q", got)
		}
		if got := call(b, "filesystem__list_allowed_directories", nil); !strings.Contains(got, dir) {
			t.Errorf("filesystem with memory's child killed: %q", got)
		}
	}
}

// TestProfileModernEra: the 2026-07-28 era through a profile — a member's
// request for input comes back as input_required (MRTR) and the retry
// with the input is answered by that member; a subscriptions/listen stream
// on the profile gets a member's tool list change with its subscription
// id.
func TestProfileModernEra(t *testing.T) {
	p := startBinary(t, profileFile(t))
	url := p.base + "/p/both/mcp"
	listen := openSSE(t, http.MethodPost, url, "", listenBody(9), "MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "subscriptions/listen")
	defer listen.close()
	listen.next(t, "notifications/subscriptions/acknowledged", 10*time.Second)

	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{}}}`
	args := `"arguments":{"method":"sampling/createMessage","params":"{\"messages\":[{\"role\":\"user\",\"content\":{\"type\":\"text\",\"text\":\"hi\"}}],\"maxTokens\":5}"}`
	key, state := inputRequired(t, modernCall(t, url, `"ask-1"`, "tools/call", `{"name":"b__ask",`+args+`,`+meta+`}`))
	retry := fmt.Sprintf(`{"name":"b__ask",%s,"inputResponses":{%q:{"role":"assistant","content":{"type":"text","text":"answered through the profile"},"model":"m"}},"requestState":%q,%s}`, args, key, state, meta)
	r := modernCall(t, url, `"ask-2"`, "tools/call", retry)
	if m := decodeAnswer(t, r); string(m.ID) != `"ask-2"` || !strings.Contains(string(m.Result), "answered through the profile") {
		t.Errorf("the retry with the input: %d %s", r.status, r.body)
	}

	resultOK(t, "alpha__list_changed", modernCall(t, url, `"lc"`, "tools/call", `{"name":"alpha__list_changed","arguments":{},`+modernMeta+`}`))
	m := listen.next(t, "notifications/tools/list_changed", 10*time.Second)
	if !strings.Contains(string(m.Params), `"io.modelcontextprotocol/subscriptionId":9`) {
		t.Errorf("list_changed on the profile's listen stream: %s", m.Params)
	}
}

// TestProfileCollisionsReported: members that expose names alike are
// served, not refused: the first member keeps a name, and the collisions,
// and the clients that cut a list as long as the profile's, are warnings
// in -check (the shared prefix), the log and /healthz?verbose.
func TestProfileCollisionsReported(t *testing.T) {
	server := fakemcp.ModeServer
	path := destinationsFile(t, map[string]string{"a": server, "b": server, "c": server, "d": server}, map[string]string{"a": "    prefix: x\n", "b": "    prefix: x\n"})
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(data, "profiles:\n  all: {destinations: [a, b, c, d]}\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bridgeBinary(t), "-check", "-config", path).CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"a" and "b" share the prefix "x"`) {
		t.Errorf("-check: %v\n%s", err, out)
	}
	p := startBinary(t, path)
	c := newClient(t, p.base+"/p/all/mcp")
	c.initialize()
	names := toolNames(t, c.post(`{"jsonrpc":"2.0","id":"l","method":"tools/list"}`))
	// -check counted them as the profile lists them: it started the
	// members (and stopped them), and warns of the clients that cut there
	// and of each name b's tools met a's on.
	if want := fmt.Sprintf("profile all (/p/all/mcp): [a b c d], %d tools", len(names)); !strings.Contains(string(out), want) ||
		!strings.Contains(string(out), `profile "all": `+fmt.Sprintf("%d tools: ", len(names))) || !strings.Contains(string(out), "Cursor") ||
		strings.Count(string(out), `profile "all": two members expose the same tool name`) != len(names)/3 {
		t.Errorf("-check does not count the profile's %d tools (want %q, a warning naming Cursor, and %d collisions):\n%s", len(names), want, len(names)/3, out)
	}
	direct := newClient(t, p.base+"/a/mcp")
	direct.initialize()
	if whoamiCall(t, direct).PID != whoamiAs(t, c, "x__whoami") {
		t.Errorf("x__whoami did not reach a, the first member with the prefix")
	}
	var h struct {
		Profiles map[string]struct {
			URL      string   `json:"url"`
			Members  []string `json:"members"`
			Tools    int      `json:"tools"`
			Warnings []string `json:"warnings"`
		} `json:"profiles"`
	}
	r := mustRequest(t, http.MethodGet, p.base+"/healthz?verbose", "", "")
	if err := json.Unmarshal(r.body, &h); err != nil {
		t.Fatal(err)
	}
	all := h.Profiles["all"]
	collisions, cursor := 0, false
	for _, w := range all.Warnings {
		collisions += strings.Count(w, "b's is hidden")
		cursor = cursor || strings.Contains(w, "Cursor")
	}
	if all.URL != "/p/all/mcp" || len(all.Members) != 4 || all.Tools != len(names) || collisions != len(names)/3 || !cursor {
		t.Errorf("/healthz?verbose says of the profile %+v; it lists %d tools, b's %d collide with a's, and past 40 Cursor cuts them", all, len(names), len(names)/3)
	}
	// (The log is read from the bridge's stderr as it comes.)
	waitFor(t, 10*time.Second, "the collisions in the log", func() bool {
		return strings.Contains(p.logs.String(), "two members of the profile expose the same tool name")
	})
}

// TestProfileManyUsersMixedPayloads: eight users at once through one
// profile, each in a session of its own, call both members with payloads
// from bytes to a MiB and with progress: every answer is the caller's own,
// whole, and every progress notification carries the caller's token —
// nothing crosses between users or members on the profile's extra hop.
// (The users' goroutines report errors; only the test's fails it.)
func TestProfileManyUsersMixedPayloads(t *testing.T) {
	p := startBinary(t, profileFile(t))
	url := p.base + "/p/both/mcp"
	sizes := []int{1, 64, 4 << 10, 64 << 10, 1 << 20}
	const users, calls = 8, 12
	errs := make(chan error, users)
	for u := 0; u < users; u++ {
		go func() {
			errs <- func() error {
				r, err := request(http.MethodPost, url, "", initBody)
				if err != nil || r.status != http.StatusOK {
					return fmt.Errorf("user %d: initialize %d %v", u, r.status, err)
				}
				sid := r.header.Get("Mcp-Session-Id")
				for i := 0; i < calls; i++ {
					tool := []string{"alpha__echo", "b__echo"}[(u+i)%2]
					text := fmt.Sprintf("u%d-c%d-", u, i) + strings.Repeat(string(rune('a'+u)), sizes[(u*calls+i)%len(sizes)])
					id := fmt.Sprintf(`"%d-%d"`, u, i)
					r, err := request(http.MethodPost, url, sid, toolCallBody(id, tool, map[string]string{"text": text}))
					var m rpc
					if err == nil {
						err = json.Unmarshal(r.body, &m)
					}
					if err != nil || m.Error != nil || string(m.ID) != id || textOf(m.Result) != text {
						return fmt.Errorf("user %d call %d (%s, %d bytes): %v %d, id %s, %d bytes of text, error %v", u, i, tool, len(text), err, r.status, m.ID, len(textOf(m.Result)), m.Error)
					}
					if i%4 != 0 {
						continue
					}
					token := fmt.Sprintf("tok-%d-%d", u, i)
					r, err = request(http.MethodPost, url, sid, fmt.Sprintf(`{"jsonrpc":"2.0","id":"p","method":"tools/call","params":{"name":%q,"arguments":{"steps":2,"ms":5},"_meta":{"progressToken":%q}}}`, []string{"alpha__progress", "b__progress"}[i%2], token))
					if err != nil {
						return err
					}
					progress := 0
					for _, line := range strings.Split(string(r.body), "\n") {
						data, ok := strings.CutPrefix(line, "data: ")
						if !ok || !strings.Contains(data, "notifications/progress") {
							continue
						}
						progress++
						if !strings.Contains(data, `"progressToken":"`+token+`"`) {
							return fmt.Errorf("user %d got progress %s; its token is %s", u, data, token)
						}
					}
					if progress != 2 {
						return fmt.Errorf("user %d: %d progress notifications of 2: %s", u, progress, r.body)
					}
				}
				return nil
			}()
		}()
	}
	for u := 0; u < users; u++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestProfileWithAnIsolatedMember: a member with 'isolation: session'
// gives each of the profile's sessions a child of its own, while a shared
// member's child serves them all; a session's own child goes with it.
func TestProfileWithAnIsolatedMember(t *testing.T) {
	path := destinationsFile(t, map[string]string{"own": fakemcp.ModeServer, "shared": fakemcp.ModeServer}, map[string]string{"own": "    isolation: session\n"})
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(data, "profiles:\n  mixed: {destinations: [own, shared]}\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startBinary(t, path)
	url := p.base + "/p/mixed/mcp"
	pid := func(c *client, tool string) int { return whoamiAs(t, c, tool) }
	a, b := newClient(t, url), newClient(t, url)
	a.initialize()
	b.initialize()
	ownA, ownB := pid(a, "own__whoami"), pid(b, "own__whoami")
	if ownA == ownB {
		t.Errorf("two sessions of the profile share the isolated member's child (pid %d)", ownA)
	}
	if sa, sb := pid(a, "shared__whoami"), pid(b, "shared__whoami"); sa != sb {
		t.Errorf("the shared member runs two children (%d, %d)", sa, sb)
	}
	if again := pid(a, "own__whoami"); again != ownA {
		t.Errorf("a session's own child changed: %d, then %d", ownA, again)
	}
	deleteSession(t, a)
	waitFor(t, 15*time.Second, "the deleted session's own child to stop", func() bool { return !processAlive(ownA) })
	if !processAlive(ownB) {
		t.Error("the other session's own child stopped too")
	}
}

// TestReloadProfiles: a reload that keeps a profile and its members keeps
// its sessions; one that changes its members retires it (its sessions get
// 404, as a changed destination's do) and serves the new one at once.
func TestReloadProfiles(t *testing.T) {
	server := fakemcp.ModeServer
	write := func(path string, dests map[string]string, profile string) string {
		from := destinationsFile(t, dests, nil)
		data, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if path == "" {
			path = from
		}
		if err := os.WriteFile(path, append(data, profile...), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	config := write("", map[string]string{"a": server, "b": server}, "profiles:\n  p: {destinations: [a, b]}\n")
	p := startBinary(t, config)
	c := newClient(t, p.base+"/p/p/mcp")
	c.initialize()
	echo := func(c *client, tool string) response { return c.callTool(`"e"`, tool, map[string]string{"text": "x"}) }

	write(config, map[string]string{"a": server, "b": server, "c": server}, "profiles:\n  p: {destinations: [a, b]}\n")
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitReloads(t, p, "applied", 1)
	if r := echo(c, "a__echo"); r.status != http.StatusOK || decode(t, r.body).Error != nil {
		t.Errorf("the kept profile's session after a reload that added c: %d %s", r.status, r.body)
	}

	write(config, map[string]string{"a": server, "b": server, "c": server}, "profiles:\n  p: {destinations: [a, b, c]}\n")
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitReloads(t, p, "applied", 2)
	if r := echo(c, "a__echo"); r.status != http.StatusNotFound {
		t.Errorf("the changed profile's old session: %d %s; want 404", r.status, r.body)
	}
	fresh := newClient(t, p.base+"/p/p/mcp")
	fresh.initialize()
	if got := textOf(resultOK(t, "c__echo", echo(fresh, "c__echo"))); got != "x" {
		t.Errorf("c__echo in the changed profile: %q", got)
	}
}
