package config

import (
	"fmt"
	"net"
	"net/url"
	"path"
	"strings"

	"gopkg.in/yaml.v3"
)

// Auth is an 'auth:' block: the OAuth 2.1 authorization server whose access
// tokens a destination accepts, and what a token must carry. At the top
// level it applies to every destination and to the bridge's own routes; a
// destination's own block replaces it for that destination.
type Auth struct {
	// Issuer is the authorization server's issuer URL: https, or http on a
	// loopback address; or "builtin" for the bridge's own server. Its metadata is found by RFC 8414 or OIDC
	// discovery, its keys at the metadata's jwks_uri.
	Issuer string
	// Scopes must all be granted to a token ('scopes:'); none by default.
	Scopes []string
	// Audiences are accepted besides the endpoint's own resource URL.
	Audiences []string
	// AllowSubjects are globs (path.Match syntax) a token's sub must match
	// one of; empty allows any subject the issuer vouches for.
	AllowSubjects []string
	// Clients are pre-registered clients of the built-in server
	// ('clients:', with 'issuer: builtin' only).
	Clients []AuthClient
	// Line is where the block is in the file.
	Line int
}

// AuthClient is a pre-registered client of the built-in server.
type AuthClient struct {
	ID           string
	Name         string
	RedirectURIs []string
}

// IssuerBuiltin selects the bridge's own authorization server ('issuer:
// builtin'): its issuer URL is the bridge's public URL.
const IssuerBuiltin = "builtin"

// Builtin reports whether the block selects the built-in server.
func (a *Auth) Builtin() bool { return a != nil && a.Issuer == IssuerBuiltin }

// AllowsSubject reports whether sub matches AllowSubjects (any subject
// when there are none).
func (a *Auth) AllowsSubject(sub string) bool {
	return len(a.AllowSubjects) == 0 || matchAny(a.AllowSubjects, sub)
}

// authKeys are the keys of an 'auth:' block.
var authKeys = []string{"issuer", "scopes", "audiences", "allow_subjects", "clients"}

// parseAuth checks an 'auth:' block (where names where it is, for
// messages); ${VAR} in the issuer is expanded.
func parseAuth(node *yaml.Node, where string, expand func(line int, field, s string) string) (*Auth, []string) {
	if node.Kind != yaml.MappingNode || len(node.Content) == 0 {
		return nil, []string{fmt.Sprintf("line %d: %s must be a mapping with at least 'issuer:' (keys: %s)", node.Line, where, strings.Join(authKeys, ", "))}
	}
	a := &Auth{Line: node.Line}
	var problems []string
	bad := func(line int, format string, args ...any) {
		problems = append(problems, fmt.Sprintf("line %d: %s: ", line, where)+fmt.Sprintf(format, args...))
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(node.Content); i += 2 {
		k, v := node.Content[i], node.Content[i+1]
		if seen[k.Value] {
			bad(k.Line, "'%s' is given twice", k.Value)
			continue
		}
		seen[k.Value] = true
		switch k.Value {
		case "issuer":
			if v.Kind != yaml.ScalarNode || v.Tag == "!!null" || v.Value == "" {
				bad(v.Line, "'issuer' must be the authorization server's issuer URL, e.g. https://id.example.com/realms/mcp")
				continue
			}
			a.Issuer = expand(v.Line, where+".issuer", v.Value)
			if a.Issuer == IssuerBuiltin {
				continue
			}
			if why := checkIssuer(a.Issuer); why != "" {
				bad(v.Line, "'issuer' %q %s", a.Issuer, why)
			}
		case "scopes", "audiences", "allow_subjects":
			list, probs := stringList(v, where+"."+k.Value)
			problems = append(problems, probs...)
			for _, s := range list {
				switch {
				case k.Value == "scopes" && strings.ContainsAny(s, " \t\"\\"):
					bad(v.Line, "scope %q may not hold spaces, quotes or backslashes (RFC 6749 scope tokens)", s)
				case k.Value == "allow_subjects":
					if _, err := path.Match(s, ""); err != nil {
						bad(v.Line, "'allow_subjects' glob %q is invalid (path.Match syntax: * ? [a-z] \\x)", s)
					}
				}
			}
			switch k.Value {
			case "scopes":
				a.Scopes = list
			case "audiences":
				a.Audiences = list
			default:
				a.AllowSubjects = list
			}
		case "clients":
			cs, probs := parseAuthClients(v, where)
			problems = append(problems, probs...)
			a.Clients = cs
		default:
			bad(k.Line, "unknown key %q (known: %s)", k.Value, strings.Join(authKeys, ", "))
		}
	}
	if len(a.Clients) > 0 && a.Issuer != IssuerBuiltin && len(problems) == 0 {
		bad(node.Line, "'clients' are for the built-in server ('issuer: builtin'); register clients with %s itself", a.Issuer)
	}
	if !seen["issuer"] && len(problems) == 0 {
		bad(node.Line, "'issuer' is missing: name the authorization server whose tokens to accept")
	}
	if len(problems) > 0 {
		return nil, problems
	}
	return a, nil
}

// checkIssuer says what is wrong with an issuer URL ("" when nothing).
func checkIssuer(s string) string {
	u, err := url.Parse(s)
	switch {
	case err != nil || !u.IsAbs() || u.Host == "":
		return "is not an absolute URL"
	case u.RawQuery != "" || u.Fragment != "":
		return "may not have a query or fragment (RFC 8414)"
	case u.User != nil:
		return "may not carry a user name or password"
	case u.Scheme == "https":
		return ""
	case u.Scheme == "http" && IsLoopback(u.Hostname()):
		return ""
	case u.Scheme == "http":
		return "must use https (http is allowed only on a loopback address: 127.0.0.1, ::1, localhost)"
	}
	return "must be an https URL"
}

// IsLoopback reports whether host (no port) names a loopback address.
func IsLoopback(host string) bool {
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// stringList reads a list of non-empty strings.
func stringList(v *yaml.Node, where string) ([]string, []string) {
	if v.Kind != yaml.SequenceNode {
		return nil, []string{fmt.Sprintf("line %d: %s must be a list of strings", v.Line, where)}
	}
	var out, problems []string
	for _, e := range v.Content {
		if e.Kind != yaml.ScalarNode || e.Tag == "!!null" || e.Value == "" {
			problems = append(problems, fmt.Sprintf("line %d: %s entries must be non-empty strings", e.Line, where))
			continue
		}
		out = append(out, e.Value)
	}
	return out, problems
}

// parseAuthClients reads 'clients:': a list of {client_id, client_name,
// redirect_uris}.
func parseAuthClients(v *yaml.Node, where string) ([]AuthClient, []string) {
	if v.Kind != yaml.SequenceNode {
		return nil, []string{fmt.Sprintf("line %d: %s.clients must be a list of {client_id, client_name, redirect_uris}", v.Line, where)}
	}
	var out []AuthClient
	var problems []string
	for _, e := range v.Content {
		var raw struct {
			ID           string   `yaml:"client_id"`
			Name         string   `yaml:"client_name"`
			RedirectURIs []string `yaml:"redirect_uris"`
		}
		if e.Kind != yaml.MappingNode {
			problems = append(problems, fmt.Sprintf("line %d: %s.clients entries are mappings", e.Line, where))
			continue
		}
		for i := 0; i+1 < len(e.Content); i += 2 {
			switch k := e.Content[i]; k.Value {
			case "client_id", "client_name", "redirect_uris":
			default:
				problems = append(problems, fmt.Sprintf("line %d: %s.clients: unknown key %q (known: client_id, client_name, redirect_uris)", k.Line, where, k.Value))
			}
		}
		if err := e.Decode(&raw); err != nil {
			problems = append(problems, fmt.Sprintf("line %d: %s.clients: %v", e.Line, where, err))
			continue
		}
		if raw.ID == "" || strings.HasPrefix(raw.ID, "https://") || strings.HasPrefix(raw.ID, "dcr_") {
			problems = append(problems, fmt.Sprintf("line %d: %s.clients: client_id must be set, and not an https URL or start with dcr_ (those name other kinds of client)", e.Line, where))
			continue
		}
		if len(raw.RedirectURIs) == 0 {
			problems = append(problems, fmt.Sprintf("line %d: %s.clients: client %q needs redirect_uris", e.Line, where, raw.ID))
			continue
		}
		out = append(out, AuthClient(raw))
	}
	return out, problems
}

// Unprotected reports whether no 'auth:' block stands anywhere in the
// file: neither at the top level nor on any destination.
func (c *Config) Unprotected() bool {
	if c.Auth != nil {
		return false
	}
	for _, d := range c.Destinations {
		if d.Auth != nil {
			return false
		}
	}
	return true
}

// ProtectAll gives a file with no 'auth:' block anywhere (Unprotected) the
// top-level block a, as if the file had it: every destination (and so
// every profile) carries it. It does nothing to a file with a block.
func (c *Config) ProtectAll(a *Auth) {
	if !c.Unprotected() {
		return
	}
	c.Auth = a
	for _, d := range c.Destinations {
		d.Auth = a
	}
}
