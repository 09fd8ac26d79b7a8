//go:build unix

package tests

// The deploy/ files: the systemd unit and socket pass systemd-analyze verify; the Dockerfile's
// variables, its static build stage, and .dockerignore. debianProgram and systemdProgram find the
// Debian programs that tests in other files need too.

import (
	"debug/elf"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

// debianProgram finds the program a Debian package installs, trying each
// name: with -short the test is skipped, in CI a missing one fails it
// (.ci/run installs the package), elsewhere it is skipped saying how to
// install it. (what names the test, for the messages.)
func debianProgram(t *testing.T, pkg, what string, names ...string) string {
	t.Helper()
	if testing.Short() {
		t.Skipf("-short skips %s", what)
	}
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is missing: .ci/run installs it with 'apt-get install -y %s'", names[0], pkg)
	}
	t.Skipf("%s is not installed; run 'sudo apt-get install -y %s' to run %s", names[0], pkg, what)
	return ""
}

// systemdProgram is the path of one of systemd's programs; the test is
// skipped without it, and fails in CI (.ci/run installs Debian's systemd).
func systemdProgram(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not installed (.ci/run installs Debian's systemd)", name)
		}
		t.Skipf("%s is not installed", name)
	}
	return path
}

// TestSystemdUnit: deploy/stelae-bridge.service and .socket pass systemd-analyze
// verify (unknown keys and directives are reported there), and the bridge
// accepts its ExecStart's flags.
func TestSystemdUnit(t *testing.T) {
	analyze := systemdProgram(t, "systemd-analyze")
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
	// The packages' drop-in (deploy/release/package.conf) resets ExecStart
	// to the package's binary with the unit's flags, word for word.
	dropIn, err := os.ReadFile(filepath.Join("..", "deploy", "release", "package.conf"))
	if err != nil {
		t.Fatal(err)
	}
	d := regexp.MustCompile(`(?m)^ExecStart=\n(?:.*\n)*?ExecStart=(\S+) (.*)$`).FindStringSubmatch(string(dropIn))
	if d == nil || d[1] != "/usr/bin/stelae-bridge" || d[2] != m[2] {
		t.Errorf("the packages' drop-in's ExecStart %q is not the unit's flags (%q) after an empty ExecStart= and /usr/bin/stelae-bridge", d, m[2])
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

// TestDockerfileStaticStage does what deploy/Dockerfile's build and static
// stages do, without a container engine (CI has none): its build command,
// as written, makes a binary with no ELF interpreter (static: it runs on
// distroless/static), and that binary started with the stage's
// environment, as a user whose home does not exist yet, makes its state
// directory, private, and serves.
func TestDockerfileStaticStage(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the image is Linux")
	}
	data, err := os.ReadFile(filepath.Join("..", "deploy", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	m := regexp.MustCompile(`(?m)^RUN CGO_ENABLED=0 go build (-trimpath) -ldflags "([^"]*)" -o /out/stelae-bridge (\./cmd/stelae-bridge)$`).FindStringSubmatch(text)
	if m == nil {
		t.Fatal("no build line of the expected shape in the Dockerfile")
	}
	bin := filepath.Join(t.TempDir(), "stelae-bridge")
	build := exec.Command("go", "build", m[1], "-ldflags", strings.ReplaceAll(m[2], "${VERSION}", "v9.9.9-image"), "-o", bin, m[3])
	build.Dir = ".."
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("the Dockerfile's build: %v\n%s", err, out)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("the image's binary has an ELF interpreter: it is not static")
		}
	}
	f.Close()

	// The static stage's environment, with its paths under a temporary
	// root and a loopback port.
	stage := text[strings.Index(text, " AS static"):]
	stage = stage[:strings.Index(stage, "\nFROM ")]
	env := regexp.MustCompile(`\b(STELAE_[A-Z_]+)=(\S+)`).FindAllStringSubmatch(stage, -1)
	if len(env) < 4 {
		t.Fatalf("the static stage sets %d variables: %q", len(env), env)
	}
	root := t.TempDir()
	vars := map[string]string{}
	for _, kv := range env {
		vars[kv[1]] = kv[2]
	}
	vars["STELAE_CONFIG"] = fakeDestinations(t, map[string]string{"fake": fakemcp.ModeServer})
	vars["STELAE_STATE_DIR"] = filepath.Join(root, vars["STELAE_STATE_DIR"])
	vars["STELAE_LISTEN"] = "127.0.0.1:0"
	cmd := exec.Command(bin)
	cmd.Env = os.Environ()
	for k, v := range vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	p := runBinary(t, cmd)
	c := newClient(t, p.base+"/fake/mcp")
	c.initialize()
	echoCall(t, c, `"i"`, "from the image's binary")
	st, err := os.Stat(vars["STELAE_STATE_DIR"])
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("the state directory %s: %v %v; want it made, mode 0700", vars["STELAE_STATE_DIR"], err, st)
	}
	if r := mustRequest(t, http.MethodGet, p.base+"/version", "", ""); !strings.Contains(string(r.body), "v9.9.9-image") {
		t.Errorf("/version of the image's binary: %s", r.body)
	}
}

// TestDockerignore: the image's build context (the repository root) leaves
// out what a checkout holds besides the build's inputs — .git and the
// tests' node_modules (hundreds of MB that 'docker build' would send) —
// and keeps every file the build reads: go.mod, go.sum, the Go sources of
// the binary and destinations.yaml. Docker's pattern rules, as far as the
// file uses them: a pattern matches a path or any of its parents, '**/'
// any number of directories.
func TestDockerignore(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	for _, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			patterns = append(patterns, l)
		}
	}
	excluded := func(path string) bool {
		parts := strings.Split(path, "/")
		for i := 1; i <= len(parts); i++ {
			prefix := strings.Join(parts[:i], "/")
			for _, p := range patterns {
				rest, any := strings.CutPrefix(p, "**/")
				if ok, _ := filepath.Match(p, prefix); ok {
					return true
				}
				if any {
					for j := range i {
						if ok, _ := filepath.Match(rest, strings.Join(parts[j:i], "/")); ok {
							return true
						}
					}
				}
			}
		}
		return false
	}
	for _, p := range []string{".git/HEAD", "tests/node_modules/@modelcontextprotocol/x.js", "node_modules/a"} {
		if !excluded(p) {
			t.Errorf("%s is sent to docker build", p)
		}
	}
	kept := []string{"go.mod", "go.sum", "destinations.yaml", "deploy/Dockerfile"}
	// The files the binary is built from, as the image builds it.
	list := exec.Command("go", "list", "-deps", "-f", `{{if not .Standard}}{{$d := .Dir}}{{range .GoFiles}}{{$d}}/{{.}}{{"\n"}}{{end}}{{range .EmbedFiles}}{{$d}}/{{.}}{{"\n"}}{{end}}{{end}}`, "./cmd/stelae-bridge")
	list.Dir = ".."
	list.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	out, err := list.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	root, _ := filepath.Abs("..")
	for _, f := range strings.Fields(string(out)) {
		if rel, err := filepath.Rel(root, f); err == nil && !strings.HasPrefix(rel, "..") {
			kept = append(kept, filepath.ToSlash(rel))
		}
	}
	if len(kept) < 50 {
		t.Fatalf("only %d files of the build found", len(kept))
	}
	for _, p := range kept {
		if excluded(p) {
			t.Errorf("%s, which the image's build reads, is left out of the context", p)
		}
	}
}
