package config

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocumentedFilesLoad: every destinations file the README and docs/
// show whole (a yaml block with 'destinations:' or 'mcpServers:' at its
// top level) loads, as a user who copies it would load it — with every
// ${VAR} it names set. (The README's profile example once did not:
// roots: [~/notes].)
func TestDocumentedFilesLoad(t *testing.T) {
	pages, _ := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	pages = append(pages, filepath.Join("..", "README.md"), filepath.Join("..", "deploy", "README.md"))
	block := regexp.MustCompile("(?s)```ya?ml\n(.*?)```")
	whole := regexp.MustCompile(`(?m)^(destinations|mcpServers):`)
	lookup := func(name string) (string, bool) { return "/value/of/" + name, true }
	n := 0
	for _, page := range pages {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range block.FindAllStringSubmatch(string(data), -1) {
			text := m[1]
			if !whole.MatchString(text) {
				continue // a fragment of a file
			}
			n++
			line := strings.Count(string(data[:strings.Index(string(data), text)]), "\n") + 1
			if _, err := Parse(filepath.Base(page), []byte(text), lookup); err != nil && !onlyMissingDirs(err.Error()) {
				t.Errorf("%s:%d: the destinations file shown there does not load:\n%v\n%s", page, line, err, text)
			}
		}
	}
	if n < 5 {
		t.Errorf("only %d whole destinations files found in the docs; the pattern is wrong", n)
	}
}

// onlyMissingDirs reports whether every problem in msg is a working
// directory that does not exist on this machine (the example's user
// has it).
func onlyMissingDirs(msg string) bool {
	problems := 0
	for _, l := range strings.Split(msg, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "line ") {
			continue
		}
		problems++
		if !strings.Contains(l, "cwd ") || !strings.Contains(l, "is not a directory") {
			return false
		}
	}
	return problems > 0
}

// TestDocsLinks: every relative link of the README, deploy/README.md and
// docs/ names a file that exists and, with an anchor, a heading of that
// page (as GitHub makes anchors of headings). Sections move between the
// README and docs/: a link left behind fails here.
func TestDocsLinks(t *testing.T) {
	pages, _ := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	pages = append(pages, filepath.Join("..", "README.md"), filepath.Join("..", "deploy", "README.md"))
	code := regexp.MustCompile("(?s)```.*?```")
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	heading := regexp.MustCompile(`(?m)^#+ (.*)$`)
	anchors := map[string]map[string]bool{}
	anchorsOf := func(page string) map[string]bool {
		if a, ok := anchors[page]; ok {
			return a
		}
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		a := map[string]bool{}
		for _, m := range heading.FindAllStringSubmatch(code.ReplaceAllString(string(data), ""), -1) {
			a[anchorOf(m[1])] = true
		}
		anchors[page] = a
		return a
	}
	n := 0
	for _, page := range pages {
		data, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(code.ReplaceAllString(string(data), ""), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			n++
			path, anchor, _ := strings.Cut(target, "#")
			file := page
			if path != "" {
				file = filepath.Join(filepath.Dir(page), path)
			}
			if _, err := os.Stat(file); err != nil {
				t.Errorf("%s: the link %s names no file", page, target)
				continue
			}
			if anchor != "" && strings.HasSuffix(file, ".md") && !anchorsOf(file)[anchor] {
				t.Errorf("%s: the link %s names no heading of %s", page, target, file)
			}
		}
	}
	if n < 30 {
		t.Errorf("only %d relative links found; the pattern is wrong", n)
	}
}

// anchorOf is the anchor GitHub makes of a heading: lower case, spaces
// made '-', what is neither a letter, a digit, '-' nor '_' dropped.
func anchorOf(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		}
	}
	return b.String()
}
