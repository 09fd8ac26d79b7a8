package supervisor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stelae-bridge/stelae-bridge/config"
)

// childLines starts d (through the reaper) and returns what its stdout
// says up to "done", one line each, once it has exited.
func childLines(t *testing.T, d *config.Destination) []string {
	t.Helper()
	p, err := Start(context.Background(), d, reaperOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	if p.jail.cgroup() != nil {
		dirs = append(dirs, p.jail.cgroup().dirs...)
	}
	var lines []string
	for {
		line, err := p.ReadMessage()
		if err != nil {
			t.Fatalf("the child's stdout ended (%v) after %q; its exit: %s", err, lines, p.ExitStatus())
		}
		if string(line) == "done" {
			break
		}
		lines = append(lines, string(line))
	}
	select {
	case <-p.Exited():
	case <-time.After(30 * time.Second):
		_ = p.Stop(context.Background())
		t.Fatal("the child did not exit 30 s after it said done")
	}
	for _, dir := range dirs {
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the child's cgroup %s stays: %v", dir, err)
		}
	}
	return lines
}

// TestSandboxFiles: under 'files:' a child reads what it may read, writes
// only its roots, and reaches nothing else — not a planted key, not
// through a symlink or ".." it makes at run time, not by renaming out —;
// the same child without the sandbox (the bystander that shows the test
// can fail) does all of it. From Landlock ABI 6 it cannot signal a
// process outside its domain, nor connect to another program's abstract
// unix socket.
func TestSandboxFiles(t *testing.T) {
	if _, err := checkLandlockHere(); err != nil {
		t.Skipf("no Landlock here: %v", err)
	}
	base := t.TempDir()
	root, ro, secret := filepath.Join(base, "root"), filepath.Join(base, "ro"), filepath.Join(base, "home", ".ssh")
	for _, dir := range []string{root, ro, secret} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for path, text := range map[string]string{filepath.Join(ro, "f"): "readable", filepath.Join(secret, "id_ed25519"): "PRIVATE KEY", filepath.Join(root, "old"): "in the root"} {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	script := `
try() { if sh -c "$2" >/dev/null 2>&1; then echo "$1 ok"; else echo "$1 denied"; fi; }
try read_granted "cat $RO/f"
try write_granted_read "echo x > $RO/g"
try write_root "echo x > $ROOT/new && mkdir $ROOT/sub && mv $ROOT/new $ROOT/sub/moved"
try read_key "cat $KEY"
try symlink "ln -s $KEY $ROOT/link && cat $ROOT/link"
try dotdot "cat $ROOT/../home/.ssh/id_ed25519"
try write_outside "echo x > $BASE/planted"
try rename_out "mv $ROOT/old $BASE/taken"
try truncate_key "truncate -s 0 $KEY"
try signal_outside "kill -0 $OUTSIDE"
echo done
`
	env := map[string]string{"RO": ro, "ROOT": root, "KEY": filepath.Join(secret, "id_ed25519"), "BASE": base, "OUTSIDE": strconv.Itoa(os.Getpid())}
	want := map[string]string{"read_granted": "ok", "write_granted_read": "denied", "write_root": "ok", "read_key": "denied", "symlink": "denied",
		"dotdot": "denied", "write_outside": "denied", "rename_out": "denied", "truncate_key": "denied"}
	if landlockABI() >= 6 {
		want["signal_outside"] = "denied" // the test is outside the child's domain
	}
	for _, sandboxed := range []bool{true, false} {
		d := &config.Destination{Name: "files", Command: "sh", Args: []string{"-c", script}, Env: env,
			Roots: []config.Root{{URI: "file://" + root}}}
		if sandboxed {
			d.Sandbox = &config.Sandbox{Files: &config.SandboxFiles{Read: []string{ro}, Write: []string{config.RootsPath}}}
		}
		got := map[string]string{}
		for _, line := range childLines(t, d) {
			name, result, _ := strings.Cut(line, " ")
			got[name] = result
		}
		for name, w := range want {
			if !sandboxed {
				w = "ok"
			}
			if got[name] != w {
				t.Errorf("sandboxed %v: %s: %q; want %s", sandboxed, name, got[name], w)
			}
		}
		// Reset what the bystander did.
		_ = os.WriteFile(filepath.Join(secret, "id_ed25519"), []byte("PRIVATE KEY"), 0o644)
		_ = os.WriteFile(filepath.Join(root, "old"), []byte("in the root"), 0o644)
		for _, p := range []string{"link", "new", "sub"} {
			_ = os.RemoveAll(filepath.Join(root, p))
		}
	}
	if data, _ := os.ReadFile(filepath.Join(secret, "id_ed25519")); string(data) != "PRIVATE KEY" {
		t.Errorf("the key reads %q after the sandboxed child", data)
	}
	// Another program's abstract unix socket (they are not files: the
	// domain's scope holds them, from Landlock ABI 6).
	if landlockABI() < 6 {
		return
	}
	abstract := fmt.Sprintf("@stelae-test-%d", os.Getpid())
	_, reached := listener(t, "unix", abstract)
	exe, _ := os.Executable()
	for _, sandboxed := range []bool{true, false} {
		d := &config.Destination{Name: "abstract", Command: exe, Env: map[string]string{"STELAE_TEST_DIAL": "unix:" + abstract}}
		want := "ok"
		if sandboxed {
			d.Sandbox, want = &config.Sandbox{Files: &config.SandboxFiles{}}, "denied"
		}
		if lines := childLines(t, d); len(lines) != 1 || strings.Fields(lines[0])[2] != want {
			t.Errorf("sandboxed %v: the abstract socket: %q; want %s", sandboxed, lines, want)
		}
	}
	waitFor := time.Now().Add(10 * time.Second)
	for reached.Load() != 1 && time.Now().Before(waitFor) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := reached.Load(); n != 1 {
		t.Errorf("%d connection(s) reached the abstract socket; want the bystander's", n)
	}
}

// listener accepts on address and counts the connections that reach it.
func listener(t *testing.T, network, address string) (string, *atomic.Int32) {
	t.Helper()
	l, err := net.Listen(network, address)
	if err != nil {
		t.Skipf("cannot listen on %s here: %v", address, err)
	}
	t.Cleanup(func() { l.Close() })
	var n atomic.Int32
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			c.Close()
		}
	}()
	return l.Addr().String(), &n
}

// TestSandboxNetwork: 'network: none' reaches nothing outside its own
// namespace (not the host's loopback), 'loopback' reaches the loopback
// and nothing else (0.0.0.0 is not it), a list reaches its addresses and
// no other port; without a sandbox (the bystander that shows the test
// can fail) every one connects. The listeners count what reached them.
func TestSandboxNetwork(t *testing.T) {
	sandboxOrSkip(t)
	a4, n4 := listener(t, "tcp", "127.0.0.1:0")
	other, nOther := listener(t, "tcp", "127.0.0.1:0")
	a6, n6 := listener(t, "tcp", "[::1]:0")
	_, port, _ := net.SplitHostPort(a4)
	any := "0.0.0.0:" + port
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	targets := []string{a4, other, a6, any, "udp:" + udp.LocalAddr().String()}
	for _, tc := range []struct {
		name    string
		sandbox *config.Sandbox
		want    []string // per target
		reached [3]int32 // a4, other, a6
	}{
		{"none", &config.Sandbox{Network: config.NetworkNone}, []string{"denied", "denied", "denied", "denied", "ok"}, [3]int32{0, 0, 0}},
		{"loopback", &config.Sandbox{Network: config.NetworkLoopback}, []string{"ok", "ok", "ok", "denied", "ok"}, [3]int32{1, 1, 1}},
		{"list", &config.Sandbox{Network: config.NetworkList, Allow: []string{a4}}, []string{"ok", "denied", "denied", "denied", "denied"}, [3]int32{1, 0, 0}},
		// 0.0.0.0 is this machine: unfiltered, it reaches a4 too.
		{"all", nil, []string{"ok", "ok", "ok", "ok", "ok"}, [3]int32{2, 1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := [3]int32{n4.Load(), nOther.Load(), n6.Load()}
			exe, _ := os.Executable()
			d := &config.Destination{Name: "net-" + tc.name, Command: exe, Env: map[string]string{"STELAE_TEST_DIAL": strings.Join(targets, " ")}, Sandbox: tc.sandbox}
			lines := childLines(t, d)
			if len(lines) != len(targets) {
				t.Fatalf("the child said %q", lines)
			}
			for i, line := range lines {
				if f := strings.Fields(line); len(f) < 3 || f[2] != tc.want[i] {
					t.Errorf("%s: %q; want %s", targets[i], line, tc.want[i])
				}
			}
			// A connection is counted once accepted: wait for the
			// ones the child made.
			deadline := time.Now().Add(10 * time.Second)
			for {
				got := [3]int32{n4.Load() - before[0], nOther.Load() - before[1], n6.Load() - before[2]}
				if got == tc.reached || time.Now().After(deadline) {
					if got != tc.reached {
						t.Errorf("connections that reached a4, other, a6: %v; want %v", got, tc.reached)
					}
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

// TestSandboxRootCannotUndoIt: a child running as root (as the bridge
// does here) under 'network: none' cannot enter the machine's network
// namespace (nsenter → setns needs CAP_SYS_ADMIN, which the joiner
// dropped); the same child without a sandbox can (the bystander that
// shows the test can fail).
func TestSandboxRootCannotUndoIt(t *testing.T) {
	sandboxOrSkip(t)
	if os.Geteuid() != 0 {
		t.Skip("the bridge does not run as root here")
	}
	if _, err := os.Stat("/usr/bin/nsenter"); err != nil {
		t.Skip("no nsenter here")
	}
	// The test's own namespace is the machine's here.
	script := `if nsenter --net=$HOSTNS true 2>/dev/null; then echo setns ok; else echo setns denied; fi
echo done`
	for _, sandboxed := range []bool{true, false} {
		d := &config.Destination{Name: "root", Command: "sh", Args: []string{"-c", script},
			Env: map[string]string{"HOSTNS": fmt.Sprintf("/proc/%d/ns/net", os.Getpid())}}
		if sandboxed {
			d.Sandbox = &config.Sandbox{Network: config.NetworkNone}
		}
		lines := childLines(t, d)
		want := "setns ok"
		if sandboxed {
			want = "setns denied"
		}
		if len(lines) == 0 || lines[0] != want {
			t.Errorf("sandboxed %v: %q; want %s", sandboxed, lines, want)
		}
	}
}

// TestSandboxMemoryWithoutCgroups: where no cgroup can be made (here, a
// mount table without the controllers), 'memory' falls back to
// RLIMIT_DATA on each process — the limit that does not break Node — and
// -check's words say so; a process that takes more fails to allocate,
// while the same script without the sandbox (the bystander) takes it.
// 'processes' has no such fallback (RLIMIT_NPROC counts every process of
// the user): refused.
func TestSandboxMemoryWithoutCgroups(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"mountinfo", "cgroup"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := cgroupRoot
	cgroupRoot = dir
	defer func() { cgroupRoot = old }()
	script := `ulimit -d; (x=$(head -c 300000000 /dev/zero | tr '\0' a); echo ${#x}) >/dev/null 2>&1 && echo survived || echo refused; echo done`
	for _, sandboxed := range []bool{true, false} {
		d := &config.Destination{Name: "data", Command: "sh", Args: []string{"-c", script}}
		want := []string{"unlimited", "survived"}
		if sandboxed {
			d.Sandbox = &config.Sandbox{Memory: 64 << 20}
			want = []string{"65536", "refused"}
			held, notHeld := CheckSandbox(d)
			if len(notHeld) > 0 || len(held) != 1 || !strings.Contains(held[0], "memory by RLIMIT_DATA on each process") {
				t.Errorf("CheckSandbox: held %q, not held %q", held, notHeld)
			}
		}
		if got := childLines(t, d); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("sandboxed %v: %q; want %q", sandboxed, got, want)
		}
	}
	if _, notHeld := CheckSandbox(&config.Destination{Name: "p", Command: "sh", Sandbox: &config.Sandbox{Memory: 64 << 20, Processes: 8}}); len(notHeld) != 1 {
		t.Errorf("memory and processes without cgroups: not held %q; want the refusal", notHeld)
	}
}

// TestSandboxNetworkNoneUnprivileged: a bridge that is not root gives a
// child 'network: none' inside a user namespace of its own (mapping only
// the bridge's user): this test binary, copied where another user may run
// it, runs itself as nobody, and its child reaches nothing of the
// machine's loopback, whose listener counts no connection. Skipped where
// the test is not root (it cannot become nobody) or the system allows no
// unprivileged user namespaces.
func TestSandboxNetworkNoneUnprivileged(t *testing.T) {
	if target := os.Getenv("STELAE_TEST_UNPRIVILEGED_DIAL"); target != "" {
		// As nobody: start a child under network: none that dials target.
		exe, _ := os.Executable()
		d := &config.Destination{Name: "nobody", Command: exe, Env: map[string]string{"STELAE_TEST_DIAL": target}, Sandbox: &config.Sandbox{Network: config.NetworkNone}}
		for _, line := range childLines(t, d) {
			fmt.Println("child:", line)
		}
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("the test is not root: it cannot run itself as another user")
	}
	if err := checkNetns(); err != nil {
		t.Skip(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "stelae-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	copyExe := filepath.Join(dir, "supervisor.test")
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(copyExe, data, 0o755); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(dir, 0o755)
	addr, reached := listener(t, "tcp", "127.0.0.1:0")
	cmd := exec.Command(copyExe, "-test.run=^TestSandboxNetworkNoneUnprivileged$", "-test.count=1")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "STELAE_TEST_UNPRIVILEGED_DIAL="+addr, "HOME="+dir, "TMPDIR="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "child: tcp "+addr+" denied") {
		t.Errorf("as nobody, the child under network none: %s", out)
	}
	if n := reached.Load(); n != 0 {
		t.Errorf("%d connection(s) reached the machine's loopback", n)
	}
}

// TestSandboxNetworkPortsByLandlock: where no eBPF filter can be attached
// (here, a mount table without cgroup v2), a best-effort list of
// addresses is held to its TCP ports by Landlock, on any host (0.0.0.0 on
// the allowed port connects), and the rest is said not held; without
// best_effort the start is refused.
func TestSandboxNetworkPortsByLandlock(t *testing.T) {
	if !landlockPorts {
		t.Skip("this kernel's Landlock has no TCP rules (ABI 4)")
	}
	a4, n4 := listener(t, "tcp", "127.0.0.1:0")
	other, nOther := listener(t, "tcp", "127.0.0.1:0")
	_, port, _ := net.SplitHostPort(a4)
	dir := t.TempDir()
	for _, f := range []string{"mountinfo", "cgroup"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	saved := cgroupRoot
	cgroupRoot = dir
	defer func() { cgroupRoot = saved }()
	exe, _ := os.Executable()
	d := &config.Destination{Name: "ports", Command: exe, Env: map[string]string{"STELAE_TEST_DIAL": a4 + " " + other + " 0.0.0.0:" + port},
		Sandbox: &config.Sandbox{Network: config.NetworkList, Allow: []string{a4}}}
	if _, err := Start(context.Background(), d, reaperOptions(t)); err == nil || !errors.Is(err, ErrPermanent) {
		t.Fatalf("without best_effort: %v; want the start refused", err)
	}
	d.Sandbox.BestEffort = true
	held, notHeld := CheckSandbox(d)
	if len(held) != 1 || !strings.Contains(held[0], "TCP connections to ports "+port+" only, on any host, by Landlock") || len(notHeld) != 1 || !strings.HasPrefix(notHeld[0], "network's hosts and UDP: ") {
		t.Errorf("held %q, not held %q", held, notHeld)
	}
	lines := childLines(t, d)
	want := []string{"ok", "denied", "ok"}
	if len(lines) != 3 {
		t.Fatalf("the child said %q", lines)
	}
	for i, line := range lines {
		if f := strings.Fields(line); len(f) < 3 || f[2] != want[i] {
			t.Errorf("%q; want %s", line, want[i])
		}
	}
	waitFor := time.Now().Add(10 * time.Second)
	for n4.Load() != 2 && time.Now().Before(waitFor) {
		time.Sleep(10 * time.Millisecond)
	}
	if n4.Load() != 2 || nOther.Load() != 0 {
		t.Errorf("connections reached the allowed port %d times (want 2), the other %d (want 0)", n4.Load(), nOther.Load())
	}
}
