package config

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// This file is what the bridge forgives in a file written for another
// client (the 'mcpServers:' shape of Claude Desktop, Cursor, Cline, Claude
// Code): keys those clients use and the bridge does not are skipped with a
// warning, an entry marked 'disabled: true' is not served, and a name that
// is not a URL path segment is served under one made from it. The bridge's
// own 'destinations:' shape stays strict. It also says "did you mean" for
// an unknown key.

// otherClientKeys are keys of 'mcpServers:' entries that other clients use
// and the bridge does not, with what they mean there.
var otherClientKeys = map[string]string{
	"autoApprove":   "tools Cline runs without asking",
	"alwaysAllow":   "tools Cline runs without asking",
	"timeout":       "Cline's request timeout",
	"transportType": "Cline's transport",
	"description":   "a description",
	"envFile":       "a file of environment variables (Cursor)",
}

// lenientEntry takes what the bridge does not use out of the 'mcpServers:'
// entry v of name: it returns the entry's mapping without those keys, its
// warnings, and skip when the entry says 'disabled: true'.
func lenientEntry(name string, v *yaml.Node) (kept *yaml.Node, warnings []string, skip bool) {
	if v.Kind != yaml.MappingNode {
		return v, nil, false
	}
	out := *v
	out.Content = nil
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := v.Content[i], v.Content[i+1]
		switch {
		case k.Value == "disabled":
			if val.Value == "true" {
				return v, []string{fmt.Sprintf("line %d: warning: mcpServers entry %q is disabled ('disabled: true'): not served", k.Line, name)}, true
			}
			warnings = append(warnings, fmt.Sprintf("line %d: warning: mcpServers entry %q: 'disabled: %s' ignored", k.Line, name, val.Value))
		case otherClientKeys[k.Value] != "":
			warnings = append(warnings, fmt.Sprintf("line %d: warning: mcpServers entry %q: %q (%s) is not used by the bridge: ignored", k.Line, name, k.Value, otherClientKeys[k.Value]))
		case !slices.Contains(mcpServerKeys, k.Value) && suggest(k.Value, mcpServerKeys) == "":
			// Another client's key the bridge does not know: skipped. (One
			// that looks like a misspelt key of the bridge's stays an
			// error.)
			warnings = append(warnings, fmt.Sprintf("line %d: warning: mcpServers entry %q: unknown key %q ignored", k.Line, name, k.Value))
		default:
			out.Content = append(out.Content, k, val)
		}
	}
	return &out, warnings, false
}

// unsafeRun is a run of characters a destination name cannot hold.
var unsafeRun = regexp.MustCompile(`[^a-z0-9._-]+`)

// servedName is the URL-safe name an 'mcpServers:' entry whose name is not
// one is served under ("My Notes" → "my-notes"); "" when none can be made.
func servedName(name string) string {
	s := strings.Trim(unsafeRun.ReplaceAllString(strings.ToLower(name), "-"), "-._")
	if !validName.MatchString(s) {
		return ""
	}
	return s
}

// suggest is the known key closest to key ("did you mean"), when it is
// close enough to be a misspelling; "" otherwise.
func suggest(key string, known []string) string {
	best, bestDist := "", 3
	for _, k := range known {
		limit := 2
		if len(k) <= 4 {
			limit = 1
		}
		if d := editDistance(strings.ToLower(key), strings.ToLower(k)); d <= limit && d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}

// didYouMean is suggest's phrase for a message: " (did you mean
// "prestart"?)" or "".
func didYouMean(key string, known []string) string {
	if s := suggest(key, known); s != "" {
		return fmt.Sprintf(" (did you mean %q?)", s)
	}
	return ""
}

// editDistance is the Levenshtein distance of a and b, a transposition of
// two neighbours counting as one edit.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
