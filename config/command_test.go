package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeScript writes an executable shell script dir/name running body.
func writeScript(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestResolveCommand(t *testing.T) {
	dir := t.TempDir()
	tool := writeScript(t, dir, "tool", "true")
	sub := filepath.Join(dir, "bin")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	writeScript(t, sub, "rel", "true")
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		d       Destination
		path    string
		want    string
		errSubs []string
	}{
		{"on the bridge's PATH", Destination{Command: "tool"}, "/nonexistent:" + dir, tool, nil},
		{"not on the bridge's PATH", Destination{Command: "tool"}, "/nonexistent", "", []string{`"tool"`, "the bridge's PATH", "/nonexistent", "install it", "absolute path", "add its directory to PATH"}},
		{"empty PATH", Destination{Command: "tool"}, "", "", []string{"empty"}},
		{"on the destination's PATH", Destination{Command: "tool", Env: map[string]string{"PATH": dir}}, "/nonexistent", tool, nil},
		{"not on the destination's PATH", Destination{Command: "tool", Env: map[string]string{"PATH": "/nonexistent"}}, dir, "", []string{"the destination's 'env: PATH'"}},
		{"relative PATH entries are skipped", Destination{Command: "rel", Cwd: dir}, "bin", "", []string{"not found"}},
		{"absolute", Destination{Command: tool}, "", tool, nil},
		{"absolute missing", Destination{Command: filepath.Join(dir, "nope")}, "", "", []string{"does not exist", "absolute path"}},
		{"relative to cwd", Destination{Command: "./bin/rel", Cwd: dir}, "", filepath.Join(dir, "bin", "rel"), nil},
		{"relative missing", Destination{Command: "./rel", Cwd: dir}, "", "", []string{"does not exist", "relative to cwd " + dir}},
		{"a directory", Destination{Command: sub}, "", "", []string{"is a directory"}},
		{"not executable", Destination{Command: plain}, "", "", []string{"not executable", "chmod +x"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.d.ResolveCommand(tc.path)
			if tc.errSubs == nil {
				if err != nil || got != tc.want {
					t.Errorf("ResolveCommand = %q, %v; want %q", got, err, tc.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("ResolveCommand = %q; want an error", got)
			}
			for _, s := range tc.errSubs {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
		})
	}
}

// TestWindowsCommandRules: Windows's ways of finding programs (run here on
// every platform): a name without an extension is found with PATHEXT's
// (npx is npx.cmd), a file is a program by its extension, and a backslash
// or a drive's colon makes a command a path.
func TestWindowsCommandRules(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"npx.cmd", "tool.exe", "UPPER.EXE", "readme.txt"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATHEXT", ".COM;.EXE;.BAT;.CMD")
	for _, tc := range []struct {
		command, want, err string
	}{
		{"npx", filepath.Join(dir, "npx.cmd"), ""},
		{"npx.cmd", filepath.Join(dir, "npx.cmd"), ""},
		{"tool", filepath.Join(dir, "tool.exe"), ""},
		{"UPPER.EXE", filepath.Join(dir, "UPPER.EXE"), ""},
		{"readme.txt", "", "not found"},
		{"readme", "", "not found"},
		{filepath.Join(dir, "npx"), filepath.Join(dir, "npx.cmd"), ""},
		{filepath.Join(dir, "readme.txt"), "", "is not a program"},
	} {
		d := &Destination{Command: tc.command, Env: map[string]string{"PATH": dir}}
		got, err := windowsCommands.resolve(d, "")
		if tc.err == "" && (err != nil || got != tc.want) || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: %q, %v; want %q, an error with %q", tc.command, got, err, tc.want, tc.err)
		}
	}
	t.Setenv("PATHEXT", ".EXE")
	if got, err := windowsCommands.resolve(&Destination{Command: "npx", Env: map[string]string{"PATH": dir}}, ""); err == nil {
		t.Errorf("npx found as %q with PATHEXT .EXE", got)
	}
	for command, want := range map[string]bool{`C:\tools\x.exe`: true, `sub\x`: true, "C:x": true, "./x": true, "npx": false} {
		if windowsCommands.isPath(command) != want {
			t.Errorf("isPath(%q) = %v", command, !want)
		}
	}
}
