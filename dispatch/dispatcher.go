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

	"github.com/stelae-bridge/stelae-bridge/supervisor"
)

// Errors a call can end with; the HTTP layer maps them to status codes. The
// ones about the child's availability are the supervisor's.
var (
	// ErrUnavailable: the child is not running and could not be (re)started.
	ErrUnavailable = supervisor.ErrUnavailable
	// ErrChildExited: the child exited while the call was in flight.
	ErrChildExited = errors.New("the child process exited before answering")
	// ErrTimeout: no answer within the request timeout.
	ErrTimeout = supervisor.ErrTimeout
	// ErrTooLarge: the child's answer exceeded the maximum message size.
	ErrTooLarge = errors.New("the child's answer exceeded the maximum message size and was discarded")
	// ErrCanceled: the caller went away or its session ended.
	ErrCanceled = supervisor.ErrCanceled
	// ErrNotInitialized: no client has sent initialize yet.
	ErrNotInitialized = supervisor.ErrNotStarted
	// ErrStarting: the child is still starting (its start goes on).
	ErrStarting = supervisor.ErrStarting
	// ErrRestarting: the child crashed and has been restarting for longer
	// than Options.RestartPatience; callers are told at once.
	ErrRestarting = supervisor.ErrRestarting
)

// What the HTTP layer needs of the supervisor, said by dispatch (session
// imports dispatch only): the states it reports for a destination whose
// sessions have children of their own, the stop timeout of such a child,
// and the reason of a failure a client may read.
const (
	StateIdle    = supervisor.StateIdle
	StateRunning = supervisor.StateRunning
)

// DefaultStopTimeout bounds stopping a child with the default stop grace
// (supervisor.StopTimeout).
func DefaultStopTimeout() time.Duration { return supervisor.DefaultOptions().StopTimeout }

// DefaultStartTimeout bounds starting a child and its handshake when its
// destination sets no start timeout (supervisor.Options.StartTimeout).
func DefaultStartTimeout() time.Duration { return supervisor.DefaultOptions().StartTimeout }

// PublicReason is err's text as a client may read it (supervisor.PublicReason).
func PublicReason(err error) string { return supervisor.PublicReason(err) }

// Session is what the dispatcher needs of one client session.
type Session interface {
	// SessionID names the session in logs.
	SessionID() string
	// Deliver queues a message for the session's GET streams. It never
	// blocks; false means the message could not be queued.
	Deliver(msg []byte) bool
	// End ends the session because its destination can no longer serve it.
	End(reason error)
	// User is whom the session's messages belong to, as a comparable key:
	// the session itself, or — where auth identifies principals — its
	// principal, so that one principal's sessions and requests count as
	// one user. What the child sends is routed to a user only when every
	// client call in flight is that user's (attribution.go). It is called
	// with the dispatcher's locks held: it must not block.
	User() any
}

// Transient is implemented by a Session attached only for one request or
// one listen stream (MCP 2026-07-28 callers): it has no GET stream, so it is
// never "the sole session" an unattributable log line goes to.
type Transient interface {
	Transient() bool
}

// Options configure a Dispatcher.
type Options struct {
	// Name is the destination's name.
	Name string
	// Launch starts a child.
	Launch supervisor.Launcher
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
	// waits for one once it is up (at least Linger; default 1 minute).
	UnclaimedLinger time.Duration
	// Roots, when set, is the result the bridge answers the child's
	// roots/list with ({"roots":[…]}): the destination's configured file
	// system boundary. Nil routes roots/list to a client session.
	Roots json.RawMessage
	// StopTimeout bounds stopping the child.
	StopTimeout time.Duration
	// RestartPatience is how long a call waits for a crashed child to come
	// back before it is answered ErrRestarting (default 3 s).
	RestartPatience time.Duration
	// Logger is the dispatcher's logger, carrying the destination.
	Logger hclog.Logger
	// ToolAllowed, when set, hides the tools it returns false for: they are
	// removed from tools/list answers and from Tools, and a tools/call of one
	// is refused without reaching the child. nil allows every tool. It must
	// be fast and safe for concurrent use. SetToolAllowed replaces it.
	ToolAllowed func(name string) bool
	// BridgeVersion is the bridge's version, sent as clientInfo.version in
	// the bridge's own initialize.
	BridgeVersion string
	// Logs is what becomes of a log message (notifications/message) that
	// cannot be attributed to one session: LogsAttributed (the default
	// when empty), LogsFanout or LogsDrop. See routeLog.
	Logs string
	// Era is which protocol the child is spoken to in: EraAuto (or ""),
	// the one it says it speaks to server/discover (2026-07-28 when it
	// does); Era2025, initialize without asking; EraModern, 2026-07-28 or
	// the start fails.
	Era string
	// Interactive serves the clients' calls one at a time, so that every
	// request and log line the child sends is attributed to the one call
	// in flight (turns.go).
	Interactive bool
	// InteractiveTool, when set (and Interactive is not), reports the
	// tools (and prompts) whose calls (prompts/get) run alone: their
	// requests and log lines are
	// attributed to them, and the other calls run together as usual but
	// never beside one of them. It must be fast and safe for concurrent
	// use.
	InteractiveTool func(name string) bool
	// Fan, when set, serves some of the clients' calls on other
	// dispatchers (a profile's members: fan.go).
	Fan Fan
	// TraceMeta, when set (tracing is on: telemetry.Tracing.Meta), gives
	// the _meta members of the W3C trace context of a call's context,
	// written into the request to the child unless the client gave its
	// own traceparent (nil: none).
	TraceMeta func(ctx context.Context) []byte
	// TraceChild, when set (tracing is on: telemetry.Tracing.ChildCall),
	// begins the span of a client's request to the child (method, and
	// the tool's or prompt's name), under the call's context: its
	// context's trace is what TraceMeta writes, and end ends it with the
	// call.
	TraceChild func(ctx context.Context, method, target string) (context.Context, func(failed bool))
	// TraceWait, when set (tracing is on: telemetry.Tracing.Wait), begins
	// the span of a wait of the call's (ctx: the call's context) that
	// began at since: for its turn, for its child to run, for its
	// session's answers to a 2026 child's input requests.
	TraceWait func(ctx context.Context, what string, since time.Time) func(err error)
	// TraceRelated, when set (tracing is on: telemetry.Tracing.Related),
	// notes on the call's span (ctx: the call's context) a message of the
	// child's that goes to the call's caller: a request (sampling,
	// elicitation) or a notification (progress, a log line).
	TraceRelated func(ctx context.Context, method string, request bool)
}

// child is one running instance of the destination's process, as the
// dispatcher uses it: the supervisor's Child and the end of its output.
type child struct {
	conn supervisor.Child
	// done is closed when the reader has seen the end of stdout.
	done chan struct{}
	// handshaken is set once the child answered initialize; before, its
	// lines that are not JSON-RPC are noted (noise) for the error of a
	// caller that gives up waiting for the start.
	handshaken atomic.Bool
	// modern: the child speaks MCP 2026-07-28 and is spoken to in it
	// (modern.go); set by the handshake, before the child is handed out.
	modern bool
	// noiseMu guards noise and lastNoise.
	noiseMu   sync.Mutex
	noise     int
	lastNoise string
}

// noted records a line of the child's that is not JSON-RPC, written
// before its handshake.
func (c *child) noted(line []byte) {
	c.noiseMu.Lock()
	c.noise++
	c.lastNoise = truncate(line, 120)
	c.noiseMu.Unlock()
}

// startNote says what the child wrote instead of answering initialize
// ("" when nothing was noted).
func (c *child) startNote() string {
	c.noiseMu.Lock()
	defer c.noiseMu.Unlock()
	if c.noise == 0 {
		return ""
	}
	return fmt.Sprintf("it has written %d line(s) to stdout that are not JSON-RPC (the last: %q) and no answer to initialize: an MCP stdio server writes only JSON-RPC there (its logs go to stderr); check the command, its arguments, and that the server does not log to stdout", c.noise, c.lastNoise)
}

// Dispatcher multiplexes the sessions of one destination onto its child:
// upstream ids, pending calls, the routing of the child's messages, the
// initialize cache, subscriptions and the tool catalogue. The child's
// lifetimes are its supervisor's.
type Dispatcher struct {
	opts Options
	log  hclog.Logger
	sup  *supervisor.Supervisor[*child]
	seq  atomic.Uint64
	// starting is the child whose handshake runs (nil when none).
	starting atomic.Pointer[child]
	// tasks are the owners of the child's own tasks (childtasks.go).
	tasks childTasks

	// mu guards initResult, discovered, sessions and subs. It may be held while taking
	// pmu, never the other way round.
	mu         sync.RWMutex
	initResult json.RawMessage
	// discovered is the child's server/discover result when it speaks
	// MCP 2026-07-28 (nil: a 2025 child).
	discovered json.RawMessage
	// sessions maps each attached session to the capabilities it declared.
	sessions map[Session]clientCaps
	subs     map[string]map[Session]struct{}

	// pmu guards pending, childReqs, inputs, abandoned, turns and the pending
	// calls' related queues.
	pmu       sync.Mutex
	pending   map[uint64]*Call
	childReqs map[string]childRequest
	// inputs are the requests sent to 2025 sessions for their calls on a
	// 2026 child, by the id the bridge minted (modern.go).
	inputs map[string]inputWait
	// abandoned are calls given up on that the child may still be working
	// on (abandoned.go), by upstream id; each counts for grace
	// (abandonGrace; tests shorten it).
	abandoned map[uint64]abandonedCall
	grace     time.Duration
	// settled (in settledOrder, oldest first) are abandoned calls dropped
	// because the child read their cancellation; goesOn: the child
	// answered one anyway (abandoned.go). Both reset when the child exits.
	settled      map[uint64]struct{}
	settledOrder []uint64
	goesOn       bool
	// turns schedule the client calls of an interactive destination
	// (turns.go); unused otherwise.
	turns turns
	// refused counts the child's requests that went to nobody, by reason
	// (in the order of refusals); warned: the first of each was logged at
	// warn.
	refused [len(refusals)]atomic.Uint64
	warned  [len(refusals)]atomic.Bool

	// listen is the listen held with a 2026 child (listen.go); it has
	// its own mutex.
	listen childListen
	// tools is the tool catalogue; it has its own mutex.
	tools toolCatalog
	// filter is Options.ToolAllowed as it stands (SetToolAllowed replaces
	// it on a reload); nil allows every tool.
	filter atomic.Pointer[toolFilter]
	// logsDropped counts the child's log messages no session received.
	logsDropped atomic.Uint64
	// closing ends the bridge's own calls (the catalogue's fetch) on Close;
	// work counts the goroutines Close waits for.
	closing context.Context
	close   context.CancelFunc
	work    sync.WaitGroup
}

// New returns a Dispatcher; the child starts on the first initialize (or on
// Prestart).
func New(opts Options) *Dispatcher {
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	// Every line names its destination.
	opts.Logger = opts.Logger.With("destination", opts.Name)
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = DefaultStartTimeout()
	}
	d := &Dispatcher{
		opts:      opts,
		log:       opts.Logger,
		sessions:  map[Session]clientCaps{},
		subs:      map[string]map[Session]struct{}{},
		pending:   map[uint64]*Call{},
		childReqs: map[string]childRequest{},
		inputs:    map[string]inputWait{},
		abandoned: map[uint64]abandonedCall{},
		grace:     abandonGrace,
	}
	if opts.ToolAllowed != nil {
		d.filter.Store(&toolFilter{opts.ToolAllowed})
	}
	d.closing, d.close = context.WithCancel(context.Background())
	d.sup = supervisor.New(supervisor.Options{
		Name:            opts.Name,
		Launch:          opts.Launch,
		NewBackOff:      opts.NewBackOff,
		StableAfter:     opts.StableAfter,
		StartTimeout:    opts.StartTimeout,
		Linger:          opts.Linger,
		UnclaimedLinger: opts.UnclaimedLinger,
		StopTimeout:     opts.StopTimeout,
		RestartPatience: opts.RestartPatience,
		Logger:          opts.Logger,
		StartNote:       d.startNote,
	}, d.ready, d.endAll)
	return d
}

// Name is the destination's name.
func (d *Dispatcher) Name() string { return d.opts.Name }

// Status is a snapshot of the destination for health reports.
type Status struct {
	supervisor.Status
	// Sessions attached.
	Sessions int
	// ChildSpeaks2026: the running child answered server/discover for
	// MCP 2026-07-28, and is spoken to in it (modern.go).
	ChildSpeaks2026 bool
	// LogsDropped counts the child's log messages (notifications/message)
	// that reached no session: not attributable to one (Options.Logs).
	LogsDropped uint64
	// Refused counts the child's requests answered with an error because
	// no user could be known to be theirs, by reason (RefusedUsers, …;
	// every reason is present).
	Refused map[string]uint64
	// Abandoned is the number of calls given up on (cancelled, timed out,
	// their session ended) that the child has not answered yet and may
	// still be working on: until it answers them or abandonGrace passes,
	// what it sends is not attributed to another user (abandoned.go).
	Abandoned int
	// GoesOn: the child answered a call after reading its cancellation
	// (it does not stop working on cancelled calls); until it exits, an
	// abandoned call counts until the child answers it, up to strictGrace
	// (abandoned.go).
	GoesOn bool
}

// Status reports the destination's current state.
func (d *Dispatcher) Status() Status {
	d.mu.RLock()
	n, speaks := len(d.sessions), d.discovered != nil
	d.mu.RUnlock()
	refused := make(map[string]uint64, len(refusals))
	for i, r := range refusals {
		refused[r] = d.refused[i].Load()
	}
	d.pmu.Lock()
	d.expireAbandoned(time.Now())
	abandoned, goesOn := len(d.abandoned), d.goesOn
	d.pmu.Unlock()
	st := Status{Status: d.sup.Status(), Sessions: n, LogsDropped: d.logsDropped.Load(), Refused: refused, Abandoned: abandoned, GoesOn: goesOn}
	st.ChildSpeaks2026 = speaks && st.State == supervisor.StateRunning
	return st
}

// current is the running child, or nil.
func (d *Dispatcher) current() *child {
	c, ok := d.sup.Current()
	if !ok {
		return nil
	}
	return c
}

// ready is the supervisor's Ready: it reads the new child's stdout and
// performs the bridge's handshake with it.
func (d *Dispatcher) ready(ctx context.Context, conn supervisor.Child) (*child, <-chan struct{}, error) {
	c := &child{conn: conn, done: make(chan struct{})}
	d.starting.Store(c)
	defer d.starting.CompareAndSwap(c, nil)
	go d.read(c) // ends with the child's stdout
	if err := d.handshake(ctx, c); err != nil {
		return nil, nil, err
	}
	c.handshaken.Store(true)
	return c, c.done, nil
}

// startNote is the supervisor's StartNote: what the child being started
// wrote instead of answering initialize.
func (d *Dispatcher) startNote() string {
	if c := d.starting.Load(); c != nil {
		return c.startNote()
	}
	return ""
}

// endAll ends every session that attached before failure: the destination
// failed.
func (d *Dispatcher) endAll(failure uint64, err error) {
	d.mu.Lock()
	var sessions []Session
	for s, caps := range d.sessions {
		if caps.failures >= failure {
			continue // it came after this failure: its initialize starts anew
		}
		sessions = append(sessions, s)
		// The session ends now: forget it and its subscriptions.
		delete(d.sessions, s)
		for uri, subs := range d.subs {
			delete(subs, s)
			if len(subs) == 0 {
				delete(d.subs, uri)
			}
		}
	}
	d.mu.Unlock()
	for _, s := range sessions {
		d.sup.Release()
		s.End(err)
	}
}

// Prestart starts the child now, without waiting for a client's initialize,
// so that it is warm (and its tool catalogue known) when the first client
// comes. See supervisor.Supervisor.Prestart.
func (d *Dispatcher) Prestart() { d.sup.Prestart() }

// Close stops the child and refuses new starts. It returns when the child
// has exited and the dispatcher's own work has ended, or when ctx ends.
func (d *Dispatcher) Close(ctx context.Context) error {
	d.close()
	err := d.sup.Close(ctx)
	done := make(chan struct{})
	go func() {
		d.work.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	return err
}

// Restart is the operator's restart of the child (supervisor.Restart): a
// fresh child is started with the same command; sessions stay attached
// and are served by it after its handshake. It reports whether a child
// is starting (false: none was running and none was needed).
func (d *Dispatcher) Restart() (bool, error) { return d.sup.Restart() }
