package authserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// docServer serves a valid client metadata document at every path (its
// client_id its own URL) over TLS on loopback, counting the fetches.
func docServer(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var fetches atomic.Int64
	var ts *httptest.Server
	ts = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		fmt.Fprintf(w, `{"client_id":%q,"client_name":"Claude","redirect_uris":["https://app.example/cb"]}`, ts.URL+r.URL.Path)
	}))
	t.Cleanup(ts.Close)
	return ts, &fetches
}

// guardedLoopback is the production transport's guard (resolve, check
// every address, then dial) with loopback let through, so that documents
// can come from ts; every other special-purpose address is refused before
// anything is dialed, as in production.
func guardedLoopback(ts *httptest.Server) http.RoundTripper {
	g := &guardedDialer{lookup: net.DefaultResolver.LookupNetIP, dial: (&net.Dialer{Timeout: cimdTimeout}).DialContext,
		check: func(a netip.Addr) error {
			if a.IsLoopback() {
				return nil
			}
			return checkPublic(a)
		}}
	tr := ts.Client().Transport.(*http.Transport).Clone()
	tr.DialContext, tr.Proxy = g.DialContext, nil
	return tr
}

// TestCIMDRefusedURLsCostNothing: a flood of documents the address guard
// refuses before dialing (private, link-local, cloud-metadata, unique-local
// addresses), of malformed ids and of cache hits spends none of the fetch
// budget: a never-approved client's document is fetched afterwards, from
// the flooder's address as from another.
func TestCIMDRefusedURLsCostNothing(t *testing.T) {
	ts, fetches := docServer(t)
	srv := openTest(t, Options{CIMDTransportForTests: guardedLoopback(ts)})
	ctx := context.Background()
	const flooder = "198.51.100.7"
	refused := []string{"https://10.0.0.1/c%d.json", "https://169.254.169.254/c%d.json", "https://100.100.100.200/c%d.json", "https://[fd00::1]/c%d.json", "https://192.168.1.1/c%d.json"}
	for i := range 3 * cimdPerMinute {
		id := fmt.Sprintf(refused[i%len(refused)], i)
		_, err := srv.cimd.client(ctx, id, flooder)
		var fe *fetchError
		if !errors.As(err, &fe) || !strings.Contains(fe.detail.Error(), errSpecialAddress.Error()) {
			t.Fatalf("%s: %v, want the guard's refusal", id, err)
		}
		if _, err := srv.cimd.client(ctx, fmt.Sprintf("http://app.example/c%d.json", i), flooder); !errors.Is(err, ErrUnknownClient) {
			t.Fatalf("a malformed id: %v", err)
		}
	}
	if n := srv.cimd.budget.all.n; n != 0 {
		t.Errorf("%d refused and %d malformed ids charged %d fetches to the budget, want 0", 3*cimdPerMinute, 3*cimdPerMinute, n)
	}
	for _, addr := range []string{flooder, "203.0.113.5"} {
		id := ts.URL + "/claude-" + addr + ".json"
		if c, err := srv.cimd.client(ctx, id, addr); err != nil || c.Name != "Claude" {
			t.Errorf("a new client's document from %s after the flood: %v", addr, err)
		}
		for range 20 { // cache hits
			if _, err := srv.cimd.client(ctx, id, addr); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n, f := srv.cimd.budget.all.n, fetches.Load(); n != 2 || f != 2 {
		t.Errorf("two documents fetched (and 40 cache hits): the budget charged %d, the server saw %d fetches; want 2 and 2", n, f)
	}
}

// TestCIMDBudgetPerAddress: one address that uses up its share of the
// minute's fetches (distinct documents that do get fetched) is refused
// past it, and does not stop another address's fetch; the whole
// server's bound still holds over all addresses; a minute later (the
// budget's clock moved by hand) the first address may fetch again.
func TestCIMDBudgetPerAddress(t *testing.T) {
	ts, fetches := docServer(t)
	srv := openTest(t, Options{CIMDTransportForTests: guardedLoopback(ts)})
	now := time.Now()
	srv.cimd.budget.now = func() time.Time { return now }
	ctx := context.Background()
	const greedy = "198.51.100.7"
	busy := 0
	for i := range cimdPerMinute {
		if _, err := srv.cimd.client(ctx, fmt.Sprintf("%s/greedy-%d.json", ts.URL, i), greedy); errors.Is(err, errCIMDBusy) {
			busy++
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if got := fetches.Load(); got != cimdPerAddrPerMinute || busy != cimdPerMinute-cimdPerAddrPerMinute {
		t.Errorf("%d documents asked from one address: %d fetched, %d refused; want %d fetched", cimdPerMinute, got, busy, cimdPerAddrPerMinute)
	}
	if c, err := srv.cimd.client(ctx, ts.URL+"/claude.json", "203.0.113.5"); err != nil || c.Name != "Claude" {
		t.Fatalf("another address's client after one address used its share: %v", err)
	}
	// The whole server's bound: addresses of their own, one document each.
	for i := range 2 * cimdPerMinute {
		_, _ = srv.cimd.client(ctx, fmt.Sprintf("%s/many-%d.json", ts.URL, i), fmt.Sprintf("192.0.2.%d", i))
	}
	if got := fetches.Load(); got != cimdPerMinute {
		t.Errorf("the minute's fetches from every address: %d, want the whole bound %d", got, cimdPerMinute)
	}
	now = now.Add(time.Minute)
	if _, err := srv.cimd.client(ctx, ts.URL+"/greedy-next.json", greedy); err != nil {
		t.Errorf("the greedy address a minute later: %v", err)
	}
}
