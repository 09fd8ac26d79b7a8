package doctor

import (
	"fmt"
	"io"
	"path"
	"strings"
)

// Auth is how clients authenticate to the endpoint, as the run found it.
type Auth string

// The ways.
const (
	AuthOAuth   Auth = "oauth" // sign-in (the bridge's or another issuer's)
	AuthStatic  Auth = "token" // a static bearer token in a header
	AuthNone    Auth = "none"  // open
	AuthUnknown Auth = ""      // not found out
)

// auth is how the endpoint takes clients in.
func (rep Report) auth() Auth {
	for _, res := range rep.Results {
		switch {
		case res.Check == "metadata" && res.Status == Warn:
			return AuthStatic
		case res.Check == "resource-metadata" && res.Status == Pass:
			return AuthOAuth
		case res.Check == "metadata" && res.Status == Skip:
			return AuthNone
		}
	}
	return AuthUnknown
}

// WriteSteps writes how to add the endpoint to each client, with the URL
// and the sign-in each needs: after a run that passed.
func (rep Report) WriteSteps(w io.Writer) {
	url := rep.URL
	name := connectorName(url)
	auth := rep.auth()
	public := strings.HasPrefix(url, "https://")
	fmt.Fprintf(w, "\nAdd it to your clients (the URL: %s):\n", url)
	switch {
	case !public || auth != AuthOAuth:
		why := "they connect only to an https URL with OAuth sign-in"
		if public {
			why = "they sign in with OAuth only: give the destination an 'auth:' block (auth: {issuer: builtin} is the bridge's own server)"
		}
		fmt.Fprintf(w, "  ChatGPT, claude.ai, Claude Desktop's connectors: not this URL: %s.\n", why)
	default:
		fmt.Fprintf(w, "  ChatGPT (developer mode): Settings → Apps & Connectors → Advanced settings → Developer mode on; then Create: a name, the URL, Authentication: OAuth. ChatGPT registers, and the bridge's approval page opens: approve it.\n")
		fmt.Fprintf(w, "  claude.ai: Settings → Connectors → Add custom connector: a name and the URL; Connect, and approve on the bridge's approval page.\n")
		fmt.Fprintf(w, "  Claude Desktop: the same, in its Settings → Connectors.\n")
	}
	header := ""
	switch auth {
	case AuthStatic:
		header = "Authorization: Bearer YOUR_TOKEN"
	}
	claude := fmt.Sprintf("claude mcp add --transport http %s %s", name, url)
	if header != "" {
		claude += fmt.Sprintf(" --header %q", header)
	}
	fmt.Fprintf(w, "  Claude Code: %s", claude)
	if auth == AuthOAuth {
		fmt.Fprintf(w, " (then /mcp in Claude Code to sign in)")
	}
	fmt.Fprintln(w)
	vs := fmt.Sprintf(`{"servers": {%q: {"type": "http", "url": %q}}}`, name, url)
	cursor := fmt.Sprintf(`{"mcpServers": {%q: {"url": %q}}}`, name, url)
	if header != "" {
		vs = fmt.Sprintf(`{"servers": {%q: {"type": "http", "url": %q, "headers": {"Authorization": "Bearer ${input:token}"}}}, "inputs": [{"id": "token", "type": "promptString", "password": true, "description": "the bridge's token"}]}`, name, url)
		cursor = fmt.Sprintf(`{"mcpServers": {%q: {"url": %q, "headers": {"Authorization": "Bearer YOUR_TOKEN"}}}}`, name, url)
	}
	fmt.Fprintf(w, "  VS Code: .vscode/mcp.json: %s\n", vs)
	fmt.Fprintf(w, "  Cursor: ~/.cursor/mcp.json: %s\n", cursor)
	if auth == AuthOAuth {
		fmt.Fprintf(w, "  (VS Code and Cursor open the bridge's sign-in in the browser the first time.)\n")
	}
}

// connectorName is a name for the connector: the destination's or
// profile's, from the URL's path.
func connectorName(url string) string {
	p := url
	if i := strings.Index(p, "://"); i >= 0 {
		p = p[i+3:]
	}
	if i := strings.IndexByte(p, '/'); i >= 0 {
		p = p[i:]
	} else {
		p = "/"
	}
	p = strings.TrimSuffix(p, "/mcp")
	if n := path.Base(p); n != "/" && n != "." && n != "" {
		return n
	}
	return "stelae"
}
