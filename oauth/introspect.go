package oauth

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// This file validates opaque (non-JWT) access tokens by asking the issuer
// (RFC 7662 token introspection), with the credentials the operator gave
// the bridge. The answer is remembered for the token's remaining life at
// most (and cacheFor at most), like a verified JWT.

// introspection is what the bridge reads of an introspection response.
type introspection struct {
	Active    bool            `json:"active"`
	Issuer    string          `json:"iss"`
	Subject   string          `json:"sub"`
	Audience  json.RawMessage `json:"aud"`
	Scope     string          `json:"scope"`
	ClientID  string          `json:"client_id"`
	Expiry    int64           `json:"exp"`
	NotBefore int64           `json:"nbf"`
}

// looksLikeJWT reports whether raw has the three parts of a JWS compact
// serialization.
func looksLikeJWT(raw string) bool { return strings.Count(raw, ".") == 2 }

// introspect asks the issuer about an opaque token.
func (r *RemoteIssuer) introspect(ctx context.Context, raw string) (*Claims, error) {
	if _, err := r.keySet(ctx); err != nil { // the metadata names the endpoint
		return nil, err
	}
	r.mu.Lock()
	endpoint := r.introspectURL
	r.mu.Unlock()
	if endpoint == "" {
		if r.opts.IntrospectionClientID == "" {
			return nil, fmt.Errorf("%w: not a JWT; opaque access tokens are validated by introspection, which needs -oauth-introspection-client-id and its secret", ErrInvalidToken)
		}
		return nil, fmt.Errorf("%w: not a JWT, and the issuer's metadata names no introspection_endpoint", ErrInvalidToken)
	}
	ictx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	defer cancel()
	form := url.Values{"token": {raw}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequestWithContext(ictx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(url.QueryEscape(r.opts.IntrospectionClientID), url.QueryEscape(r.opts.IntrospectionSecret))
	resp, err := r.opts.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: introspection: %v", ErrUnavailable, r.issuer, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		why := ""
		if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
			why = " (the issuer refused the bridge's introspection credentials: check -oauth-introspection-client-id and its secret)"
		}
		return nil, fmt.Errorf("%w: %s: introspection answered %d%s", ErrUnavailable, r.issuer, resp.StatusCode, why)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDocument+1))
	if err != nil || len(body) > maxDocument {
		return nil, fmt.Errorf("%w: %s: introspection answer unreadable or over %d bytes", ErrUnavailable, r.issuer, maxDocument)
	}
	var in introspection
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, fmt.Errorf("%w: %s: introspection answer is not JSON: %v", ErrUnavailable, r.issuer, err)
	}
	now := time.Now()
	switch {
	case !in.Active:
		return nil, fmt.Errorf("%w: the issuer says it is not active (expired, revoked or unknown)", ErrInvalidToken)
	case in.Issuer != "" && in.Issuer != r.issuer:
		return nil, fmt.Errorf("%w: it was issued by %q, not %q", ErrInvalidToken, in.Issuer, r.issuer)
	case in.Expiry != 0 && now.Add(-r.opts.Skew).After(time.Unix(in.Expiry, 0)):
		return nil, fmt.Errorf("%w: it has expired", ErrInvalidToken)
	case in.NotBefore != 0 && now.Add(r.opts.Skew).Before(time.Unix(in.NotBefore, 0)):
		return nil, fmt.Errorf("%w: it is not valid yet", ErrInvalidToken)
	}
	c := &Claims{Issuer: r.issuer, Subject: in.Subject, ClientID: in.ClientID, Scopes: strings.Fields(in.Scope)}
	var list []string
	if json.Unmarshal(in.Audience, &list) != nil {
		var one string
		if json.Unmarshal(in.Audience, &one) == nil && one != "" {
			list = []string{one}
		}
	}
	c.Audience = list
	// Without exp the answer is trusted for a minute at most.
	c.Expiry = now.Add(time.Minute)
	if in.Expiry != 0 {
		c.Expiry = time.Unix(in.Expiry, 0)
	}
	p := c.Principal()
	c.principal = &p
	return c, nil
}
