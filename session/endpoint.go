package session

import (
	"context"
	"fmt"
	"github.com/stelae-bridge/stelae-bridge/httpx"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/stelae-bridge/stelae-bridge/dispatch"
	"github.com/stelae-bridge/stelae-bridge/telemetry"
)

// Options configure an endpoint. The zero value of a field takes its
// default (the bridge fills them all from its own options).
type Options struct {
	// MaxSessions is the session cap per destination.
	MaxSessions int
	// RequestTimeout bounds one POSTed request (504 after it).
	RequestTimeout time.Duration
	// MaxBodyBytes caps a POST body (413 above it).
	MaxBodyBytes int64
	// BodyTimeout bounds reading one POST body; BodyIdleTimeout bounds a
	// pause in it (408 after either).
	BodyTimeout     time.Duration
	BodyIdleTimeout time.Duration
	// SessionTTL expires sessions idle this long.
	SessionTTL time.Duration
	// KeepAlive is the interval of SSE keepalive comments.
	KeepAlive time.Duration
	// StreamQueue is how many events an SSE stream may fall behind before it
	// is closed (its client reconnects and resumes from the event log).
	StreamQueue int
	// MaxStreamsPerSession caps the open GET streams of one session (429
	// past it); Limits caps those of the whole bridge.
	MaxStreamsPerSession int
	// WriteTimeout bounds one write to a client.
	WriteTimeout time.Duration
	// AuditBodies logs request and response bodies, secrets redacted.
	AuditBodies bool
	// ResponseMode is ModeAuto (default), ModeJSON or ModeSSE.
	ResponseMode string
	// EventLogSize bounds the events kept per session for resumption.
	EventLogSize int
	// ProtocolEras is ErasBoth (default: 2025 sessions and 2026-07-28
	// requests) or Eras2025.
	ProtocolEras string
	// Sessionless is SessionlessServe (default: a 2025 request without a
	// session is served on the destination's child) or SessionlessReject
	// (400, as before).
	Sessionless string
	// CacheTTL and CacheScope are the caching hints (ttlMs, cacheScope)
	// modern clients get with list and read results and server/discover;
	// 0 and "" mean 0 and private: do not reuse.
	CacheTTL   time.Duration
	CacheScope string
	// TaskAfter is how long a task-supporting call of a modern client that
	// declared the tasks extension runs before it becomes a task; TaskTTL
	// how long a task is kept (tasks.go).
	TaskAfter time.Duration
	TaskTTL   time.Duration
	// InputWait is how long a modern call parked for its client's input
	// (MRTR, mrtr.go) waits for the retry.
	InputWait time.Duration
	// StopTimeout bounds stopping one session's own child (isolation:
	// session).
	StopTimeout time.Duration
	// Store keeps the sessions of a shared child across a restart (nil:
	// in memory only; a destination isolated per session keeps none).
	Store Store
	// Logger is the HTTP layer's logger.
	Logger hclog.Logger
	// LogOutput, when set, is where Logger writes (safe for concurrent
	// use), and LogJSON whether it writes JSON: with text output the
	// access log is written there directly, in hclog's format
	// (accesslog.go).
	LogOutput io.Writer
	LogJSON   bool
	// Tail, when set, is given every POST the access log writes (the
	// operator console's live log; tail.go).
	Tail Tail
	// TailBodies, when positive, has the tail's entries carry the
	// arguments and answers of calls, each kept whole up to this many
	// bytes (AccessEntry.Arguments; the audit trail's).
	TailBodies int
	// Tracing, when set, gives each MCP request a server span
	// (telemetry); nil is tracing off.
	Tracing *telemetry.Tracing
}

// DefaultOptions are the endpoint's defaults, written here once: the
// bridge's (bridge.Defaults) and its flags' come from them.
func DefaultOptions() Options {
	return Options{
		MaxSessions:          10,
		RequestTimeout:       30 * time.Second,
		MaxBodyBytes:         10 << 20,
		BodyTimeout:          30 * time.Second,
		BodyIdleTimeout:      10 * time.Second,
		SessionTTL:           30 * time.Minute,
		StopTimeout:          dispatch.DefaultStopTimeout(),
		TaskAfter:            time.Second,
		TaskTTL:              time.Hour,
		InputWait:            2 * time.Minute,
		KeepAlive:            15 * time.Second,
		WriteTimeout:         30 * time.Second,
		StreamQueue:          256,
		MaxStreamsPerSession: 8,
		EventLogSize:         512,
		ResponseMode:         ModeAuto,
	}
}

// setDefaults fills every zero field from DefaultOptions.
func (o *Options) setDefaults() {
	d := DefaultOptions()
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	defInt := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defInt(&o.MaxSessions, d.MaxSessions)
	def(&o.RequestTimeout, d.RequestTimeout)
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = d.MaxBodyBytes
	}
	def(&o.BodyTimeout, d.BodyTimeout)
	def(&o.BodyIdleTimeout, d.BodyIdleTimeout)
	def(&o.SessionTTL, d.SessionTTL)
	def(&o.StopTimeout, d.StopTimeout)
	def(&o.TaskAfter, d.TaskAfter)
	def(&o.TaskTTL, d.TaskTTL)
	def(&o.InputWait, d.InputWait)
	def(&o.KeepAlive, d.KeepAlive)
	def(&o.WriteTimeout, d.WriteTimeout)
	defInt(&o.StreamQueue, d.StreamQueue)
	defInt(&o.MaxStreamsPerSession, d.MaxStreamsPerSession)
	defInt(&o.EventLogSize, d.EventLogSize)
	if o.ResponseMode == "" {
		o.ResponseMode = d.ResponseMode
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
}

// Limits are what every endpoint of a bridge shares: the memory request
// bodies may hold, the number of open streams (GET streams and
// subscriptions/listen streams), and each principal's listen streams.
type Limits struct {
	bodies  budget
	dropped dropped // body buffers dropped since the last collection
	streams budget
	// MaxStreams is the streams' cap, for messages.
	MaxStreams int
	// listenMu guards listens: the open listen streams of each principal
	// (auth on), across destinations.
	listenMu sync.Mutex
	listens  map[Principal]int
}

// takeListen counts one more listen stream of principal p, unless p has
// max already (or the bridge its maximum of streams); full says which.
func (l *Limits) takeListen(p Principal, max int) (ok, principalFull bool) {
	if p != (Principal{}) {
		l.listenMu.Lock()
		defer l.listenMu.Unlock()
		if l.listens[p] >= max {
			return false, true
		}
	}
	if !l.streams.take(1) {
		return false, false
	}
	if p != (Principal{}) {
		if l.listens == nil {
			l.listens = map[Principal]int{}
		}
		l.listens[p]++
	}
	return true, false
}

// giveListen gives back a listen stream of principal p.
func (l *Limits) giveListen(p Principal) {
	l.streams.give(1)
	if p == (Principal{}) {
		return
	}
	l.listenMu.Lock()
	defer l.listenMu.Unlock()
	if l.listens[p]--; l.listens[p] <= 0 {
		delete(l.listens, p)
	}
}

// NewLimits makes the shared limits: maxBodyMemory bytes of body buffers
// (at least one body of maxBody), maxStreams open GET streams.
func NewLimits(maxBodyMemory, maxBody int64, maxStreams int) *Limits {
	l := &Limits{MaxStreams: maxStreams}
	l.bodies.max = max(maxBodyMemory, maxBody+1)
	l.dropped.threshold = l.bodies.max / 8
	l.streams.max = int64(maxStreams)
	return l
}

// BodyBytes is the body buffer memory in use.
func (l *Limits) BodyBytes() int64 { return l.bodies.used.Load() }

// Endpoint is one destination's MCP Streamable HTTP endpoint: it serves
// POST, GET, DELETE, HEAD and OPTIONS at /{destination}/mcp, and owns the
// destination's sessions (cap, eviction, expiry), their streams and event
// logs.
type Endpoint struct {
	name string
	// shared serves every session; nil when perSession makes one per
	// session (isolation), tracked in kids.
	shared     *dispatch.Dispatcher
	perSession func() *dispatch.Dispatcher
	kids       children
	reg        *registry
	limits     *Limits
	opts       *Options
	log        hclog.Logger
	// access writes the access log without hclog (nil: through hclog).
	access *accessLog
	m      *Metrics
	// shutdown is closed when the endpoint stops: open streams end.
	shutdown     chan struct{}
	shutdownOnce sync.Once
	janitorDone  chan struct{}
	// pumps counts the GET streams' goroutines; Shutdown waits for them.
	pumps sync.WaitGroup
	// sl is what the endpoint keeps for requests without a session.
	sl stateless
	// users are the endpoints of a destination with a child per user
	// (users.go); nil for another. With them this endpoint serves no
	// session itself: it routes each request to its user's.
	users *users
	// user is whose endpoint this is, on such a destination (users.go
	// sets it as it makes one); zero otherwise.
	user User
	// calls counts the calls being answered on POSTs: a session's, a
	// request's without a session, an initialize's (Drain waits for
	// none). A subscriptions/listen stream is not one: it lasts as long as
	// its client wants.
	calls atomic.Int64
}

// NewEndpoint serves destination name: with shared, one child for every
// session; with perSession instead, one per session ('isolation:
// session'). It starts the endpoint's session janitor; Shutdown ends it.
func NewEndpoint(name string, shared *dispatch.Dispatcher, perSession func() *dispatch.Dispatcher, limits *Limits, m *Metrics, opts Options) *Endpoint {
	opts.setDefaults()
	ep := &Endpoint{name: name, shared: shared, perSession: perSession, reg: newRegistry(opts.MaxSessions), limits: limits, opts: &opts,
		log: opts.Logger.With("destination", name), m: m, shutdown: make(chan struct{}), janitorDone: make(chan struct{})}
	ep.access = newAccessLog(ep.log, opts.LogOutput, opts.LogJSON)
	if perSession != nil {
		ep.shared = nil
		ep.kids.live = map[*dispatch.Dispatcher]struct{}{}
		ep.kids.stopTimeout = opts.StopTimeout
		ep.kids.spawns = spawnRate(opts.MaxSessions)
	}
	if m == nil {
		ep.m = NewMetrics(nil, name)
	}
	for _, reason := range []string{"session_cap", "invalid_initialize", "child_cap"} {
		ep.m.Refused.WithLabelValues(reason) // 0 from the start
	}
	if ep.shared == nil {
		ep.opts.Store = nil
	}
	go ep.janitor()
	return ep
}

// Name is the destination's name.
func (ep *Endpoint) Name() string { return ep.name }

// SessionTTL is how long an idle session lives.
func (ep *Endpoint) SessionTTL() time.Duration { return ep.opts.SessionTTL }

// callDone ends a session call's count in calls and in the metrics.
func (ep *Endpoint) callDone() {
	ep.calls.Add(-1)
	ep.m.Inflight.Dec()
}

// Isolated reports whether each session has a child of its own.
func (ep *Endpoint) Isolated() bool { return ep.perSession != nil }

// UserIsolated reports whether each user has a child of their own.
func (ep *Endpoint) UserIsolated() bool { return ep.users != nil }

// janitor expires idle sessions.
func (ep *Endpoint) janitor() {
	defer close(ep.janitorDone)
	every := ep.opts.SessionTTL / 4
	if every > time.Minute {
		every = time.Minute
	}
	if every < 10*time.Millisecond {
		every = 10 * time.Millisecond
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ep.shutdown:
			return
		case <-t.C:
			for _, s := range ep.reg.expired(ep.opts.SessionTTL) {
				ep.log.Info("session expired", "session", s.id, "ttl", ep.opts.SessionTTL)
				ep.endSession(s, errExpired)
			}
		}
	}
}

// Why sessions end; calls in flight end with the same error.
var (
	errExpired  = fmt.Errorf("%w: the session expired", dispatch.ErrCanceled)
	errDeleted  = fmt.Errorf("%w: the session was deleted", dispatch.ErrCanceled)
	errEvicted  = fmt.Errorf("%w: the session was evicted to make room for a new one", dispatch.ErrCanceled)
	errShutdown = fmt.Errorf("%w: the bridge is shutting down; retry when it is back", dispatch.ErrUnavailable)
	// errReconfigured ends the sessions of a destination a reload changed
	// or removed.
	errReconfigured = fmt.Errorf("%w: the destination's configuration changed; send initialize to start a new session", dispatch.ErrCanceled)
	errChildRoom    = fmt.Errorf("%w: no room for the session's child", dispatch.ErrUnavailable)
)

// endSession ends a session: it leaves the registry (if still there), its
// streams close, its calls end with reason, and its own child, when it has
// one, stops. It can safely be called more than once.
func (ep *Endpoint) endSession(s *Session, reason error) {
	ep.reg.remove(s)
	s.close(reason)
	s.d.Detach(s, reason)
	ep.closeOwnChild(s.d)
	if ep.opts.Store != nil && reason != errShutdown {
		// Ended for good; one the bridge's shutdown ends is kept for the
		// next bridge (saveSessions).
		ep.forget(s)
	}
}

// Shutdown ends every session and its streams, and waits (until ctx ends)
// for the streams and the sessions' own children to be gone; a shared
// dispatcher is closed by its owner.
func (ep *Endpoint) Shutdown(ctx context.Context) { ep.end(ctx, errShutdown) }

// Retire is Shutdown for an endpoint whose destination a reload of the
// configuration changed or removed: its sessions end with errReconfigured
// (a client's next request gets 404 and initializes anew).
func (ep *Endpoint) Retire(ctx context.Context) { ep.end(ctx, errReconfigured) }

// Drain waits, until ctx ends, for the calls being answered (calls) to be
// answered; it reports whether they were. It does not wait for a shared child that
// is not running: what waits for it to start would wait in vain, and the
// shutdown that follows answers it (503).
func (ep *Endpoint) Drain(ctx context.Context) bool {
	if ep.users != nil {
		ok := true
		for _, ue := range ep.users.all() {
			ok = ue.ep.Drain(ctx) && ok
		}
		return ok
	}
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for ep.calls.Load() > 0 {
		if ep.shared != nil && ep.shared.Status().State != dispatch.StateRunning {
			return true
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// end ends every session with reason, and what the endpoint runs.
func (ep *Endpoint) end(ctx context.Context, reason error) {
	if ep.users != nil {
		ep.shutdownOnce.Do(func() { close(ep.shutdown) })
		ep.users.endAll(ctx, ep, reason)
		return
	}
	if reason == errShutdown {
		ep.saveSessions()
	}
	ep.shutdownOnce.Do(func() { close(ep.shutdown) })
	if ep.shared != nil {
		ep.sl.keeper.close(ep.shared)
	}
	for _, s := range ep.reg.takeAll() {
		ep.endSession(s, reason)
	}
	ep.endParked()
	ep.closeTasks(ctx)
	select {
	case <-ep.janitorDone:
	case <-ctx.Done():
	}
	ep.waitOwnChildren(ctx)
	waitGroup(ctx, &ep.pumps)
}

// waitGroup waits for wg or ctx, whichever comes first.
func waitGroup(ctx context.Context, wg *sync.WaitGroup) {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// SessionCount is the number of live sessions.
func (ep *Endpoint) SessionCount() int {
	if ep.users != nil {
		n := 0
		for _, ue := range ep.users.all() {
			n += ue.ep.reg.count()
		}
		return n
	}
	return ep.reg.count()
}

// ServeHTTP serves the destination's MCP endpoint.
func (ep *Endpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if ep.users != nil {
		ep.serveUser(w, r)
		return
	}
	switch r.Method {
	case http.MethodPost:
		ep.servePost(w, r)
	case http.MethodGet:
		ep.serveGet(w, r, ep.shutdown)
	case http.MethodDelete:
		ep.serveDelete(w, r)
	default:
		serveOtherMethod(w, r)
	}
}

// serveOtherMethod answers HEAD, OPTIONS and the methods an MCP endpoint
// does not take. (Out of ServeHTTP, whose frame is on the stack of every
// call; see post.)
func serveOtherMethod(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodHead:
		httpx.SetSSEHeaders(w.Header())
		w.WriteHeader(http.StatusOK)
	case http.MethodOptions:
		w.Header().Set("Allow", AllowMethods)
		w.WriteHeader(http.StatusNoContent)
	default:
		w.Header().Set("Allow", AllowMethods)
		httpx.WriteErrorFor(w, r, http.StatusMethodNotAllowed, codeServer, fmt.Sprintf("method %s is not supported on an MCP endpoint; use POST, GET or DELETE", r.Method))
	}
}

// AllowMethods are the methods an MCP endpoint answers.
const AllowMethods = "GET, POST, DELETE, HEAD, OPTIONS"

// sessionFrom resolves the Mcp-Session-Id header. When the header is missing,
// malformed or unknown it writes the error and returns nil and its status.
func (ep *Endpoint) sessionFrom(w http.ResponseWriter, r *http.Request) (*Session, int) {
	id := httpx.Header(r.Header, httpx.HeaderSessionID)
	if id == "" {
		return nil, httpx.WriteError(w, http.StatusBadRequest, codeServer, "missing Mcp-Session-Id header: send initialize first and repeat the Mcp-Session-Id it returns on every request")
	}
	if !validSessionID(id) {
		return nil, httpx.WriteError(w, http.StatusBadRequest, codeServer, "malformed Mcp-Session-Id header: expected the UUID the bridge returned on initialize")
	}
	s := ep.reg.get(id)
	if s == nil || s.owner != PrincipalFrom(r) {
		// A session is bound to the token that created it.
		return nil, httpx.WriteError(w, http.StatusNotFound, codeSessionNotFound, errSessionGone)
	}
	return s, 0
}

// errSessionGone is the message of a 404 for an unknown session.
const errSessionGone = "session not found (it expired, was deleted, was evicted to make room for a new one, or the bridge restarted): send initialize without Mcp-Session-Id to start a new one"

// sessionFor resolves the session of a request and checks its
// MCP-Protocol-Version; it writes the error itself when either fails.
func (ep *Endpoint) sessionFor(w http.ResponseWriter, r *http.Request) (*Session, int) {
	s, status := ep.sessionFrom(w, r)
	if s == nil {
		return nil, status
	}
	if status := ep.checkVersion(w, r, s); status != 0 {
		return nil, status
	}
	return s, 0
}

// serveDelete ends a session.
func (ep *Endpoint) serveDelete(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	status := http.StatusNoContent
	defer func() {
		ep.log.Info("DELETE", "status_code", status, "latency_ms", ms(start))
	}()
	s, errStatus := ep.sessionFor(w, r)
	if s == nil {
		status = errStatus
		return
	}
	w.Header().Set(httpx.HeaderSessionID, s.id)
	ep.endSession(s, errDeleted)
	w.WriteHeader(status)
}

func ms(start time.Time) float64 { return msBetween(start, time.Now()) }

// msBetween is the time from start to end in milliseconds, to the
// microsecond.
func msBetween(start, end time.Time) float64 {
	return float64(end.Sub(start).Microseconds()) / 1000
}
