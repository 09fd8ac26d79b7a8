//go:build unix

package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestSystemdUnit: deploy/stelae-bridge.service and .socket pass systemd-analyze
// verify (unknown keys and directives are reported there), and the bridge
// accepts its ExecStart's flags.
func TestSystemdUnit(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("systemd-analyze is not installed (.ci/run installs Debian's systemd)")
		}
		t.Skip("systemd-analyze is not installed")
	}
	unit, err := os.ReadFile(filepath.Join("..", "deploy", "stelae-bridge.service"))
	if err != nil {
		t.Fatal(err)
	}
	bin := bridgeBinary(t)
	dir := t.TempDir()
	// The binary where the unit expects it: here, the one just built.
	text := strings.ReplaceAll(string(unit), "/usr/local/bin/stelae-bridge", bin)
	path := filepath.Join(dir, "stelae-bridge.service")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	// The socket unit beside it (socket activation: systemd holds the
	// listening socket across restarts), on the address the service's
	// -listen names.
	socket, err := os.ReadFile(filepath.Join("..", "deploy", "stelae-bridge.socket"))
	if err != nil {
		t.Fatal(err)
	}
	socketPath := filepath.Join(dir, "stelae-bridge.socket")
	if err := os.WriteFile(socketPath, socket, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(analyze, "verify", path, socketPath).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`(?m)^ExecStart=(\S+) (.*)$`).FindStringSubmatch(text)
	if m == nil {
		t.Fatal("no ExecStart line")
	}
	ls := regexp.MustCompile(`(?m)^ListenStream=(\S+)$`).FindSubmatch(socket)
	if ls == nil || !strings.Contains(m[2], "-listen "+string(ls[1])) {
		t.Errorf("the socket unit listens on %q; the service's ExecStart says %q", ls, m[2])
	}
	// The flags, with %S (the state directory's parent) here and the
	// shipped destinations file, under -check.
	args := strings.Fields(strings.ReplaceAll(m[2], "%S", dir))
	for i, a := range args {
		if a == "/etc/stelae-bridge/destinations.yaml" {
			args[i] = filepath.Join("..", "destinations.yaml")
		}
	}
	if out, err := exec.Command(bin, append(args, "-check")...).CombinedOutput(); err != nil {
		t.Errorf("stelae-bridge %s -check: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// TestDockerfileSettings: every variable deploy/Dockerfile sets for the
// bridge is one the bridge reads (the image is not built in CI).
func TestDockerfileSettings(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "deploy", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	help, err := exec.Command(bridgeBinary(t), "-help").Output()
	if err != nil {
		t.Fatal(err)
	}
	set := regexp.MustCompile(`\b(STELAE_[A-Z_]+|MAX_STDIO_CONNECTIONS|AUDIT_LOG_BODIES)=`).FindAllStringSubmatch(string(data), -1)
	if len(set) < 8 {
		t.Fatalf("found %d settings in the Dockerfile; want those of both images", len(set))
	}
	for _, m := range set {
		if !strings.Contains(string(help), "(env "+m[1]+")") {
			t.Errorf("the Dockerfile sets %s, which the bridge does not read", m[1])
		}
	}
}
