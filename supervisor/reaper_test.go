//go:build unix

package supervisor

import (
	"bufio"
	"context"
	"fmt"
	"github.com/stelae-bridge/stelae-bridge/config"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runHelperIfAsked runs this test binary as a helper process of the Unix
// tests when asked (TestMain, main_test.go).
func runHelperIfAsked() {
	if targets := os.Getenv("STELAE_TEST_DIAL"); targets != "" {
		// The sandbox's network tests' child: tries each address (tcp
		// or udp:address), says what became of it, one line each.
		for _, a := range strings.Fields(targets) {
			network := "tcp"
			if rest, ok := strings.CutPrefix(a, "udp:"); ok {
				network, a = "udp", rest
			} else if rest, ok := strings.CutPrefix(a, "unix:"); ok {
				network, a = "unix", rest
			}
			c, err := net.DialTimeout(network, a, 5*time.Second)
			if err == nil {
				// UDP is refused at the send (the filter's sendmsg
				// hook); a stream is judged by its connect (its peer
				// may have closed before a write).
				if _, werr := c.Write([]byte("x")); network == "udp" {
					err = werr
				}
				c.Close()
			}
			if err != nil {
				fmt.Printf("%s %s denied %v\n", network, a, err)
			} else {
				fmt.Printf("%s %s ok\n", network, a)
			}
		}
		fmt.Println("done")
		os.Exit(0)
	}
	if marker := os.Getenv("STELAE_TEST_WATCH_PARENT"); marker != "" {
		// TestParentWatchByPolling's watcher: says it watches, and
		// writes marker once its parent is gone.
		died := make(chan struct{})
		watchParentByPolling(os.Getppid(), died)
		fmt.Println("watching")
		<-died
		_ = os.WriteFile(marker, []byte("parent gone"), 0o600)
		os.Exit(0)
	}
}

func reaperOptions(t *testing.T) ProcessOptions {
	t.Helper()
	r, err := ReaperCommand()
	if err != nil {
		t.Fatal(err)
	}
	return ProcessOptions{StopGrace: 500 * time.Millisecond, Reaper: r}
}

// TestReaperPassesTheCommandsExit: the bridge sees through the reaper the
// command's exit code, the signal that killed it, and the command's pid.
func TestReaperPassesTheCommandsExit(t *testing.T) {
	for _, tc := range []struct {
		name, script, want string
	}{
		{"exit code", "exit 7", "exit status 7"},
		{"signal", "kill -KILL $$", "signal: killed"},
		{"terminated", "kill -TERM $$", "signal: terminated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Start(context.Background(), &config.Destination{Name: "r", Command: "sh", Args: []string{"-c", "read x; " + tc.script}}, reaperOptions(t))
			if err != nil {
				t.Fatal(err)
			}
			if p.PID() == p.cmd.Process.Pid {
				t.Errorf("PID() is the reaper's, %d; want the command's", p.PID())
			}
			if st, ok := procStat(p.PID()); !ok || st.pgrp != p.cmd.Process.Pid {
				t.Errorf("the command %d is not in the reaper's group %d (%+v)", p.PID(), p.cmd.Process.Pid, st)
			}
			if err := p.WriteMessage([]byte("go")); err != nil {
				t.Fatal(err)
			}
			select {
			case <-p.Exited():
			case <-time.After(10 * time.Second):
				t.Fatal("no exit")
			}
			if got := p.ExitStatus(); got != tc.want {
				t.Errorf("ExitStatus() = %q; want %q", got, tc.want)
			}
		})
	}
}

// TestReaperStartErrors: a command the reaper cannot start is an error of
// Start, saying why.
func TestReaperStartErrors(t *testing.T) {
	dir := t.TempDir()
	notExec := dir + "/script"
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Start(context.Background(), &config.Destination{Name: "r", Command: notExec}, reaperOptions(t))
	if err == nil || !strings.Contains(err.Error(), "cannot start") || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("Start of a file that is not executable: %v", err)
	}
}

// TestReaperSurvivesTheStopsSIGTERM: a stop sends SIGTERM to the whole
// group; the reaper stays to report how the command ended.
func TestReaperSurvivesTheStopsSIGTERM(t *testing.T) {
	p, err := Start(context.Background(), &config.Destination{Name: "r", Command: "sh", Args: []string{"-c", "trap 'exit 3' TERM; echo ready; sleep 60 & wait"}}, reaperOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	if line, err := p.ReadMessage(); err != nil || string(line) != "ready" {
		t.Fatalf("ReadMessage: %q %v", line, err)
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.Exited():
	case <-time.After(10 * time.Second):
		t.Fatal("no exit after SIGTERM to the group")
	}
	if got := p.ExitStatus(); got != "exit status 3" {
		t.Errorf("ExitStatus() after SIGTERM = %q; want the command's exit status 3", got)
	}
}

// BenchmarkStart measures what the reaper adds to a child's start (and
// stop): a re-exec of this binary.
func BenchmarkStart(b *testing.B) {
	r, err := ReaperCommand()
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name   string
		reaper []string
	}{{"direct", nil}, {"reaper", r}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				p, err := Start(context.Background(), &config.Destination{Name: "b", Command: "cat"}, ProcessOptions{StopGrace: time.Second, Reaper: bc.reaper})
				if err != nil {
					b.Fatal(err)
				}
				if err := p.Stop(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestParentWatchByPolling: the parent watch a reaper falls back to where
// the platform's own cannot be set up (macOS, spawn_darwin.go) notices its
// parent's death: a watcher started by a shell that is then killed
// outright writes its marker within seconds.
func TestParentWatchByPolling(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "gone")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sh := exec.Command("sh", "-c", `"$0" -test.run '^$' & wait`, exe)
	sh.Env = append(os.Environ(), "STELAE_TEST_WATCH_PARENT="+marker)
	out, err := sh.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := sh.Start(); err != nil {
		t.Fatal(err)
	}
	// The watcher ends once its parent is gone: killing the shell ends
	// both, whatever happens below.
	t.Cleanup(func() { _ = sh.Process.Kill(); _ = sh.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "watching" {
		t.Fatalf("the watcher said %q, %v", line, err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the watcher saw its parent gone while it lived")
	}
	_ = sh.Process.Kill()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(marker); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the watcher did not notice its parent's death within 10 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
