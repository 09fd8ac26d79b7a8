//go:build unix

package tests

// Helpers that run the real stelae-bridge binary: bridgeBinary builds it once per run,
// fakeDestinations and destinationsFile write destinations files of fake children, startBinary,
// runBinary and stopBinary start and stop it, freeAddr picks a loopback address. Also tests of its
// shutdown (no process left after SIGINT) and of its build info.

import (
	"bufio"
	"debug/buildinfo"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

var (
	buildOnce sync.Once
	binDir    string // the temporary directory binPath is built in
	binPath   string
	buildErr  error
	// binStamped: the binary carries its commit (built with VCS stamping).
	binStamped bool
)

// removeBridgeBinary deletes the binary bridgeBinary built, so a test run
// leaves nothing behind in the temporary directory.
func removeBridgeBinary() {
	if binDir != "" {
		os.RemoveAll(binDir)
	}
}

// EnvBridgeBinary names a stelae-bridge binary the tests and benchmarks
// run instead of building cmd/stelae-bridge (to compare two builds with the
// same load generator).
const EnvBridgeBinary = "STELAE_TEST_BINARY"

// bridgeBinary builds cmd/stelae-bridge once per test run (or returns
// $STELAE_TEST_BINARY).
func bridgeBinary(t testing.TB) string {
	t.Helper()
	if bin := os.Getenv(EnvBridgeBinary); bin != "" {
		return bin
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "stelae-bridge-bin")
		if err != nil {
			buildErr = err
			return
		}
		binDir = dir
		binPath = filepath.Join(dir, "stelae-bridge")
		// Stamped with its commit as a user's build is (-buildvcs=auto,
		// go's default, which a GOFLAGS may have turned off): see
		// TestBuildInfo.
		out, err := exec.Command("go", "build", "-buildvcs=auto", "-o", binPath, "github.com/stelae-bridge/stelae-bridge/cmd/stelae-bridge").CombinedOutput()
		binStamped = err == nil
		if err != nil && strings.Contains(string(out), "VCS status") {
			// A checkout git cannot read (another owner's, say): unstamped.
			out, err = exec.Command("go", "build", "-buildvcs=false", "-o", binPath, "github.com/stelae-bridge/stelae-bridge/cmd/stelae-bridge").CombinedOutput()
		}
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		// Stamped only when the toolchain found the checkout's commit
		// (not in a git worktree, whose .git is a file, for one).
		binStamped = false
		if info, err := buildinfo.ReadFile(binPath); err == nil {
			for _, kv := range info.Settings {
				binStamped = binStamped || kv.Key == "vcs.revision" && kv.Value != ""
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// binaryProc is the real stelae-bridge binary running on a loopback port.
type binaryProc struct {
	cmd  *exec.Cmd
	base string // http://127.0.0.1:PORT
	logs *syncBuffer
	done chan struct{}
	err  error
}

var listenLine = regexp.MustCompile(`listening on (http://[0-9.:]+)`)

// fakeDestinations writes a destinations file whose children are this test
// binary in the given modes.
func fakeDestinations(t testing.TB, modes map[string]string) string {
	t.Helper()
	return fakeDestinationsWith(t, modes, "")
}

// fakeDestinationsWith is fakeDestinations with more keys for every
// destination (YAML lines indented as a destination's keys, e.g.
// "    interactive: [sample]\n").
func fakeDestinationsWith(t testing.TB, modes map[string]string, keys string) string {
	t.Helper()
	each := map[string]string{}
	for name := range modes {
		each[name] = keys
	}
	return destinationsFile(t, modes, each)
}

// destinationsFile writes a destinations file of fake children: name →
// mode, with extra keys (YAML lines of a destination's keys) per name.
func destinationsFile(t testing.TB, modes map[string]string, keys map[string]string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("destinations:\n")
	for name, mode := range modes {
		command, args, env := fakemcp.Command(mode)
		fmt.Fprintf(&b, "  %s:\n    command: %s\n    args: [%s]\n%s    env:\n", name, strconv.Quote(command), strconv.Quote(args[0]), keys[name])
		for k, v := range env {
			fmt.Fprintf(&b, "      %s: %s\n", k, strconv.Quote(v))
		}
	}
	path := filepath.Join(t.TempDir(), "destinations.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// startBinary runs the bridge binary with the config file and extra flags.
func startBinary(t testing.TB, config string, flags ...string) *binaryProc {
	t.Helper()
	args := append([]string{"-config", config, "-listen", "127.0.0.1:0", "-state-dir", t.TempDir()}, flags...)
	return runBinary(t, exec.Command(bridgeBinary(t), args...))
}

// runBinary starts cmd, a bridge, and waits for it to say where it
// listens; the test's cleanup kills it.
func runBinary(t testing.TB, cmd *exec.Cmd) *binaryProc {
	t.Helper()
	p := &binaryProc{cmd: cmd, logs: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stderr = p.logs
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	go func() {
		br := bufio.NewReader(stdout)
		for {
			line, err := br.ReadString('\n')
			p.logs.Write([]byte(line))
			if m := listenLine.FindStringSubmatch(line); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
			if err != nil {
				if err != io.EOF {
					p.logs.Write([]byte(err.Error()))
				}
				break
			}
		}
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-p.done
	})
	select {
	case p.base = <-addr:
	case <-p.done:
		t.Fatalf("bridge exited at start: %v\n%s", p.err, p.logs.String())
	case <-time.After(20 * time.Second):
		t.Fatalf("bridge did not report its address:\n%s", p.logs.String())
	}
	return p
}

// stopBinary sends SIGTERM and waits for the bridge to exit.
func stopBinary(t *testing.T, p *binaryProc) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatal("the bridge did not exit within 30 s of SIGTERM")
	}
}

// freeAddr is a loopback address nothing listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestBinaryShutdownLeavesNoChild runs the real binary, starts a child with
// a grandchild and an open SSE stream, sends SIGINT and checks the bridge
// exits 0 within a few seconds and no process of its tree is left.
func TestBinaryShutdownLeavesNoChild(t *testing.T) {
	for _, mode := range []string{fakemcp.ModeServer, fakemcp.ModeStubborn} {
		t.Run(mode, func(t *testing.T) {
			p := startBinary(t, fakeDestinations(t, map[string]string{"fake": mode}), "-stop-grace", "300ms")
			c := newClient(t, p.base+"/fake/mcp")
			c.initialize()
			r := c.callTool("1", "spawn_grandchild", nil)
			var gc struct{ PID int }
			if err := jsonUnmarshal(decode(t, r.body).Result, &gc); err != nil || gc.PID == 0 {
				t.Fatalf("spawn_grandchild: %s", r.body)
			}
			st := c.openStream()
			tree := descendants(p.cmd.Process.Pid)
			if len(tree) < 2 {
				t.Fatalf("expected child and grandchild below the bridge, got %v", tree)
			}
			start := time.Now()
			if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			select {
			case <-p.done:
			case <-time.After(15 * time.Second):
				t.Fatalf("bridge still running 15s after SIGINT (its shutdown timeout is 10s)\n%s", p.logs.String())
			}
			if p.err != nil {
				t.Fatalf("bridge exited with %v, want status 0\n%s", p.err, p.logs.String())
			}
			t.Logf("bridge stopped %v after SIGINT", time.Since(start).Round(time.Millisecond))
			for _, pid := range append(tree, gc.PID) {
				waitFor(t, 10*time.Second, fmt.Sprintf("process %d to be gone", pid), func() bool { return !processAlive(pid) })
			}
			// The SSE stream was closed by the shutdown.
			select {
			case _, ok := <-st.events:
				for ok {
					_, ok = <-st.events
				}
			case <-time.After(10 * time.Second):
				t.Fatal("SSE stream still open after shutdown")
			}
		})
	}
}

// TestBuildInfo: the binary says what it was built from — -version, /version
// and the stelae_build_info metric name the same version and commit (the
// checkout's HEAD, when the suite runs in a git checkout).
func TestBuildInfo(t *testing.T) {
	out, err := exec.Command(bridgeBinary(t), "-version").Output()
	if err != nil {
		t.Fatal(err)
	}
	line := strings.TrimSpace(string(out))
	m := regexp.MustCompile(`^stelae-bridge (\S+) \((?:module \S+, )?(?:commit ([0-9a-f]{12}(?:-dirty)?) \S+, )?(go\S+) (\S+/\S+)\)$`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("-version: %q", line)
	}
	version, commit := m[1], m[2]
	if head, err := exec.Command("git", "rev-parse", "HEAD").Output(); err == nil && binStamped {
		if !strings.HasPrefix(strings.TrimSpace(string(head)), strings.TrimSuffix(commit, "-dirty")) || commit == "" {
			t.Errorf("-version names commit %q; the checkout is at %s", commit, head)
		}
	} else {
		t.Logf("the binary carries no commit, or git cannot read this checkout (%v; stamped %v): the commit is not checked", err, binStamped)
	}
	p := startBinary(t, fakeDestinations(t, map[string]string{"fake": fakemcp.ModeServer}))
	metrics := scrapeURL(t, p.base)
	key := fmt.Sprintf(`stelae_build_info{commit=%q,go_version=%q,version=%q}`, commit, m[3], version)
	if metrics[key] != 1 {
		var have []string
		for k := range metrics {
			if strings.HasPrefix(k, "stelae_build_info") {
				have = append(have, k)
			}
		}
		t.Errorf("metric %s missing; have %v", key, have)
	}
	r := mustRequest(t, http.MethodGet, p.base+"/version", "", "")
	var v struct{ Version, Commit string }
	if err := json.Unmarshal(r.body, &v); err != nil || v.Version != version || v.Commit != commit {
		t.Errorf("/version: %s; want version %q and commit %q", r.body, version, commit)
	}
}
