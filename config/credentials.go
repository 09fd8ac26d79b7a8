package config

import (
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// Credential is one variable a destination's user must supply for their
// child ('credentials:', with 'isolation: user'): set in the child's
// environment, never in its argv, never logged.
type Credential struct {
	// Name is the environment variable ([A-Z_][A-Z0-9_]*).
	Name string
	// Description tells the user what to supply.
	Description string
	// Pattern, when set, is what a value must match (Go RE2 syntax:
	// linear time).
	Pattern *regexp.Regexp
	// Optional: the child may start without it.
	Optional bool
}

// credentialName is what a credential's variable may be called.
var credentialName = regexp.MustCompile(`^[A-Z_][A-Z0-9_]{0,127}$`)

// runsCode matches the variables that change what a process runs or
// loads — the dynamic loader's, interpreters' and package managers' — which
// a user's value must never set: their child runs as the bridge's own
// system user.
var runsCode = regexp.MustCompile(`^(PATH|IFS|ENV|BASH_ENV|SHELLOPTS|LD_.*|DYLD_.*|GCONV_PATH|NODE_OPTIONS|NODE_PATH|NODE_EXTRA_CA_CERTS|PYTHON.*|PERL5OPT|PERL5LIB|PERLLIB|RUBYOPT|RUBYLIB|JAVA_TOOL_OPTIONS|_JAVA_OPTIONS|JDK_JAVA_OPTIONS|CLASSPATH|NPM_CONFIG_.*|UV_.*|PIP_.*|GIT_.*|SSL_CERT_.*|HOME)$`)

// credentialKeys are the keys of one credential.
var credentialKeys = []string{"description", "pattern", "optional"}

// parseCredentials reads a destination's 'credentials:' block: a mapping
// of variable names to {description, pattern, optional}, in file order.
func parseCredentials(n *yaml.Node, env map[string]string, problem func(line int, format string, args ...any)) []Credential {
	if n.Kind != yaml.MappingNode || len(n.Content) == 0 {
		problem(n.Line, "'credentials' must map each environment variable a user supplies to {description: …, pattern: …, optional: true}, not %s", nodeText(n))
		return nil
	}
	var out []Credential
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		c := Credential{Name: k.Value}
		switch {
		case !credentialName.MatchString(k.Value):
			problem(k.Line, "credential %q: a variable's name is capital letters, digits and '_' (not starting with a digit), such as GITHUB_PERSONAL_ACCESS_TOKEN", k.Value)
			continue
		case runsCode.MatchString(strings.ToUpper(k.Value)):
			problem(k.Line, "credential %s would let a user's value change what their child runs or loads (it runs as the bridge's own system user); declare the server's own variables only", k.Value)
			continue
		case slices.ContainsFunc(out, func(o Credential) bool { return o.Name == k.Value }):
			problem(k.Line, "credential %s is declared twice", k.Value)
			continue
		}
		if _, ok := env[k.Value]; ok {
			problem(k.Line, "credential %s is also set in 'env:': each user supplies it; remove it from one of them", k.Value)
		}
		switch v.Kind {
		case yaml.ScalarNode:
			if v.Tag != "!!null" && v.Value != "" {
				c.Description = v.Value // NAME: "what to supply"
			}
		case yaml.MappingNode:
			for j := 0; j+1 < len(v.Content); j += 2 {
				ck, cv := v.Content[j], v.Content[j+1]
				switch ck.Value {
				case "description":
					c.Description = cv.Value
				case "pattern":
					re, err := regexp.Compile(cv.Value)
					if cv.Kind != yaml.ScalarNode || err != nil {
						problem(cv.Line, "credential %s: 'pattern' must be a regular expression (Go RE2 syntax): %v", k.Value, err)
						continue
					}
					c.Pattern = re
				case "optional":
					if cv.Kind != yaml.ScalarNode || (cv.Value != "true" && cv.Value != "false") {
						problem(cv.Line, "credential %s: 'optional' must be true or false, not %s", k.Value, nodeText(cv))
						continue
					}
					c.Optional = cv.Value == "true"
				default:
					problem(ck.Line, "credential %s: unknown key %q%s (known: %s)", k.Value, ck.Value, didYouMean(ck.Value, credentialKeys), credentialKeysList)
				}
			}
		default:
			problem(v.Line, "credential %s must be a description or {description, pattern, optional}, not %s", k.Value, nodeText(v))
			continue
		}
		out = append(out, c)
	}
	return out
}

var credentialKeysList = strings.Join(credentialKeys, ", ")
