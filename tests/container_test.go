//go:build linux

package tests

// The static container image (issue 41): deploy/build-image.sh builds deploy/Containerfile FROM
// scratch with Debian's podman (nothing pulled); the image holds the static binary, its user and
// its state directory; a container from it, run by Debian's runc, serves an MCP call on loopback.
// Outside CI, where podman cannot run a container the test says exactly why and skips that half.

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

func TestStaticImage(t *testing.T) {
	podman := debianProgram(t, "podman", "the container image", "podman")
	tag := fmt.Sprintf("localhost/stelae-bridge:test-%d", time.Now().UnixNano())
	build := exec.Command("../deploy/build-image.sh", tag, "v-image-test")
	build.Env = append(os.Environ(), "BUILDER="+podman)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("deploy/build-image.sh: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command(podman, "rmi", "-f", tag).Run() })
	out, err := exec.Command(podman, "image", "inspect", tag, "--format", "{{.Config.User}}|{{.Config.Entrypoint}}|{{.Config.Env}}|{{len .RootFS.Layers}}").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "65532:65532|[/usr/local/bin/stelae-bridge]|") || !strings.Contains(string(out), "STELAE_LISTEN=0.0.0.0:9090") {
		t.Fatalf("the image's config: %v %s", err, out)
	}
	// What is in it: the binary (static: it runs with nothing else), the
	// user, the state directory the user owns.
	mnt, err := exec.Command(podman, "image", "mount", tag).Output()
	if err != nil {
		t.Fatalf("podman image mount: %v", err)
	}
	root := strings.TrimSpace(string(mnt))
	t.Cleanup(func() { _ = exec.Command(podman, "image", "unmount", tag).Run() })
	files := []string{}
	_ = filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err == nil && p != root {
			files = append(files, strings.TrimPrefix(p, root))
		}
		return nil
	})
	if strings.Join(files, " ") != "/etc /etc/group /etc/passwd /tmp /usr /usr/local /usr/local/bin /usr/local/bin/stelae-bridge /var /var/lib /var/lib/stelae-bridge" {
		t.Errorf("the image holds %q", files)
	}
	if v, err := exec.Command(filepath.Join(root, "usr/local/bin/stelae-bridge"), "-version").Output(); err != nil || !strings.Contains(string(v), "v-image-test") {
		t.Errorf("the image's binary: %v %s", err, v)
	}
	if ldd, _ := exec.Command("ldd", filepath.Join(root, "usr/local/bin/stelae-bridge")).CombinedOutput(); !strings.Contains(string(ldd), "not a dynamic executable") {
		t.Errorf("the image's binary is not static: %s", ldd)
	}
	if st, err := os.Stat(filepath.Join(root, "var/lib/stelae-bridge")); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("the state directory: %v %v", st, err)
	}

	// A container from it, on the host's loopback, run by Debian's runc:
	// podman's default runtime, crun, refuses this machine's hybrid
	// cgroup layout ("cgroups in hybrid mode not supported"), which runc
	// supports. The default rlimits are off (setrlimit is not permitted
	// in some sandboxes).
	runc := debianProgram(t, "runc", "running a container from the image", "runc", "/usr/sbin/runc")
	conf := filepath.Join(t.TempDir(), "containers.conf")
	if err := os.WriteFile(conf, []byte("[containers]\ndefault_ulimits = []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	podmanRun := func(args ...string) *exec.Cmd {
		cmd := exec.Command(podman, append([]string{"--runtime", runc, "run", "--rm", "--network", "host"}, args...)...)
		cmd.Env = append(os.Environ(), "CONTAINERS_CONF="+conf)
		return cmd
	}
	if out, err := podmanRun(tag, "-version").CombinedOutput(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("podman (with runc) cannot run a container from the image: %v: %s", err, out)
		}
		t.Skipf("podman builds the image here but cannot run a container from it: %v: %s", err, strings.TrimSpace(string(out)))
	} else if !strings.HasPrefix(string(out), "stelae-bridge v-image-test ") {
		t.Errorf("the container's -version: %q", out)
	}
	// It runs: a destination whose child is fakemcp (a static build of
	// this package's binary, mounted in) serves a tool call.
	dir := t.TempDir()
	fake := filepath.Join(dir, "fake")
	static := exec.Command("go", "test", "-c", "-o", fake, ".")
	static.Env = append(os.Environ(), "CGO_ENABLED=0") // the image has no C library
	if out, err := static.CombinedOutput(); err != nil {
		t.Fatalf("a static fake server: %v %s", err, out)
	}
	cfgText := fmt.Sprintf("destinations:\n  fake:\n    command: /fake\n    args: [\"-test.run=^$\"]\n    env: {%s: %s}\n", fakemcp.EnvMode, fakemcp.ModeServer)
	if err := os.WriteFile(filepath.Join(dir, "destinations.yaml"), []byte(cfgText), 0o644); err != nil {
		t.Fatal(err)
	}
	name := strings.ReplaceAll(tag[len("localhost/stelae-bridge:"):], ".", "-")
	addr := freeAddr(t)
	run := podmanRun("-d", "--name", name, "-e", "STELAE_LISTEN="+addr,
		"-v", filepath.Join(dir, "destinations.yaml")+":/etc/stelae-bridge/destinations.yaml:ro", "-v", fake+":/fake:ro", tag)
	if out, err := run.CombinedOutput(); err != nil {
		t.Fatalf("podman run -d: %v %s", err, out)
	}
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := exec.Command(podman, "logs", name).CombinedOutput()
			t.Logf("the container's log:\n%s", out)
		}
		_ = exec.Command(podman, "--runtime", runc, "rm", "-f", name).Run()
	})
	waitFor(t, 30*time.Second, "the container to serve", func() bool {
		r, err := request(http.MethodGet, "http://"+addr+"/healthz", "", "")
		return err == nil && r.status == http.StatusOK
	})
	c := newClient(t, "http://"+addr+"/fake/mcp")
	c.initialize()
	if got := textOf(resultOK(t, "echo", c.callTool("1", "echo", map[string]string{"text": "from the container"}))); got != "from the container" {
		t.Errorf("the container's echo: %q", got)
	}
}
