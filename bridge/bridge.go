package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/stelae-bridge/stelae-bridge/audit"
	"github.com/stelae-bridge/stelae-bridge/h1"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/stelae-bridge/stelae-bridge/authserver"
	"github.com/stelae-bridge/stelae-bridge/config"
	"github.com/stelae-bridge/stelae-bridge/console"
	"github.com/stelae-bridge/stelae-bridge/credstore"
	"github.com/stelae-bridge/stelae-bridge/dispatch"
	"github.com/stelae-bridge/stelae-bridge/oauth"
	"github.com/stelae-bridge/stelae-bridge/session"
	"github.com/stelae-bridge/stelae-bridge/supervisor"
	"github.com/stelae-bridge/stelae-bridge/telemetry"
)

// Options are every knob of the bridge. The zero value of a field means its
// default (Defaults); cmd/stelae-bridge shows the same defaults in -help.
type Options struct {
	// Tracing, when set, traces every MCP request into its child
	// (telemetry); nil is tracing off.
	Tracing *telemetry.Tracing
	// Audit, when set, is given every POST's entry with its arguments and
	// answer (the audit trail); the caller opens and closes it.
	Audit *audit.Trail
	// Sessions and requests (per destination).
	MaxSessions    int
	RequestTimeout time.Duration
	SessionTTL     time.Duration
	KeepAlive      time.Duration
	ResponseMode   string
	EventLogSize   int
	// ProtocolEras is "both" (default) or "2025"; Sessionless "serve"
	// (default) or "reject".
	ProtocolEras         string
	Sessionless          string
	MaxStreamsPerSession int
	StreamQueue          int
	WriteTimeout         time.Duration
	AuditBodies          bool
	// Shared by every destination. MaxConnections bounds the open client
	// connections (half of them from one address; h1.ConnLimit).
	MaxConnections int
	MaxStreams     int
	// MaxUserChildren bounds the children of every 'isolation: user'
	// destination together, those stopping included.
	MaxUserChildren int
	// CredentialsDir holds the operator's provisioned credentials of
	// users ('credentials:'): DIR/{destination}/{user}, NAME=value lines;
	// CredStore what users entered themselves. Either may be unset.
	CredentialsDir  string
	CredStore       *credstore.Store
	MaxBodyBytes    int64
	MaxBodyMemory   int64
	BodyTimeout     time.Duration
	BodyIdleTimeout time.Duration
	// Children.
	MaxMessage      int
	StopGrace       time.Duration
	Linger          time.Duration
	Restart         supervisor.RestartPolicy
	RestartPatience time.Duration
	UnclaimedLinger time.Duration
	// Environ is the environment children start from (the bridge's own,
	// without its settings); nil: supervisor's default.
	Environ []string
	// Reaper starts each child under a reaper (supervisor.ReaperCommand);
	// Records keeps their process groups. Either may be nil.
	Reaper  []string
	Records *supervisor.Records
	// The operator's surface.
	CheckHost      bool
	AllowedHosts   []string
	AllowedOrigins []string
	AuthTokens     []string
	// TokenNames names static tokens (token → name: the tokens file's
	// "alice: TOKEN" lines): the name is the token's user, shown in the
	// console and the logs instead of a hash. An unnamed token is a user
	// of its own too.
	TokenNames        map[string]string
	PublicURL         string
	TrustProxyHeaders bool
	ShutdownTimeout   time.Duration
	// DrainTimeout is how long the calls in flight may take to finish on
	// shutdown (Serve), and those of a destination a reload changed or
	// removed before its sessions end.
	DrainTimeout time.Duration
	// SharedListener: the listening socket Serve gets outlives this
	// process (systemd socket activation), so on shutdown the bridge
	// hands over (handOver) instead of answering 503 while it drains.
	SharedListener bool
	// OAuth token validation (destinations with an 'auth:' block): the
	// clock skew tolerated, how long an issuer's keys are kept, and the
	// least time between fetches caused by unknown key ids.
	OAuthSkew       time.Duration
	OAuthKeysTTL    time.Duration
	OAuthMinRefresh time.Duration
	// OAuthIntrospectionClientID and OAuthIntrospectionSecret are the
	// bridge's credentials for RFC 7662 introspection of opaque tokens.
	OAuthIntrospectionClientID string
	OAuthIntrospectionSecret   string
	// AuthServer is the built-in authorization server, required when an
	// 'auth:' block says 'issuer: builtin' (its owner opens and closes it).
	AuthServer *authserver.Server
	// Version is the bridge's version (/version, discovery, the handshake's
	// clientInfo).
	Version string
	// SessionStore keeps the 2025 sessions of shared children across a
	// restart (session.Store; nil: in memory only).
	SessionStore session.Store
	// PrincipalKey makes principals from tokens (cmd/stelae-bridge loads
	// the state directory's principal.key). nil: a key of this process
	// alone (session.RandomPrincipalKey), which costs nothing without a
	// SessionStore; with one, the sessions it kept answer 404 after a
	// restart and their clients initialize again.
	PrincipalKey *session.PrincipalKey
	// Commit is the commit the binary was built from ("" when unknown;
	// "-dirty" when its tree had changes): stelae_build_info, /version.
	Commit string
	// Logger is the bridge's logger; each part names its own.
	Logger hclog.Logger
	// LogOutput, when set, is where Logger writes (safe for concurrent use),
	// and LogJSON whether it writes JSON: the access log is then written
	// there directly in hclog's text format (cheaper than through hclog).
	LogOutput io.Writer
	LogJSON   bool
	// NoConsole turns the operator console (/console) off; ConsoleRemote
	// serves it beyond this machine while auth is off (it is served to
	// loopback viewers only then).
	NoConsole     bool
	ConsoleRemote bool
}

// Defaults are the options a bridge runs with when none are given.
func Defaults() Options {
	ep, sup, proc, iss := session.DefaultOptions(), supervisor.DefaultOptions(), supervisor.DefaultProcessOptions(), oauth.DefaultIssuerOptions()
	return Options{
		MaxSessions:          ep.MaxSessions,
		RequestTimeout:       ep.RequestTimeout,
		SessionTTL:           ep.SessionTTL,
		KeepAlive:            ep.KeepAlive,
		ResponseMode:         ep.ResponseMode,
		EventLogSize:         ep.EventLogSize,
		MaxStreamsPerSession: ep.MaxStreamsPerSession,
		StreamQueue:          ep.StreamQueue,
		WriteTimeout:         ep.WriteTimeout,
		MaxBodyBytes:         int64(ep.MaxBodyBytes),
		BodyTimeout:          ep.BodyTimeout,
		BodyIdleTimeout:      ep.BodyIdleTimeout,
		MaxMessage:           proc.MaxMessage,
		StopGrace:            proc.StopGrace,
		Restart:              supervisor.DefaultRestartPolicy,
		RestartPatience:      sup.RestartPatience,
		UnclaimedLinger:      sup.UnclaimedLinger,
		OAuthSkew:            iss.Skew,
		OAuthKeysTTL:         iss.KeysTTL,
		OAuthMinRefresh:      iss.MinRefresh,
		// The bridge's own.
		MaxConnections:  h1.DefaultMaxConnections(),
		MaxStreams:      10000,
		MaxUserChildren: 100,
		MaxBodyMemory:   64 << 20,
		ShutdownTimeout: 10 * time.Second,
		DrainTimeout:    30 * time.Second,
		Version:         "unknown",
	}
}

// setDefaults fills every zero field from Defaults.
func (o *Options) setDefaults() {
	d := Defaults()
	setInt := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	setDur := func(v *time.Duration, def time.Duration) {
		if *v <= 0 {
			*v = def
		}
	}
	setInt(&o.MaxSessions, d.MaxSessions)
	setDur(&o.RequestTimeout, d.RequestTimeout)
	setDur(&o.SessionTTL, d.SessionTTL)
	setDur(&o.KeepAlive, d.KeepAlive)
	if o.ResponseMode == "" {
		o.ResponseMode = d.ResponseMode
	}
	setInt(&o.EventLogSize, d.EventLogSize)
	setInt(&o.MaxStreamsPerSession, d.MaxStreamsPerSession)
	setInt(&o.StreamQueue, d.StreamQueue)
	setDur(&o.WriteTimeout, d.WriteTimeout)
	setInt(&o.MaxConnections, d.MaxConnections)
	setInt(&o.MaxStreams, d.MaxStreams)
	setInt(&o.MaxUserChildren, d.MaxUserChildren)
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = d.MaxBodyBytes
	}
	if o.MaxBodyMemory <= 0 {
		o.MaxBodyMemory = d.MaxBodyMemory
	}
	setDur(&o.BodyTimeout, d.BodyTimeout)
	setDur(&o.BodyIdleTimeout, d.BodyIdleTimeout)
	setInt(&o.MaxMessage, d.MaxMessage)
	setDur(&o.StopGrace, d.StopGrace)
	if o.Restart == (supervisor.RestartPolicy{}) {
		o.Restart = d.Restart
	}
	setDur(&o.RestartPatience, d.RestartPatience)
	setDur(&o.UnclaimedLinger, d.UnclaimedLinger)
	setDur(&o.ShutdownTimeout, d.ShutdownTimeout)
	setDur(&o.DrainTimeout, d.DrainTimeout)
	setDur(&o.OAuthSkew, d.OAuthSkew)
	setDur(&o.OAuthKeysTTL, d.OAuthKeysTTL)
	setDur(&o.OAuthMinRefresh, d.OAuthMinRefresh)
	if o.Version == "" {
		o.Version = d.Version
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
}

// stopTimeout bounds stopping one child (supervisor.StopTimeout).
func (o *Options) stopTimeout() time.Duration { return supervisor.StopTimeout(o.StopGrace) }

// Bridge serves every destination of a configuration: one supervisor,
// dispatcher and endpoint each (or, with 'isolation: session', a dispatcher
// per session), the operator's routes, and the layers in front of them.
type Bridge struct {
	opts Options
	log  hclog.Logger
	// tokens are the static tokens and their identities (their principal
	// and user), replaced whole by SetTokens (tokens.go); tokensOn: the
	// bridge started with some (it never goes without, nor gains them).
	tokens   atomic.Pointer[tokenSet]
	tokensOn bool
	// onTokens tells the console the operator tokens changed (SetTokens):
	// set by New, before any request, and only read after.
	onTokens func([]string)
	// userChildren bounds the children of every 'isolation: user'
	// destination together (MaxUserChildren), across reloads.
	userChildren *session.UserBudget
	// cur is the table the bridge serves (table.go): Reload swaps it.
	cur    atomic.Pointer[table]
	limits *session.Limits
	// conns bounds the connections Serve's server holds (MaxConnections).
	conns      *h1.ConnLimit
	reg        *prometheus.Registry
	metricSet  *session.MetricSet
	legacyHits *prometheus.CounterVec
	// refusedTokens counts requests refused by the auth layer.
	refusedTokens *prometheus.CounterVec
	// reloads counts reloads by result; lastReload is when one last took.
	reloads *prometheus.CounterVec
	// tokenReloads counts reloads of the tokens file by result.
	tokenReloads *prometheus.CounterVec
	lastReload   prometheus.Gauge
	// metricsHandler serves reg at /metrics.
	metricsHandler http.Handler
	handler        http.Handler
	// authOn: the auth layer is in front of the routes (static tokens or
	// an 'auth:' block at the start); without it, a reload cannot turn
	// OAuth on.
	authOn bool
	// phase is where the bridge is in its life (phaseServing, then
	// phaseHandingOver or straight phaseClosing).
	phase        atomic.Int32
	shutdownOnce sync.Once
	// streams ends /stream's keepalive streams on Shutdown.
	streams chan struct{}
	// life ends when the bridge starts shutting down (endLife, in drain):
	// retiring destinations stop draining then.
	life    context.Context
	endLife context.CancelFunc
	// reloadMu makes reloads one at a time; retiring owns the goroutines
	// that retire what a reload changed or removed (drain waits for them).
	reloadMu sync.Mutex
	retiring sync.WaitGroup
	// console serves /console (nil: -console=false); tail is the access
	// entries its page follows, recorded by every endpoint.
	console *console.Console
	tail    *console.Tail
}

// The bridge's phases (Bridge.phase).
const (
	phaseServing int32 = iota
	// phaseHandingOver: Serve's drain with a shared listener
	// (Options.SharedListener): no connection is accepted, requests on
	// those open are served, and each answer closes its connection.
	phaseHandingOver
	// phaseClosing, from Shutdown's start (or the drain's without a shared
	// listener): every request but /healthz and /readyz is answered 503
	// with Retry-After, never 404.
	phaseClosing
)

// stopping: the bridge has begun to stop (readiness fails; no reload).
func (b *Bridge) stopping() bool { return b.phase.Load() != phaseServing }

// New builds a bridge for cfg. Nothing starts but the destinations marked
// prestart.
func New(cfg *config.Config, opts Options) (*Bridge, error) {
	if cfg == nil || len(cfg.Names) == 0 {
		return nil, errors.New("the configuration declares no destination")
	}
	opts.setDefaults()
	if opts.PrincipalKey == nil {
		opts.PrincipalKey = session.RandomPrincipalKey()
	}
	b := &Bridge{opts: opts, log: opts.Logger, tokensOn: len(opts.AuthTokens) > 0, userChildren: session.NewUserBudget(opts.MaxUserChildren),
		limits: session.NewLimits(opts.MaxBodyMemory, opts.MaxBodyBytes, opts.MaxStreams), conns: h1.NewConnLimit(opts.MaxConnections), reg: prometheus.NewRegistry(), streams: make(chan struct{})}
	b.tokens.Store(newTokenSet(opts.AuthTokens, opts.TokenNames, opts.PrincipalKey))
	b.life, b.endLife = context.WithCancel(context.Background())
	b.metricSet = session.NewMetricSet(b.reg)
	if !opts.NoConsole {
		b.tail = console.NewTail()
		for _, id := range b.tokens.Load().ids {
			if id.named {
				b.tail.Name(id.principal, id.user.Name)
			}
		}
	}
	t, err := b.buildTable(cfg, nil)
	if err != nil {
		return nil, err
	}
	b.cur.Store(t)
	for _, ep := range t.endpoints {
		ep.Restore()
	}
	if opts.AuthServer != nil {
		opts.AuthServer.SetResources(b.builtinResource)
		opts.AuthServer.SetCredentials(credentialPages{b}) // its credentials page (credentialpages.go)
		// A user disabled or removed, a client revoked: the users' children
		// stop at once (credentialpages.go).
		opts.AuthServer.OnUserGone(b.BuiltinUserGone)
		opts.AuthServer.OnClientRevoked(b.BuiltinClientRevoked)
	}
	b.registerMetrics()
	b.authOn = b.tokensOn || len(t.operatorPolicies) > 0
	if !opts.NoConsole {
		b.console = b.newConsole()
	}
	b.handler = b.layers()
	t.prestart(nil)
	return b, nil
}

// dispatcherFactory makes the dispatchers of destination d.
func (b *Bridge) dispatcherFactory(d *config.Destination) func() *dispatch.Dispatcher {
	o := b.opts
	launch := supervisor.ProcessLauncher(d, supervisor.ProcessOptions{
		MaxMessage:   o.MaxMessage,
		StopGrace:    o.StopGrace,
		WriteTimeout: o.RequestTimeout,
		Logger:       o.Logger.Named("supervisor"),
		Environ:      o.Environ,
		Reaper:       o.Reaper,
		Records:      o.Records,
	})
	roots := rootsResult(d)
	allowed := toolAllowed(d)
	var alone func(string) bool
	if len(d.InteractiveTools) > 0 {
		alone = d.RunsAlone
	}
	return func() *dispatch.Dispatcher {
		return dispatch.New(dispatch.Options{
			Name:            d.Name,
			Launch:          launch,
			NewBackOff:      o.Restart.NewBackOff,
			StableAfter:     o.Restart.StableAfter,
			StartTimeout:    d.StartTimeout,
			Linger:          o.Linger,
			UnclaimedLinger: o.UnclaimedLinger,
			RestartPatience: o.RestartPatience,
			Roots:           roots,
			StopTimeout:     o.stopTimeout(),
			ToolAllowed:     allowed,
			BridgeVersion:   o.Version,
			Logs:            d.Logs,
			Era:             d.Era,
			Interactive:     d.Interactive,
			InteractiveTool: alone,
			TraceMeta:       traceMeta(o.Tracing),
			TraceChild:      traceChild(o.Tracing),
			TraceWait:       traceWait(o.Tracing),
			TraceRelated:    traceRelated(o.Tracing),
			Logger:          o.Logger.Named("dispatch"),
		})
	}
}

// toolAllowed is destination d's tool filter for its dispatchers (nil:
// every tool).
func toolAllowed(d *config.Destination) func(string) bool {
	if d.Tools.Empty() {
		return nil
	}
	return d.Tools.Allows
}

// rootsResult is the roots/list result the bridge answers a destination's
// child with, from its 'roots:'; nil when it has none (the child's request
// then goes to a client).
func rootsResult(d *config.Destination) json.RawMessage {
	if d.Roots == nil {
		return nil
	}
	type root struct {
		URI  string `json:"uri"`
		Name string `json:"name,omitempty"`
	}
	out := struct {
		Roots []root `json:"roots"`
	}{Roots: []root{}}
	for _, r := range d.Roots {
		out.Roots = append(out.Roots, root{URI: r.URI, Name: r.Name})
	}
	b, _ := json.Marshal(out)
	return b
}

// ServeHTTP serves the bridge's whole HTTP surface.
func (b *Bridge) ServeHTTP(w http.ResponseWriter, r *http.Request) { b.handler.ServeHTTP(w, r) }

// Serve serves on ln until ctx ends, then shuts down in order: new
// requests get 503 with Retry-After (and /readyz says draining) while the
// calls in flight may finish, within Options.DrainTimeout; then it stops
// accepting, ends every session and stream, waits for the requests in
// flight, and stops every child, within Options.ShutdownTimeout. With
// Options.SharedListener the drain is a hand-over instead (handOver).
func (b *Bridge) Serve(ctx context.Context, ln net.Listener) error {
	// The server calls the handler itself, not ServeHTTP: one frame fewer
	// on every request's stack (see session.post on stacks).
	srv := h1.NewServer(b.handler, b.log.Named("http"))
	srv.SetLimit(b.conns)
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	var err error
	select {
	case <-ctx.Done():
		if b.opts.SharedListener {
			b.handOver(srv)
		} else {
			b.phase.Store(phaseClosing)
			b.drainCalls(time.Now())
		}
		b.log.Info("shutting down")
	case err = <-serveErr:
		b.log.Error("server stopped", "error", err)
	}
	sctx, cancel := context.WithTimeout(context.Background(), b.opts.ShutdownTimeout)
	defer cancel()
	b.drain(sctx)
	if serr := srv.Shutdown(sctx); serr != nil {
		b.log.Warn("HTTP server did not drain in time; closing connections", "error", serr)
		srv.Close()
	}
	if cerr := b.closeChildren(sctx); cerr != nil && err == nil {
		err = cerr
	}
	b.log.Info("stopped")
	return err
}

// handOverLinger is how long a hand-over waits, once no call is in
// flight, for the idle keep-alive connections to bring their next request
// (answered, and the connection closed) before it closes them.
const handOverLinger = 2 * time.Second

// handOver is Serve's drain when the listening socket outlives the bridge
// (Options.SharedListener: systemd socket activation). It stops accepting
// at once, so the bridge that serves next takes every new connection
// (they wait in the socket's backlog until it runs), and goes on serving
// the connections open, each answer closing its connection: the calls in
// flight finish, and a client's next request on a keep-alive connection
// finds an answer, not a socket closed under it (which a client may not
// retry: the request may have been read). Once no call is in flight and
// no connection waits idle (up to handOverLinger for them), or
// DrainTimeout is up, new requests get 503 and the shutdown goes on.
func (b *Bridge) handOver(srv *h1.Server) {
	start := time.Now()
	b.phase.Store(phaseHandingOver)
	srv.StopAccepting()
	ctx, cancel := context.WithDeadline(context.Background(), start.Add(b.opts.DrainTimeout))
	defer cancel()
	if b.waitCalls(ctx) {
		linger := time.NewTimer(handOverLinger)
		tick := time.NewTicker(10 * time.Millisecond)
	idle:
		for n := srv.IdleConns(); n > 0; n = srv.IdleConns() {
			select {
			case <-tick.C:
			case <-linger.C:
				b.log.Info("closing idle connections that brought no request during the hand-over", "connections", n, "linger", handOverLinger)
				break idle
			case <-ctx.Done():
				break idle
			}
		}
		tick.Stop()
		linger.Stop()
	}
	// What is still open idle closes now: a request on it after this
	// would get a 503 (HAProxy keeps idle connections to every server
	// and sends on them at any time).
	srv.CloseIdle()
	b.phase.Store(phaseClosing)
	b.drainCalls(start) // those of the requests the connections brought meanwhile
}

// drainCalls waits, up to DrainTimeout from start, for the calls in flight
// to be answered (not streams: Endpoint.Drain), and says so.
func (b *Bridge) drainCalls(start time.Time) {
	ctx, cancel := context.WithDeadline(context.Background(), start.Add(b.opts.DrainTimeout))
	defer cancel()
	if !b.waitCalls(ctx) {
		b.log.Warn("calls still in flight after the drain timeout: they end now", "drain_timeout", b.opts.DrainTimeout)
	} else if took := time.Since(start); took > 50*time.Millisecond {
		b.log.Info("calls in flight finished before the shutdown", "took", took.Round(time.Millisecond))
	}
}

// waitCalls waits until no call is in flight (true) or ctx ends.
func (b *Bridge) waitCalls(ctx context.Context) bool {
	var wg sync.WaitGroup
	drained := true
	var mu sync.Mutex // guards drained
	for _, ep := range b.t().endpoints {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !ep.Drain(ctx) {
				mu.Lock()
				drained = false
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return drained
}

// Shutdown ends every session and stream and stops every child; requests
// get 503 from its start. It returns when all is done or ctx ends, with an
// error naming the children that did not stop in time. (Serve does the
// same around its server's own shutdown.)
func (b *Bridge) Shutdown(ctx context.Context) error {
	b.drain(ctx)
	return b.closeChildren(ctx)
}

// drain refuses new requests (503) and ends every session and stream.
func (b *Bridge) drain(ctx context.Context) {
	b.phase.Store(phaseClosing)
	b.shutdownOnce.Do(func() { close(b.streams) })
	b.reloadMu.Lock() // no reload begins after this
	b.endLife()
	b.reloadMu.Unlock()
	var wg sync.WaitGroup
	for _, ep := range b.t().endpoints {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ep.Shutdown(ctx)
		}()
	}
	wg.Wait()
	// Destinations a reload changed or removed finish their retirement
	// (bounded by their own drain, ended now, and ShutdownTimeout).
	b.retiring.Wait()
}

// closeChildren stops every shared child; the error names those that did
// not stop before ctx ended.
func (b *Bridge) closeChildren(ctx context.Context) error {
	var (
		wg sync.WaitGroup
		// mu guards errs.
		mu   sync.Mutex
		errs []error
	)
	for name, d := range b.t().dispatchers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := d.Close(ctx); err != nil {
				b.log.Error("child did not stop in time", "destination", name, "error", err)
				mu.Lock()
				errs = append(errs, fmt.Errorf("destination %s: %w", name, err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Names are the destinations, sorted.
func (b *Bridge) Names() []string { return append([]string(nil), b.t().names...) }

// Dispatcher is destination name's shared dispatcher; nil for an isolated
// or unknown one.
func (b *Bridge) Dispatcher(name string) *dispatch.Dispatcher { return b.t().dispatchers[name] }

// SessionCount is the number of live sessions of a destination.
func (b *Bridge) SessionCount(name string) int {
	if ep := b.t().endpoints[name]; ep != nil {
		return ep.SessionCount()
	}
	return 0
}

// traceChild is dispatch's Options.TraceChild for tracing t (nil when
// off).
func traceChild(t *telemetry.Tracing) func(context.Context, string, string) (context.Context, func(bool)) {
	if t == nil {
		return nil
	}
	return t.ChildCall
}

// traceWait is dispatch's Options.TraceWait for tracing t (nil when off).
func traceWait(t *telemetry.Tracing) func(context.Context, string, time.Time) func(error) {
	if t == nil {
		return nil
	}
	return t.Wait
}

// traceRelated is dispatch's Options.TraceRelated for tracing t (nil when
// off).
func traceRelated(t *telemetry.Tracing) func(context.Context, string, bool) {
	if t == nil {
		return nil
	}
	return t.Related
}

// traceMeta is dispatch's Options.TraceMeta for tracing t (nil when off:
// the dispatchers then write no trace context).
func traceMeta(t *telemetry.Tracing) func(context.Context) []byte {
	if t == nil {
		return nil
	}
	return t.Meta
}
