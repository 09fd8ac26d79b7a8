//go:build unix

package supervisor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stelae-bridge/stelae-bridge/config"
)

var _ Child = (*Process)(nil)

func startProcess(t *testing.T, d *config.Destination, opts ProcessOptions) *Process {
	t.Helper()
	if d.Name == "" {
		d.Name = "test"
	}
	p, err := Start(context.Background(), d, opts)
	if err != nil {
		t.Fatalf("Start(%s %q): %v", d.Command, d.Args, err)
	}
	t.Cleanup(func() {
		// Never leave a child behind, whatever the test did.
		_ = syscall.Kill(-p.PID(), syscall.SIGKILL)
		select {
		case <-p.Exited():
		case <-time.After(10 * time.Second):
			t.Errorf("child %d did not exit after SIGKILL", p.PID())
		}
	})
	return p
}

// readLine reads one message with a deadline so a broken child cannot hang
// the test.
func readLine(t *testing.T, p *Process) string {
	t.Helper()
	type res struct {
		line string
		err  error
	}
	ch := make(chan res, 1)
	go func() {
		b, err := p.ReadMessage()
		ch <- res{string(b), err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("ReadMessage: %v", r.err)
		}
		return r.line
	case <-time.After(10 * time.Second):
		t.Fatal("ReadMessage did not return within 10s")
	}
	return ""
}

func waitExited(t *testing.T, p *Process, within time.Duration) {
	t.Helper()
	select {
	case <-p.Exited():
	case <-time.After(within):
		t.Fatalf("child did not exit within %s", within)
	}
}

// processGone reports whether pid no longer runs (a zombie counts as gone:
// it runs nothing and only waits for its new parent to reap it).
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return os.IsNotExist(err)
	}
	// The state follows the parenthesised command name.
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] == 'Z' || s[i+2] == 'X'
	}
	return false
}

func waitGone(t *testing.T, pid int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !processGone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still runs %s later", pid, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestProcessRoundTripWithCat(t *testing.T) {
	p := startProcess(t, &config.Destination{Command: "cat"}, ProcessOptions{StopGrace: time.Second})
	if p.PID() <= 0 {
		t.Fatalf("PID = %d", p.PID())
	}
	if s := p.ExitStatus(); s != "" {
		t.Errorf("ExitStatus while running = %q; want empty", s)
	}
	msgs := []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":"x","result":{"text":"héllo \u2028 wörld"}}`,
		strings.Repeat("a", 200<<10), // longer than a pipe buffer and the bufio buffer
	}
	for _, m := range msgs {
		// Write concurrently: cat echoes while it reads, so a message larger
		// than the pipe buffers needs a reader on the other side.
		werr := make(chan error, 1)
		go func() { werr <- p.WriteMessage([]byte(m)) }()
		if got := readLine(t, p); got != m {
			t.Fatalf("echo = %.80q; want %.80q", got, m)
		}
		if err := <-werr; err != nil {
			t.Fatalf("WriteMessage: %v", err)
		}
	}
	// WriteMessage must not keep a reference to the caller's slice.
	buf := []byte(`{"id":2}`)
	if err := p.WriteMessage(buf); err != nil {
		t.Fatal(err)
	}
	copy(buf, "XXXXXXXX")
	if got := readLine(t, p); got != `{"id":2}` {
		t.Errorf("echo = %q", got)
	}
}

// TestProcessConcurrentWriters: messages written from many goroutines at
// once (small ones batched into shared writes, large ones written as they
// are) reach the child each whole, once, and in each writer's order.
func TestProcessConcurrentWriters(t *testing.T) {
	p := startProcess(t, &config.Destination{Command: "cat"}, ProcessOptions{StopGrace: time.Second})
	const writers, each = 16, 200
	got := make(chan string, writers*each)
	go func() {
		for range writers * each {
			line, err := p.ReadMessage()
			if err != nil {
				close(got)
				return
			}
			got <- string(line)
		}
	}()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				pad := ""
				if i%50 == 7 {
					pad = strings.Repeat("p", 70<<10) // over joinLine: written without a copy
				}
				if err := p.WriteMessage([]byte(fmt.Sprintf(`{"w":%d,"i":%d,"pad":"%s"}`, w, i, pad))); err != nil {
					t.Errorf("writer %d: %v", w, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	next := make([]int, writers)
	deadline := time.After(30 * time.Second)
	for range writers * each {
		select {
		case line, ok := <-got:
			if !ok {
				t.Fatal("the child's stdout ended early")
			}
			var m struct{ W, I int }
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("a line that is not one whole message (%v): %.80q", err, line)
			}
			if m.W < 0 || m.W >= writers || m.I != next[m.W] {
				t.Fatalf("writer %d's message %d came when %d was next", m.W, m.I, next[m.W])
			}
			next[m.W]++
		case <-deadline:
			t.Fatalf("not every message came back: %v", next)
		}
	}
}

func TestProcessLineTooLong(t *testing.T) {
	p := startProcess(t, &config.Destination{Command: "cat"}, ProcessOptions{MaxMessage: 1000, StopGrace: time.Second})
	long := `{"jsonrpc":"2.0","id":7,"result":"` + strings.Repeat("x", 5000) + `"}`
	if err := p.WriteMessage([]byte(long)); err != nil {
		t.Fatal(err)
	}
	if err := p.WriteMessage([]byte(`{"id":8}`)); err != nil {
		t.Fatal(err)
	}
	_, err := p.ReadMessage()
	var tl *LineTooLongError
	if !errors.As(err, &tl) {
		t.Fatalf("ReadMessage error = %v; want *LineTooLongError", err)
	}
	if !strings.HasPrefix(string(tl.Prefix), `{"jsonrpc":"2.0","id":7,`) {
		t.Errorf("Prefix = %q", tl.Prefix)
	}
	if got := readLine(t, p); got != `{"id":8}` {
		t.Errorf("next line = %q", got)
	}
}

func TestProcessStopCooperative(t *testing.T) {
	const grace = 2 * time.Second
	p := startProcess(t, &config.Destination{Command: "cat"}, ProcessOptions{StopGrace: grace})
	start := time.Now()
	if err := p.Stop(context.Background()); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if d := time.Since(start); d >= grace {
		t.Errorf("Stop took %s; closing stdin should end cat well within the %s grace", d, grace)
	}
	select {
	case <-p.Exited():
	default:
		t.Fatal("Exited not closed after Stop returned")
	}
	if s := p.ExitStatus(); s != "exit status 0" {
		t.Errorf("ExitStatus = %q; want \"exit status 0\"", s)
	}
	if _, err := p.ReadMessage(); err != io.EOF {
		t.Errorf("ReadMessage after exit = %v; want io.EOF", err)
	}
	if err := p.WriteMessage([]byte("{}")); err == nil {
		t.Error("WriteMessage after Stop succeeded; want an error")
	} else if !strings.Contains(err.Error(), "test") {
		t.Errorf("WriteMessage error %q does not name the destination", err)
	}
	// A second Stop is harmless.
	if err := p.Stop(context.Background()); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

func TestProcessStopEscalatesToSIGKILL(t *testing.T) {
	const grace = 300 * time.Millisecond
	p := startProcess(t, &config.Destination{
		Command: "sh",
		Args:    []string{"-c", `trap "" TERM; echo ready; while :; do sleep 0.1; done`},
	}, ProcessOptions{StopGrace: grace})
	if got := readLine(t, p); got != "ready" {
		t.Fatalf("first line = %q", got)
	}
	start := time.Now()
	if err := p.Stop(context.Background()); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	took := time.Since(start)
	if took < 2*grace-50*time.Millisecond {
		t.Errorf("Stop took %s; the child ignores stdin EOF and SIGTERM so it should take about 2×%s", took, grace)
	}
	if took > 2*grace+time.Second {
		t.Errorf("Stop took %s; want about 2×%s", took, grace)
	}
	if s := p.ExitStatus(); s != "signal: killed" {
		t.Errorf("ExitStatus = %q; want \"signal: killed\"", s)
	}
}

func TestProcessStopSIGTERM(t *testing.T) {
	// A child that ignores stdin EOF but honours SIGTERM ends at the second
	// stage.
	const grace = 300 * time.Millisecond
	p := startProcess(t, &config.Destination{
		Command: "sh",
		Args:    []string{"-c", `echo ready; while :; do sleep 0.1; done`},
	}, ProcessOptions{StopGrace: grace})
	readLine(t, p)
	start := time.Now()
	if err := p.Stop(context.Background()); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if took := time.Since(start); took < grace-50*time.Millisecond || took > grace+time.Second {
		t.Errorf("Stop took %s; want about %s (one grace, then SIGTERM)", took, grace)
	}
	if s := p.ExitStatus(); s != "signal: terminated" {
		t.Errorf("ExitStatus = %q; want \"signal: terminated\"", s)
	}
}

func TestProcessStopContextCancelled(t *testing.T) {
	p := startProcess(t, &config.Destination{
		Command: "sh",
		Args:    []string{"-c", `trap "" TERM; echo ready; while :; do sleep 0.1; done`},
	}, ProcessOptions{StopGrace: 10 * time.Second})
	readLine(t, p)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := p.Stop(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Stop = %v; want context.DeadlineExceeded", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("Stop with an expiring context took %s", took)
	}
	// The group was killed on the way out.
	waitExited(t, p, 5*time.Second)
}

func TestProcessStopKillsGrandchild(t *testing.T) {
	const grace = 300 * time.Millisecond
	p := startProcess(t, &config.Destination{
		Command: "sh",
		Args:    []string{"-c", `sleep 60 & echo $!; wait`},
	}, ProcessOptions{StopGrace: grace})
	pid, err := strconv.Atoi(readLine(t, p))
	if err != nil || pid <= 0 {
		t.Fatalf("grandchild pid: %v", err)
	}
	if processGone(pid) {
		t.Fatalf("grandchild %d is not running before Stop", pid)
	}
	start := time.Now()
	if err := p.Stop(context.Background()); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if took := time.Since(start); took > 2*grace+time.Second {
		t.Errorf("Stop took %s", took)
	}
	waitGone(t, pid, 2*time.Second)
	// Stdout reaches EOF: nobody holds the pipe any more.
	done := make(chan error, 1)
	go func() { _, err := p.ReadMessage(); done <- err }()
	select {
	case err := <-done:
		if err == nil {
			t.Errorf("ReadMessage after Stop returned a line")
		}
	case <-time.After(2*grace + 2*time.Second):
		t.Errorf("ReadMessage still blocked after Stop")
	}
}

func TestProcessLeaderExitKillsGrandchild(t *testing.T) {
	// The leader exits on its own, leaving a grandchild in its group: no
	// orphans, ever.
	p := startProcess(t, &config.Destination{
		Command: "sh",
		Args:    []string{"-c", `sleep 60 & echo $!`},
	}, ProcessOptions{StopGrace: 300 * time.Millisecond})
	pid, err := strconv.Atoi(readLine(t, p))
	if err != nil {
		t.Fatal(err)
	}
	waitExited(t, p, 5*time.Second)
	waitGone(t, pid, 2*time.Second)
	if s := p.ExitStatus(); s != "exit status 0" {
		t.Errorf("ExitStatus = %q", s)
	}
}

func TestProcessReadUnblocksWhenEscapedDescendantHoldsStdout(t *testing.T) {
	// A descendant that left the process group keeps stdout open; the reader
	// must still see the end within about StopGrace of the leader's exit.
	const grace = 300 * time.Millisecond
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("setsid is not installed")
	}
	p := startProcess(t, &config.Destination{
		Command: "sh",
		// The escaped process prints its pid once it is in its own session;
		// the leader then waits for its stdin to close.
		Args: []string{"-c", `setsid sh -c 'echo $$; exec sleep 5' & read x`},
	}, ProcessOptions{StopGrace: grace})
	pid, _ := strconv.Atoi(readLine(t, p))
	t.Cleanup(func() {
		if pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	if err := p.Stop(context.Background()); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	waitExited(t, p, 5*time.Second)
	if processGone(pid) {
		t.Fatalf("the escaped process %d is gone already; the test cannot check the reader", pid)
	}
	exited := time.Now()
	done := make(chan error, 1)
	go func() { _, err := p.ReadMessage(); done <- err }()
	select {
	case err := <-done:
		t.Logf("ReadMessage ended %s after the leader's exit: %v", time.Since(exited), err)
		if err == nil {
			t.Errorf("ReadMessage returned a line")
		}
	case <-time.After(grace + 2*time.Second):
		t.Errorf("ReadMessage still blocked %s after the leader exited", grace+2*time.Second)
	}
}

func TestProcessEnvAndCwd(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("BRIDGE_TEST_INHERITED", "inherited")
	p := startProcess(t, &config.Destination{
		Command: "sh",
		Args:    []string{"-c", `echo "$FOO"; echo "$BRIDGE_TEST_INHERITED"; echo "$OVERRIDE"; pwd -P`},
		Env:     map[string]string{"FOO": "bar baz", "OVERRIDE": "mine"},
		Cwd:     dir,
	}, ProcessOptions{})
	if got := readLine(t, p); got != "bar baz" {
		t.Errorf("$FOO = %q; want \"bar baz\"", got)
	}
	if got := readLine(t, p); got != "inherited" {
		t.Errorf("inherited variable = %q; the bridge's environment should reach the child", got)
	}
	if got := readLine(t, p); got != "mine" {
		t.Errorf("$OVERRIDE = %q", got)
	}
	want, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := readLine(t, p); got != want {
		t.Errorf("pwd = %q; want %q", got, want)
	}
}

func TestProcessEnvOverridesInherited(t *testing.T) {
	t.Setenv("STELAE_TEST_OVERRIDE", "from-bridge")
	p := startProcess(t, &config.Destination{
		Command: "sh",
		Args:    []string{"-c", `echo "$STELAE_TEST_OVERRIDE"`},
		Env:     map[string]string{"STELAE_TEST_OVERRIDE": "from-config"},
	}, ProcessOptions{})
	if got := readLine(t, p); got != "from-config" {
		t.Errorf("child saw %q; the destination's env should win over the bridge's", got)
	}
}

func TestProcessStartMissingCommand(t *testing.T) {
	const cmd = "stelae-no-such-command-xyz"
	p, err := Start(context.Background(), &config.Destination{Name: "ghost", Command: cmd}, ProcessOptions{})
	if err == nil {
		_ = p.Stop(context.Background())
		t.Fatal("Start succeeded for a missing command")
	}
	msg := err.Error()
	for _, want := range []string{cmd, "PATH", `"ghost"`} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not mention %q", msg, want)
		}
	}
}

func TestProcessStartBadCwd(t *testing.T) {
	p, err := Start(context.Background(), &config.Destination{Name: "x", Command: "cat", Cwd: filepath.Join(t.TempDir(), "missing")}, ProcessOptions{})
	if err == nil {
		_ = p.Stop(context.Background())
		t.Fatal("Start succeeded with a missing cwd")
	}
}

func TestProcessStartCancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p, err := Start(ctx, &config.Destination{Name: "x", Command: "cat"}, ProcessOptions{})
	if err == nil {
		_ = p.Stop(context.Background())
		t.Fatal("Start succeeded with a cancelled context")
	}
}

func TestProcessExitStatus(t *testing.T) {
	p := startProcess(t, &config.Destination{Command: "sh", Args: []string{"-c", "exit 3"}}, ProcessOptions{})
	waitExited(t, p, 5*time.Second)
	if s := p.ExitStatus(); s != "exit status 3" {
		t.Errorf("ExitStatus = %q; want \"exit status 3\"", s)
	}
	if _, err := p.ReadMessage(); err != io.EOF {
		t.Errorf("ReadMessage = %v; want io.EOF", err)
	}
	if err := p.Stop(context.Background()); err != nil {
		t.Errorf("Stop after exit: %v", err)
	}
}

func TestProcessStderrDoesNotReachStdout(t *testing.T) {
	p := startProcess(t, &config.Destination{
		Command: "sh",
		Args:    []string{"-c", `echo oops >&2; echo out`},
	}, ProcessOptions{})
	if got := readLine(t, p); got != "out" {
		t.Errorf("first stdout line = %q; want \"out\" (stderr must not be mixed in)", got)
	}
}

func TestProcessWriteTimeout(t *testing.T) {
	// A child that never reads its stdin: WriteMessage gives up.
	p := startProcess(t, &config.Destination{
		Command: "sh",
		Args:    []string{"-c", `exec sleep 30`},
	}, ProcessOptions{WriteTimeout: 300 * time.Millisecond, StopGrace: 200 * time.Millisecond})
	msg := make([]byte, 1<<20) // larger than any pipe buffer
	for i := range msg {
		msg[i] = 'a'
	}
	start := time.Now()
	err := p.WriteMessage(msg)
	if err == nil {
		t.Fatal("WriteMessage to a child that does not read succeeded")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("WriteMessage took %s with a 300ms timeout", took)
	}
	if !strings.Contains(err.Error(), "did not read its stdin") {
		t.Errorf("error = %q", err)
	}
}

func TestLauncher(t *testing.T) {
	launch := ProcessLauncher(&config.Destination{Name: "l", Command: "cat"}, ProcessOptions{StopGrace: time.Second})
	c, err := launch(context.Background())
	if err != nil {
		t.Fatalf("launch: %v", err)
	}
	defer func() {
		if err := c.Stop(context.Background()); err != nil {
			t.Errorf("Stop: %v", err)
		}
	}()
	if err := c.WriteMessage([]byte(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	line, err := c.ReadMessage()
	if err != nil || string(line) != `{"a":1}` {
		t.Fatalf("ReadMessage = %q, %v", line, err)
	}
}

// TestProcessWriteQueueModel holds the write path to the child to a model:
// many writers, messages from a few bytes to several MiB, and a child whose
// reading is slow and stalls at random (cat, whose stdout this test reads
// with pauses, so its stdin backs up). Each writer, like a caller waiting
// for its answer, has at most a few messages out at a time, so writes
// block, and batches of every size — a few bytes, several MiB — follow
// each other while buffers pass between callers, the drain goroutine and
// the spare. Every message must arrive whole (its every byte is a function
// of its writer and number), exactly once, and in its writer's order.
func TestProcessWriteQueueModel(t *testing.T) {
	// Three rounds, each on a child of its own with sizes of its own: the
	// aliasing this guards against showed in 8 of 10 single rounds.
	for round := range 3 {
		if !writeQueueRound(t, uint64(round)) {
			return
		}
	}
}

// writeQueueRound is one round of TestProcessWriteQueueModel; false when
// it failed.
func writeQueueRound(t *testing.T, round uint64) bool {
	p := startProcess(t, &config.Destination{Command: "cat"}, ProcessOptions{StopGrace: time.Second, MaxMessage: 8 << 20})
	const writers, each = 12, 80
	// acks[w] receives the number of each message of writer w read back.
	acks := make([]chan int, writers)
	for w := range acks {
		acks[w] = make(chan int, each)
	}
	readErr := make(chan error, 1)
	go func() {
		readErr <- readQueueModel(p, writers, each, acks, round)
	}()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 7+round))
			window := 1 + rng.IntN(3) // messages out at a time
			acked := -1
			for i := range each {
				if err := p.WriteMessage(queueModelMessage(w, i, queueModelSize(rng))); err != nil {
					t.Errorf("round %d, writer %d, message %d: %v", round, w, i, err)
					return
				}
				for i-acked >= window {
					select {
					case acked = <-acks[w]:
					case <-stop:
						return
					}
				}
			}
		}()
	}
	select {
	case err := <-readErr:
		if err != nil {
			t.Errorf("round %d: %v", round, err)
		}
	case <-time.After(120 * time.Second):
		t.Errorf("round %d: the messages did not all come back within 120 s", round)
	}
	close(stop)
	wg.Wait()
	return !t.Failed()
}

// readQueueModel reads writers×each messages back, pausing now and then,
// checks each against the model and acknowledges it to its writer.
func readQueueModel(p *Process, writers, each int, acks []chan int, round uint64) error {
	rng := rand.New(rand.NewPCG(1, 2+round))
	next := make([]int, writers)
	for n := range writers * each {
		b, err := p.ReadMessage()
		if err != nil {
			return fmt.Errorf("after %d messages: %v", n, err)
		}
		w, i, err := checkQueueModelMessage(b)
		switch {
		case err != nil:
			return fmt.Errorf("message %d read back is not one whole message: %v", n, err)
		case w >= writers:
			return fmt.Errorf("message %d names writer %d", n, w)
		case i != next[w]:
			return fmt.Errorf("writer %d's message %d came when %d was next (lost, repeated or reordered)", w, i, next[w])
		}
		next[w]++
		acks[w] <- i
		switch r := rng.IntN(100); {
		case r < 5:
			time.Sleep(time.Duration(10+rng.IntN(30)) * time.Millisecond) // a stall
		case r < 30:
			time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond) // slow
		}
	}
	return nil
}

// queueModelSize draws a message size: half a few bytes to a few hundred,
// some up to 64 KiB, a quarter between 128 and 768 KiB (two or three make a
// batch over the 1 MiB a kept buffer may hold), a few up to 4 MiB.
func queueModelSize(rng *rand.Rand) int {
	switch n := rng.IntN(100); {
	case n < 50:
		return rng.IntN(200)
	case n < 65:
		return 1<<10 + rng.IntN(63<<10)
	case n < 95:
		return 128<<10 + rng.IntN(640<<10)
	default:
		return 1<<20 + rng.IntN(3<<20)
	}
}

// queueModelMessage is writer w's message i with size bytes of padding,
// each a function of (w, i, position): queueModelPad.
func queueModelMessage(w, i, size int) []byte {
	b := fmt.Appendf(nil, `{"w":%d,"i":%d,"n":%d,"pad":"`, w, i, size)
	b = append(b, queueModelPad(w, i, size)...)
	return append(b, `"}`...)
}

// queueModelPad is the padding of writer w's message i: the letters a to
// z, starting at a place of (w, i).
func queueModelPad(w, i, size int) []byte {
	const letters = "abcdefghijklmnopqrstuvwxyz"
	start := (w*31 + i*7) % len(letters)
	cycle := letters[start:] + letters[:start]
	return bytes.Repeat([]byte(cycle), size/len(cycle)+1)[:size]
}

// checkQueueModelMessage checks a message read back and returns its writer
// and number.
func checkQueueModelMessage(b []byte) (w, i int, err error) {
	var n int
	head, pad, ok := bytes.Cut(b, []byte(`,"pad":"`))
	if !ok || !bytes.HasSuffix(pad, []byte(`"}`)) {
		return 0, 0, fmt.Errorf("not a message of the model (%d bytes: %.60q…)", len(b), b)
	}
	if _, err := fmt.Sscanf(string(head), `{"w":%d,"i":%d,"n":%d`, &w, &i, &n); err != nil || w < 0 || w >= 1<<10 {
		return 0, 0, fmt.Errorf("a head that is not the model's: %.60q (%v)", head, err)
	}
	pad = pad[:len(pad)-2]
	if len(pad) != n {
		return 0, 0, fmt.Errorf("writer %d message %d: %d bytes of padding, announced %d", w, i, len(pad), n)
	}
	if want := queueModelPad(w, i, n); !bytes.Equal(pad, want) {
		k := 0
		for pad[k] == want[k] {
			k++
		}
		return 0, 0, fmt.Errorf("writer %d message %d: byte %d of its padding is %q, not its own", w, i, k, pad[k])
	}
	return w, i, nil
}

// TestProcessStoppedWhenStdinStalls: a child that stops reading its stdin
// past the write timeout is stopped (so that its supervisor restarts it):
// the timed-out write may have left part of a message in the pipe, and
// every later write fails, so a child left running would leave its
// destination refusing every call for as long as it lives.
func TestProcessStoppedWhenStdinStalls(t *testing.T) {
	// sleep never reads its stdin.
	p := startProcess(t, &config.Destination{Command: "sleep", Args: []string{"60"}}, ProcessOptions{StopGrace: 300 * time.Millisecond, WriteTimeout: 300 * time.Millisecond})
	err := p.WriteMessage(make([]byte, 1<<20)) // more than the pipe holds
	if err == nil || !strings.Contains(err.Error(), "did not read its stdin") {
		t.Fatalf("WriteMessage = %v; want the stdin timeout", err)
	}
	waitExited(t, p, 10*time.Second)
	if err := p.WriteMessage([]byte(`{}`)); err == nil {
		t.Errorf("a write after the timeout succeeded")
	}
}

// TestProcessStdinWithoutDeadline: a stdin that takes no write deadline
// (Windows's anonymous pipes; here a pipe in blocking mode, which Go cannot
// poll) is told apart at start, and then a timer does the deadline's work:
// messages pass as usual, and a child that stops reading is stopped and
// the write fails with the same error, within the timeout.
func TestProcessStdinWithoutDeadline(t *testing.T) {
	var fds [2]int
	if err := syscall.Pipe(fds[:]); err != nil {
		t.Fatal(err)
	}
	r, w := os.NewFile(uintptr(fds[0]), "r"), os.NewFile(uintptr(fds[1]), "w")
	defer r.Close()
	defer w.Close()
	if err := w.SetWriteDeadline(time.Time{}); !errors.Is(err, os.ErrNoDeadline) {
		t.Fatalf("a blocking pipe's SetWriteDeadline: %v; want os.ErrNoDeadline (what Start looks for)", err)
	}
	if pr, pw, err := os.Pipe(); err == nil {
		if err := pw.SetWriteDeadline(time.Time{}); err != nil {
			t.Errorf("os.Pipe's SetWriteDeadline: %v; want it to take deadlines", err)
		}
		pr.Close()
		pw.Close()
	}

	cat := startProcess(t, &config.Destination{Command: "cat"}, ProcessOptions{WriteTimeout: 300 * time.Millisecond, StopGrace: 200 * time.Millisecond})
	if cat.watchWrites {
		t.Fatal("os.Pipe's stdin taken for one without deadlines")
	}
	cat.watchWrites = true // as on Windows
	big := bytes.Repeat([]byte("b"), 300<<10)
	for _, msg := range [][]byte{[]byte(`{"n":1}`), big} {
		// cat echoes as it reads: the echo is read while the write goes.
		echoed := make(chan string, 1)
		go func() {
			line, _ := cat.ReadMessage()
			echoed <- string(line)
		}()
		if err := cat.WriteMessage(msg); err != nil {
			t.Fatal(err)
		}
		select {
		case got := <-echoed:
			if got != string(msg) {
				t.Fatalf("echoed %d bytes; want the %d written", len(got), len(msg))
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no echo within 10 s")
		}
	}

	sleeper := startProcess(t, &config.Destination{Command: "sleep", Args: []string{"60"}}, ProcessOptions{WriteTimeout: 300 * time.Millisecond, StopGrace: 200 * time.Millisecond})
	sleeper.watchWrites = true
	start := time.Now()
	err := sleeper.WriteMessage(make([]byte, 1<<20))
	if err == nil || !strings.Contains(err.Error(), "did not read its stdin") {
		t.Fatalf("WriteMessage = %v; want the stdin timeout", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the write failed after %s with a 300 ms timeout", took)
	}
	waitExited(t, sleeper, 10*time.Second)
}

// TestStartErrorsARetryWouldRepeat: a command that cannot start for a
// reason a retry would meet again fails as ErrPermanent (the destination
// fails at once); a start cut short does not.
func TestStartErrorsARetryWouldRepeat(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "not-executable")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name      string
		ctx       context.Context
		d         config.Destination
		permanent bool
	}{
		{"not on PATH", context.Background(), config.Destination{Name: "x", Command: "stelae-no-such-command-xyz"}, true},
		{"no such path", context.Background(), config.Destination{Name: "x", Command: filepath.Join(dir, "no", "such")}, true},
		{"not executable", context.Background(), config.Destination{Name: "x", Command: notExec}, true},
		{"no such cwd", context.Background(), config.Destination{Name: "x", Command: "cat", Cwd: filepath.Join(dir, "missing")}, true},
		{"cancelled", cancelled, config.Destination{Name: "x", Command: "cat"}, false},
	} {
		p, err := Start(tc.ctx, &tc.d, ProcessOptions{})
		if err == nil {
			_ = p.Stop(context.Background())
			t.Fatalf("%s: Start succeeded", tc.name)
		}
		if got := errors.Is(err, ErrPermanent); got != tc.permanent {
			t.Errorf("%s: errors.Is(%v, ErrPermanent) = %v; want %v", tc.name, err, got, tc.permanent)
		}
	}
	// The reaper's report keeps the system's error number.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	fmt.Fprintf(w, "error %d: fork/exec %s: permission denied\n", int(syscall.EACCES), notExec)
	w.Close()
	_, rerr := readReport(r, 5*time.Second)
	if !errors.Is(rerr, fs.ErrPermission) || !strings.Contains(rerr.Error(), "permission denied") {
		t.Errorf("readReport: %v; want the text and fs.ErrPermission", rerr)
	}
}
