package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// IssuerOptions tune how a remote issuer's metadata and keys are fetched.
type IssuerOptions struct {
	// KeysTTL is how long fetched keys (and metadata) are used before they
	// are fetched again (default 15 minutes).
	KeysTTL time.Duration
	// MinRefresh is the least time between two fetches caused by a token
	// naming a key the bridge does not know (key rotation), and between two
	// tries after a failed fetch: a flood of bad tokens cannot hammer the
	// issuer (default 30 seconds).
	MinRefresh time.Duration
	// Timeout bounds one fetch (default 10 seconds).
	Timeout time.Duration
	// Skew is the clock difference tolerated on exp, nbf and iat (default
	// 60 seconds).
	Skew time.Duration
	// IntrospectionClientID and IntrospectionSecret, when set, are the
	// bridge's credentials at the issuer's introspection endpoint (RFC
	// 7662), used for access tokens that are not JWTs.
	IntrospectionClientID string
	IntrospectionSecret   string
	// Client makes the requests (default: one that follows no redirect to
	// another host).
	Client *http.Client
}

// DefaultIssuerOptions are the issuer defaults, written here once (the
// bridge's come from them).
func DefaultIssuerOptions() IssuerOptions {
	return IssuerOptions{KeysTTL: 15 * time.Minute, MinRefresh: 30 * time.Second, Timeout: 10 * time.Second, Skew: time.Minute}
}

func (o *IssuerOptions) setDefaults() {
	d := DefaultIssuerOptions()
	if o.KeysTTL <= 0 {
		o.KeysTTL = d.KeysTTL
	}
	if o.MinRefresh <= 0 {
		o.MinRefresh = d.MinRefresh
	}
	if o.Timeout <= 0 {
		o.Timeout = d.Timeout
	}
	if o.Skew <= 0 {
		o.Skew = d.Skew
	}
	if o.Client == nil {
		o.Client = &http.Client{CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 3 || req.URL.Host != via[0].URL.Host {
				return errors.New("redirect to another host refused")
			}
			return nil
		}}
	}
}

// maxDocument bounds a metadata document or key set.
const maxDocument = 1 << 20

// metadata is what the bridge reads of an authorization server's metadata
// (RFC 8414; OIDC discovery has the same names).
type metadata struct {
	Issuer                string `json:"issuer"`
	JWKSURI               string `json:"jwks_uri"`
	IntrospectionEndpoint string `json:"introspection_endpoint"`
}

// RemoteIssuer is an authorization server the bridge reaches over HTTP: it
// finds its metadata by RFC 8414 or OIDC discovery, and its signing keys at
// the metadata's jwks_uri, and keeps both for KeysTTL.
type RemoteIssuer struct {
	issuer string
	opts   IssuerOptions

	// verified remembers tokens already checked.
	verified TokenCache
	// fetch is held while a fetch runs: one at a time; the others wait for
	// it and use what it got.
	fetch sync.Mutex
	// mu guards every field below. keys is nil until a fetch succeeded.
	mu            sync.Mutex
	keys          *jose.JSONWebKeySet
	introspectURL string    // from the metadata; "" when it names none
	fetchedAt     time.Time // when keys were fetched
	triedAt       time.Time // when a fetch was last tried
	kidAt         time.Time // when an unknown key id last caused a fetch
	lastErr       error     // the last fetch's error; nil after a success
}

// staleGrace is how long keys are still used past KeysTTL while the issuer
// cannot be reached: tokens it signed before keep working.
const staleGrace = time.Hour

// NewRemoteIssuer returns the issuer at issuer (its exact issuer URL).
// Nothing is fetched before the first token is verified.
func NewRemoteIssuer(issuer string, opts IssuerOptions) *RemoteIssuer {
	opts.setDefaults()
	return &RemoteIssuer{issuer: issuer, opts: opts}
}

// Issuer is the issuer URL.
func (r *RemoteIssuer) Issuer() string { return r.issuer }

// Check fetches the issuer's metadata and keys now; -check uses it to warn
// about an issuer it cannot reach.
func (r *RemoteIssuer) Check(ctx context.Context) error {
	_, err := r.refresh(ctx, time.Time{})
	return err
}

// keySet returns the issuer's keys, fetching them when there are none yet
// or they are older than KeysTTL. When a fetch fails, keys fetched before
// are still used (for another KeysTTL); with none, the error is
// ErrUnavailable.
func (r *RemoteIssuer) keySet(ctx context.Context) (*jose.JSONWebKeySet, error) {
	r.mu.Lock()
	keys, at := r.keys, r.fetchedAt
	r.mu.Unlock()
	if keys != nil && time.Since(at) < r.opts.KeysTTL {
		return keys, nil
	}
	fresh, err := r.refresh(ctx, at)
	if err != nil {
		if keys != nil && time.Since(at) < r.opts.KeysTTL+staleGrace {
			return keys, nil
		}
		return nil, err
	}
	return fresh, nil
}

// refreshForKey fetches the keys again because a token names a key not in
// them, unless an unknown key did so less than MinRefresh ago.
func (r *RemoteIssuer) refreshForKey(ctx context.Context) (*jose.JSONWebKeySet, bool) {
	r.mu.Lock()
	at := r.fetchedAt
	if time.Since(r.kidAt) < r.opts.MinRefresh {
		r.mu.Unlock()
		return nil, false
	}
	r.kidAt = time.Now()
	r.mu.Unlock()
	keys, err := r.refresh(ctx, at)
	return keys, err == nil
}

// refresh fetches metadata and keys, unless another fetch since seen (the
// fetchedAt the caller saw) already did; failures are retried at most
// every MinRefresh.
func (r *RemoteIssuer) refresh(ctx context.Context, seen time.Time) (*jose.JSONWebKeySet, error) {
	r.fetch.Lock()
	defer r.fetch.Unlock()
	r.mu.Lock()
	if r.keys != nil && r.fetchedAt.After(seen) {
		keys := r.keys
		r.mu.Unlock()
		return keys, nil
	}
	if r.lastErr != nil && time.Since(r.triedAt) < r.opts.MinRefresh {
		err := r.lastErr
		r.mu.Unlock()
		return nil, err
	}
	r.triedAt = time.Now()
	r.mu.Unlock()

	// The fetch is shared: a request that gives up must not cancel it for
	// the others. It is bounded by Timeout.
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.opts.Timeout)
	defer cancel()
	keys, introspect, err := r.fetchKeys(fctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.lastErr = fmt.Errorf("%w: %s: %v", ErrUnavailable, r.issuer, err)
		return nil, r.lastErr
	}
	r.keys, r.introspectURL, r.fetchedAt, r.lastErr = keys, introspect, time.Now(), nil
	return keys, nil
}

// fetchKeys reads the metadata, then the key set it names; it also returns
// the introspection endpoint.
func (r *RemoteIssuer) fetchKeys(ctx context.Context) (*jose.JSONWebKeySet, string, error) {
	var md metadata
	var tried []string
	for _, u := range discoveryURLs(r.issuer) {
		err := r.getJSON(ctx, u, &md)
		if err == nil {
			break
		}
		tried = append(tried, err.Error())
		md = metadata{}
	}
	if md.Issuer == "" {
		return nil, "", fmt.Errorf("no authorization server metadata found (%s)", strings.Join(tried, "; "))
	}
	if md.Issuer != r.issuer {
		// RFC 8414 §3.3: the issuer in the metadata MUST be identical to
		// the issuer URL the metadata was derived from.
		return nil, "", fmt.Errorf("its metadata names issuer %q, not %q: check 'issuer:' (it must match exactly, trailing slash included)", md.Issuer, r.issuer)
	}
	for _, u := range []string{md.JWKSURI, md.IntrospectionEndpoint} {
		if pu, err := url.Parse(u); u != "" && (err != nil || (pu.Scheme != "https" && !(pu.Scheme == "http" && strings.HasPrefix(r.issuer, "http://")))) {
			return nil, "", fmt.Errorf("its metadata names %q, which is not an https URL", u)
		}
	}
	introspect := ""
	if r.opts.IntrospectionClientID != "" {
		introspect = md.IntrospectionEndpoint
	}
	if md.JWKSURI == "" {
		if introspect != "" {
			return &jose.JSONWebKeySet{}, introspect, nil // opaque tokens only
		}
		return nil, "", errors.New("its metadata has no jwks_uri: the bridge validates JWT access tokens against the issuer's published keys (or, for opaque tokens, by introspection: -oauth-introspection-client-id)")
	}
	var keys jose.JSONWebKeySet
	if err := r.getJSON(ctx, md.JWKSURI, &keys); err != nil {
		return nil, "", err
	}
	return &keys, introspect, nil
}

// discoveryURLs are where an issuer's metadata may be: RFC 8414's
// path-inserted form, then OIDC discovery (appended, then path-inserted).
func discoveryURLs(issuer string) []string {
	u, err := url.Parse(issuer)
	if err != nil {
		return nil
	}
	path := strings.TrimSuffix(u.Path, "/")
	origin := u.Scheme + "://" + u.Host
	return []string{
		origin + "/.well-known/oauth-authorization-server" + path,
		origin + path + "/.well-known/openid-configuration",
		origin + "/.well-known/openid-configuration" + path,
	}
}

// getJSON fetches a JSON document of at most maxDocument bytes.
func (r *RemoteIssuer) getJSON(ctx context.Context, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := r.opts.Client.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: status %d", u, resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDocument+1))
	if err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	if len(body) > maxDocument {
		return fmt.Errorf("GET %s: the document is over %d bytes", u, maxDocument)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("GET %s: not the JSON expected: %w", u, err)
	}
	return nil
}
