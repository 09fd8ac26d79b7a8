package session

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/stelae-bridge/stelae-bridge/dispatch"
)

// Options configure the MCP endpoints.
type Options struct {
	// MaxSessions is the session cap per destination.
	MaxSessions int
	// RequestTimeout bounds one POSTed request (504 after it).
	RequestTimeout time.Duration
	// MaxBodyBytes caps a POST body (413 above it).
	MaxBodyBytes int64
	// MaxBodyMemory bounds the buffers all POST bodies being read or served
	// hold together (503 with Retry-After above it); at least MaxBodyBytes.
	MaxBodyMemory int64
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
	// past it); MaxStreams those of the whole bridge (503 past it).
	MaxStreamsPerSession int
	MaxStreams           int
	// WriteTimeout bounds one write to a client.
	WriteTimeout time.Duration
	// AuditBodies logs request and response bodies, secrets redacted.
	AuditBodies bool
	// ResponseMode is ModeAuto (default), ModeJSON or ModeSSE.
	ResponseMode string
	// EventLogSize bounds the events kept per session for resumption.
	EventLogSize int
	// CheckHost requires a loopback or allowed Host header (DNS-rebinding
	// protection); set it when listening on loopback.
	CheckHost bool
	// AllowedHosts are extra Host names accepted (tunnels, proxies); "*" any.
	AllowedHosts []string
	// AllowedOrigins are browser origins accepted besides loopback ones;
	// setting any turns CORS on; "*" allows every origin.
	AllowedOrigins []string
	// Default is the destination also served at /mcp and at POST/DELETE /.
	Default string
	// AuthTokens, when any, are the bearer tokens every route but /healthz
	// requires.
	AuthTokens []string
	// PublicURL is the base of absolute URLs in discovery documents; empty
	// means the request's Host.
	PublicURL string
	// TrustProxyHeaders lets X-Forwarded-Proto/-Host shape absolute URLs.
	TrustProxyHeaders bool
	// StopTimeout bounds stopping one session's own child (isolation:
	// session).
	StopTimeout time.Duration
	// Version is the bridge's version, for /version and discovery.
	Version string
	// Logger is the HTTP layer's logger.
	Logger hclog.Logger
}

func (o *Options) setDefaults() {
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = 10
	}
	def(&o.RequestTimeout, 30*time.Second)
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = 10 << 20
	}
	if o.MaxBodyMemory <= 0 {
		o.MaxBodyMemory = 64 << 20
	}
	o.MaxBodyMemory = max(o.MaxBodyMemory, o.MaxBodyBytes+1)
	def(&o.BodyTimeout, 30*time.Second)
	def(&o.BodyIdleTimeout, 10*time.Second)
	def(&o.SessionTTL, 30*time.Minute)
	def(&o.StopTimeout, 10*time.Second)
	def(&o.KeepAlive, 15*time.Second)
	def(&o.WriteTimeout, 30*time.Second)
	if o.StreamQueue <= 0 {
		o.StreamQueue = 256
	}
	if o.MaxStreamsPerSession <= 0 {
		o.MaxStreamsPerSession = 8
	}
	if o.MaxStreams <= 0 {
		o.MaxStreams = 10000
	}
	if o.EventLogSize <= 0 {
		o.EventLogSize = 512
	}
	if o.ResponseMode == "" {
		o.ResponseMode = ModeAuto
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
}

// endpoint is the MCP endpoint of one destination.
type endpoint struct {
	name string
	// shared serves every session; nil when perSession makes one per
	// session (isolation), tracked in kids.
	shared     *dispatch.Dispatcher
	perSession func() *dispatch.Dispatcher
	kids       children
	reg        *registry
	budget     *budget // body buffer bytes, shared by every endpoint
	streams    *budget // open GET streams, shared by every endpoint
	// pumps counts the GET streams' goroutines (shared by every
	// endpoint); Shutdown waits for them.
	pumps *sync.WaitGroup
	opts  *Options
	log   hclog.Logger
	m     *endpointMetrics
}

// Handler serves every destination's MCP endpoint and the legacy routes.
type Handler struct {
	opts      Options
	log       hclog.Logger
	endpoints map[string]*endpoint
	names     []string
	// allowAnyOrigin: AllowedOrigins holds "*".
	allowAnyOrigin bool
	metrics        *metrics
	// closing is set first thing in Shutdown: every request from then on is
	// answered 503 with Retry-After, never 404.
	closing atomic.Bool
	// shutdown is closed when the bridge stops; open streams end.
	shutdown     chan struct{}
	shutdownOnce sync.Once
	janitorDone  chan struct{}
	// pumps are the GET streams' goroutines.
	pumps sync.WaitGroup
	// bodies is the body budget every endpoint shares.
	bodies *budget
}

// NewHandler serves the given destinations; it starts the session janitor.
func NewHandler(dests []Destination, opts Options) *Handler {
	opts.setDefaults()
	h := &Handler{opts: opts, log: opts.Logger, endpoints: map[string]*endpoint{}, shutdown: make(chan struct{}), janitorDone: make(chan struct{})}
	h.bodies = &budget{max: opts.MaxBodyMemory}
	bodies := h.bodies
	streams := &budget{max: int64(opts.MaxStreams)}
	pumps := &h.pumps
	for _, d := range dests {
		ep := &endpoint{name: d.Name, shared: d.Shared, perSession: d.PerSession, reg: newRegistry(opts.MaxSessions), budget: bodies, streams: streams, pumps: pumps, opts: &h.opts, log: h.log}
		if d.PerSession != nil {
			ep.shared = nil
			ep.kids.live = map[*dispatch.Dispatcher]struct{}{}
			ep.kids.stopTimeout = opts.StopTimeout
		}
		h.endpoints[d.Name] = ep
		h.names = append(h.names, d.Name)
	}
	sort.Strings(h.names)
	for _, o := range opts.AllowedOrigins {
		h.allowAnyOrigin = h.allowAnyOrigin || o == "*"
	}
	h.metrics = newMetrics(h)
	for name, ep := range h.endpoints {
		ep.m = h.metrics.forEndpoint(name)
	}
	go h.janitor()
	return h
}

// janitor expires idle sessions.
func (h *Handler) janitor() {
	defer close(h.janitorDone)
	every := h.opts.SessionTTL / 4
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
		case <-h.shutdown:
			return
		case <-t.C:
			for _, ep := range h.endpoints {
				for _, s := range ep.reg.expired(h.opts.SessionTTL) {
					h.log.Info("session expired", "destination", ep.name, "session", s.id, "ttl", h.opts.SessionTTL)
					ep.end(s, errExpired)
				}
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
)

// end closes a session that was already removed from the registry, and
// stops its own child when it has one.
func (ep *endpoint) end(s *Session, reason error) {
	s.close(reason)
	s.d.Detach(s, reason)
	ep.release(s.d)
}

// Shutdown ends every session and its streams; the dispatchers are stopped
// by their owner.
func (h *Handler) Shutdown(ctx context.Context) {
	h.closing.Store(true)
	h.shutdownOnce.Do(func() { close(h.shutdown) })
	for _, ep := range h.endpoints {
		for _, s := range ep.reg.all() {
			ep.end(s, errShutdown)
		}
	}
	select {
	case <-h.janitorDone:
	case <-ctx.Done():
	}
	for _, ep := range h.endpoints {
		ep.waitReleased(ctx)
	}
	waitGroup(ctx, &h.pumps)
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

// SessionCount is the number of live sessions of a destination.
func (h *Handler) SessionCount(dest string) int {
	if ep := h.endpoints[dest]; ep != nil {
		return ep.reg.count()
	}
	return 0
}

// serveDestination routes /{destination}/mcp, /{destination}/sse and
// /{destination}/message. It never redirects.
func (h *Handler) serveDestination(w http.ResponseWriter, r *http.Request) {
	path := strings.Trim(r.URL.Path, "/")
	dest, route, ok := strings.Cut(path, "/")
	if !ok || strings.Contains(route, "/") {
		writeError(w, http.StatusNotFound, codeServer, fmt.Sprintf("no route for %s; MCP endpoints are at /{destination}/mcp (destinations: %s)", r.URL.Path, h.list()))
		return
	}
	ep := h.endpoints[dest]
	if ep == nil {
		writeError(w, http.StatusNotFound, codeServer, fmt.Sprintf("no destination named %q; configured destinations: %s", dest, h.list()))
		return
	}
	switch route {
	case "mcp":
		ep.serveMCP(w, r, h.shutdown)
	case "sse", "message":
		ep.m.legacyHits.Inc()
		writeError(w, http.StatusGone, codeServer, fmt.Sprintf("the HTTP+SSE transport (/%s/sse, /%s/message) is gone; this bridge speaks MCP Streamable HTTP at /%s/mcp: configure your client with type \"http\" and that URL", dest, dest, dest))
	default:
		writeError(w, http.StatusNotFound, codeServer, fmt.Sprintf("no route for %s; the MCP endpoint of %q is /%s/mcp", r.URL.Path, dest, dest))
	}
}

func (h *Handler) list() string {
	if len(h.names) == 0 {
		return "none"
	}
	return strings.Join(h.names, ", ")
}

func (ep *endpoint) serveMCP(w http.ResponseWriter, r *http.Request, shutdown <-chan struct{}) {
	switch r.Method {
	case http.MethodPost:
		ep.servePost(w, r)
	case http.MethodGet:
		ep.serveGet(w, r, shutdown)
	case http.MethodDelete:
		ep.serveDelete(w, r)
	case http.MethodHead:
		setSSEHeaders(w.Header())
		w.WriteHeader(http.StatusOK)
	case http.MethodOptions:
		w.Header().Set("Allow", allowMethods)
		w.WriteHeader(http.StatusNoContent)
	default:
		w.Header().Set("Allow", allowMethods)
		writeError(w, http.StatusMethodNotAllowed, codeServer, fmt.Sprintf("method %s is not supported on an MCP endpoint; use POST, GET or DELETE", r.Method))
	}
}

const allowMethods = "GET, POST, DELETE, HEAD, OPTIONS"

// sessionFrom resolves the Mcp-Session-Id header. When the header is missing,
// malformed or unknown it writes the error and returns nil and its status.
func (ep *endpoint) sessionFrom(w http.ResponseWriter, r *http.Request) (*Session, int) {
	id := r.Header.Get(headerSessionID)
	if id == "" {
		return nil, writeError(w, http.StatusBadRequest, codeServer, "missing Mcp-Session-Id header: send initialize first and repeat the Mcp-Session-Id it returns on every request")
	}
	if !validSessionID(id) {
		return nil, writeError(w, http.StatusBadRequest, codeServer, "malformed Mcp-Session-Id header: expected the UUID the bridge returned on initialize")
	}
	s := ep.reg.get(id)
	if s == nil || s.owner != principalOf(r) {
		// A session is bound to the token that created it.
		return nil, writeError(w, http.StatusNotFound, codeSessionNotFound, errSessionGone)
	}
	return s, 0
}

// errSessionGone is the message of a 404 for an unknown session.
const errSessionGone = "session not found (it expired, was deleted, was evicted to make room for a new one, or the bridge restarted): send initialize without Mcp-Session-Id to start a new one"

// sessionFor resolves the session of a request and checks its
// MCP-Protocol-Version; it writes the error itself when either fails.
func (ep *endpoint) sessionFor(w http.ResponseWriter, r *http.Request) (*Session, int) {
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
func (ep *endpoint) serveDelete(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	status := http.StatusNoContent
	defer func() {
		ep.log.Info("DELETE", "destination", ep.name, "status_code", status, "latency_ms", ms(start))
	}()
	s, errStatus := ep.sessionFor(w, r)
	if s == nil {
		status = errStatus
		return
	}
	w.Header().Set(headerSessionID, s.id)
	if ep.reg.remove(s) {
		ep.end(s, errDeleted)
	}
	w.WriteHeader(status)
}

func ms(start time.Time) float64 {
	return float64(time.Since(start).Microseconds()) / 1000
}
