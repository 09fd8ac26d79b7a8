package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/stelae-bridge/stelae-bridge/jsonrpc"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/hashicorp/go-hclog"
)

// Errors a call can end with; the HTTP layer maps them to status codes.
var (
	// ErrUnavailable: the child is not running and could not be (re)started.
	ErrUnavailable = errors.New("destination unavailable")
	// ErrChildExited: the child exited while the call was in flight.
	ErrChildExited = errors.New("the child process exited before answering")
	// ErrTimeout: no answer within the request timeout.
	ErrTimeout = errors.New("the child did not answer in time")
	// ErrTooLarge: the child's answer exceeded the maximum message size.
	ErrTooLarge = errors.New("the child's answer exceeded the maximum message size and was discarded")
	// ErrCanceled: the caller went away or its session ended.
	ErrCanceled = errors.New("the call was cancelled")
	// ErrNotInitialized: no client has sent initialize yet.
	ErrNotInitialized = errors.New("the destination has not been initialized; send initialize first")
	// ErrStarting: the child is still starting (its start goes on).
	ErrStarting = errors.New("the destination is still starting")
	// ErrRestarting: the child crashed and has been restarting for longer
	// than Options.RestartPatience; callers are told at once.
	ErrRestarting = errors.New("the destination is restarting after a crash")
)

// unavailable is an ErrUnavailable whose text is msg alone, so that the
// message a client reads says each thing once.
type unavailable string

func (e unavailable) Error() string        { return string(e) }
func (e unavailable) Is(target error) bool { return target == ErrUnavailable }

// Watcher follows one call on the caller's goroutine.
type Watcher interface {
	// Related receives a message that belongs to the call: a progress
	// notification for it, or a request the child sent while it was the
	// newest call in flight.
	Related(msg []byte)
	// Tick returns a channel whose ticks are passed to Ticked while the call
	// waits (nil for none): keepalives.
	Tick() <-chan time.Time
	Ticked()
}

// Session is what the dispatcher needs of one client session.
type Session interface {
	// SessionID names the session in logs.
	SessionID() string
	// Deliver queues a message for the session's GET streams. It never
	// blocks; false means the message could not be queued.
	Deliver(msg []byte) bool
	// End ends the session because its destination can no longer serve it.
	End(reason error)
}

// Options configure a Dispatcher.
type Options struct {
	// Name is the destination's name.
	Name string
	// Launch starts a child.
	Launch Launcher
	// NewBackOff returns the restart delays for one run of failures.
	NewBackOff func() backoff.BackOff
	// StableAfter is how long a child must run for the restart count to reset.
	StableAfter time.Duration
	// StartTimeout bounds starting the child and its answer to the bridge's
	// initialize (default 5 minutes: a first npx download takes a while). A
	// start goes on when the client that caused it gives up.
	StartTimeout time.Duration
	// Linger is how long the child is kept after its last session ends.
	Linger time.Duration
	// UnclaimedLinger is how long a child whose start outlived every session
	// waits for one once it is up (at least Linger; default 1 minute), so
	// that the client that gave up finds it warm when it retries.
	UnclaimedLinger time.Duration
	// Roots, when set, is the result the bridge answers the child's
	// roots/list with ({"roots":[…]}): the destination's configured file
	// system boundary. Nil routes roots/list to a client session.
	Roots json.RawMessage
	// StopTimeout bounds stopping the child.
	StopTimeout time.Duration
	// RestartPatience is how long a call waits for a crashed child to come
	// back before it is answered ErrRestarting (default 3 s): a restart
	// that takes longer (backoff, a slow start) answers at once instead of
	// holding calls until their timeout.
	RestartPatience time.Duration
	// Logger is the dispatcher's named logger.
	Logger hclog.Logger
	// ToolAllowed, when set, hides the tools it returns false for: they are
	// removed from tools/list answers and from Tools, and a tools/call of one
	// is refused without reaching the child. nil allows every tool. It must
	// be fast and safe for concurrent use.
	ToolAllowed func(name string) bool
	// BridgeVersion is the bridge's version, sent as clientInfo.version when
	// the bridge initializes a child on its own (Prestart).
	BridgeVersion string
}

type state int

const (
	stateIdle state = iota
	stateStarting
	stateRunning
	stateRestarting
	stateFailed
	// stateStopping: the child is being stopped (no session left, or
	// shutdown); callers wait for the lifetime to end, then start anew.
	stateStopping
)

func (s state) String() string {
	return [...]string{"idle", "starting", "running", "restarting", "failed", "stopping"}[s]
}

// waiting reports whether callers wait on d.ready in this state.
func (s state) waiting() bool { return s == stateStarting || s == stateRestarting }

// setStateLocked moves to st: d.ready is made when a waiting state begins and
// closed when it ends. d.mu must be held.
func (d *Dispatcher) setStateLocked(st state) {
	switch {
	case d.state.waiting() && !st.waiting():
		close(d.ready)
	case !d.state.waiting() && st.waiting():
		d.ready = make(chan struct{})
	}
	if st == stateRestarting && d.state != stateRestarting {
		d.restartingSince = time.Now()
	}
	d.state = st
}

// child is one running instance of the destination's process.
type child struct {
	conn    Conn
	started time.Time
	// done is closed when the reader has seen the end of stdout.
	done chan struct{}
}

// lifetime is one stretch from start to stop of the supervised child.
type lifetime struct {
	stop chan struct{} // closed (under d.mu) to ask for the end
	done chan struct{} // closed when the child is gone
}

// pending is a call forwarded to the child and not yet answered. Pendings are
// pooled with their channel, timer and buffers: a call allocates only its
// response.
type pending struct {
	sess     Session // nil for the bridge's own calls
	clientID json.RawMessage
	// clientID aliases the caller's request, which stays alive while the
	// caller waits; for the bridge's own calls it is the upstream id.
	// clientToken is the client's progress token; nil when none was given.
	clientToken json.RawMessage
	reply       chan reply // buffer of one; empty when pooled
	// watch, when set, receives this call's related messages (progress,
	// requests from the child) through related, on the caller's goroutine.
	watch   Watcher
	related chan []byte // empty when pooled
	timer   *time.Timer
	idBuf   [20]byte
	out     []byte // the request as written to the child
}

// relatedQueue bounds the related messages waiting for their caller; past it
// they go to the session's GET stream instead.
const relatedQueue = 64

var pendingPool = sync.Pool{New: func() any {
	return &pending{reply: make(chan reply, 1), related: make(chan []byte, relatedQueue)}
}}

// getPending returns a pending whose timer fires after timeout.
func getPending(timeout time.Duration) *pending {
	p := pendingPool.Get().(*pending)
	if p.timer == nil {
		p.timer = time.NewTimer(timeout)
	} else {
		p.timer.Reset(timeout)
	}
	return p
}

// putPending recycles p. p must be out of the pending map with its reply
// channel drained.
func putPending(p *pending) {
	p.timer.Stop()
	p.sess, p.clientID, p.clientToken, p.watch = nil, nil, nil, nil
	if cap(p.out) > 64<<10 {
		p.out = nil
	}
	pendingPool.Put(p)
}

// reply ends a pending call: the response to write to the client (with the
// client's id restored), or an error.
type reply struct {
	msg []byte
	err error
}

// childRequest is a request from the child waiting for a client's answer.
type childRequest struct {
	sess Session
}

// Dispatcher multiplexes the sessions of one destination onto its child.
type Dispatcher struct {
	opts Options
	log  hclog.Logger
	seq  atomic.Uint64
	// restartsTotal counts every restart since the bridge started.
	restartsTotal atomic.Uint64

	// mu guards the lifecycle (state, cur, life, ready, failErr, lastExit,
	// restarts, started, unclaimed, lingerGen, closed), the initialize
	// cache, the session set and the subscription sets. It may be held
	// while taking pmu, never the other way round.
	mu         sync.RWMutex
	state      state
	cur        *child
	life       *lifetime
	ready      chan struct{} // closed when state leaves starting/restarting
	failErr    error
	lastExit   string
	restarts   int
	initResult json.RawMessage
	// sessions maps each attached session to the capabilities it declared.
	sessions map[Session]clientCaps
	subs     map[string]map[Session]struct{}
	// lingerGen changes whenever the session set does; a pending stop for
	// lack of sessions applies only if it has not changed since.
	lingerGen int
	// unclaimed: every session left while the child was starting; once up
	// it waits UnclaimedLinger for one.
	unclaimed bool
	// starting is when the current start began (zero when not starting).
	starting time.Time
	// restartingSince is when the current run of restarts began.
	restartingSince time.Time
	closed          bool

	// pmu guards pending and childReqs.
	pmu       sync.Mutex
	pending   map[uint64]*pending
	childReqs map[string]childRequest

	// tools is the tool catalogue; it has its own mutex.
	tools toolCatalog
}

// New returns a Dispatcher; the child starts on the first initialize (or on
// Prestart).
func New(opts Options) *Dispatcher {
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 5 * time.Minute
	}
	if opts.RestartPatience <= 0 {
		opts.RestartPatience = 3 * time.Second
	}
	if opts.UnclaimedLinger <= 0 {
		opts.UnclaimedLinger = time.Minute
	}
	opts.UnclaimedLinger = max(opts.UnclaimedLinger, opts.Linger)
	if opts.StopTimeout <= 0 {
		opts.StopTimeout = 10 * time.Second
	}
	if opts.NewBackOff == nil {
		opts.NewBackOff = func() backoff.BackOff { return &backoff.StopBackOff{} }
	}
	return &Dispatcher{
		opts:      opts,
		log:       opts.Logger,
		sessions:  map[Session]clientCaps{},
		subs:      map[string]map[Session]struct{}{},
		pending:   map[uint64]*pending{},
		childReqs: map[string]childRequest{},
	}
}

// Name is the destination's name.
func (d *Dispatcher) Name() string { return d.opts.Name }

// Status is a snapshot of the destination for health reports.
type Status struct {
	State    string
	PID      int
	Restarts int
	// RestartsTotal counts every restart since the bridge started.
	RestartsTotal uint64
	Sessions      int
	Started       time.Time
	LastExit      string
	// Children is how many child processes are running: 0 or 1 for a
	// shared child, more for a destination isolated per session.
	Children int
}

// Status reports the destination's current state.
func (d *Dispatcher) Status() Status {
	d.mu.RLock()
	defer d.mu.RUnlock()
	st := Status{State: d.state.String(), Restarts: d.restarts, RestartsTotal: d.restartsTotal.Load(), Sessions: len(d.sessions), LastExit: d.lastExit}
	if d.state == stateStopping {
		st.State = stateIdle.String()
	}
	if d.state == stateRunning && d.cur != nil {
		st.PID = d.cur.conn.PID()
		st.Started = d.cur.started
		st.Children = 1
	}
	return st
}

// running returns the running child, starting it when it is idle (or, with
// mayStart, failed) and waiting while it starts or restarts. A child in the
// idle state is started only by an initialize (mayStart) or for a session
// that is attached.
func (d *Dispatcher) running(ctx context.Context, timeout <-chan time.Time, mayStart bool) (*child, error) {
	first := true
	for {
		d.mu.Lock()
		switch d.state {
		case stateRunning:
			c := d.cur
			d.mu.Unlock()
			return c, nil
		case stateStopping:
			done := d.life.done
			d.mu.Unlock()
			select {
			case <-done:
				continue
			case <-timeout:
				return nil, ErrTimeout
			case <-ctx.Done():
				return nil, ctxErr(ctx)
			}
		case stateFailed:
			if !first || !mayStart {
				err := d.failErr
				d.mu.Unlock()
				return nil, err
			}
			fallthrough
		case stateIdle:
			if d.closed {
				d.mu.Unlock()
				return nil, fmt.Errorf("%w: destination %q: the bridge is shutting down", ErrUnavailable, d.opts.Name)
			}
			if !mayStart && len(d.sessions) == 0 {
				d.mu.Unlock()
				return nil, ErrNotInitialized
			}
			d.startLocked()
		}
		ready := d.ready
		var patience <-chan time.Time
		if d.state == stateRestarting {
			left := d.opts.RestartPatience - time.Since(d.restartingSince)
			if left <= 0 {
				err := d.restartingErrLocked()
				d.mu.Unlock()
				return nil, err
			}
			t := time.NewTimer(left)
			defer t.Stop()
			patience = t.C
		}
		d.mu.Unlock()
		first = false
		select {
		case <-ready:
		case <-patience:
			d.mu.RLock()
			err := d.restartingErrLocked()
			d.mu.RUnlock()
			return nil, err
		case <-timeout:
			return nil, d.startingErr()
		case <-ctx.Done():
			return nil, ctxErr(ctx)
		}
	}
}

// restartingErrLocked says how long the child has been restarting. d.mu
// must be held.
func (d *Dispatcher) restartingErrLocked() error {
	return fmt.Errorf("%w: destination %q has been restarting for %s (restart %d); retry in a few seconds",
		ErrRestarting, d.opts.Name, time.Since(d.restartingSince).Round(100*time.Millisecond), d.restarts)
}

// startingErr is the error of a caller that gave up waiting for the child:
// ErrStarting (with how long the start has run) while it starts.
func (d *Dispatcher) startingErr() error {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.state == stateStarting && !d.starting.IsZero() {
		return fmt.Errorf("%w: destination %q has been starting for %s (it may be downloading its package; start_timeout is %s); retry in a few seconds",
			ErrStarting, d.opts.Name, time.Since(d.starting).Round(time.Second), d.opts.StartTimeout)
	}
	return ErrTimeout
}

// ctxErr is the error of a call whose ctx ended: ErrTimeout for a
// deadline, the cause it was cancelled with when that is one of this
// package's errors (a session ended for a reason), else ErrCanceled.
func ctxErr(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return ErrTimeout
	}
	if cause := context.Cause(ctx); errors.Is(cause, ErrCanceled) || errors.Is(cause, ErrUnavailable) {
		return cause
	}
	return ErrCanceled
}

// startLocked begins a new lifetime. d.mu must be held.
func (d *Dispatcher) startLocked() {
	d.setStateLocked(stateStarting)
	d.failErr = nil
	d.restarts = 0
	life := &lifetime{stop: make(chan struct{}), done: make(chan struct{})}
	d.life = life
	go d.supervise(life)
}

// errRejected marks a handshake the child answered with an error: the same
// handshake would fail again, so it is not retried by restarting.
var errRejected = errors.New("the child refused the initialize handshake")

// supervise runs the child for one lifetime: start, handshake, watch, restart
// with backoff, give up after the policy's retries (at once when the child
// refuses the handshake).
func (d *Dispatcher) supervise(life *lifetime) {
	defer close(life.done)
	bo := d.opts.NewBackOff()
	for {
		select {
		case <-life.stop:
			d.setIdle(life)
			return
		default:
		}
		c, err := d.launch(life)
		if err == nil {
			d.setRunning(life, c)
			select {
			case <-c.done:
			case <-life.stop:
				d.stopChild(c)
				d.setIdle(life)
				return
			}
			// Unexpected exit. Make sure it is gone and reaped.
			d.stopChild(c)
			if time.Since(c.started) >= d.opts.StableAfter && d.opts.StableAfter > 0 {
				bo.Reset()
			}
			err = fmt.Errorf("the child exited (%s)", exitStatus(c.conn))
			d.mu.Lock()
			d.lastExit = exitStatus(c.conn)
			d.mu.Unlock()
		}
		select {
		case <-life.stop:
			// The failure came from being stopped: nothing to restart.
			d.setIdle(life)
			return
		default:
		}
		delay := bo.NextBackOff()
		if delay == backoff.Stop || errors.Is(err, errRejected) {
			d.setFailed(life, err)
			return
		}
		d.mu.Lock()
		if d.life == life && d.state == stateRunning {
			d.setStateLocked(stateRestarting)
			d.cur = nil
		}
		d.restarts++
		d.restartsTotal.Add(1)
		n := d.restarts
		d.mu.Unlock()
		d.log.Warn("child stopped unexpectedly; restarting", "destination", d.opts.Name, "error", err, "restart", n, "delay", delay)
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-life.stop:
			t.Stop()
			d.setIdle(life)
			return
		}
	}
}

func exitStatus(c Conn) string {
	select {
	case <-c.Exited():
	case <-time.After(time.Second):
	}
	if s := c.ExitStatus(); s != "" {
		return s
	}
	return "closed its stdout"
}

// startProgressEvery is how often a slow start is reported in the log.
const startProgressEvery = 10 * time.Second

// launch starts a child and performs the initialize handshake on it, within
// StartTimeout. A slow start is logged every startProgressEvery.
func (d *Dispatcher) launch(life *lifetime) (*child, error) {
	begun := time.Now()
	d.mu.Lock()
	d.starting = begun
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		d.starting = time.Time{}
		d.mu.Unlock()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), d.opts.StartTimeout)
	defer cancel()
	go func() {
		t := time.NewTicker(startProgressEvery)
		defer t.Stop()
		for {
			select {
			case <-life.stop:
				cancel()
				return
			case <-t.C:
				d.log.Info("child still starting", "destination", d.opts.Name, "elapsed", time.Since(begun).Round(time.Second), "start_timeout", d.opts.StartTimeout)
			case <-ctx.Done():
				return
			}
		}
	}()
	conn, err := d.opts.Launch(ctx)
	if err != nil {
		d.mu.Lock()
		d.lastExit = err.Error()
		d.mu.Unlock()
		return nil, err
	}
	c := &child{conn: conn, started: time.Now(), done: make(chan struct{})}
	go d.read(c)
	if err := d.handshake(ctx, c); err != nil {
		d.stopChild(c)
		d.mu.Lock()
		d.lastExit = exitStatus(conn)
		d.mu.Unlock()
		if errors.Is(err, ErrTimeout) {
			err = fmt.Errorf("the child did not answer initialize within start_timeout (%s): %w", d.opts.StartTimeout, err)
		}
		return nil, err
	}
	if el := time.Since(begun); el >= startProgressEvery {
		d.log.Info("slow start done", "destination", d.opts.Name, "elapsed", el.Round(time.Second))
	}
	return c, nil
}

// handshake initializes the child with the bridge's own parameters at the
// newest protocol version the bridge speaks; a child that answers with an
// error is asked again at each older version (a server should answer an
// unknown version with its own, but some refuse it). The result is cached.
func (d *Dispatcher) handshake(ctx context.Context, c *child) error {
	var m *jsonrpc.Message
	var refusals []string
	for i := len(SupportedVersions) - 1; i >= 0; i-- {
		p := getPending(d.opts.StartTimeout)
		msg, err := d.roundTrip(ctx, p, c, nil, nil, "initialize", d.handshakeParams(SupportedVersions[i]))
		putPending(p)
		if err == nil {
			m, err = jsonrpc.Parse(msg)
		}
		if err != nil {
			if errors.Is(err, ErrChildExited) {
				return fmt.Errorf("the child exited during initialize (%s)", exitStatus(c.conn))
			}
			return fmt.Errorf("initialize handshake failed: %w", err)
		}
		if len(m.Error) == 0 {
			break
		}
		refusals = append(refusals, SupportedVersions[i]+": "+truncate(m.Error, 200))
		m = nil
	}
	if m == nil {
		return fmt.Errorf("%w at every protocol version the bridge speaks (%s); check the server's own logs and version", errRejected, strings.Join(refusals, "; "))
	}
	if err := c.conn.WriteMessage([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err != nil {
		return err
	}
	d.mu.Lock()
	d.initResult = m.Result
	var uris []string
	for uri := range d.subs {
		uris = append(uris, uri)
	}
	d.mu.Unlock()
	// A restarted child has lost its subscriptions; renew them.
	for _, uri := range uris {
		d.fireAndForget(c, "resources/subscribe", uriParams(uri))
	}
	d.refreshTools(c)
	return nil
}

func uriParams(uri string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"uri": uri})
	return b
}

// setRunning publishes c, unless the lifetime is being stopped.
func (d *Dispatcher) setRunning(life *lifetime, c *child) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.life != life || d.state == stateStopping {
		return
	}
	d.cur = c
	d.setStateLocked(stateRunning)
	d.log.Info("child ready", "destination", d.opts.Name, "pid", c.conn.PID())
	if d.unclaimed && len(d.sessions) == 0 {
		// The clients that started it gave up waiting; keep it warm for
		// their retry, then stop it if none came.
		d.unclaimed = false
		gen := d.lingerGen
		d.log.Info("child is up but its clients left while it started; keeping it for their retry", "destination", d.opts.Name, "for", d.opts.UnclaimedLinger)
		time.AfterFunc(d.opts.UnclaimedLinger, func() { d.stopIfUnused(gen) })
	}
}

func (d *Dispatcher) setIdle(life *lifetime) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.life != life {
		return
	}
	d.setStateLocked(stateIdle)
	d.cur = nil
	d.life = nil
}

// setFailed marks the destination failed and ends its sessions.
func (d *Dispatcher) setFailed(life *lifetime, cause error) {
	d.mu.Lock()
	if d.life != life {
		d.mu.Unlock()
		return
	}
	if d.state == stateStopping {
		// Nobody is left to tell; a new initialize starts afresh.
		d.setStateLocked(stateIdle)
		d.cur, d.life = nil, nil
		d.mu.Unlock()
		return
	}
	msg := fmt.Sprintf("destination %q failed", d.opts.Name)
	if d.restarts > 0 {
		msg += fmt.Sprintf(" after %d restart(s)", d.restarts)
	}
	msg += ": " + cause.Error()
	if d.lastExit != "" && !strings.Contains(msg, d.lastExit) {
		msg += "; last exit: " + d.lastExit
	}
	d.failErr = unavailable(msg + "; the next initialize will try to start it again")
	d.setStateLocked(stateFailed)
	d.cur = nil
	d.life = nil
	sessions := make([]Session, 0, len(d.sessions))
	for s := range d.sessions {
		sessions = append(sessions, s)
	}
	// The sessions end now: forget them and their subscriptions.
	clear(d.sessions)
	clear(d.subs)
	err := d.failErr
	d.mu.Unlock()
	d.log.Error("destination failed; giving up on restarts", "destination", d.opts.Name, "error", cause, "last_exit", d.lastExit)
	for _, s := range sessions {
		s.End(err)
	}
}

func (d *Dispatcher) stopChild(c *child) {
	ctx, cancel := context.WithTimeout(context.Background(), d.opts.StopTimeout)
	defer cancel()
	if err := c.conn.Stop(ctx); err != nil {
		d.log.Error("child did not stop in time", "destination", d.opts.Name, "pid", c.conn.PID(), "error", err)
	}
}

// stopLifetimeLocked asks the current lifetime to end and returns it (nil when
// there is none). From now on callers wait for it to end. d.mu must be held.
func (d *Dispatcher) stopLifetimeLocked() *lifetime {
	life := d.life
	if life != nil && d.state != stateStopping {
		close(life.stop)
		d.setStateLocked(stateStopping)
		d.cur = nil
	}
	return life
}

// Close stops the child and refuses new starts. It returns when the child
// has exited or ctx ends.
func (d *Dispatcher) Close(ctx context.Context) error {
	d.mu.Lock()
	d.closed = true
	life := d.stopLifetimeLocked()
	d.mu.Unlock()
	if life == nil {
		return nil
	}
	select {
	case <-life.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
