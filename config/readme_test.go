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
