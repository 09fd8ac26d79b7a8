package authserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"syscall"
	"time"
)

// This file is Client ID Metadata Documents: a client whose id is an https
// URL publishes its metadata there. The server fetches it over https only,
// follows no redirect, bounds size and time, refuses private, loopback and
// link-local targets (checked on the connected address, so DNS cannot
// rebind around it), and keeps documents for a while.

const (
	cimdMaxBytes = 64 << 10
	cimdTimeout  = 5 * time.Second
	cimdCacheFor = 5 * time.Minute
	cimdMaxCache = 1000
)

// cimdFetcher fetches and caches client metadata documents.
type cimdFetcher struct {
	http  *http.Client
	store *Store
	// mu guards cache.
	mu    sync.Mutex
	cache map[string]cimdEntry
}

type cimdEntry struct {
	c   *Client
	err error
	at  time.Time
}

// newCIMDFetcher makes the fetcher; transport replaces the guarded one in
// tests only (Options.CIMDTransportForTests).
func newCIMDFetcher(store *Store, transport http.RoundTripper) *cimdFetcher {
	if transport == nil {
		dialer := &net.Dialer{Timeout: cimdTimeout, Control: refusePrivate}
		transport = &http.Transport{
			DialContext:           dialer.DialContext,
			TLSHandshakeTimeout:   cimdTimeout,
			ResponseHeaderTimeout: cimdTimeout,
			MaxIdleConns:          10,
			IdleConnTimeout:       30 * time.Second,
			Proxy:                 nil, // never through a proxy: the guard checks the real target
		}
	}
	return &cimdFetcher{store: store, cache: map[string]cimdEntry{}, http: &http.Client{
		Transport: transport,
		Timeout:   cimdTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return errors.New("client metadata documents are not fetched through redirects")
		},
	}}
}

// refusePrivate is the dialer's check of every address it connects to.
func refusePrivate(network, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	ip := net.ParseIP(host)
	if ip == nil || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsUnspecified() || ip.IsMulticast() || ip.IsInterfaceLocalMulticast() {
		return fmt.Errorf("refusing to fetch a client metadata document from %s (private, loopback or link-local address)", host)
	}
	return nil
}

// client returns the client a metadata document at id describes.
func (f *cimdFetcher) client(ctx context.Context, id string) (*Client, error) {
	f.mu.Lock()
	e, ok := f.cache[id]
	f.mu.Unlock()
	if !ok || time.Since(e.at) > cimdCacheFor {
		c, err := f.fetch(ctx, id)
		e = cimdEntry{c: c, err: err, at: time.Now()}
		f.mu.Lock()
		if len(f.cache) >= cimdMaxCache {
			clear(f.cache)
		}
		f.cache[id] = e
		f.mu.Unlock()
	}
	if e.err != nil {
		return nil, e.err
	}
	// The operator may have revoked it.
	if stored, err := f.store.client(id); err == nil && stored.Revoked {
		return nil, fmt.Errorf("%w: client %q was revoked", ErrUnknownClient, id)
	}
	c := *e.c
	return &c, nil
}

func (f *cimdFetcher) fetch(ctx context.Context, id string) (*Client, error) {
	u, err := url.Parse(id)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.Fragment != "" || u.User != nil || u.Path == "" || u.Path == "/" {
		return nil, fmt.Errorf("%w: client id %q is not an https URL with a path", ErrUnknownClient, truncate(id, 200))
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
