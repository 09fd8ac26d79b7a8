package supervisor

import (
	"context"
	"errors"
	"fmt"
	"github.com/stelae-bridge/stelae-bridge/config"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/stelae-bridge/stelae-bridge/recycle"
	"github.com/stelae-bridge/stelae-bridge/redact"
)

// ProcessOptions tune how children are run.
type ProcessOptions struct {
	// MaxMessage is the longest stdout line accepted, in bytes.
	MaxMessage int
	// StopGrace is how long each stop stage (stdin closed, SIGTERM) waits for
	// the child to exit before escalating.
	StopGrace time.Duration
	// WriteTimeout bounds one write to the child's stdin.
	WriteTimeout time.Duration
	// Logger receives child lifecycle events and stderr lines.
	Logger hclog.Logger
	// Environ is the environment children start from, as KEY=VALUE entries;
	// nil means the bridge's own (os.Environ). Either way every STELAE_*
	// variable, MAX_STDIO_CONNECTIONS and AUDIT_LOG_BODIES are removed from it
	// (see ChildEnviron), so a child never sees the bridge's settings or
	// secrets unless its destination's 'env:' sets them. The destination's
	// 'base_env:' and 'env:' apply on top.
	Environ []string
	// Reaper, when set, is the command that starts a reaper (see
	// ReaperCommand): each child then runs under one, so that its whole
	// process group dies with the bridge, even when the bridge is killed
	// with SIGKILL. Nil starts children directly (their own children would
	// outlive a hard kill of the bridge).
	Reaper []string
	// Records, when set, keeps a record of each running child's process
	// group, so that the next start of the bridge can kill what an instance
	// killed outright left behind (see Records.Sweep).
	Records *Records
}

// DefaultProcessOptions are a child process's defaults, written here once
// (the bridge's come from them).
func DefaultProcessOptions() ProcessOptions {
	return ProcessOptions{MaxMessage: 10 << 20, StopGrace: 2 * time.Second, WriteTimeout: 30 * time.Second}
}

func (o *ProcessOptions) setDefaults() {
	d := DefaultProcessOptions()
	if o.MaxMessage <= 0 {
		o.MaxMessage = d.MaxMessage
	}
	if o.StopGrace <= 0 {
		o.StopGrace = d.StopGrace
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = d.WriteTimeout
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
}

// ProcessLauncher returns a Launcher that starts d's command.
func ProcessLauncher(d *config.Destination, opts ProcessOptions) Launcher {
	opts.setDefaults()
	return func(ctx context.Context) (Child, error) {
		return Start(ctx, d, opts)
	}
}

// Process is one running child: its own process group, stdin/stdout carrying
// newline-delimited JSON, stderr logged line by line.
type Process struct {
	// pid is the command's pid; cmd.Process.Pid is the process group's
	// leader: the command itself, or its reaper.
	pid   int
	dest  *config.Destination
	opts  ProcessOptions
	log   hclog.Logger
	cmd   *exec.Cmd
	lines *lineReader
	// stdout is the bridge's end of the child's stdout; read only by the one
	// goroutine calling ReadMessage.
	stdout *os.File

	stdin *os.File
	// writeMu guards queue, writing, batch and werr. At most one writer
	// of the moment owns stdin (writing is set): the caller that found it
	// idle, then the drain goroutine while others' messages wait. Messages
	// that arrive meanwhile are appended to queue, and the writer of the
	// moment takes them all into one write(2) (recycle.Batch: a taken
	// buffer is the writer's alone until it gives it back, and the batch
	// keeps no reference to it). While writers keep meeting (batch), the
	// caller that finds stdin idle first yields once and takes what was
	// queued meanwhile with its own message: under load the child wakes
	// once for several calls, not once for each.
	writeMu sync.Mutex
	queue   recycle.Batch
	writing bool
	batch   int // yields left before a writer stops waiting for company
	werr    error
	drain   chan struct{} // buffer of one: the queue needs writing
	// deadline is stdin's write deadline as last set. Only the writer of
	// the moment uses it; writeMu hands it from one to the next.
	deadline time.Time

	exited chan struct{}
	// stderrDone is closed when the child's stderr is read to its end.
	stderrDone chan struct{}
	status     string // set before exited is closed
	// jail holds the child to its sandbox (nil: none): set before the
	// child starts, then only read; wait releases it.
	jail      *jail
	closeOnce sync.Once
	// giveUpOnce stops, once, a child that stopped reading its stdin
	// (giveUp); killTimer is its SIGKILL after StopGrace, stopped by wait.
	giveUpOnce sync.Once
	killTimer  atomic.Pointer[time.Timer]
	// record is the group's entry in ProcessOptions.Records ("" when none).
	record string
	// tree holds the child's processes together (tree_*.go).
	tree *tree
	// watchWrites: stdin takes no write deadline (Windows's anonymous
	// pipes), so a timer stops a child that does not take a write in time
	// (writeWatched).
	watchWrites bool
}

// startError is a command that could not be started. Its text, for the
// log, names the command and the system's error; a client reads only
// PublicReason (the operator's file layout is not the client's business).
type startError struct{ err error }

func (e startError) Error() string { return e.err.Error() }
func (e startError) Unwrap() error { return e.err }

// Is makes a start that a retry would only repeat — no such program or
// directory, no permission, not an executable — a permanent error
// (ErrPermanent): the destination fails at once instead of restarting
// (the next client's request tries again).
func (e startError) Is(target error) bool {
	return target == ErrPermanent && (errors.Is(e.err, exec.ErrNotFound) || errors.Is(e.err, fs.ErrNotExist) ||
		errors.Is(e.err, fs.ErrPermission) || errors.Is(e.err, syscall.ENOEXEC) || errors.Is(e.err, errSandbox))
}

// errSandbox marks a start refused for a sandbox this system cannot
// hold (sandboxError): a retry cannot help.
var errSandbox = errors.New("the sandbox cannot be enforced")

// sandboxError is why a sandbox cannot be held; it is errSandbox.
type sandboxError struct{ error }

func (e sandboxError) Unwrap() error        { return e.error }
func (e sandboxError) Is(target error) bool { return target == errSandbox }

// PublicReason is what a client is told.
func (e startError) PublicReason() string {
	return "its command could not be started (the bridge's log says why)"
}

// PublicReason is err's text as a client may read it: a command that could
// not be started is told without its path and the system's error.
func PublicReason(err error) string {
	var se startError
	if errors.As(err, &se) {
		return se.PublicReason()
	}
	return err.Error()
}

// Start spawns d's command in its own process group.
func Start(ctx context.Context, d *config.Destination, opts ProcessOptions) (*Process, error) {
	opts.setDefaults()
	log := opts.Logger.With("destination", d.Name)
	cmd, err := command(d)
	if err != nil {
		return nil, startError{fmt.Errorf("destination %q: cannot start: %w", d.Name, err)}
	}
	if cmd.Err != nil {
		return nil, startError{fmt.Errorf("destination %q: cannot start %q: %w (check 'command:' in the destinations file and that the program is installed and on PATH)", d.Name, d.Command, cmd.Err)}
	}
	if err := checkCommand(cmd); err != nil {
		return nil, startError{fmt.Errorf("destination %q: cannot start %q: %w", d.Name, d.Command, err)}
	}
	// The sandbox (sandbox.go): what must exist before the child starts,
	// and what the reaper hands the joiner.
	j, err := newJail(d, cmd.Path)
	switch {
	case err != nil:
		return nil, startError{fmt.Errorf("destination %q: cannot hold it to its sandbox (%s): %w (or set 'best_effort: true' in its sandbox to start it with what this system enforces)", d.Name, d.Sandbox, err)}
	case j != nil && len(j.notHeld) > 0:
		log.Warn("the sandbox is not wholly enforced on this system (best_effort)", "sandbox", d.Sandbox.String(), "not_held", strings.Join(j.notHeld, "; "))
	}
	if j != nil && !j.args.empty() && len(opts.Reaper) == 0 {
		_ = j.release()
		return nil, startError{fmt.Errorf("destination %q: %w", d.Name, sandboxError{errors.New("its sandbox needs the child's reaper, which this bridge runs without")})}
	}
	started := false
	defer func() {
		if !started && j != nil {
			if err := j.release(); err != nil {
				log.Error("a failed start's cgroup stays", "error", err)
			}
		}
	}()
	var report, reportW *os.File
	if len(opts.Reaper) > 0 {
		// The reaper leads the group, joins the sandbox's cgroup and
		// starts the command itself.
		argv := append([]string{}, opts.Reaper[1:]...)
		if j != nil {
			argv = append(argv, j.args.args()...)
		}
		argv = append(append(argv, cmd.Path), cmd.Args...)
		cmd = &exec.Cmd{Path: opts.Reaper[0], Args: append([]string{opts.Reaper[0]}, argv...)}
		if report, reportW, err = os.Pipe(); err != nil {
			return nil, fmt.Errorf("destination %q: cannot create pipes: %w", d.Name, err)
		}
		defer report.Close()
		cmd.ExtraFiles = []*os.File{reportW}
	}
	cmd.Dir = d.Cwd
	base := opts.Environ
	if base == nil {
		base = os.Environ()
	}
	cmd.Env = childEnv(d, ChildEnviron(base, specVars))
	if j != nil && j.tmp != "" {
		// Its own, the only temporary directory it may write.
		cmd.Env = append(cmd.Env, "TMPDIR="+j.tmp)
	}
	// Own process group (a job on Windows) so the whole tree (npx → node,
	// sh -c → …) can be signalled at once. A reaper notices the bridge's
	// death (spawn_*.go: a parent-death signal on Linux, kqueue on macOS)
	// and takes the whole group down; on Linux a child without one gets
	// SIGKILL; on Windows the job's processes die with the bridge's
	// handles (tree_windows.go).
	cmd.SysProcAttr = groupAttr(report != nil)
	if j != nil && j.args.netns {
		// The reaper, the joiner and the command: a network namespace of
		// their own.
		netnsAttr(cmd.SysProcAttr)
	}
	cmd.WaitDelay = opts.StopGrace

	var files []*os.File
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	pipe := func() (*os.File, *os.File, error) {
		r, w, err := os.Pipe()
		if err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	inR, inW, err := pipe()
	if err != nil {
		return nil, fmt.Errorf("destination %q: cannot create pipes: %w", d.Name, err)
	}
	outR, outW, err := pipe()
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("destination %q: cannot create pipes: %w", d.Name, err)
	}
	errR, errW, err := pipe()
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("destination %q: cannot create pipes: %w", d.Name, err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	if err := ctx.Err(); err != nil {
		closeAll()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		closeAll()
		if reportW != nil {
			reportW.Close()
		}
		if j != nil && j.args.netns && errors.Is(err, fs.ErrPermission) {
			return nil, startError{fmt.Errorf("destination %q: cannot give the child a network namespace of its own for 'network: none': %w (a container, or RestrictNamespaces= in a systemd unit, forbids it: allow net and user namespaces, or drop 'network: none')", d.Name, sandboxError{err})}
		}
		return nil, startError{fmt.Errorf("destination %q: cannot start %q: %w (check 'command:' in the destinations file and that the program is installed and on PATH)", d.Name, d.Command, err)}
	}
	// The child holds its own copies now.
	inR.Close()
	outW.Close()
	errW.Close()
	if reportW != nil {
		reportW.Close()
	}
	tr, err := newTree(cmd, j.cgroup())
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		inW.Close()
		outR.Close()
		errR.Close()
		return nil, fmt.Errorf("destination %q: cannot start %q: %w", d.Name, d.Command, err)
	}
	pid := cmd.Process.Pid
	if reportW != nil {
		var rerr error
		if pid, rerr = readReport(report, 10*time.Second); rerr != nil {
			tr.kill()
			_ = cmd.Wait()
			tr.closeHandles()
			inW.Close()
			outR.Close()
			errR.Close()
			return nil, startError{fmt.Errorf("destination %q: cannot start %q: %w (check 'command:' in the destinations file and that the program is installed and on PATH)", d.Name, d.Command, rerr)}
		}
	}

	p := &Process{
		pid:        pid,
		dest:       d,
		opts:       opts,
		log:        log,
		cmd:        cmd,
		stdin:      inW,
		stdout:     outR,
		lines:      newLineReader(outR, opts.MaxMessage),
		exited:     make(chan struct{}),
		stderrDone: make(chan struct{}),
		drain:      make(chan struct{}, 1),
		tree:       tr,
		// A pipe that takes no deadline says so at once.
		watchWrites: errors.Is(inW.SetWriteDeadline(time.Time{}), os.ErrNoDeadline),
	}
	p.queue.Keep = keepBuf
	p.jail = j
	started = true
	if opts.Records != nil {
		p.record = opts.Records.add(d.Name, cmd.Process.Pid, pid, j)
	}
	log.Info("child started", "pid", pid, "command", d.Command)
	go p.logStderr(errR)
	go p.wait()
	go p.drainQueue()
	return p, nil
}

// wait reaps the child, then clears out whatever is left of its process group
// and unblocks a stdout reader that a stray descendant keeps waiting.
func (p *Process) wait() {
	err := p.cmd.Wait()
	if p.cmd.ProcessState != nil {
		p.status = p.cmd.ProcessState.String()
	} else if err != nil {
		p.status = err.Error()
	}
	// Descendants that stayed in the group die with the leader: no orphans.
	p.tree.kill()
	p.tree.closeHandles()
	if cg := p.jail.cgroup(); cg != nil && cg.oomKills() > 0 {
		p.status = fmt.Sprintf("exceeded its memory cap of %s (the kernel stopped it; %s)", config.FormatSize(p.dest.Sandbox.Memory), p.status)
	}
	// What left the group is still in the cgroup.
	if err := p.jail.release(); err != nil {
		p.log.Error("a sandbox's leftovers stay", "error", err)
	}
	if t := p.killTimer.Load(); t != nil {
		t.Stop()
	}
	if p.opts.Records != nil {
		p.opts.Records.remove(p.record)
	}
	p.log.Info("child exited", "pid", p.pid, "status", p.status)
	close(p.exited)
	// A descendant that left the group may still hold stdout open; do not let
	// it keep the reader waiting.
	time.AfterFunc(p.opts.StopGrace, func() { p.stdout.Close() })
}

// logStderr logs every line the child writes to stderr at the destination's
// 'stderr_log_level' — by default at info, or at warn when the line reads
// like a problem (stderrLineLevel); with "off" the lines are read and
// dropped, so the child never blocks on a full pipe.
func (p *Process) logStderr(f *os.File) {
	defer close(p.stderrDone)
	defer f.Close()
	level := StderrLogLevel(p.dest.StderrLevel)
	r := newLineReader(f, 64<<10)
	// Secrets a child prints (a token in a URL, a key it loaded) are
	// redacted like audit bodies; lines are capped.
	var lines redact.Lines
	for {
		line, err := r.next()
		var tooLong *LineTooLongError
		switch {
		case errors.As(err, &tooLong):
			if level != hclog.Off {
				text := redact.Line(string(tooLong.Prefix))
				p.log.Log(stderrLineLevel(level, text), "child stderr", "line", text+"…(truncated)")
			}
		case err != nil:
			return
		case len(line) > 0 && level != hclog.Off:
			if text, ok := lines.Next(string(line)); ok {
				p.log.Log(stderrLineLevel(level, text), "child stderr", "line", text)
			}
		}
	}
}

// StderrLogLevel is the hclog level of a 'stderr_log_level' value:
// hclog.NoLevel for "" (the default: each line's own, stderrLineLevel),
// hclog.Off for "off".
func StderrLogLevel(s string) hclog.Level {
	switch s {
	case "trace":
		return hclog.Trace
	case "debug":
		return hclog.Debug
	case "info":
		return hclog.Info
	case "error":
		return hclog.Error
	case "warn":
		return hclog.Warn
	case "off":
		return hclog.Off
	}
	return hclog.NoLevel
}

// problemWords are what a stderr line that reports a problem says (servers
// log their normal start-up on stderr too: stdout is the protocol's).
var problemWords = []string{"error", "err!", "warn", "fatal", "panic", "exception", "traceback", "failed", "denied", "refused", "cannot", "can't", "unable"}

// stderrLineLevel is the level a stderr line is logged at: the
// destination's setting, or without one (hclog.NoLevel) warn for a line
// that reads like a problem and info for the rest.
func stderrLineLevel(setting hclog.Level, line string) hclog.Level {
	if setting != hclog.NoLevel {
		return setting
	}
	lower := strings.ToLower(line)
	for _, w := range problemWords {
		if strings.Contains(lower, w) {
			return hclog.Warn
		}
	}
	return hclog.Info
}

// ReadMessage implements Child.
func (p *Process) ReadMessage() ([]byte, error) {
	return p.lines.next()
}

// WriteMessage implements Child. When no write is in progress the caller
// writes its message itself (with whatever was queued while it yielded,
// under load: see writeMu); otherwise the message is queued for the drain
// goroutine and WriteMessage returns at once. Either way msg is not
// referred to after it returns. A write that the child does not take
// within WriteTimeout (at least half of it) fails, and so does every later
// one.
func (p *Process) WriteMessage(msg []byte) error {
	p.writeMu.Lock()
	if p.werr != nil {
		err := p.werr
		p.writeMu.Unlock()
		return err
	}
	if p.writing {
		p.queue.AppendLine(msg)
		p.writeMu.Unlock()
		return nil
	}
	// Stdin is idle, so the queue is empty: the drain goroutine empties
	// it before it hands stdin back.
	p.writing = true
	var err error
	if len(msg) < joinLine {
		if p.batch > 0 {
			// Writers have been meeting: yield once so that callers
			// ready to run queue behind this one, and one write (one
			// wake-up of the child) carries them all.
			p.writeMu.Unlock()
			runtime.Gosched()
			p.writeMu.Lock()
			if p.queue.Len() > 0 {
				p.batch = batchWrites
			} else {
				p.batch--
			}
		}
		// Each writer's messages keep their order; between writers any
		// order is one the child could have seen.
		p.queue.AppendLine(msg)
		buf := p.queue.Take()
		p.writeMu.Unlock()
		err = p.write(buf) // one write: the lines and their ends
		p.writeMu.Lock()
		p.queue.Give(buf)
	} else {
		// A large message is not copied to add its newline: stdin is
		// this caller's until writing turns false, so the line and its
		// end go in two writes.
		p.writeMu.Unlock()
		if err = p.write(msg); err == nil {
			err = p.write(newline)
		}
		p.writeMu.Lock()
	}
	switch {
	case err != nil:
		p.werr, p.writing = err, false
		p.queue.Drop()
	case p.queue.Len() > 0:
		// Others queued meanwhile: the drain goroutine writes them.
		p.batch = batchWrites
		select {
		case p.drain <- struct{}{}:
		default:
		}
	default:
		p.writing = false
	}
	p.writeMu.Unlock()
	return err
}

// Enqueue implements Child: msg joins the queue, which the drain goroutine
// writes (the writer of the moment, if there is one, hands it over); the
// caller never writes to stdin itself.
func (p *Process) Enqueue(msg []byte) error {
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	if p.werr != nil {
		return p.werr
	}
	p.queue.AppendLine(msg)
	if !p.writing {
		p.writing = true
		select {
		case p.drain <- struct{}{}:
		default:
		}
	}
	return nil
}

// drainQueue writes queued messages until the queue is empty, then hands
// stdin back to the callers. It ends when the child exits.
func (p *Process) drainQueue() {
	for {
		select {
		case <-p.drain:
		case <-p.exited:
			return
		}
		p.writeMu.Lock()
		for p.queue.Len() > 0 && p.werr == nil {
			buf := p.queue.Take()
			p.writeMu.Unlock()
			err := p.write(buf)
			p.writeMu.Lock()
			p.queue.Give(buf)
			if err != nil {
				p.werr = err
				p.queue.Drop()
			}
		}
		p.writing = false
		p.writeMu.Unlock()
	}
}

var newline = []byte{'\n'}

// joinLine: a message shorter than this is copied into a buffer with its
// newline and written at once; a longer one is written as it is, then its
// newline (a pipe takes 64 KiB at a time anyway).
const joinLine = 64 << 10

// batchWrites is how many writes in a row yield for company after writers
// last met; each write that finds none uses one up.
const batchWrites = 8

func (p *Process) write(buf []byte) error {
	// The deadline is moved only when less than half of WriteTimeout is
	// left (a write gets between half and all of it): setting it costs a
	// runtime timer update, which every write used to pay.
	if now := time.Now(); !p.watchWrites && p.deadline.Sub(now) < p.opts.WriteTimeout/2 {
		p.deadline = now.Add(p.opts.WriteTimeout)
		if err := p.stdin.SetWriteDeadline(p.deadline); err != nil {
			return p.writeError(err, true)
		}
	}
	if p.watchWrites {
		return p.writeWatched(buf)
	}
	if _, err := p.stdin.Write(buf); err != nil {
		return p.writeError(err, false)
	}
	return nil
}

// writeWatched is write for a stdin that takes no deadline: a timer gives
// the child up (giveUp: its processes are ended, which ends the write)
// when the write has not returned within WriteTimeout. The write waits for
// the timer's function when it fired.
func (p *Process) writeWatched(buf []byte) error {
	fired := make(chan struct{})
	t := time.AfterFunc(p.opts.WriteTimeout, func() {
		defer close(fired)
		p.giveUp()
	})
	_, err := p.stdin.Write(buf)
	if !t.Stop() {
		<-fired
		return p.writeError(os.ErrDeadlineExceeded, false)
	}
	if err != nil {
		return p.writeError(err, false)
	}
	return nil
}

// writeError explains a failed write to stdin (deadline: setting its
// deadline failed). It is out of write, whose frame is on the stack of
// every call's write (see session.post on stacks).
func (p *Process) writeError(err error, deadline bool) error {
	switch {
	case deadline:
		return fmt.Errorf("destination %q: child stdin is closed: %w", p.dest.Name, err)
	case errors.Is(err, os.ErrDeadlineExceeded):
		p.giveUp()
		return fmt.Errorf("destination %q: child did not read its stdin for %s; it is stopped and will be restarted", p.dest.Name, p.opts.WriteTimeout)
	}
	return fmt.Errorf("destination %q: cannot write to the child: %w", p.dest.Name, err)
}

// giveUp stops a child that stopped reading its stdin. The write that timed
// out may have left part of a message in the pipe, so nothing more can be
// written to it (every later write fails), and the destination would
// refuse every call for as long as the child lives: it is stopped instead
// (stdin closed, SIGTERM to its process group, SIGKILL after StopGrace), and
// its supervisor restarts it. Called by the writer of the moment.
func (p *Process) giveUp() {
	p.giveUpOnce.Do(func() {
		p.log.Error("child did not read its stdin within the write timeout; stopping it so that it restarts", "pid", p.pid, "write_timeout", p.opts.WriteTimeout)
		p.closeOnce.Do(func() { p.stdin.Close() })
		p.tree.stage(0)
		p.killTimer.Store(time.AfterFunc(p.opts.StopGrace, p.tree.kill))
		select {
		case <-p.exited:
			// wait may have missed the timer: stop it here.
			p.killTimer.Load().Stop()
		default:
		}
	})
}

// Stop implements Child: close stdin, then the platform's stop stages
// (stopStages: SIGTERM, then SIGKILL to the process group; on Windows,
// terminating the job), each stage waiting StopGrace.
func (p *Process) Stop(ctx context.Context) error {
	p.closeOnce.Do(func() { p.stdin.Close() })
	for i, name := range stopStages {
		t := time.NewTimer(p.opts.StopGrace)
		select {
		case <-p.exited:
			t.Stop()
			return nil
		case <-ctx.Done():
			t.Stop()
			p.tree.kill()
			return ctx.Err()
		case <-t.C:
		}
		p.log.Warn("child did not exit in time; signalling its process group", "pid", p.pid, "signal", name)
		p.tree.stage(i)
	}
	select {
	case <-p.exited:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Exited implements Child.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// ExitStatus implements Child.
func (p *Process) ExitStatus() string {
	select {
	case <-p.exited:
		return p.status
	default:
		return ""
	}
}

// SandboxHeld says what holds the child's sandbox here, and what of it
// is not held (best_effort) and why.
func (p *Process) SandboxHeld() (held, notHeld []string) {
	if p.jail == nil {
		return nil, nil
	}
	return p.jail.held, p.jail.notHeld
}

// PID implements Child.
func (p *Process) PID() int { return p.pid }
