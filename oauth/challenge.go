package oauth

import (
	"errors"
	"net/http"
	"strings"
)

// ResourceMetadata is the protected-resource metadata of one endpoint
// (RFC 9728 §2).
type ResourceMetadata struct {
	Resource               string   `json:"resource"`
	AuthorizationServers   []string `json:"authorization_servers"`
	ScopesSupported        []string `json:"scopes_supported,omitempty"`
	BearerMethodsSupported []string `json:"bearer_methods_supported"`
	ResourceName           string   `json:"resource_name,omitempty"`
}

// NewResourceMetadata describes resource (under base) protected by p.
func NewResourceMetadata(base, resource, name string, p *Policy) ResourceMetadata {
	return ResourceMetadata{
		Resource:               resource,
		AuthorizationServers:   []string{IssuerFor(p.Verifier, base)},
		ScopesSupported:        p.Auth.Scopes,
		BearerMethodsSupported: []string{"header"},
		ResourceName:           name,
	}
}

// Status is the HTTP status a validation error is answered with.
func Status(err error) int {
	switch {
	case errors.Is(err, ErrUnavailable):
		return http.StatusServiceUnavailable
	case errors.Is(err, ErrInsufficientScope), errors.Is(err, ErrForbidden):
		return http.StatusForbidden
	}
	return http.StatusUnauthorized
}

// Challenge is the WWW-Authenticate value of a 401 or 403 (RFC 6750 §3,
// RFC 9728 §5.1): where the resource metadata is, the scopes needed, and,
// when a token was sent and refused, why.
func Challenge(metadataURL string, scopes []string, err error) string {
	var b strings.Builder
	b.WriteString(`Bearer resource_metadata="`)
	b.WriteString(quotable(metadataURL))
	b.WriteByte('"')
	if len(scopes) > 0 {
		b.WriteString(`, scope="`)
		b.WriteString(quotable(strings.Join(scopes, " ")))
		b.WriteByte('"')
	}
	code := ""
	switch {
	case err == nil:
	case errors.Is(err, ErrInsufficientScope):
		code = "insufficient_scope"
	case errors.Is(err, ErrForbidden):
	default:
		code = "invalid_token"
	}
	if code != "" {
		b.WriteString(`, error="` + code + `"`)
	}
	if err != nil {
		b.WriteString(`, error_description="`)
		b.WriteString(quotable(err.Error()))
		b.WriteByte('"')
	}
	return b.String()
}

// quotable keeps what RFC 6750 allows in a quoted parameter: printable
// ASCII without '"' and '\'.
func quotable(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '"' || r == '\\':
			return '\''
		case r < 0x20 || r > 0x7e:
			return '?'
		}
		return r
	}, s)
}
