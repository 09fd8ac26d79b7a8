package doctor

import (
	"strings"
	"testing"
)

// TestWriteSteps: the steps name the URL and the sign-in each client
// needs, as the run found the endpoint: OAuth behind https (every
// client), a static token (a header; not the hosted connectors), open on
// this machine (local clients only).
func TestWriteSteps(t *testing.T) {
	for _, tc := range []struct {
		name    string
		rep     Report
		want    []string
		wantNot []string
	}{
		{"oauth", Report{URL: "https://mcp.example.com/notes/mcp", Results: []Result{{Check: "resource-metadata", Status: Pass}}},
			[]string{"Developer mode", "Add custom connector", "claude mcp add --transport http notes https://mcp.example.com/notes/mcp (then /mcp", `"servers": {"notes": {"type": "http", "url": "https://mcp.example.com/notes/mcp"}}`, `"mcpServers": {"notes"`},
			[]string{"not this URL", "Bearer"}},
		{"token", Report{URL: "https://mcp.example.com/p/dev/mcp", Results: []Result{{Check: "metadata", Status: Warn}}},
			[]string{"not this URL: they sign in with OAuth only", `--header "Authorization: Bearer YOUR_TOKEN"`, "${input:token}", `"dev"`},
			[]string{"Add custom connector"}},
		{"open", Report{URL: "http://127.0.0.1:9090/files/mcp", Results: []Result{{Check: "metadata", Status: Skip}}},
			[]string{"not this URL: they connect only to an https URL", "claude mcp add --transport http files http://127.0.0.1:9090/files/mcp\n"},
			[]string{"Bearer", "Developer mode"}},
	} {
		var b strings.Builder
		tc.rep.WriteSteps(&b)
		for _, w := range tc.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s: the steps lack %q:\n%s", tc.name, w, b.String())
			}
		}
		for _, w := range tc.wantNot {
			if strings.Contains(b.String(), w) {
				t.Errorf("%s: the steps say %q:\n%s", tc.name, w, b.String())
			}
		}
	}
}
