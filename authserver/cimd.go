package authserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sync/singleflight"
)

// This file is Client ID Metadata Documents: a client whose id is an https
// URL publishes its metadata there. The server fetches it over https only,
// follows no redirect, bounds size and time, refuses special-purpose
// targets (ssrf.go), and keeps documents for a while.
//
// A fetch runs on a context of its own with its own timeout, never on the
// request that asked for it, and concurrent asks for one document share one
// fetch (singleflight): a requester that hangs up mid-fetch changes
// nothing. A failure is kept only seconds (cimdErrorFor) and a fetch that
// did not finish is never kept, so nobody can lock a client out by naming
// its document. Fetches are bounded at once (cimdMaxConcurrent) and per
// minute: cimdPerMinute for the whole server, the outer bound, and
// cimdPerAddrPerMinute for the address that asked (an IPv6 address by its
// /64), so one address cannot use up everyone's. Only a fetch that reached
// the network (dialed, or took a kept connection) is charged: a URL the
// address guard refuses before dialing, a malformed one and a cache hit
// cost nothing, so naming unfetchable documents spends nobody's budget.
// Past the bounds, a document fetched before is served from the cache for
// up to a day. Clients the operator approved are fetched outside those
// bounds (in slots of their own), so nobody can keep them out by using the
// budget up. The requester learns only that the document could not be
// fetched; the log has why (no oracle on what answers where).

const (
	cimdMaxBytes      = 64 << 10
	cimdTimeout       = 5 * time.Second  // one whole fetch
	cimdCacheFor      = 5 * time.Minute  // a document
	cimdErrorFor      = 10 * time.Second // a failed fetch
	cimdStaleFor      = 24 * time.Hour   // a document past cimdCacheFor, used while fetches are refused
	cimdMaxCache      = 1000
	cimdMaxConcurrent = 4
	cimdPerMinute     = 30
	// cimdPerAddrPerMinute is one requesting address's share of
	// cimdPerMinute. (Behind a tunnel every request comes from its
	// loopback address: the share is then everyone's, within the whole.)
	cimdPerAddrPerMinute = 10
	// cimdApprovedConcurrent bounds the fetches at once of clients the
	// operator approved (once per cimdCacheFor each).
	cimdApprovedConcurrent = 2
)

// errCIMDBusy: the fetch bounds are reached; nothing was fetched.
var errCIMDBusy = errors.New("the bridge is fetching too many client metadata documents right now; try again in a minute")

// fetchError is a failed fetch: the requester is told only that; Detail is
// for the log.
type fetchError struct{ detail error }

func (e *fetchError) Error() string {
	return "its client metadata document could not be fetched or is not valid (the bridge's log says why)"
}

func (e *fetchError) Unwrap() error { return ErrUnknownClient }

// cimdFetcher fetches and caches client metadata documents.
type cimdFetcher struct {
	http  *http.Client
	store *Store
	log   hclog.Logger
	group singleflight.Group
	// slots bounds the fetches at once; budget their number a minute, for
	// everyone and per requesting address. Clients the operator approved
	// have slots of their own (approvedSlots) and no budget: whoever uses
	// the budget up cannot keep them out.
	slots         chan struct{}
	approvedSlots chan struct{}
	budget        *fetchBudget
	// mu guards cache.
	mu    sync.Mutex
	cache map[string]cimdEntry
}

type cimdEntry struct {
	c   *Client
	err error
	at  time.Time
}

// fresh reports whether e may be used as it is at now.
func (e cimdEntry) fresh(now time.Time) bool {
	if e.err != nil {
		return now.Sub(e.at) <= cimdErrorFor
	}
	return now.Sub(e.at) <= cimdCacheFor
}

// newCIMDFetcher makes the fetcher; transport replaces the guarded one in
// tests only (Options.CIMDTransportForTests).
func newCIMDFetcher(store *Store, transport http.RoundTripper, log hclog.Logger) *cimdFetcher {
	if transport == nil {
		transport = &http.Transport{
			DialContext:           newGuardedDialer().DialContext,
			TLSHandshakeTimeout:   cimdTimeout,
			ResponseHeaderTimeout: cimdTimeout,
			MaxIdleConns:          10,
			IdleConnTimeout:       30 * time.Second,
			Proxy:                 nil, // never through a proxy: the guard checks the real target
		}
	}
	return &cimdFetcher{store: store, log: log, cache: map[string]cimdEntry{},
		slots:         make(chan struct{}, cimdMaxConcurrent),
		approvedSlots: make(chan struct{}, cimdApprovedConcurrent),
		budget:        newFetchBudget(time.Minute, cimdPerMinute, cimdPerAddrPerMinute),
		http: &http.Client{
			Transport: transport,
			Timeout:   cimdTimeout,
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return errors.New("client metadata documents are not fetched through redirects")
			},
		}}
}

// client returns the client a metadata document at id describes, for a
// request from addr (its budget's key: lockout.AddrKey). ctx only bounds
// the wait: the fetch goes on without it.
func (f *cimdFetcher) client(ctx context.Context, id, addr string) (*Client, error) {
	if err := checkCIMDURL(id); err != nil {
		return nil, err
	}
	f.mu.Lock()
	e, ok := f.cache[id]
	f.mu.Unlock()
	if !ok || !e.fresh(time.Now()) {
		ch := f.group.DoChan(id, func() (any, error) { return f.fetchAndKeep(id, addr), nil })
		select {
		case r := <-ch:
			e = r.Val.(cimdEntry)
		case <-ctx.Done():
			return nil, fmt.Errorf("the request ended while its client metadata document was being fetched: %w", ctx.Err())
		}
	}
	if e.err != nil {
		return nil, e.err
	}
	// The operator may have approved or revoked it.
	c := *e.c
	if stored, err := f.store.client(id); err == nil {
		if stored.Revoked {
			return nil, fmt.Errorf("%w: client %q was revoked", ErrUnknownClient, id)
		}
		c.Approved = stored.Approved
	}
	return &c, nil
}

// fetchAndKeep fetches id within the bounds, on a context of its own, and
// keeps what it got. addr asked first (concurrent asks share its fetch).
func (f *cimdFetcher) fetchAndKeep(id, addr string) cimdEntry {
	release, ok := f.acquire(id, addr)
	if !ok {
		f.mu.Lock()
		old, ok := f.cache[id]
		f.mu.Unlock()
		if ok && old.err == nil && time.Since(old.at) <= cimdStaleFor {
			return old
		}
		f.log.Warn("client metadata document not fetched: the fetch bounds are reached", "client_id", truncate(id, 200), "remote", addr,
			"at_once", cimdMaxConcurrent, "per_minute", cimdPerMinute, "per_address_per_minute", cimdPerAddrPerMinute)
		return cimdEntry{err: errCIMDBusy, at: time.Now()} // not kept
	}
	ctx, cancel := context.WithTimeout(context.Background(), cimdTimeout)
	defer cancel()
	// A fetch is charged to the budget only once it reaches the network:
	// a new connection is dialed (the guard lets nothing it refuses get
	// that far) or a kept one is used.
	var reached atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		ConnectStart: func(string, string) { reached.Store(true) },
		GotConn:      func(httptrace.GotConnInfo) { reached.Store(true) },
	})
	c, err := f.fetch(ctx, id)
	release(reached.Load())
	e := cimdEntry{c: c, err: err, at: time.Now()}
	if err != nil {
		f.log.Warn("client metadata document could not be fetched", "client_id", truncate(id, 200), "error", err)
		e.err = &fetchError{detail: err}
		if errors.Is(err, context.Canceled) {
			return e // a fetch that did not finish is never kept
		}
	}
	f.keep(id, e)
	return e
}

// acquire takes a fetch slot and a place in the budget (the whole
// server's and addr's), or for a client the operator approved one of its
// own slots. release(reached) gives the slot back, and the place too when
// the fetch never reached the network.
func (f *cimdFetcher) acquire(id, addr string) (release func(reached bool), ok bool) {
	if c, err := f.store.client(id); err == nil && !c.Approved.IsZero() && !c.Revoked {
		select {
		case f.approvedSlots <- struct{}{}:
			return func(bool) { <-f.approvedSlots }, true
		default:
			return nil, false
		}
	}
	select {
	case f.slots <- struct{}{}:
	default:
		return nil, false
	}
	place, ok := f.budget.take(addr)
	if !ok {
		<-f.slots
		return nil, false
	}
	return func(reached bool) {
		if !reached {
			f.budget.refund(place)
		}
		<-f.slots
	}, true
}

// fetchBudget counts the fetches of each window (a minute): at most max
// for everyone together and perAddr for each requesting address (windows:
// at most addrLimitKeys addresses).
type fetchBudget struct {
	per          time.Duration
	max, perAddr int
	// now is the clock (time.Now; tests move it).
	now func() time.Time
	// mu guards all and byAddr.
	mu     sync.Mutex
	all    window
	byAddr windows
}

// budgetPlace is one fetch's place in the budget, to give back.
type budgetPlace struct {
	addr              string
	allFrom, addrFrom time.Time
}

func newFetchBudget(per time.Duration, max, perAddr int) *fetchBudget {
	return &fetchBudget{per: per, max: max, perAddr: perAddr, now: time.Now, byAddr: windows{}}
}

// take charges a fetch to the whole budget and to addr's, when both have
// room (else it charges nothing).
func (b *fetchBudget) take(addr string) (budgetPlace, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	if now.Sub(b.all.start) >= b.per {
		b.all = window{start: now}
	}
	w := b.byAddr.at(addr, now, b.per)
	if b.all.n >= b.max || w.n >= b.perAddr {
		return budgetPlace{}, false
	}
	b.all.n++
	w.n++
	return budgetPlace{addr: addr, allFrom: b.all.start, addrFrom: w.start}, true
}

// refund gives back a place whose fetch never reached the network (in
// the windows it was taken from; a window since renewed owes nothing).
func (b *fetchBudget) refund(p budgetPlace) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.all.start.Equal(p.allFrom) && b.all.n > 0 {
		b.all.n--
	}
	if w := b.byAddr[p.addr]; w != nil && w.start.Equal(p.addrFrom) && w.n > 0 {
		w.n--
	}
}

// keep stores e; at the cap, entries past use go first, then the oldest.
func (f *cimdFetcher) keep(id string, e cimdEntry) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.cache[id]; !ok && len(f.cache) >= cimdMaxCache {
		now := time.Now()
		oldest := ""
		for k, v := range f.cache {
			if (v.err != nil && !v.fresh(now)) || now.Sub(v.at) > cimdStaleFor {
				delete(f.cache, k)
			} else if oldest == "" || v.at.Before(f.cache[oldest].at) {
				oldest = k
			}
		}
		if len(f.cache) >= cimdMaxCache {
			delete(f.cache, oldest)
		}
	}
	f.cache[id] = e
}

// checkCIMDURL refuses a client id that cannot be a document's URL.
func checkCIMDURL(id string) error {
	u, err := url.Parse(id)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.Fragment != "" || u.User != nil || u.Path == "" || u.Path == "/" {
		return fmt.Errorf("%w: client id %q is not an https URL with a path", ErrUnknownClient, truncate(id, 200))
	}
	return nil
}

func (f *cimdFetcher) fetch(ctx context.Context, id string) (*Client, error) {
	if err := checkCIMDURL(id); err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, id, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := f.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: its metadata document could not be fetched: %v", ErrUnknownClient, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%w: its metadata document answered %d", ErrUnknownClient, resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, cimdMaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: reading its metadata document: %v", ErrUnknownClient, err)
	}
	if len(body) > cimdMaxBytes {
		return nil, fmt.Errorf("%w: its metadata document is over %d bytes", ErrUnknownClient, cimdMaxBytes)
	}
	var doc struct {
		ClientID     string   `json:"client_id"`
		ClientName   string   `json:"client_name"`
		RedirectURIs []string `json:"redirect_uris"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("%w: its metadata document is not JSON: %v", ErrUnknownClient, err)
	}
	if doc.ClientID != id {
		return nil, fmt.Errorf("%w: its metadata document names client_id %q, not its own URL", ErrUnknownClient, truncate(doc.ClientID, 200))
	}
	if len(doc.RedirectURIs) == 0 {
		return nil, fmt.Errorf("%w: its metadata document lists no redirect_uris", ErrUnknownClient)
	}
	for _, ru := range doc.RedirectURIs {
		if why := checkRedirectURI(ru); why != "" {
			return nil, fmt.Errorf("%w: its redirect URI %q %s", ErrUnknownClient, truncate(ru, 200), why)
		}
	}
	return &Client{ID: id, Name: truncate(doc.ClientName, 200), RedirectURIs: doc.RedirectURIs, Source: SourceCIMD, Created: time.Now().UTC()}, nil
}
