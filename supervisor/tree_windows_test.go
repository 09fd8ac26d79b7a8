package supervisor

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/windows"

	"github.com/stelae-bridge/stelae-bridge/config"
)

// The Windows process tests: a child and what it starts live in the child's
// job, which ends with the bridge however the bridge ends, and which Stop
// terminates once closing stdin did not end the child. They are vetted in
// CI and run there under Wine (.ci/run), and on a Windows machine.

// envJobHelper makes this test binary a helper process: "sleeper" sleeps;
// "spawner" starts a sleeper, prints its pid, and ignores its stdin's end;
// "bridge:FILE" starts a spawner through Start, as the bridge does, writes
// the spawner's and the sleeper's pids to FILE, and waits to be killed.
const envJobHelper = "STELAE_TEST_JOB_HELPER"

func runHelperIfAsked() {
	mode := os.Getenv(envJobHelper)
	switch {
	case mode == "":
		return
	case mode == "sleeper":
		time.Sleep(5 * time.Minute)
	case mode == "spawner":
		sleeper := helperCommand("sleeper")
		if err := sleeper.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(sleeper.Process.Pid)
		time.Sleep(5 * time.Minute)
	case strings.HasPrefix(mode, "bridge:"):
		d := helperDestination()
		p, err := Start(context.Background(), d, ProcessOptions{StopGrace: time.Second})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		line, err := p.ReadMessage()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		out := fmt.Sprintf("%d %s\n", p.PID(), line)
		if err := os.WriteFile(strings.TrimPrefix(mode, "bridge:"), []byte(out), 0o600); err != nil {
			os.Exit(1)
		}
		time.Sleep(5 * time.Minute)
	}
	os.Exit(0)
}

// helperCommand is this binary as helper mode.
func helperCommand(mode string) *exec.Cmd {
	exe, _ := os.Executable()
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), envJobHelper+"="+mode)
	return cmd
}

// helperDestination is a destination running a spawner.
func helperDestination() *config.Destination {
	exe, _ := os.Executable()
	return &config.Destination{Name: "job", Command: exe, Args: []string{"-test.run=^$"}, Env: map[string]string{envJobHelper: "spawner"}}
}

// tempDir is t.TempDir, removed as well as the system lets: Wine (where CI
// runs these tests) cannot delete a file the way os.RemoveAll asks it to.
func tempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "stelae-job-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Logf("left %s: %v", dir, err)
		}
	})
	return dir
}

// openWait opens process pid to wait for its end (before anything kills
// it, so that its pid cannot be reused meanwhile).
func openWait(t *testing.T, pid int) windows.Handle {
	t.Helper()
	h, err := windows.OpenProcess(windows.SYNCHRONIZE, false, uint32(pid))
	if err != nil {
		t.Fatalf("open process %d: %v", pid, err)
	}
	t.Cleanup(func() { windows.CloseHandle(h) })
	return h
}

// waitEnded fails unless the process of h ends within d.
func waitEnded(t *testing.T, h windows.Handle, what string, d time.Duration) {
	t.Helper()
	if ev, err := windows.WaitForSingleObject(h, uint32(d/time.Millisecond)); err != nil || ev != windows.WAIT_OBJECT_0 {
		t.Fatalf("%s still runs %s later (%v)", what, d, err)
	}
}

// TestJobEndsWithTheBridge: a bridge killed outright (TerminateProcess, as
// Task Manager's End task) takes its child and the child's own child with
// it: the job's last handle was the bridge's.
func TestJobEndsWithTheBridge(t *testing.T) {
	pids := filepath.Join(tempDir(t), "pids")
	bridge := helperCommand("bridge:" + pids)
	if err := bridge.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = bridge.Process.Kill(); _ = bridge.Wait() })
	var child, grandchild int
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := os.ReadFile(pids)
		if err == nil {
			if f := strings.Fields(string(b)); len(f) == 2 {
				child, _ = strconv.Atoi(f[0])
				grandchild, _ = strconv.Atoi(f[1])
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the helper bridge did not start its child within 30 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	hc, hg := openWait(t, child), openWait(t, grandchild)
	if err := bridge.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	waitEnded(t, hc, "the child", 10*time.Second)
	waitEnded(t, hg, "the child's child", 10*time.Second)
}

// TestStopTerminatesTheJob: a child that does not end when its stdin closes
// is ended by terminating its job after StopGrace, and what it started
// with it.
func TestStopTerminatesTheJob(t *testing.T) {
	p, err := Start(context.Background(), helperDestination(), ProcessOptions{StopGrace: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.tree.kill() })
	line, err := p.ReadMessage()
	if err != nil {
		t.Fatal(err)
	}
	gpid, _ := strconv.Atoi(string(line))
	hg := openWait(t, gpid)
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Stop took %s with a 300 ms grace", took)
	}
	waitEnded(t, hg, "the child's child", 10*time.Second)
}

// TestCmdScriptsResolve: a command named without its extension is found
// as Windows finds it (PATHEXT: npx is npx.cmd), in the destination's own
// PATH too, and a batch file runs.
func TestCmdScriptsResolve(t *testing.T) {
	dir := tempDir(t)
	script := filepath.Join(dir, "tool.cmd")
	if err := os.WriteFile(script, []byte("@echo off\r\necho {\"ok\":1}\r\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := &config.Destination{Name: "cmd", Command: "tool", Env: map[string]string{"PATH": dir + ";" + os.Getenv("SystemRoot") + `\System32`}}
	p, err := Start(context.Background(), d, ProcessOptions{StopGrace: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(context.Background()) })
	line, err := p.ReadMessage()
	if err != nil || strings.TrimSpace(string(line)) != `{"ok":1}` {
		t.Errorf("the batch file said %q (%v)", line, err)
	}
}

// TestDefaultStateDirWindows: the state lives in %LocalAppData%, else in
// the user's temporary directory.
func TestDefaultStateDirWindows(t *testing.T) {
	env := map[string]string{"LOCALAPPDATA": `C:\Users\ann\AppData\Local`}
	if dir, err := DefaultStateDir(func(k string) string { return env[k] }); err != nil || dir != `C:\Users\ann\AppData\Local\stelae-bridge` {
		t.Errorf("DefaultStateDir = %q, %v", dir, err)
	}
	if dir, err := DefaultStateDir(func(string) string { return "" }); err != nil || dir != filepath.Join(os.TempDir(), "stelae-bridge") {
		t.Errorf("DefaultStateDir without LOCALAPPDATA = %q, %v", dir, err)
	}
}

// TestJobCaps: a sandbox's memory and processes are the limits of the
// child's job, set before it runs, beside kill-on-close; on Windows they
// are read back from the job, and the process cap holds the spawner (one
// process: its sleeper is refused). Wine neither reports a job's limits
// nor enforces them: there the test checks what is set, and says what it
// cannot see.
func TestJobCaps(t *testing.T) {
	caps := cgroupCaps{Memory: 256 << 20, Processes: 1}
	check := func(info windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION, what string) {
		t.Helper()
		flags := info.BasicLimitInformation.LimitFlags
		if flags&windows.JOB_OBJECT_LIMIT_JOB_MEMORY == 0 || info.JobMemoryLimit != 256<<20 {
			t.Errorf("%s: memory limit: flags %#x, %d bytes; want 256 MiB", what, flags, info.JobMemoryLimit)
		}
		if flags&windows.JOB_OBJECT_LIMIT_ACTIVE_PROCESS == 0 || info.BasicLimitInformation.ActiveProcessLimit != 1 {
			t.Errorf("%s: process limit: flags %#x, %d; want 1", what, flags, info.BasicLimitInformation.ActiveProcessLimit)
		}
		if flags&windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE == 0 {
			t.Errorf("%s: the caps replaced kill-on-close: flags %#x", what, flags)
		}
	}
	check(caps.limits(), "the limits set")
	d := helperDestination()
	d.Sandbox = &config.Sandbox{Memory: caps.Memory, Processes: caps.Processes}
	p, err := Start(context.Background(), d, ProcessOptions{StopGrace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop(context.Background())
	if windows.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version").Find() == nil {
		t.Skip("under Wine, which neither reports a job's limits nor enforces them: the job's own are checked on Windows")
	}
	info, err := jobLimits(p.tree.job)
	if err != nil {
		t.Fatal(err)
	}
	check(info, "the job's")
	if line, err := p.ReadMessage(); err == nil {
		t.Errorf("the spawner started its sleeper (%s) past the job's cap of one process", line)
	}
}
