//go:build unix

package tests

// Classes of hostile HTTP requests against the binary: each gets a well-formed answer its class
// allows (never a 5xx or a hang), nothing reaches the child that should not, and a good client
// is served afterwards.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

// TestHostileRequests sends the campaign's classes of hostile HTTP requests
// to the binary, 60 of each: every one gets a well-formed answer with a
// status its class allows (never a 5xx, never a hang), nothing reaches the
// child that should not, and the bridge serves a good client afterwards.
func TestHostileRequests(t *testing.T) {
	p := startBinary(t, fakeDestinations(t, map[string]string{"fake": fakemcp.ModeServer}))
	url := p.base + "/fake/mcp"
	good := newClient(t, url)
	good.initialize()
	rng := rand.New(rand.NewPCG(1, 2))
	randBytes := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		return b
	}
	nested := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	type req struct {
		method, path string
		body         []byte
		headers      map[string]string
	}
	post := func(body string) req {
		return req{http.MethodPost, "/fake/mcp", []byte(body), map[string]string{"Mcp-Session-Id": good.sid}}
	}
	classes := []struct {
		name  string
		make  func(i int) req
		allow []int
	}{
		{"random bytes", func(i int) req { return post(string(randBytes(1 + i*37))) }, []int{400}},
		{"JSON that is not an object", func(i int) req {
			return post([]string{`1`, `"x"`, `null`, `true`, `{}`, `{"jsonrpc":"2.0"}`}[i%6])
		}, []int{400}},
		{"batches", func(i int) req { return post(fmt.Sprintf(`[{"jsonrpc":"2.0","id":%d,"method":"ping"}]`, i)) }, []int{400}},
		{"deeply nested JSON", func(int) req { return post(nested) }, []int{400}},
		{"1 MiB method name", func(int) req {
			// Refused by the bridge with a JSON-RPC error (HTTP 200).
			return post(`{"jsonrpc":"2.0","id":1,"method":"` + strings.Repeat("m", 1<<20) + `"}`)
		}, []int{200}},
		{"ids of the wrong type", func(i int) req {
			return post([]string{`{"jsonrpc":"2.0","id":{},"method":"ping"}`, `{"jsonrpc":"2.0","id":[1],"method":"ping"}`, `{"jsonrpc":"2.0","id":true,"method":"ping"}`}[i%3])
		}, []int{400}},
		{"unknown sessions", func(int) req {
			r := post(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
			r.headers["Mcp-Session-Id"] = uuid.NewString()
			return r
		}, []int{404}},
		{"malformed session ids", func(i int) req {
			r := post(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
			r.headers["Mcp-Session-Id"] = []string{strings.Repeat("a", 4000), "../../etc/passwd", "' OR 1=1 --", "zzzzzzzz-zzzz-zzzz-zzzz-zzzzzzzzzzzz"}[i%4]
			return r
		}, []int{400}},
		{"wrong content types", func(i int) req {
			r := post(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
			r.headers["Content-Type"] = []string{"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", ";;;"}[i%4]
			return r
		}, []int{415}},
		{"unknown protocol versions", func(i int) req {
			r := post(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
			r.headers["MCP-Protocol-Version"] = []string{"1999-01-01", "latest", strings.Repeat("9", 300)}[i%3]
			return r
		}, []int{400}},
		{"odd paths", func(i int) req {
			return req{http.MethodPost, []string{"/fake/mcp/../../etc/passwd", "/%2e%2e/fake/mcp", "//fake//mcp", "/fake/mcp/x", "/fake/sse", "/nope/mcp", "/fake/mcp%00"}[i%7], []byte(`{}`), nil}
		}, []int{400, 404, 410}},
		{"odd methods", func(i int) req {
			return req{[]string{"PUT", "PATCH", "TRACE", "PROPFIND"}[i%4], "/fake/mcp", nil, map[string]string{"Mcp-Session-Id": good.sid}}
		}, []int{405}},
		{"huge headers", func(int) req {
			return req{http.MethodPost, "/fake/mcp", []byte(`{}`), map[string]string{"X-Pad": strings.Repeat("h", 100<<10)}}
		}, []int{431}},
		{"answers to requests never made", func(i int) req {
			return post(fmt.Sprintf(`{"jsonrpc":"2.0","id":"fake-%d","result":{}}`, 1000+i))
		}, []int{202}},
		{"request methods as notifications", func(i int) req {
			return post([]string{`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"crash"}}`, `{"jsonrpc":"2.0","method":"initialize"}`}[i%2])
		}, []int{400}},
	}
	hc := &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	start := time.Now()
	// send sends one hostile request and checks its answer; it returns the
	// status (-1: not even a request the Go client can make).
	send := func(name string, i int, r req, allow []int) int {
		hr, err := http.NewRequest(r.method, p.base+r.path, bytes.NewReader(r.body))
		if err != nil {
			return -1 // some paths are not even valid URLs for the Go client
		}
		hr.Header.Set("Content-Type", "application/json")
		hr.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range r.headers {
			hr.Header.Set(k, v)
		}
		resp, err := hc.Do(hr)
		if err != nil {
			t.Errorf("%s #%d: %v", name, i, err)
			return 0
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !slices.Contains(allow, resp.StatusCode) {
			t.Errorf("%s #%d: status %d %.200s; want one of %v", name, i, resp.StatusCode, body, allow)
		} else if resp.StatusCode != http.StatusAccepted && resp.StatusCode != 431 && !json.Valid(body) {
			t.Errorf("%s #%d: %d with a body that is not JSON: %.200s", name, i, resp.StatusCode, body)
		}
		return resp.StatusCode
	}
	for _, cl := range classes {
		classStart := time.Now()
		// Made in order (the random bytes' generator is the test's), sent
		// eight at a time: a refused request whose connection is closed
		// lingers half a second (as net/http's does, so the client reads
		// the answer before a reset), and sixty of them one after the
		// other took half a minute.
		reqs := make([]req, 60)
		for i := range reqs {
			reqs[i] = cl.make(i)
		}
		statuses := make([]int, len(reqs))
		var wg sync.WaitGroup
		next := make(chan int)
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range next {
					statuses[i] = send(cl.name, i, reqs[i], cl.allow)
				}
			}()
		}
		for i := range reqs {
			next <- i
		}
		close(next)
		wg.Wait()
		counts := map[int]int{}
		for _, st := range statuses {
			counts[st]++
		}
		t.Logf("%s ×60: %v in %s", cl.name, counts, time.Since(classStart).Round(time.Millisecond))
	}
	t.Logf("%d hostile requests answered in %s", 60*len(classes), time.Since(start).Round(time.Millisecond))
	// The bridge, its child and the good session are fine.
	echoCall(t, good, "1", "after the hostile requests")
	st := good.stats()
	if strings.Contains(strings.Join(st.Calls, ","), "crash") {
		t.Errorf("a hostile notification reached the child: %v", st.Calls)
	}
	for _, n := range st.Notifications {
		if len(n) > 256 {
			t.Errorf("a %d-byte method reached the child", len(n))
		}
	}
	if r, err := request(http.MethodGet, p.base+"/healthz", "", ""); err != nil || r.status != http.StatusOK {
		t.Errorf("/healthz after the hostile requests: %v %d", err, r.status)
	}
}
