package main

import (
	"runtime"
	"runtime/debug"
	"strings"
)

// build is what the binary knows of its own build: the version (set with
// -ldflags "-X main.version=…", else the module's when built by go install
// at a tagged version), and from the Go toolchain's stamp the commit, its
// time and whether the tree had changes.
type build struct {
	version, module, commit, commitTime, goVersion string
	modified                                       bool
}

// readBuild reads the build's stamp (debug.ReadBuildInfo); a binary built
// outside a git checkout, or a test binary, has no commit.
func readBuild() build {
	b := build{version: version, goVersion: runtime.Version()}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	if v := info.Main.Version; v != "" && v != "(devel)" {
		b.module = v
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			b.commit = s.Value
			if len(b.commit) > 12 {
				b.commit = b.commit[:12]
			}
		case "vcs.time":
			b.commitTime = s.Value
		case "vcs.modified":
			b.modified = s.Value == "true"
		}
	}
	return b
}

// commitLabel is the commit as the metric and /version name it: its first
// 12 hex digits, "-dirty" when the tree had changes, "" when unknown.
func (b build) commitLabel() string {
	if b.commit == "" || !b.modified {
		return b.commit
	}
	return b.commit + "-dirty"
}

// String is -version's line: "stelae-bridge 0.1.0-dev (module v0.1.0,
// commit 52ddf79ce4cd 2026-11-26T15:00:00Z, go1.26.8 linux/amd64)".
func (b build) String() string {
	var parts []string
	// A module version the toolchain made up from the commit (a
	// pseudo-version) says nothing the commit does not.
	if b.module != "" && b.module != b.version && (b.commit == "" || !strings.Contains(b.module, b.commit)) {
		parts = append(parts, "module "+b.module)
	}
	if c := b.commitLabel(); c != "" {
		parts = append(parts, strings.TrimSpace("commit "+c+" "+b.commitTime))
	}
	parts = append(parts, b.goVersion+" "+runtime.GOOS+"/"+runtime.GOARCH)
	return "stelae-bridge " + b.version + " (" + strings.Join(parts, ", ") + ")"
}
