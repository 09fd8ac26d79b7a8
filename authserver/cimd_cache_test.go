package authserver

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// serveTest serves srv on loopback as the bridge does (its base URL in the
// context); active counts the requests being handled.
func serveTest(t *testing.T, srv *Server) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var active atomic.Int64
	var ts *httptest.Server
	ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		active.Add(1)
		defer active.Add(-1)
		srv.ServeHTTP(w, r.WithContext(WithBase(r.Context(), ts.URL)))
	}))
	t.Cleanup(ts.Close)
	return ts, &active
}

// waitUntil polls cond until it holds or the deadline passes.
func waitUntil(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// authorizeQuery is an authorization request of client id for the notes
// destination.
func authorizeQuery(id, redirectURI string) string {
	return url.Values{"response_type": {"code"}, "client_id": {id}, "redirect_uri": {redirectURI}, "state": {"s"},
		"code_challenge": {strings.Repeat("c", 43)}, "code_challenge_method": {"S256"}, "resource": {"https://bridge.example/notes/mcp"}}.Encode()
}

func notesOnly(string, string) (string, bool) { return "notes", true }

// TestCIMDHangUpDoesNotPoisonTheCache: an unauthenticated request naming a
// client's metadata document that hangs up while the document is being
// fetched does not lock the client out: the fetch goes on on its own
// context, and the client's next request gets the page.
func TestCIMDHangUpDoesNotPoisonTheCache(t *testing.T) {
	entered := make(chan struct{}, 1)
	release := make(chan struct{}) // closed to let the first fetch answer
	var fetches atomic.Int64
	var docURL string
	doc := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fetches.Add(1) == 1 {
			entered <- struct{}{}
			select {
			case <-release:
			case <-r.Context().Done(): // the fetch was abandoned
				return
			}
		}
		fmt.Fprintf(w, `{"client_id":%q,"client_name":"Claude","redirect_uris":["https://app.example/cb"]}`, docURL)
	}))
	defer doc.Close()
	docURL = doc.URL + "/client.json"
	srv := openTest(t, Options{CIMDTransportForTests: doc.Client().Transport, Resources: notesOnly})
	ts, active := serveTest(t, srv)
	page := ts.URL + PathAuthorize + "?" + authorizeQuery(docURL, "https://app.example/cb")

	// The attacker: asks, and hangs up mid-fetch.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, page, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the document was never fetched")
	}
	cancel()
	<-done
	waitUntil(t, 10*time.Second, "the bridge to finish the abandoned request", func() bool { return active.Load() == 0 })
	close(release)

	// The client itself, right after.
	resp, err := http.Get(page)
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(resp)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "Claude") {
		t.Fatalf("the client after a hung-up request naming it: %d\n%s", resp.StatusCode, body)
	}
	if n := fetches.Load(); n != 1 {
		t.Errorf("the document was fetched %d times, want once", n)
	}
}

func readAll(resp *http.Response) string {
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String()
		}
	}
}

// TestCIMDErrorCachedOnlySeconds: a failed fetch is remembered for seconds,
// not minutes: the client whose document failed once gets it read again
// shortly after.
func TestCIMDErrorCachedOnlySeconds(t *testing.T) {
	var fetches atomic.Int64
	var docURL string
	doc := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fetches.Add(1) == 1 {
			http.Error(w, "try later", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintf(w, `{"client_id":%q,"client_name":"Claude","redirect_uris":["https://app.example/cb"]}`, docURL)
	}))
	defer doc.Close()
	docURL = doc.URL + "/client.json"
	srv := openTest(t, Options{CIMDTransportForTests: doc.Client().Transport})
	ctx := context.Background()
	if _, err := srv.cimd.client(ctx, docURL, "192.0.2.1"); err == nil {
		t.Fatal("the first fetch answered 503 but the client was accepted")
	}
	// 11 seconds later (the entry aged by hand).
	srv.cimd.mu.Lock()
	e := srv.cimd.cache[docURL]
	e.at = e.at.Add(-11 * time.Second)
	srv.cimd.cache[docURL] = e
	srv.cimd.mu.Unlock()
	c, err := srv.cimd.client(ctx, docURL, "192.0.2.1")
	if err != nil || c.Name != "Claude" {
		t.Fatalf("11 s after one failed fetch: %v (fetches: %d)", err, fetches.Load())
	}
}

// TestCIMDFetchesBounded: fetches of distinct documents are bounded at once
// (cimdMaxConcurrent) and per minute (cimdPerMinute), so nobody can make
// the bridge fetch without limit.
func TestCIMDFetchesBounded(t *testing.T) {
	var inflight, most, fetches atomic.Int64
	release := make(chan struct{})
	slow := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inflight.Add(1)
		defer inflight.Add(-1)
		fetches.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
		http.NotFound(w, r)
	}))
	defer slow.Close()
	srv := openTest(t, Options{CIMDTransportForTests: slow.Client().Transport})
	const n = 12
	var returned atomic.Int64
	for i := range n {
		go func() {
			defer returned.Add(1)
			_, _ = srv.cimd.client(context.Background(), fmt.Sprintf("%s/c%d.json", slow.URL, i), "192.0.2.1")
		}()
	}
	// Every call is either at the document server or refused.
	waitUntil(t, 10*time.Second, "every fetch to start or be refused", func() bool { return inflight.Load()+returned.Load() == n })
	atOnce := inflight.Load()
	close(release)
	waitUntil(t, 10*time.Second, "every call to return", func() bool { return returned.Load() == n })
	if atOnce > 4 || most.Load() > 4 {
		t.Errorf("%d fetches ran at once (at most %d at a time), want at most 4", atOnce, most.Load())
	}

	// Per minute: 40 distinct documents one after the other, each asked
	// from an address of its own (so the whole server's bound is the one
	// that holds).
	fast := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		http.NotFound(w, r)
	}))
	defer fast.Close()
	srv = openTest(t, Options{CIMDTransportForTests: fast.Client().Transport})
	fetches.Store(0)
	for i := range 40 {
		_, _ = srv.cimd.client(context.Background(), fmt.Sprintf("%s/d%d.json", fast.URL, i), fmt.Sprintf("192.0.2.%d", i))
	}
	if got := fetches.Load(); got > cimdPerMinute {
		t.Errorf("40 distinct documents asked from 40 addresses: %d fetched, want at most %d a minute", got, cimdPerMinute)
	}
	// A client the operator approved is fetched all the same: whoever uses
	// the budget up cannot keep it out.
	approved := fast.URL + "/approved.json"
	if err := srv.store.saveClient(&Client{ID: approved, Source: SourceCIMD, Approved: time.Now()}); err != nil {
		t.Fatal(err)
	}
	before := fetches.Load()
	_, _ = srv.cimd.client(context.Background(), approved, "192.0.2.1")
	if fetches.Load() != before+1 {
		t.Errorf("with the budget used up, an approved client's document was not fetched")
	}
}

// TestCIMDFailureShowsNoDetail: an unauthenticated requester learns only
// that the document could not be fetched — not whether the host answered,
// with what status, TLS error or body (no oracle); the log has the detail.
func TestCIMDFailureShowsNoDetail(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/html.json", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "<html>admin console</html>") })
	doc := httptest.NewTLSServer(mux)
	defer doc.Close()
	closed := httptest.NewTLSServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()
	var logs strings.Builder
	var logMu sync.Mutex
	logger := hclog.New(&hclog.LoggerOptions{Output: lockedWriter{&logMu, &logs}, Level: hclog.Debug})
	srv := openTest(t, Options{CIMDTransportForTests: doc.Client().Transport, Resources: notesOnly, Logger: logger})
	ts, _ := serveTest(t, srv)
	for name, id := range map[string]string{
		"404":      doc.URL + "/missing.json",
		"not JSON": doc.URL + "/html.json",
		"refused":  closedURL + "/client.json",
	} {
		resp, err := http.Get(ts.URL + PathAuthorize + "?" + authorizeQuery(id, "https://app.example/cb"))
		if err != nil {
			t.Fatal(err)
		}
		body := readAll(resp)
		for _, leak := range []string{"404", "Not Found", "invalid character", "refused", "dial", "x509", "certificate", "tls"} {
			if strings.Contains(body, leak) {
				t.Errorf("%s: the page tells the requester %q:\n%s", name, leak, body)
			}
		}
		if !strings.Contains(body, "could not be fetched") {
			t.Errorf("%s: the page does not say the document could not be fetched:\n%s", name, body)
		}
	}
	logMu.Lock()
	defer logMu.Unlock()
	for _, want := range []string{"404", "invalid character", "refused"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the log lacks the detail %q:\n%s", want, logs.String())
		}
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *strings.Builder
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
