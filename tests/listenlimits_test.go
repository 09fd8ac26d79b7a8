//go:build unix

package tests

// Limits on subscriptions/listen streams (issue 21): they count against -max-streams and per
// principal, a stream that falls behind is closed, and resource subscriptions are bounded.
// listenBody and openListen serve the profile and reload tests too.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stelae-bridge/stelae-bridge/bridge"
	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

// listenBody is a subscriptions/listen request for tools list changes.
func listenBody(id int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},%s}}`, id, modernMeta)
}

// openListen opens a listen stream and reports its status; a 200 stream
// stays open until ctx ends (the response is kept for the caller to close).
func openListen(ctx context.Context, url string, id int, headers ...string) (int, *http.Response, error) {
	h := append([]string{"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "subscriptions/listen"}, headers...)
	req, err := newRequest(ctx, http.MethodPost, url, "", listenBody(id), h...)
	if err != nil {
		return 0, nil, err
	}
	// A connection of its own, closed with the answer: a refused listen
	// leaves no idle keep-alive connection behind for the bridge to hold.
	resp, err := (&http.Client{Transport: &http.Transport{ResponseHeaderTimeout: 20 * time.Second, DisableKeepAlives: true}}).Do(req)
	if err != nil {
		return 0, nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
	}
	return resp.StatusCode, resp, nil
}

// TestListenStreamsCountAgainstTheStreamCap: subscriptions/listen streams
// are streams (issue 21: with -max-streams 50, 19,985 were accepted and the
// bridge ran out of file descriptors). An attack of many listens at once
// gets the cap's worth and 503 with Retry-After for the rest, the bridge's
// file descriptors stay bounded, and a normal client is served meanwhile;
// with auth each principal has at most -max-streams-per-session of them.
func TestListenStreamsCountAgainstTheStreamCap(t *testing.T) {
	const maxStreams, attack = 12, 60
	p := startBinary(t, fakeDestinations(t, map[string]string{"fake": fakemcp.ModeServer}), "-max-streams", fmt.Sprint(maxStreams))
	url := p.base + "/fake/mcp"
	warm := newClient(t, url)
	warm.initialize()
	pid := p.cmd.Process.Pid
	fdsAtRest := procFDs(pid)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	statuses := map[int]int{}
	var open []*http.Response
	var wg sync.WaitGroup
	for i := range attack {
		wg.Add(1)
		go func() {
			defer wg.Done()
			status, resp, err := openListen(ctx, url, i)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				statuses[-1]++
				return
			}
			statuses[status]++
			if status == http.StatusOK {
				open = append(open, resp)
			} else if resp.Header.Get("Retry-After") == "" {
				statuses[-2]++
			}
		}()
	}
	wg.Wait()
	defer func() {
		for _, r := range open {
			r.Body.Close()
		}
	}()
	t.Logf("%d listens at once under -max-streams %d: statuses %v; bridge fds %d at rest, %d now", attack, maxStreams, statuses, fdsAtRest, procFDs(pid))
	if statuses[http.StatusOK] > maxStreams || statuses[http.StatusServiceUnavailable] < attack-maxStreams {
		t.Errorf("%d listen streams accepted, %d refused; want at most %d accepted (the stream cap), the rest 503", statuses[http.StatusOK], statuses[http.StatusServiceUnavailable], maxStreams)
	}
	if statuses[-1]+statuses[-2] > 0 {
		t.Errorf("%d listens failed without an answer, %d refusals without Retry-After", statuses[-1], statuses[-2])
	}
	// The refused ones' connections are closed by their clients; the
	// bridge sees it a moment later.
	waitFor(t, 10*time.Second, fmt.Sprintf("the bridge's file descriptors within %d at rest + %d streams + 20", fdsAtRest, maxStreams), func() bool {
		return procFDs(pid) <= fdsAtRest+maxStreams+20
	})
	// A normal client is served meanwhile, in both eras.
	if r := warm.callTool("1", "echo", map[string]string{"text": "still served"}); r.status != http.StatusOK || !strings.Contains(string(r.body), "still served") {
		t.Errorf("a session's call during the attack: %d %s", r.status, r.body)
	}
	if r := modernCall(t, url, "2", "tools/list", "{"+modernMeta+"}"); r.status != http.StatusOK {
		t.Errorf("a 2026-07-28 request during the attack: %d %s", r.status, r.body)
	}
	// Closing the streams gives their places back.
	for _, r := range open {
		r.Body.Close()
	}
	open = nil
	waitFor(t, 20*time.Second, "a listen stream to be accepted again", func() bool {
		status, resp, err := openListen(ctx, url, 999)
		if err == nil && status == http.StatusOK {
			resp.Body.Close()
			return true
		}
		return false
	})
}

// TestListenStreamsPerPrincipal: with auth, one principal's listen streams
// are capped (-max-streams-per-session), and another principal can still
// open its own.
func TestListenStreamsPerPrincipal(t *testing.T) {
	t.Setenv("STELAE_AUTH_TOKENS", "token-of-alice,token-of-bob")
	p := startBinary(t, fakeDestinations(t, map[string]string{"fake": fakemcp.ModeServer}), "-max-streams", "50", "-max-streams-per-session", "3")
	url := p.base + "/fake/mcp"
	// The child is up first (a listen waits for the server's capabilities).
	waitFor(t, 30*time.Second, "the child to be up", func() bool {
		r, err := request(http.MethodPost, url, "", `{"jsonrpc":"2.0","id":0,"method":"tools/list","params":{`+modernMeta+`}}`,
			"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/list", "Authorization", "Bearer token-of-alice")
		return err == nil && r.status == http.StatusOK
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var open []*http.Response
	defer func() {
		for _, r := range open {
			r.Body.Close()
		}
	}()
	alice := 0
	for i := range 8 {
		status, resp, err := openListen(ctx, url, i, "Authorization", "Bearer token-of-alice")
		if err != nil {
			t.Fatal(err)
		}
		if status == http.StatusOK {
			alice++
			open = append(open, resp)
		}
	}
	status, resp, err := openListen(ctx, url, 100, "Authorization", "Bearer token-of-bob")
	if err != nil {
		t.Fatal(err)
	}
	if status == http.StatusOK {
		open = append(open, resp)
	}
	if alice != 3 || status != http.StatusOK {
		t.Errorf("alice opened %d listen streams (want 3: -max-streams-per-session), then bob got %d (want 200)", alice, status)
	}
}

// TestListenStreamThatFallsBehindIsClosed: a listen stream whose client
// stops reading while the child sends notification after notification is
// closed (as a GET stream is), not kept with notifications dropped.
func TestListenStreamThatFallsBehindIsClosed(t *testing.T) {
	b := fakeBridge(t, bridge.Options{})
	url := b.url("fake")
	c := newClient(t, url)
	c.initialize()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	status, resp, err := openListen(ctx, url, 1)
	if err != nil || status != http.StatusOK {
		t.Fatalf("listen: %d %v", status, err)
	}
	defer resp.Body.Close()
	// The client reads nothing while the child announces 5,000 changes:
	// the socket's buffers fill, then the stream's queue.
	if r := c.callTool("1", "notify", map[string]any{"method": "notifications/tools/list_changed", "count": 5000}); r.status != http.StatusOK {
		t.Fatalf("notify: %d %s", r.status, r.body)
	}
	done := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, resp.Body)
		done <- err
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the listen stream that fell behind is still open 20 s later")
	}
}

// TestListenResourceSubscriptionsBounded: one listen stream asks at most
// 256 resource subscriptions (200,000 once reached the child, slowing every
// other caller); repeats count once.
func TestListenResourceSubscriptionsBounded(t *testing.T) {
	b := fakeBridge(t, bridge.Options{})
	url := b.url("fake")
	// listen asks n subscriptions of distinct different URIs.
	listen := func(n, distinct int) response {
		var l []string
		for i := range n {
			l = append(l, fmt.Sprintf("%q", fmt.Sprintf("test://r/%d", i%distinct)))
		}
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":[%s]},%s}}`, strings.Join(l, ","), modernMeta)
		req, err := newRequest(context.Background(), http.MethodPost, url, "", body, "MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "subscriptions/listen")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := http.DefaultClient.Do(req.WithContext(ctx))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		return response{status: resp.StatusCode}
	}
	waitFor(t, 20*time.Second, "the child to be up", func() bool {
		return modernCall(t, url, "0", "tools/list", "{"+modernMeta+"}").status == http.StatusOK
	})
	if r := listen(257, 257); r.status != http.StatusBadRequest {
		t.Errorf("257 distinct subscriptions: %d; want 400", r.status)
	}
	if r := listen(1000, 256); r.status != http.StatusOK {
		t.Errorf("1,000 subscriptions, 256 distinct: %d; want 200", r.status)
	}
}
