package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
)

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
	// HandshakeTimeout bounds the child's answer to initialize.
	HandshakeTimeout time.Duration
	// Linger is how long the child is kept after its last session ends.
	Linger time.Duration
	// StopTimeout bounds stopping the child.
	StopTimeout time.Duration
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
	// restarts),
	// the initialize cache, the session set and the subscription sets.
	mu         sync.RWMutex
	state      state
	cur        *child
	life       *lifetime
	ready      chan struct{} // closed when state leaves starting/restarting
	failErr    error
	lastExit   string
	restarts   int
	initParams json.RawMessage
	initResult json.RawMessage
	sessions   map[Session]struct{}
	subs       map[string]map[Session]struct{}
	lingerGen  int
	closed     bool

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
	if opts.HandshakeTimeout <= 0 {
		opts.HandshakeTimeout = 60 * time.Second
	}
	if opts.StopTimeout <= 0 {
		opts.StopTimeout = 10 * time.Second
	}
	if opts.NewBackOff == nil {
		opts.NewBackOff = func() backoff.BackOff { return &backoff.StopBackOff{} }
	}
	return &Dispatcher{
		opts:      opts,
		log:       opts.Logger,
		sessions:  map[Session]struct{}{},
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
	}
	return st
}

// running returns the running child, starting it when it is idle (or, with
// mayRestartFailed, failed) and waiting while it starts or restarts.
func (d *Dispatcher) running(ctx context.Context, timeout <-chan time.Time, mayRestartFailed bool) (*child, error) {
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
			if !first || !mayRestartFailed {
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
			if d.initParams == nil {
				d.mu.Unlock()
				return nil, ErrNotInitialized
			}
			d.startLocked()
		}
		ready := d.ready
		d.mu.Unlock()
		first = false
		select {
		case <-ready:
		case <-timeout:
			return nil, ErrTimeout
		case <-ctx.Done():
			return nil, ctxErr(ctx)
		}
	}
}

func ctxErr(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return ErrTimeout
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

// supervise runs the child for one lifetime: start, handshake, watch, restart
// with backoff, give up after the policy's retries.
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
		delay := bo.NextBackOff()
		if delay == backoff.Stop {
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

// launch starts a child and performs the initialize handshake on it.
func (d *Dispatcher) launch(life *lifetime) (*child, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d.opts.HandshakeTimeout)
	defer cancel()
	go func() {
		select {
		case <-life.stop:
			cancel()
		case <-ctx.Done():
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
		return nil, err
	}
	return c, nil
}

// handshake sends the cached initialize parameters and caches the result.
func (d *Dispatcher) handshake(ctx context.Context, c *child) error {
	d.mu.RLock()
	params := d.initParams
	d.mu.RUnlock()
	p := getPending(d.opts.HandshakeTimeout)
	defer putPending(p)
	msg, err := d.roundTrip(ctx, p, c, nil, nil, "initialize", params)
	var m *Message
	if err == nil {
		m, err = Parse(msg)
	}
	if err != nil {
		if errors.Is(err, ErrChildExited) {
			return fmt.Errorf("the child exited during initialize (%s)", exitStatus(c.conn))
		}
		return fmt.Errorf("initialize handshake failed: %w", err)
	}
	if len(m.Error) > 0 {
		return fmt.Errorf("the child answered initialize with an error: %s", m.Error)
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
	d.failErr = fmt.Errorf("%w: destination %q failed after %d restart(s): %v; last exit: %s; the next initialize will try to start it again",
		ErrUnavailable, d.opts.Name, d.restarts, cause, d.lastExit)
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
