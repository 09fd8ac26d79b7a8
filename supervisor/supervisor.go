package supervisor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/hashicorp/go-hclog"
)

// The states of a destination's child, as Status reports them.
const (
	StateIdle       = "idle"
	StateStarting   = "starting"
	StateRunning    = "running"
	StateRestarting = "restarting"
	StateFailed     = "failed"
)

type state int

const (
	stateIdle state = iota
	stateStarting
	stateRunning
	stateRestarting
	stateFailed
	// stateStopping: the child is being stopped (no holder left, or
	// shutdown); callers wait for the lifetime to end, then start anew.
	// Status reports it as idle.
	stateStopping
)

func (s state) String() string {
	return [...]string{StateIdle, StateStarting, StateRunning, StateRestarting, StateFailed, "stopping"}[s]
}

// waiting reports whether callers wait on ready in this state.
func (s state) waiting() bool { return s == stateStarting || s == stateRestarting }

// Options configure a Supervisor.
type Options struct {
	// Name is the destination's name.
	Name string
	// Launch starts a child.
	Launch Launcher
	// NewBackOff returns the restart delays for one run of failures (nil:
	// never restart).
	NewBackOff func() backoff.BackOff
	// StableAfter is how long a child must run for the restart count to
	// reset.
	StableAfter time.Duration
	// StartTimeout bounds starting a child and Ready (default 5 minutes: a
	// first npx download takes a while). A start goes on when the callers
	// that caused it give up.
	StartTimeout time.Duration
	// Linger is how long the child is kept after its last holder leaves.
	Linger time.Duration
	// UnclaimedLinger is how long a child whose start outlived every holder
	// waits for one once it is up (at least Linger; default 1 minute), so
	// that the client that gave up finds it warm when it retries.
	UnclaimedLinger time.Duration
	// StopTimeout bounds stopping the child.
	StopTimeout time.Duration
	// RestartPatience is how long a caller waits for a crashed child to come
	// back before it is answered ErrRestarting (default 3 s).
	RestartPatience time.Duration
	// Logger is the named logger, carrying the destination.
	Logger hclog.Logger
	// StartNote, when set, says what the owner has seen of a start that
	// is taking long (the dispatcher: lines of the child's that are not
	// JSON-RPC), for the error of a caller that gave up waiting; "" for
	// nothing. It is called without the supervisor's lock.
	StartNote func() string
}

// DefaultOptions are a supervisor's defaults, written here once (the
// bridge's come from them).
func DefaultOptions() Options {
	return Options{
		// The first start of an npx or uvx package downloads it.
		StartTimeout:    5 * time.Minute,
		StopTimeout:     StopTimeout(DefaultProcessOptions().StopGrace),
		RestartPatience: 3 * time.Second,
		UnclaimedLinger: time.Minute,
	}
}

// StopTimeout bounds stopping one child whose stop stages are grace apart:
// its stop escalation (stdin closed, SIGTERM, SIGKILL) and a second to be
// reaped.
func StopTimeout(grace time.Duration) time.Duration { return 3*grace + time.Second }

func (o *Options) setDefaults() {
	d := DefaultOptions()
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = d.StartTimeout
	}
	if o.StopTimeout <= 0 {
		o.StopTimeout = d.StopTimeout
	}
	if o.RestartPatience <= 0 {
		o.RestartPatience = d.RestartPatience
	}
	if o.UnclaimedLinger <= 0 {
		o.UnclaimedLinger = d.UnclaimedLinger
	}
	o.UnclaimedLinger = max(o.UnclaimedLinger, o.Linger)
	if o.NewBackOff == nil {
		o.NewBackOff = func() backoff.BackOff { return &backoff.StopBackOff{} }
	}
}

// Ready makes a started child ready to serve (the dispatcher's handshake):
// it returns the handle callers get from Running, and done, closed when the
// child's output has ended. An error wrapping ErrPermanent fails the
// destination at once; any other one counts as a crash.
type Ready[H any] func(ctx context.Context, c Child) (h H, done <-chan struct{}, err error)

// Supervisor owns the lifetimes of one destination's child: it starts the
// child on demand, restarts it with backoff when it exits, gives up after
// the policy's retries (the destination is then failed until something asks
// for it again), and stops it when its last holder leaves (after Linger).
// H is what Ready makes of a running child.
type Supervisor[H any] struct {
	opts   Options
	log    hclog.Logger
	ready  Ready[H]
	failed func(failure uint64, err error)
	// restartsTotal counts every restart since the bridge started.
	restartsTotal atomic.Uint64
	// waiting counts the callers of Running waiting for a child (Status).
	waiting atomic.Int64

	// mu guards every field below. Invariants: cur is set exactly in
	// stateRunning; life is nil exactly in stateIdle and stateFailed;
	// waitCh is open exactly while the state is starting or restarting.
	mu         sync.Mutex
	state      state
	cur        H
	curChild   Child
	curStarted time.Time
	life       *lifetime
	waitCh     chan struct{}
	failErr    error
	// failures counts the times the destination was marked failed; a
	// holder that came after a failure is not one the failure ends.
	failures        uint64
	lastExit        string
	restarts        int
	starting        time.Time // when the current start began; zero when not starting
	nextRestart     time.Time // when the backoff's wait ends; zero when not waiting
	restartingSince time.Time // when the current run of restarts began
	holders         int
	// lingerGen changes whenever the holders do; a pending stop for lack of
	// holders applies only if it has not changed since.
	lingerGen int
	// unclaimed: every holder left while the child was starting; once up
	// it waits UnclaimedLinger for one.
	unclaimed bool
	closed    bool
	// timers are the pending linger stops, owned: Close stops them.
	timers map[*time.Timer]struct{}
	// wg counts the supervision goroutines and linger stops; Close waits.
	wg sync.WaitGroup
}

// lifetime is one stretch from start to stop of the supervised child.
type lifetime struct {
	stop chan struct{} // closed (under mu) to ask for the end
	done chan struct{} // closed when the child is gone
}

// New returns a Supervisor; nothing starts before Running or Prestart.
// failed, when set, is called (without locks held) when the destination is
// marked failed, with the count of failures so far (Failures): what
// attached before that count is what the failure ends. The state is failed
// — and a new start possible — before any caller waiting for the start
// hears of it, so a client told of the failure that tries again at once
// is not ended by it.
func New[H any](opts Options, ready Ready[H], failed func(failure uint64, err error)) *Supervisor[H] {
	opts.setDefaults()
	return &Supervisor[H]{opts: opts, log: opts.Logger, ready: ready, failed: failed, timers: map[*time.Timer]struct{}{}}
}

// Status is a snapshot of a destination's child.
type Status struct {
	State    string
	PID      int
	Restarts int
	// RestartsTotal counts every restart since the bridge started.
	RestartsTotal uint64
	Started       time.Time
	LastExit      string
	// Children is how many child processes are running: 0 or 1 for a
	// shared child, more for a destination isolated per session.
	Children int
	// Stopping: the child is being stopped (State says idle: the next
	// caller starts a fresh one once it is gone).
	Stopping bool
	// Waiting is how many calls wait for the child: to start, to restart,
	// or to finish stopping before the next one starts.
	Waiting int
	// StartingSince is when the current start began (zero when none
	// runs): how long a slow start (an npx download) has been going on.
	StartingSince time.Time
	// NextRestart is when the next restart is due while the child waits
	// out its backoff (zero otherwise).
	NextRestart time.Time
	// Failed is why the destination failed, as its clients are told
	// (state failed only).
	Failed string
	// SandboxHeld says what holds the running child's sandbox on this
	// system ("files by Landlock ABI 7", …), and SandboxNotHeld what is
	// not held (best_effort) and why; both empty without a sandbox.
	SandboxHeld, SandboxNotHeld []string
}

// sandboxed is a child that knows how its sandbox is held (Process).
type sandboxed interface {
	SandboxHeld() (held, notHeld []string)
}

// Status reports the current state.
func (s *Supervisor[H]) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{State: s.state.String(), Restarts: s.restarts, RestartsTotal: s.restartsTotal.Load(), LastExit: s.lastExit, Waiting: int(s.waiting.Load()),
		StartingSince: s.starting, NextRestart: s.nextRestart}
	if s.state == stateFailed && s.failErr != nil {
		st.Failed = s.failErr.Error()
	}
	if s.state == stateStopping {
		st.State, st.Stopping = StateIdle, true
	}
	if s.state == stateRunning {
		st.PID = s.curChild.PID()
		st.Started = s.curStarted
		st.Children = 1
		if sb, ok := s.curChild.(sandboxed); ok {
			st.SandboxHeld, st.SandboxNotHeld = sb.SandboxHeld()
		}
	}
	return st
}

// setStateLocked moves to st: waitCh is made when a waiting state begins
// and closed when it ends. mu must be held.
func (s *Supervisor[H]) setStateLocked(st state) {
	switch {
	case s.state.waiting() && !st.waiting():
		close(s.waitCh)
	case !s.state.waiting() && st.waiting():
		s.waitCh = make(chan struct{})
	}
	if st == stateRestarting && s.state != stateRestarting {
		s.restartingSince = time.Now()
	}
	s.state = st
}

// Running returns the running child's handle, starting the child when it is
// idle (or, with mayStart, failed) and waiting while it starts or restarts.
// An idle child is started only with mayStart or while something holds
// the destination. It gives up when timeout fires (ErrStarting while the
// start goes on), when ctx ends (its cause when that is one of these
// errors, else ErrCanceled), and after RestartPatience of a restart.
func (s *Supervisor[H]) Running(ctx context.Context, timeout <-chan time.Time, mayStart bool) (H, error) {
	var zero H
	first, counted := true, false
	// waits counts this caller as waiting (Status.Waiting) until it returns.
	waits := func() {
		if !counted {
			counted = true
			s.waiting.Add(1)
		}
	}
	defer func() {
		if counted {
			s.waiting.Add(-1)
		}
	}()
	for {
		s.mu.Lock()
		switch s.state {
		case stateRunning:
			h := s.cur
			s.mu.Unlock()
			return h, nil
		case stateStopping:
			done := s.life.done
			waits()
			s.mu.Unlock()
			select {
			case <-done:
				continue
			case <-timeout:
				return zero, ErrTimeout
			case <-ctx.Done():
				return zero, ctxErr(ctx)
			}
		case stateFailed:
			if !first || !mayStart {
				err := s.failErr
				s.mu.Unlock()
				return zero, err
			}
			fallthrough
		case stateIdle:
			if s.closed {
				s.mu.Unlock()
				return zero, fmt.Errorf("%w: destination %q: the bridge is shutting down", ErrUnavailable, s.opts.Name)
			}
			if !mayStart && s.holders == 0 {
				s.mu.Unlock()
				return zero, ErrNotStarted
			}
			s.startLocked()
		}
		wait := s.waitCh
		var patience <-chan time.Time
		if s.state == stateRestarting {
			left := s.opts.RestartPatience - time.Since(s.restartingSince)
			if left <= 0 {
				err := s.restartingErrLocked()
				s.mu.Unlock()
				return zero, err
			}
			t := time.NewTimer(left)
			defer t.Stop()
			patience = t.C
		}
		waits()
		s.mu.Unlock()
		first = false
		select {
		case <-wait:
		case <-patience:
			s.mu.Lock()
			err := s.restartingErrLocked()
			s.mu.Unlock()
			return zero, err
		case <-timeout:
			return zero, s.startingErr()
		case <-ctx.Done():
			return zero, ctxErr(ctx)
		}
	}
}

// Current is the running child's handle, and false while none runs.
func (s *Supervisor[H]) Current() (H, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur, s.state == stateRunning
}

// restartingErrLocked says how long the child has been restarting. mu must
// be held.
func (s *Supervisor[H]) restartingErrLocked() error {
	return fmt.Errorf("%w: destination %q has been restarting for %s (restart %d); retry in a few seconds",
		ErrRestarting, s.opts.Name, time.Since(s.restartingSince).Round(100*time.Millisecond), s.restarts)
}

// startingErr is the error of a caller that gave up waiting for the child:
// ErrStarting (with how long the start has run) while it starts.
func (s *Supervisor[H]) startingErr() error {
	s.mu.Lock()
	starting := s.state == stateStarting && !s.starting.IsZero()
	since := time.Since(s.starting).Round(time.Second)
	s.mu.Unlock()
	if !starting {
		return ErrTimeout
	}
	if s.opts.StartNote != nil {
		if note := s.opts.StartNote(); note != "" {
			return fmt.Errorf("%w: destination %q has been starting for %s: %s (start_timeout is %s)", ErrStarting, s.opts.Name, since, note, s.opts.StartTimeout)
		}
	}
	return fmt.Errorf("%w: destination %q has been starting for %s (it may be downloading its package; start_timeout is %s); retry in a few seconds",
		ErrStarting, s.opts.Name, since, s.opts.StartTimeout)
}

// ctxErr is the error of a caller whose ctx ended: ErrTimeout for a
// deadline, the cause it was cancelled with when that is one of the errors
// callers map (a session ended for a reason), else ErrCanceled.
func ctxErr(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return ErrTimeout
	}
	if cause := context.Cause(ctx); errors.Is(cause, ErrCanceled) || errors.Is(cause, ErrUnavailable) {
		return cause
	}
	return ErrCanceled
}

// ContextErr is ctxErr for the callers' own waits.
func ContextErr(ctx context.Context) error { return ctxErr(ctx) }

// startLocked begins a new lifetime. mu must be held.
func (s *Supervisor[H]) startLocked() {
	s.setStateLocked(stateStarting)
	s.failErr = nil
	s.restarts = 0
	life := &lifetime{stop: make(chan struct{}), done: make(chan struct{})}
	s.life = life
	s.wg.Add(1)
	go s.supervise(life)
}

// supervise runs the child for one lifetime: start, Ready, watch, restart
// with backoff, give up after the policy's retries (at once on a permanent
// error).
func (s *Supervisor[H]) supervise(life *lifetime) {
	defer s.wg.Done()
	defer close(life.done)
	bo := s.opts.NewBackOff()
	for {
		select {
		case <-life.stop:
			s.setIdle(life)
			return
		default:
		}
		h, c, done, err := s.launch(life)
		if err == nil {
			started := time.Now()
			s.setRunning(life, h, c, started)
			select {
			case <-done:
			case <-life.stop:
				s.stopChild(c)
				s.setIdle(life)
				return
			}
			// Unexpected exit. Make sure it is gone and reaped.
			s.stopChild(c)
			if s.opts.StableAfter > 0 && time.Since(started) >= s.opts.StableAfter {
				bo.Reset()
			}
			status := ExitStatus(c)
			err = fmt.Errorf("the child exited (%s)", status)
			s.mu.Lock()
			s.lastExit = status
			s.mu.Unlock()
		}
		select {
		case <-life.stop:
			// The failure came from being stopped: nothing to restart.
			s.setIdle(life)
			return
		default:
		}
		delay := bo.NextBackOff()
		if delay == backoff.Stop || errors.Is(err, ErrPermanent) {
			s.setFailed(life, err)
			return
		}
		s.mu.Lock()
		if s.life == life && s.state == stateRunning {
			s.setStateLocked(stateRestarting)
			var zero H
			s.cur, s.curChild = zero, nil
		}
		s.restarts++
		s.restartsTotal.Add(1)
		n := s.restarts
		s.nextRestart = time.Now().Add(delay)
		s.mu.Unlock()
		s.log.Warn("child stopped unexpectedly; restarting", "error", err, "restart", n, "delay", delay)
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-life.stop:
			t.Stop()
			s.setIdle(life)
			return
		}
		s.mu.Lock()
		s.nextRestart = time.Time{}
		s.mu.Unlock()
	}
}

// ExitStatus is how child c ended, for messages: its exit status once it
// has exited (waiting a second for it: its stdout may close just before),
// else "closed its stdout".
func ExitStatus(c Child) string {
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case <-c.Exited():
	case <-t.C:
	}
	if st := c.ExitStatus(); st != "" {
		return st
	}
	return "closed its stdout"
}

// startProgressEvery is how often a slow start is reported in the log.
const startProgressEvery = 10 * time.Second

// launch starts a child and makes it ready, within StartTimeout. A slow
// start is logged every startProgressEvery.
func (s *Supervisor[H]) launch(life *lifetime) (H, Child, <-chan struct{}, error) {
	var zero H
	begun := time.Now()
	s.mu.Lock()
	s.starting = begun
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.starting = time.Time{}
		s.mu.Unlock()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.StartTimeout)
	progress := make(chan struct{})
	defer func() {
		cancel()
		<-progress
	}()
	go func() {
		defer close(progress)
		t := time.NewTicker(startProgressEvery)
		defer t.Stop()
		for {
			select {
			case <-life.stop:
				cancel()
				return
			case <-t.C:
				s.log.Info("child still starting", "elapsed", time.Since(begun).Round(time.Second), "start_timeout", s.opts.StartTimeout)
			case <-ctx.Done():
				return
			}
		}
	}()
	c, err := s.opts.Launch(ctx)
	if err != nil {
		s.mu.Lock()
		s.lastExit = err.Error()
		s.mu.Unlock()
		return zero, nil, nil, err
	}
	h, done, err := s.ready(ctx, c)
	if err != nil {
		s.stopChild(c)
		status := ExitStatus(c)
		s.mu.Lock()
		s.lastExit = status
		s.mu.Unlock()
		if errors.Is(err, ErrTimeout) {
			err = fmt.Errorf("the child did not answer initialize within start_timeout (%s): %w", s.opts.StartTimeout, err)
		}
		return zero, nil, nil, err
	}
	if el := time.Since(begun); el >= startProgressEvery {
		s.log.Info("slow start done", "elapsed", el.Round(time.Second))
	}
	return h, c, done, nil
}

// setRunning publishes a ready child, unless the lifetime is being stopped.
func (s *Supervisor[H]) setRunning(life *lifetime, h H, c Child, started time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.life != life || s.state == stateStopping {
		return
	}
	s.cur, s.curChild, s.curStarted = h, c, started
	s.setStateLocked(stateRunning)
	s.log.Info("child ready", "pid", c.PID())
	if s.unclaimed && s.holders == 0 {
		// The clients that started it gave up waiting; keep it warm for
		// their retry, then stop it if none came.
		s.unclaimed = false
		s.log.Info("child is up but its clients left while it started; keeping it for their retry", "for", s.opts.UnclaimedLinger)
		s.stopLaterLocked(s.opts.UnclaimedLinger)
	}
}

func (s *Supervisor[H]) setIdle(life *lifetime) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.life != life {
		return
	}
	s.nextRestart = time.Time{}
	s.setStateLocked(stateIdle)
	var zero H
	s.cur, s.curChild, s.life = zero, nil, nil
}

// Failures is the number of times the destination was marked failed.
func (s *Supervisor[H]) Failures() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failures
}

// setFailed marks the destination failed and tells failed.
func (s *Supervisor[H]) setFailed(life *lifetime, cause error) {
	s.mu.Lock()
	if s.life != life {
		s.mu.Unlock()
		return
	}
	var zero H
	s.cur, s.curChild, s.life = zero, nil, nil
	if s.state == stateStopping {
		// Nobody is left to tell; the next start begins afresh.
		s.setStateLocked(stateIdle)
		s.mu.Unlock()
		return
	}
	msg := fmt.Sprintf("destination %q failed", s.opts.Name)
	if s.restarts > 0 {
		msg += fmt.Sprintf(" after %d restart(s)", s.restarts)
	}
	msg += ": " + PublicReason(cause)
	if s.lastExit != "" && !strings.Contains(cause.Error(), s.lastExit) {
		msg += "; last exit: " + s.lastExit
	}
	s.failErr = unavailable(msg + "; the next initialize will try to start it again")
	s.failures++
	s.setStateLocked(stateFailed)
	err, last, n := s.failErr, s.lastExit, s.failures
	s.mu.Unlock()
	s.log.Error("destination failed; giving up on restarts", "error", cause, "last_exit", last)
	if s.failed != nil {
		s.failed(n, err)
	}
}

func (s *Supervisor[H]) stopChild(c Child) {
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.StopTimeout)
	defer cancel()
	if err := c.Stop(ctx); err != nil {
		s.log.Error("child did not stop in time", "pid", c.PID(), "error", err)
	}
}

// stopLifetimeLocked asks the current lifetime to end and returns it (nil
// when there is none). From now on callers wait for it to end. mu must be
// held.
func (s *Supervisor[H]) stopLifetimeLocked() *lifetime {
	life := s.life
	if life != nil && s.state != stateStopping {
		close(life.stop)
		s.setStateLocked(stateStopping)
		var zero H
		s.cur, s.curChild = zero, nil
	}
	return life
}

// Hold counts one more holder (a session): while any holds the
// destination, it is started on demand and not stopped for lack of use.
func (s *Supervisor[H]) Hold() {
	s.mu.Lock()
	s.holders++
	s.lingerGen++ // a pending stop for lack of holders no longer applies
	s.unclaimed = false
	s.mu.Unlock()
}

// Release counts one holder less; when none is left the child is stopped,
// after Linger. A start in progress is not stopped: it waits
// UnclaimedLinger for a holder once it is up.
func (s *Supervisor[H]) Release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.holders--
	s.lingerGen++
	if s.holders > 0 {
		return
	}
	if s.opts.Linger <= 0 {
		s.stopIfUnusedLocked(s.lingerGen)
		return
	}
	s.stopLaterLocked(s.opts.Linger)
}

// stopLaterLocked stops the child after d unless a holder comes meanwhile.
// The timer is owned: Close stops it and waits for it. mu must be held.
func (s *Supervisor[H]) stopLaterLocked(d time.Duration) {
	if s.closed {
		return
	}
	gen := s.lingerGen
	s.wg.Add(1)
	var t *time.Timer
	t = time.AfterFunc(d, func() {
		defer s.wg.Done()
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.timers, t)
		s.stopIfUnusedLocked(gen)
	})
	s.timers[t] = struct{}{}
}

// stopIfUnusedLocked stops the child when no holder came since gen. A start
// in progress survives the callers that caused it: a first npx download
// outlasts a request timeout, and stopping it would make every retry start
// over (and can leave a half-written cache). mu must be held.
func (s *Supervisor[H]) stopIfUnusedLocked(gen int) {
	if s.lingerGen != gen || s.holders > 0 {
		return
	}
	if s.state == stateStarting {
		s.unclaimed = true
		return
	}
	if s.life != nil {
		s.log.Info("last session ended; stopping the child")
	}
	s.stopLifetimeLocked()
}

// Prestart starts the child now, without waiting for a caller, so that it
// is warm when the first one comes. It does nothing when the child is
// already starting or running, or the supervisor is closed. A prestarted
// child is not stopped for lack of holders while none has come: it runs
// until a first holder has come and gone.
func (s *Supervisor[H]) Prestart() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || (s.state != stateIdle && s.state != stateFailed) {
		return
	}
	s.log.Info("starting the child ahead of any client (prestart)")
	s.startLocked()
}

// Restart is the operator's restart (the console's): the running child,
// or the one starting or waiting out its backoff, is stopped and a fresh
// one started at once, with a new run of restarts; a failed destination
// starts anew. An idle destination (no child, or one stopping, and nobody
// holding it) is left as it is: a child started then would serve nobody; the next call starts
// one. It reports whether a child is starting because of it. Calls
// waiting for the child wait for the new one; calls in flight on the old
// one end as they do when a child exits. It never changes what is
// started. It returns at once; the start is owned by the supervisor
// (Close waits for it).
func (s *Supervisor[H]) Restart() (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false, fmt.Errorf("%w: destination %q: the bridge is shutting down", ErrUnavailable, s.opts.Name)
	}
	if (s.state == stateIdle || s.state == stateStopping) && s.holders == 0 {
		s.log.Info("restart asked by the operator: no child is running and no session holds the destination; nothing started (the next call starts one)")
		return false, nil
	}
	s.log.Info("restart asked by the operator", "state", s.state.String())
	life := s.stopLifetimeLocked()
	if life == nil {
		s.startLocked()
		return true, nil
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		<-life.done
		s.mu.Lock()
		defer s.mu.Unlock()
		if !s.closed && s.state == stateIdle && s.life == nil {
			s.startLocked()
		}
	}()
	return true, nil
}

// Close stops the child and refuses new starts. It returns when the child
// has exited and every goroutine and timer of the supervisor has ended, or
// when ctx ends.
func (s *Supervisor[H]) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	s.stopLifetimeLocked()
	for t := range s.timers {
		if t.Stop() {
			s.wg.Done() // its func will not run
		}
		delete(s.timers, t)
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
