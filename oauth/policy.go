package oauth

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/stelae-bridge/stelae-bridge/config"
)

// Policy is what one protected endpoint demands of a token: a Verifier's
// signature and lifetime checks, then audience, subject and scopes from the
// 'auth:' block.
type Policy struct {
	Verifier Verifier
	Auth     *config.Auth
}

// Check validates raw for a request to one of resources (the endpoint's
// resource URLs; RFC 8707: the token must have been issued for it, or for
// one of the block's extra audiences). The error wraps ErrInvalidToken,
// ErrInsufficientScope, ErrForbidden or ErrUnavailable.
func (p *Policy) Check(ctx context.Context, raw string, resources []string) (*Claims, error) {
	c, err := p.Verifier.Verify(ctx, raw)
	if err != nil {
		return nil, err
	}
	if !audienceOK(c.Audience, resources, p.Auth.Audiences) {
		return nil, fmt.Errorf("%w: it was issued for %s, not for this endpoint (%s); ask the authorization server for a token with resource=%s", ErrInvalidToken, quoteList(c.Audience), resources[0], resources[0])
	}
	if !p.Auth.AllowsSubject(c.Subject) {
		return nil, fmt.Errorf("%w: subject %q may not use this destination (allow_subjects)", ErrForbidden, c.Subject)
	}
	var missing []string
	for _, s := range p.Auth.Scopes {
		if !slices.Contains(c.Scopes, s) {
			missing = append(missing, s)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: the token lacks scope %s", ErrInsufficientScope, strings.Join(missing, " "))
	}
	return c, nil
}

// audienceOK reports whether aud names one of resources (a trailing slash
// apart) or one of extra.
func audienceOK(aud, resources, extra []string) bool {
	for _, a := range aud {
		if slices.Contains(extra, a) {
			return true
		}
		for _, r := range resources {
			if strings.TrimSuffix(a, "/") == strings.TrimSuffix(r, "/") {
				return true
			}
		}
	}
	return false
}

func quoteList(l []string) string {
	if len(l) == 0 {
		return "no audience"
	}
	q := make([]string, len(l))
	for i, s := range l {
		q[i] = fmt.Sprintf("%q", s)
	}
	return "audience " + strings.Join(q, ", ")
}
