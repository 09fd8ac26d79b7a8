//go:build unix

package tests

// The operator console (/console) with the real bridge, real children and headless Chromium:
// sign-in, live log, sessions, tools and actions, screenshots; who may open it; the banner's link;
// its event stream; a benchmark of calls while it follows the log. consoleBridge serves
// clientsdoc_test.go too.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/stelae-bridge/stelae-bridge/authserver"
	"github.com/stelae-bridge/stelae-bridge/bridge"
	"github.com/stelae-bridge/stelae-bridge/config"
	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

// consoleToken is the operator token of the console tests' bridges.
const consoleToken = "operator-token-for-the-console-tests"

// consoleBridge serves "notes" and "files" (fake servers; "files" hides
// the tools "crash" and "garbage") behind the built-in authorization
// server, with an operator token too, and a profile "all" of both.
func consoleBridge(t *testing.T) (*testBridge, *authserver.Server) {
	t.Helper()
	as, err := authserver.Open(filepath.Join(t.TempDir(), "oauth.db"), authserver.Options{Passphrase: testPassphrase})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { as.Close() })
	b := newBridge(t, map[string]string{"notes": fakemcp.ModeServer, "files": fakemcp.ModeServer}, bridgeConfig{
		opts:        bridge.Options{AuthTokens: []string{consoleToken}},
		defaultDest: "notes",
		auth:        &config.Auth{Issuer: config.IssuerBuiltin},
		authServer:  as,
		tools:       config.ToolFilter{Deny: []string{"crash", "garbage"}},
		profiles:    map[string][]string{"all": {"notes", "files"}},
	})
	return b, as
}

// TestConsoleInABrowser: the console in headless Chromium over the real
// bridge and children — sign-in by the passphrase, the children's state,
// a client's call appearing in the live log and its session in the
// sessions table, the tool catalogue with its deny marks, the log's
// filters; then the actions: a session ended from the page gets 404 at
// its next request, a revoked client is refused at once, a restarted
// child comes back with a new pid. Screenshots at desktop and phone
// widths are written to $STELAE_SCREENSHOTS (docs/ when regenerating
// the README's), else to a temporary directory, and checked.
func TestConsoleInABrowser(t *testing.T) {
	browser := browserFor(t)
	b, _ := consoleBridge(t)
	ctx, cancel := context.WithTimeout(browser, 3*time.Minute)
	defer cancel()
	p := &page{t: t, ctx: ctx}

	// Without a credential: the sign-in page, and no data.
	resp, err := chromedp.Run(ctx, chromedp.NavigateResponse(b.srv.URL+"/console"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != http.StatusUnauthorized {
		t.Errorf("the console without a credential: %d, want 401", resp.Status)
	}
	p.waitJS("the sign-in form", `document.querySelector("#login #credential")`)
	if html := eval[string](p, `document.documentElement.outerHTML`); strings.Contains(html, "notes") || strings.Contains(html, "files") {
		t.Errorf("the sign-in page names a destination:\n%s", html)
	}
	// A wrong passphrase, then the right one.
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#credential"), "wrong passphrase"), chromedp.Click(chromedp.CSS("#login-submit"))); err != nil {
		t.Fatal(err)
	}
	p.waitJS("the sign-in page to say the passphrase was wrong", `document.querySelector("#login-error")`)
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#credential"), testPassphrase), chromedp.Click(chromedp.CSS("#login-submit"))); err != nil {
		t.Fatal(err)
	}
	p.waitJS("the console to be live", `document.querySelector("#conn") && document.querySelector("#conn").textContent.trim() === "live"`)
	p.waitJS("both destinations", `document.querySelector('section.destination[data-destination="notes"]') && document.querySelector('section.destination[data-destination="files"]')`)
	p.waitJS("the profile", `document.querySelector('#profiles li[data-profile="all"]')`)
	if st := p.text(`section.destination[data-destination="notes"] .state`); !strings.Contains(st, "idle") {
		t.Errorf("notes before any client: state %q, want idle", st)
	}

	// A client (an OAuth client approved by the operator) calls a tool.
	c := newOAuthClient(t, b.srv.URL)
	c.register()
	verifier, challenge := pkce("console")
	access, _ := c.exchange(c.code(challenge, b.url("notes")), verifier)
	mcp := newClient(t, b.url("notes"))
	auth := []string{"Authorization", "Bearer " + access}
	r := mcp.post(initBody, auth...)
	mcp.sid = r.header.Get("Mcp-Session-Id")
	if r.status != http.StatusOK || mcp.sid == "" {
		t.Fatalf("initialize: %d %s", r.status, r.body)
	}
	if r := mcp.post(toolCallBody(`1`, "echo", map[string]string{"text": "seen by the console"}), auth...); r.status != http.StatusOK {
		t.Fatalf("tools/call: %d %s", r.status, r.body)
	}
	short := mcp.sid[:8]
	p.waitJS("the call in the log", `document.querySelector('#log-table tbody tr[data-destination="notes"][data-tool="echo"]')`)
	p.waitJS("the session in the sessions table", fmt.Sprintf(`document.querySelector('#sessions tr[data-session=%q][data-destination="notes"]')`, short))
	// The row may come before its cells are filled: wait for the client's
	// name (it was once read too early on a busy machine).
	p.waitJS("the session's client cell to name the client", fmt.Sprintf(`/test/.test((document.querySelector('#sessions tr[data-session=%q] td.client')||{}).textContent||"")`, short))
	// Its principal (a hash) is named with the OAuth client whose token
	// made it.
	p.waitJS("the session's principal with its OAuth client", fmt.Sprintf(`/Test Connector/.test((document.querySelector('#sessions tr[data-session=%q] td.principal')||{}).textContent||"")`, short))
	if oc := eval[string](p, fmt.Sprintf(`document.querySelector('#sessions tr[data-session=%q]').getAttribute("data-oauth-client")`, short)); oc != c.id {
		t.Errorf("the session's OAuth client: %q, want %q", oc, c.id)
	}
	p.waitJS("notes running with a pid", `/^\d+$/.test((document.querySelector('section.destination[data-destination="notes"] .pid')||{}).textContent||"")`)
	pid := strings.TrimSpace(p.text(`section.destination[data-destination="notes"] .pid`))
	if st := p.text(`section.destination[data-destination="notes"] .state`); !strings.Contains(st, "running") {
		t.Errorf("notes after a call: state %q", st)
	}
	// The catalogue: files' hidden tools are marked denied, echo allowed.
	p.waitJS("the tool catalogue", `document.querySelector('#tools li[data-tool="notes/crash"]')`)
	if !eval[bool](p, `document.querySelector('#tools li[data-tool="notes/crash"]').classList.contains("denied") && document.querySelector('#tools li[data-tool="notes/echo"]').classList.contains("allowed")`) {
		t.Error("the catalogue does not mark crash denied and echo allowed")
	}
	// The log's filters: a tool that matches nothing hides every row.
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#filter-tool"), "no-such-tool")); err != nil {
		t.Fatal(err)
	}
	p.waitJS("the filter to hide the rows", `[...document.querySelectorAll('#log-table tbody tr[data-seq]')].every(r => r.hidden)`)
	eval[bool](p, `(() => { const f = document.querySelector("#filter-tool"); f.value = "echo"; f.dispatchEvent(new Event("input", {bubbles: true})); return true })()`)
	p.waitJS("the echo row to show again", `!document.querySelector('#log-table tbody tr[data-tool="echo"]').hidden`)

	// Screenshots, before the actions change the page.
	screenshots(t, p)

	// End the session from the page: its next request gets 404.
	p.confirm(fmt.Sprintf(`#sessions tr[data-session=%q] button.end-session`, short))
	p.waitJS("the notice that the session ended", `/ended/.test(document.querySelector("#notice").textContent)`)
	if r := mcp.post(toolCallBody(`2`, "echo", map[string]string{"text": "after"}), auth...); r.status != http.StatusNotFound {
		t.Errorf("the ended session's next request: %d %s, want 404", r.status, r.body)
	}
	p.waitJS("the session to leave the table", fmt.Sprintf(`!document.querySelector('#sessions tr[data-session=%q]')`, short))

	// Revoke the client from the page: refused at once.
	p.waitJS("the client in the clients table", fmt.Sprintf(`document.querySelector('#clients tr[data-client=%q] button.revoke')`, c.id))
	p.confirm(fmt.Sprintf(`#clients tr[data-client=%q] button.revoke`, c.id))
	p.waitJS("the notice that the client was revoked", `/revoked/.test(document.querySelector("#notice").textContent)`)
	if r := newClient(t, b.url("notes")).post(initBody, auth...); r.status != http.StatusUnauthorized {
		t.Errorf("the revoked client's next request: %d %s, want 401", r.status, r.body)
	}

	// Restart notes' child from the page, while a session (the
	// operator's own, by token) uses it: a new pid, and the session goes
	// on. (With nobody using it, a restart starts nothing: the
	// operator-action tests show that.)
	user := newClient(t, b.url("notes"))
	opAuth := []string{"Authorization", "Bearer " + consoleToken}
	r = user.post(initBody, opAuth...)
	user.sid = r.header.Get("Mcp-Session-Id")
	if r.status != http.StatusOK || user.sid == "" {
		t.Fatalf("initialize with the operator's token: %d %s", r.status, r.body)
	}
	if r := user.post(toolCallBody(`1`, "echo", map[string]string{"text": "before the restart"}), opAuth...); r.status != http.StatusOK {
		t.Fatalf("tools/call before the restart: %d %s", r.status, r.body)
	}
	p.waitJS("notes running with a pid", `/running/.test(document.querySelector('section.destination[data-destination="notes"] .state').textContent) && /^\d+$/.test((document.querySelector('section.destination[data-destination="notes"] .pid')||{}).textContent||"")`)
	pid = strings.TrimSpace(p.text(`section.destination[data-destination="notes"] .pid`))
	p.confirm(`section.destination[data-destination="notes"] button.restart`)
	p.waitJS("the notice that notes is restarting", `/restarting/.test(document.querySelector("#notice").textContent)`)
	p.waitJS("notes to run again with a new pid", fmt.Sprintf(`(() => { const d = document.querySelector('section.destination[data-destination="notes"]'); return /running/.test(d.querySelector(".state").textContent) && /^\d+$/.test(d.querySelector(".pid").textContent.trim()) && d.querySelector(".pid").textContent.trim() !== %q })()`, pid))
	if st := b.status("notes"); st.RestartsTotal != 0 {
		t.Errorf("the operator's restart counted as a crash: %+v", st)
	}
	if r := user.post(toolCallBody(`2`, "echo", map[string]string{"text": "after the restart"}), opAuth...); r.status != http.StatusOK {
		t.Errorf("the session's call after the restart: %d %s", r.status, r.body)
	}
}

// screenshots takes the console at desktop and phone widths; at the
// phone's the page must not scroll sideways.
func screenshots(t *testing.T, p *page) {
	t.Helper()
	dir := os.Getenv("STELAE_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	for _, s := range []struct {
		name          string
		width, height int64
		mobile        bool
	}{{"console-desktop.png", 1280, 900, false}, {"console-phone.png", 390, 844, true}} {
		opts := []chromedp.EmulateViewportOption{chromedp.EmulateScale(1)}
		if s.mobile {
			opts = append(opts, chromedp.EmulateMobile)
		}
		if err := chromedp.Do(p.ctx, chromedp.EmulateViewport(s.width, s.height, opts...)); err != nil {
			t.Fatal(err)
		}
		p.waitJS("the layout at "+s.name, fmt.Sprintf(`window.innerWidth === %d`, s.width))
		if over := eval[float64](p, `document.documentElement.scrollWidth - window.innerWidth`); over > 1 {
			t.Errorf("%s: the page is %v px wider than the viewport (it scrolls sideways)", s.name, over)
		}
		img, err := chromedp.Run(p.ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := png.DecodeConfig(bytes.NewReader(img))
		if err != nil || int64(cfg.Width) != s.width {
			t.Errorf("%s: %v, %d px wide", s.name, err, cfg.Width)
		}
		if err := os.WriteFile(filepath.Join(dir, s.name), img, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := chromedp.Do(p.ctx, chromedp.EmulateViewport(1280, 900)); err != nil {
		t.Fatal(err)
	}
}

// TestConsoleAdmitsOperatorsOnly: over real HTTP through the bridge's
// layers, the console and its API answer 401 without an operator's
// credential — an MCP client's valid access token included — and show
// no data; the operator token opens them; and with auth off, only this
// machine is served (a tunnel's forwarded request is refused).
func TestConsoleAdmitsOperatorsOnly(t *testing.T) {
	b, _ := consoleBridge(t)
	c := newOAuthClient(t, b.srv.URL)
	c.register()
	verifier, challenge := pkce("admits")
	access, _ := c.exchange(c.code(challenge, b.url("notes")), verifier)
	for _, tc := range []struct {
		name, path string
		hdr        []string
		want       int
	}{
		{"the page, no credential", "/console", nil, 401},
		{"the state, no credential", "/console/api/state", nil, 401},
		{"the events, no credential", "/console/events", nil, 401},
		{"the state, an MCP client's access token", "/console/api/state", []string{"Authorization", "Bearer " + access}, 401},
		{"the page, an MCP client's access token", "/console", []string{"Authorization", "Bearer " + access}, 401},
		{"the state, the operator token", "/console/api/state", []string{"Authorization", "Bearer " + consoleToken}, 200},
	} {
		r := mustRequest(t, http.MethodGet, b.srv.URL+tc.path, "", "", tc.hdr...)
		if r.status != tc.want {
			t.Errorf("%s: %d, want %d: %s", tc.name, r.status, tc.want, r.body)
		}
		if has := bytes.Contains(r.body, []byte(`"notes"`)); has != (tc.want == 200) {
			t.Errorf("%s: the answer shows data: %v\n%s", tc.name, has, r.body)
		}
	}
	// The access token still works where it belongs.
	if r := newClient(t, b.url("notes")).post(initBody, "Authorization", "Bearer "+access); r.status != http.StatusOK {
		t.Errorf("the access token at its destination: %d", r.status)
	}

	// Auth off: this machine only, and with the run's token only (a local
	// forwarder that adds no header is this machine too).
	open := newBridge(t, map[string]string{"notes": fakemcp.ModeServer, "console": fakemcp.ModeServer}, bridgeConfig{})
	runToken := open.bridge.ConsoleToken()
	if r := mustRequest(t, http.MethodGet, open.srv.URL+"/console/api/state", "", ""); r.status != 401 || bytes.Contains(r.body, []byte(`"notes"`)) {
		t.Errorf("auth off, from this machine without the run's token: %d %s", r.status, r.body)
	}
	if r := mustRequest(t, http.MethodGet, open.srv.URL+"/console/api/state", "", "", "Authorization", "Bearer "+runToken); r.status != 200 || !bytes.Contains(r.body, []byte(`"notes"`)) {
		t.Errorf("auth off, from this machine with the run's token: %d %s", r.status, r.body)
	}
	if r := mustRequest(t, http.MethodGet, open.srv.URL+"/console/api/state", "", "", "X-Forwarded-For", "198.51.100.7", "Authorization", "Bearer "+runToken); r.status != 403 || bytes.Contains(r.body, []byte(`"notes"`)) {
		t.Errorf("auth off, through a tunnel: %d %s", r.status, r.body)
	}
	// A destination named "console" keeps its MCP endpoint.
	cc := newClient(t, open.srv.URL+"/console/mcp")
	cc.initialize()
	echoCall(t, cc, `1`, "hi")
}

// TestConsoleLinkOfTheBanner: with auth off the real binary prints the
// console's link with the run's token, once, and nowhere else (stdout and
// the log together name it once); the link signs a browser in and sends
// it to /console without the token; the console without it is the
// sign-in page (401), whatever forwards the request on this machine.
func TestConsoleLinkOfTheBanner(t *testing.T) {
	p := startBinary(t, fakeDestinations(t, map[string]string{"notes": fakemcp.ModeServer}))
	link := consoleLink(t, p)
	token := link.Query().Get("token")
	if len(token) != 64 || link.Path != "/console" || "http://"+link.Host != p.base {
		t.Fatalf("the banner's console link: %s (the bridge at %s)", link, p.base)
	}
	if r := mustRequest(t, http.MethodGet, p.base+"/console", "", ""); r.status != http.StatusUnauthorized || bytes.Contains(r.body, []byte("notes")) || !bytes.Contains(r.body, []byte(`name="credential"`)) {
		t.Errorf("the console without the token: %d\n%s", r.status, r.body)
	}
	jar, _ := cookiejar.New(nil)
	var hops []string
	browser := &http.Client{Jar: jar, CheckRedirect: func(r *http.Request, _ []*http.Request) error {
		hops = append(hops, r.URL.String())
		return nil
	}}
	resp, err := browser.Get(link.String())
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(hops) != 1 || hops[0] != p.base+"/console" || !bytes.Contains(body, []byte(`name="csrf-token"`)) {
		t.Errorf("the link: %d after %v\n%s", resp.StatusCode, hops, body)
	}
	resp, err = browser.Get(p.base + "/console/api/state")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`"notes"`)) {
		t.Errorf("the state once signed in by the link: %d %s", resp.StatusCode, body)
	}
	if n := strings.Count(p.logs.String(), token); n != 1 {
		t.Errorf("the token appears %d times in the bridge's output, want once (the banner):\n%s", n, p.logs.String())
	}
}

// TestConsoleEventsFollowTheLog: the event stream sends the state at
// once and each call's entry as it is answered.
func TestConsoleEventsFollowTheLog(t *testing.T) {
	b := newBridge(t, map[string]string{"notes": fakemcp.ModeServer}, bridgeConfig{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, b.srv.URL+"/console/events", nil)
	req.Header.Set("Authorization", "Bearer "+b.bridge.ConsoleToken()) // auth off: the run's token
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	events := make(chan [2]string, 64)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		var ev string
		for sc.Scan() {
			line := sc.Text()
			if v, ok := strings.CutPrefix(line, "event: "); ok {
				ev = v
			} else if v, ok := strings.CutPrefix(line, "data: "); ok {
				events <- [2]string{ev, v}
			}
		}
	}()
	next := func(kind string) string {
		t.Helper()
		for {
			select {
			case e, ok := <-events:
				if !ok {
					t.Fatalf("the stream ended before a %s event", kind)
				}
				if e[0] == kind {
					return e[1]
				}
			case <-ctx.Done():
				t.Fatalf("no %s event", kind)
			}
		}
	}
	var st struct {
		Destinations []struct{ Name string } `json:"destinations"`
	}
	if err := json.Unmarshal([]byte(next("state")), &st); err != nil || len(st.Destinations) != 1 || st.Destinations[0].Name != "notes" {
		t.Fatalf("the first state: %v %+v", err, st)
	}
	mcp := newClient(t, b.url("notes"))
	mcp.initialize()
	echoCall(t, mcp, `7`, "followed")
	for {
		var entries []struct {
			Destination, Method, Tool, RPCID string `json:"-"`
			M                                string `json:"method"`
			T                                string `json:"tool"`
			ID                               string `json:"rpc_id"`
			P                                string `json:"principal"`
		}
		if err := json.Unmarshal([]byte(next("log")), &entries); err != nil {
			t.Fatal(err)
		}
		found := false
		for _, e := range entries {
			if e.M == "tools/call" && e.T == "echo" && e.ID == "7" && e.P == "anonymous" {
				found = true
			}
		}
		if found {
			break
		}
	}
}

// BenchmarkEchoConsole: calls through a bridge with the console open and
// following the log (an event stream read as fast as it comes) against
// the same bridge with the console closed and a bridge started with
// -no-console, interleaved round by round (five: the machine's noise is
// larger than what is measured; compare the medians):
//
//	go test -run '^$' -bench BenchmarkEchoConsole -benchtime 40000x ./tests/
func BenchmarkEchoConsole(b *testing.B) {
	dests := fakeDestinations(b, map[string]string{"echo": fakemcp.ModeServer})
	withConsole := startBinary(b, dests, "-max-sessions", "64")
	without := startBinary(b, dests, "-max-sessions", "64", "-no-console")
	const workers = 16
	for round := 1; round <= 5; round++ {
		for _, v := range []struct {
			name    string
			p       *binaryProc
			follows bool
		}{{"no-console", without, false}, {"console-closed", withConsole, false}, {"console-following", withConsole, true}} {
			b.Run(fmt.Sprintf("%s/1x16/round%d", v.name, round), func(b *testing.B) {
				var logEvents atomic.Int64
				stop := func() {}
				if v.follows {
					stop = followConsole(b, v.p, &logEvents)
				}
				c := newClient(b, v.p.base+"/echo/mcp")
				c.initialize()
				defer c.must(http.MethodDelete, "")
				echoCall(b, c, `"check"`, "hi")
				measureEchoAt(b, v.p, "/echo/mcp", dialAll(b, v.p.base, workers), func(int) string { return c.sid }, "")
				stop()
				if v.follows && logEvents.Load() == 0 {
					b.Fatal("the console received no log event while it followed the calls")
				}
			})
		}
	}
}

// consoleLinkLine is the banner's console line; its link carries the
// run's token while auth is off.
var consoleLinkLine = regexp.MustCompile(`operator console: (http://\S+)`)

// consoleLink is the console's link p printed in its banner.
func consoleLink(t testing.TB, p *binaryProc) *url.URL {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m := consoleLinkLine.FindStringSubmatch(p.logs.String()); m != nil {
			u, err := url.Parse(m[1])
			if err != nil {
				t.Fatal(err)
			}
			return u
		}
		if time.Now().After(deadline) {
			t.Fatalf("the bridge printed no console link:\n%s", p.logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// followConsole opens p's console event stream (with the run's token of
// its banner) and reads it until the returned stop, counting its log
// events.
func followConsole(b *testing.B, p *binaryProc, logEvents *atomic.Int64) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.base+"/console/events", nil)
	req.Header.Set("Authorization", "Bearer "+consoleLink(b, p).Query().Get("token"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		cancel()
		b.Fatalf("console events: %v %v", err, resp)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 4<<20)
		for sc.Scan() {
			if sc.Text() == "event: log" {
				logEvents.Add(1)
			}
		}
	}()
	return func() {
		cancel()
		resp.Body.Close()
		<-done
	}
}

// TestConsoleDoctor: the console's doctor panel runs the doctor's checks
// on a URL (filled in with the first destination's) with a token, and
// shows each check; every check of the bridge's own endpoint passes.
func TestConsoleDoctor(t *testing.T) {
	browser := browserFor(t)
	b, _ := consoleBridge(t)
	ctx, cancel := context.WithTimeout(browser, 3*time.Minute)
	defer cancel()
	p := &page{t: t, ctx: ctx}
	if _, err := chromedp.Run(ctx, chromedp.Navigate(b.srv.URL+"/console")); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#credential"), consoleToken), chromedp.Click(chromedp.CSS("#login-submit"))); err != nil {
		t.Fatal(err)
	}
	p.waitJS("the console to be live", `document.querySelector("#conn") && document.querySelector("#conn").textContent.trim() === "live"`)
	p.waitJS("the doctor's URL filled in", `/^http:\/\/127\.0\.0\.1:\d+\/(files|notes)\/mcp$/.test(document.querySelector("#doctor-url").value)`)
	if err := chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS("#doctor-url"), b.url("notes")), chromedp.SendKeys(chromedp.CSS("#doctor-token"), consoleToken),
		chromedp.Click(chromedp.CSS("#doctor-run"))); err != nil {
		t.Fatal(err)
	}
	p.waitJS("the doctor's report", `/passed|failed/.test(document.querySelector("#doctor-summary").textContent)`)
	for _, c := range []string{"initialize", "session", "tools", "discover", "stream", "resource-metadata", "issuer-metadata", "cimd", "oauth-paths", "registration"} {
		if st := eval[string](p, fmt.Sprintf(`(document.querySelector('#doctor-body tr[data-check=%q]')||{getAttribute(){return "absent"}}).getAttribute("data-status")`, c)); st != "pass" {
			t.Errorf("the panel's check %s: %s; want pass\n%s", c, st, p.text("#doctor-table"))
		}
	}
	if s := p.text("#doctor-summary"); !strings.Contains(s, "passed") {
		t.Errorf("the panel's summary: %q\n%s", s, p.text("#doctor-table"))
	}
	if st := eval[string](p, `document.querySelector('#doctor-body tr[data-check="cimd-fetch"]').getAttribute("data-status")`); st != "skip" {
		t.Errorf("the fetch of claude.ai's document, not asked for: %s; want skip", st)
	}
	// Only an operator runs it (the bridge dials the URL given).
	r := mustRequest(t, http.MethodPost, b.srv.URL+"/console/api/doctor", "", `{"url":"`+b.url("notes")+`"}`, "Origin", b.srv.URL)
	if r.status != http.StatusUnauthorized || strings.Contains(string(r.body), "results") {
		t.Errorf("the doctor without a credential: %d %s", r.status, r.body)
	}
}
