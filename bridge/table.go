package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync/atomic"
	"time"

	"github.com/stelae-bridge/stelae-bridge/audit"
	"github.com/stelae-bridge/stelae-bridge/config"
	"github.com/stelae-bridge/stelae-bridge/dispatch"
	"github.com/stelae-bridge/stelae-bridge/oauth"
	"github.com/stelae-bridge/stelae-bridge/peruser"
	"github.com/stelae-bridge/stelae-bridge/profile"
	"github.com/stelae-bridge/stelae-bridge/session"
)

// table is what one configuration makes of the bridge: each destination's
// endpoint (and shared dispatcher), their names, and the OAuth policies.
// The bridge serves one table at a time (Bridge.cur), read once per use so
// that one request sees one table; Reload builds the next from the last,
// keeping what did not change, and swaps it in.
type table struct {
	cfg       *config.Config
	names     []string
	endpoints map[string]*session.Endpoint
	// dispatchers are the shared ones (none for 'isolation: session').
	dispatchers map[string]*dispatch.Dispatcher
	// policies are the destinations' OAuth policies (none for an open
	// one); topPolicy the top-level block's; operatorPolicies guard the
	// operator's routes.
	policies map[string]*oauth.Policy
	// reports are the profiles' (by profile name), for /healthz.
	reports          map[string]*profile.Report
	topPolicy        *oauth.Policy
	operatorPolicies []*oauth.Policy
	// decls are the user-isolated destinations' declarations as their
	// users' endpoints (and those of the profiles they are members of)
	// read them when made: kept with the endpoint across a reload, which
	// stores a new one when only 'credentials:' changed (Reload).
	decls map[string]*atomic.Pointer[config.Destination]
}

// t is the table being served.
func (b *Bridge) t() *table { return b.cur.Load() }

// buildTable makes the table of cfg. The destinations prev serves the same
// way (config.SameDestination), or with a shared child the same way but
// for 'tools:' (Reload then gives their dispatcher the new filter), keep
// their endpoint and dispatcher — their child, sessions, streams and
// calls; the others get new ones, which nothing has started yet
// (prestart).
func (b *Bridge) buildTable(cfg *config.Config, prev *table) (*table, error) {
	if cfg == nil || len(cfg.Names) == 0 {
		return nil, errors.New("the configuration declares no destination")
	}
	t := &table{cfg: cfg, endpoints: map[string]*session.Endpoint{}, dispatchers: map[string]*dispatch.Dispatcher{}, reports: map[string]*profile.Report{},
		decls: map[string]*atomic.Pointer[config.Destination]{}}
	opts := b.opts
	sopts := session.Options{
		MaxSessions: opts.MaxSessions, RequestTimeout: opts.RequestTimeout, MaxBodyBytes: opts.MaxBodyBytes,
		BodyTimeout: opts.BodyTimeout, BodyIdleTimeout: opts.BodyIdleTimeout, SessionTTL: opts.SessionTTL,
		KeepAlive: opts.KeepAlive, StreamQueue: opts.StreamQueue, WriteTimeout: opts.WriteTimeout, MaxStreamsPerSession: opts.MaxStreamsPerSession, AuditBodies: opts.AuditBodies,
		ResponseMode: opts.ResponseMode, EventLogSize: opts.EventLogSize, ProtocolEras: opts.ProtocolEras, Sessionless: opts.Sessionless, StopTimeout: opts.stopTimeout(),
		Logger: opts.Logger.Named("http"), LogOutput: opts.LogOutput, LogJSON: opts.LogJSON, Store: opts.SessionStore,
	}
	sopts.Tail = b.tails()
	if opts.Audit != nil {
		sopts.TailBodies = audit.MaxBody
	}
	sopts.Tracing = opts.Tracing
	for _, name := range cfg.Names {
		d := cfg.Destinations[name]
		t.names = append(t.names, name)
		if prev.keeps(name, d) || prev.retools(name, d) || prev.recredentials(name, d) {
			t.endpoints[name] = prev.endpoints[name]
			if shared := prev.dispatchers[name]; shared != nil {
				t.dispatchers[name] = shared
			}
			if decl := prev.decls[name]; decl != nil {
				t.decls[name] = decl
			}
			continue
		}
		newDispatcher := b.dispatcherFactory(d)
		dopts := sopts
		dopts.CacheTTL, dopts.CacheScope = d.CacheTTL, d.CacheScope
		dopts.TaskAfter, dopts.TaskTTL, dopts.InputWait = d.TaskAfter, d.TaskTTL, d.InputWait
		switch {
		case d.SessionTTL > 0:
			dopts.SessionTTL = d.SessionTTL
		case d.Isolation == config.IsolationSession || d.Isolation == config.IsolationUser:
			dopts.SessionTTL = min(dopts.SessionTTL, config.IsolatedSessionTTL)
		}
		switch d.Isolation {
		case config.IsolationSession:
			t.endpoints[name] = session.NewEndpoint(name, nil, newDispatcher, b.limits, b.metricSet.For(name), dopts)
		case config.IsolationUser:
			decl := &atomic.Pointer[config.Destination]{}
			decl.Store(d)
			t.decls[name] = decl
			t.endpoints[name] = b.userEndpoint(name, decl, dopts)
		default:
			shared := newDispatcher()
			t.dispatchers[name] = shared
			t.endpoints[name] = session.NewEndpoint(name, shared, nil, b.limits, b.metricSet.For(name), dopts)
		}
	}
	sort.Strings(t.names)
	if err := b.buildProfiles(t, prev, cfg, sopts); err != nil {
		b.discard(t, prev)
		return nil, err
	}
	if err := b.buildPolicies(t); err != nil {
		// Nothing but the new endpoints' janitors runs: end them.
		b.discard(t, prev)
		return nil, err
	}
	return t, nil
}

// keeps reports whether the table serves destination name as d says: the
// next table keeps its endpoint. (A nil table keeps nothing.)
func (t *table) keeps(name string, d *config.Destination) bool {
	if t == nil || t.endpoints[name] == nil {
		return false
	}
	return config.SameDestination(t.cfg.Destinations[name], d)
}

// retools reports whether the table serves destination name on a shared
// child as d says but for its 'tools:': the next table keeps its endpoint
// and dispatcher, with d's filter.
func (t *table) retools(name string, d *config.Destination) bool {
	if t == nil || t.dispatchers[name] == nil {
		return false
	}
	return config.SameButTools(t.cfg.Destinations[name], d)
}

// recredentials reports whether the table serves destination name with a
// child per user as d says but for its 'credentials:': the next table
// keeps its endpoint, and Reload gives it d and restarts the users'
// children whose environment changes.
func (t *table) recredentials(name string, d *config.Destination) bool {
	if t == nil || t.endpoints[name] == nil || t.decls[name] == nil {
		return false
	}
	return config.SameButCredentials(t.cfg.Destinations[name], d)
}

// fresh reports whether destination name of t was made for it (not kept
// from prev).
func (t *table) fresh(name string, prev *table) bool {
	return prev == nil || prev.endpoints[name] != t.endpoints[name]
}

// prestart starts the children of t's destinations marked prestart that
// prev did not run already.
func (t *table) prestart(prev *table) {
	for name, d := range t.dispatchers {
		if dest := t.cfg.Destinations[name]; dest != nil && dest.Prestart && t.fresh(name, prev) {
			d.Prestart()
		}
	}
}

// discard ends what buildTable made for t (nothing kept from prev), which
// was never served.
func (b *Bridge) discard(t *table, prev *table) {
	ctx, cancel := context.WithTimeout(context.Background(), b.opts.ShutdownTimeout)
	defer cancel()
	for name, ep := range t.endpoints {
		if t.fresh(name, prev) {
			ep.Shutdown(ctx)
			if d := t.dispatchers[name]; d != nil {
				_ = d.Close(ctx)
			}
		}
	}
}

// ErrReloadRefused wraps the reasons a configuration is not applied.
var ErrReloadRefused = errors.New("the new configuration was not applied")

// Reloaded is what a reload changed, by destination name.
type Reloaded struct {
	Added, Changed, Removed, Kept []string
	// ToolsChanged are kept too, with their child and sessions, and a new
	// 'tools:' filter; their clients were told the list changed.
	ToolsChanged []string
	// CredentialsChanged are kept too, with a new 'credentials:' block:
	// only the children of the users whose environment it changes were
	// restarted (their sessions ended).
	CredentialsChanged []string
	// Profiles are the profiles added, changed (or with a member changed:
	// served anew, their sessions ended) or removed.
	Profiles []string
	// DefaultChanged: /mcp and / serve another destination (or none).
	DefaultChanged bool
}

// Unchanged reports whether the reload changed nothing.
func (r Reloaded) Unchanged() bool {
	return len(r.Added)+len(r.Changed)+len(r.Removed)+len(r.ToolsChanged)+len(r.CredentialsChanged)+len(r.Profiles) == 0 && !r.DefaultChanged
}

// Reload applies cfg as a diff of the configuration being served: an
// unchanged destination keeps its child, sessions, streams and calls; so
// does one on a shared child whose 'tools:' alone changed, with the new
// filter and notifications/tools/list_changed to its clients
// (dispatch.Dispatcher.SetToolAllowed); an added one is served at once; a changed or removed one is taken out of
// the routes at once (its sessions' next requests get 404, so clients
// initialize again, on the new child for a changed one) and retired: its
// calls in flight may finish within Options.DrainTimeout, then its
// sessions and streams end and its child stops. Commands come only from
// cfg. A configuration the running bridge cannot take is refused
// (ErrReloadRefused) and nothing changes.
func (b *Bridge) Reload(cfg *config.Config) (Reloaded, error) {
	b.reloadMu.Lock()
	defer b.reloadMu.Unlock()
	if b.stopping() {
		return Reloaded{}, fmt.Errorf("%w: the bridge is shutting down", ErrReloadRefused)
	}
	prev := b.t()
	if !b.authOn && (cfg.Auth != nil || slices.ContainsFunc(cfg.Names, func(n string) bool { return cfg.Destinations[n].Auth != nil })) {
		return Reloaded{}, fmt.Errorf("%w: it turns OAuth on ('auth:'), and this bridge started without any authentication: restart it to turn authentication on", ErrReloadRefused)
	}
	next, err := b.buildTable(cfg, prev)
	if err != nil {
		return Reloaded{}, fmt.Errorf("%w: %v", ErrReloadRefused, err)
	}
	var r Reloaded
	for _, name := range next.names {
		switch {
		case prev.endpoints[name] == nil:
			r.Added = append(r.Added, name)
		case next.fresh(name, prev):
			r.Changed = append(r.Changed, name)
		case config.SameButCredentials(prev.cfg.Destinations[name], cfg.Destinations[name]) && !config.SameDestination(prev.cfg.Destinations[name], cfg.Destinations[name]):
			r.CredentialsChanged = append(r.CredentialsChanged, name)
		case !config.SameDestination(prev.cfg.Destinations[name], cfg.Destinations[name]):
			r.ToolsChanged = append(r.ToolsChanged, name)
		default:
			r.Kept = append(r.Kept, name)
		}
	}
	for _, name := range prev.names {
		if next.endpoints[name] == nil {
			r.Removed = append(r.Removed, name)
		}
	}
	r.DefaultChanged = cfg.Default != prev.cfg.Default || slices.Contains(r.Changed, cfg.Default)
	for _, name := range r.Added {
		b.legacyHits.WithLabelValues(name) // 0 from the start
	}
	for _, name := range r.CredentialsChanged {
		next.decls[name].Store(cfg.Destinations[name])
	}
	b.cur.Store(next)
	for _, name := range r.ToolsChanged {
		next.dispatchers[name].SetToolAllowed(toolAllowed(cfg.Destinations[name]))
	}
	for _, name := range r.CredentialsChanged {
		b.recredential(next, name, prev.cfg.Destinations[name], cfg.Destinations[name])
	}
	next.prestart(prev)
	retired := append(slices.Clone(r.Changed), r.Removed...)
	for key, ep := range prev.endpoints {
		if config.IsProfileKey(key) && next.endpoints[key] != ep {
			retired = append(retired, key) // a profile changed, or one of its members
		}
	}
	for key, ep := range next.endpoints {
		if config.IsProfileKey(key) && prev.endpoints[key] != ep {
			name, _ := config.ProfileName(key)
			r.Profiles = append(r.Profiles, name)
		}
	}
	for key := range prev.endpoints {
		if config.IsProfileKey(key) && next.endpoints[key] == nil {
			name, _ := config.ProfileName(key)
			r.Profiles = append(r.Profiles, name)
		}
	}
	sort.Strings(r.Profiles)
	for _, name := range retired {
		b.retiring.Add(1)
		go b.retire(name, prev.endpoints[name], prev.dispatchers[name])
	}
	return r, nil
}

// ReloadFrom reads the configuration with load and applies it (Reload),
// (load's error wrapping ErrReloadRefused counts as refused, any other as
// invalid),
// and says what became of it: in the log, and in the metrics
// stelae_config_reloads_total{result} (applied, unchanged, invalid: load
// failed; refused: the running bridge cannot take it) and
// stelae_config_last_reload_success_timestamp_seconds. A failed reload
// changes nothing.
func (b *Bridge) ReloadFrom(load func() (*config.Config, error)) (Reloaded, error) {
	cfg, err := load()
	if errors.Is(err, ErrReloadRefused) {
		b.reloads.WithLabelValues("refused").Inc()
		b.log.Error("configuration not reloaded; the bridge goes on with the configuration it has", "error", err)
		return Reloaded{}, err
	}
	if err != nil {
		b.reloads.WithLabelValues("invalid").Inc()
		b.log.Error("configuration not reloaded: the file is invalid; the bridge goes on with the configuration it has", "error", err)
		return Reloaded{}, err
	}
	r, err := b.Reload(cfg)
	switch {
	case err != nil:
		b.reloads.WithLabelValues("refused").Inc()
		b.log.Error("configuration not reloaded; the bridge goes on with the configuration it has", "error", err)
		return r, err
	case r.Unchanged():
		b.reloads.WithLabelValues("unchanged").Inc()
		b.log.Info("configuration reloaded: nothing changed", "destinations", len(r.Kept))
	default:
		b.reloads.WithLabelValues("applied").Inc()
		b.log.Info("configuration reloaded", "added", r.Added, "changed", r.Changed, "removed", r.Removed, "tools_changed", r.ToolsChanged, "credentials_changed", r.CredentialsChanged, "profiles", r.Profiles, "kept", r.Kept, "default", cfg.Default)
	}
	b.lastReload.SetToCurrentTime()
	return r, nil
}

// retire ends a destination a reload changed or removed: its calls in
// flight may finish within DrainTimeout, then its sessions and streams end
// and its child stops. Bridge.retiring owns it.
func (b *Bridge) retire(name string, ep *session.Endpoint, d *dispatch.Dispatcher) {
	defer b.retiring.Done()
	start := time.Now()
	ctx, cancel := context.WithTimeout(b.life, b.opts.DrainTimeout)
	drained := ep.Drain(ctx)
	cancel()
	if !drained {
		b.log.Warn("calls of a reconfigured destination still in flight after the drain timeout: they end now", "destination", name, "drain_timeout", b.opts.DrainTimeout)
	}
	sctx, cancel := context.WithTimeout(context.Background(), b.opts.ShutdownTimeout)
	defer cancel()
	ep.Retire(sctx)
	if d != nil {
		if err := d.Close(sctx); err != nil {
			b.log.Error("the child of a reconfigured destination did not stop in time", "destination", name, "error", err)
		}
	}
	b.log.Info("reconfigured destination retired", "destination", name, "took", time.Since(start).Round(time.Millisecond))
}

// userEndpoint serves the destination decl declares with a child per user
// ('isolation: user'): each user's endpoint has a shared dispatcher of its
// own, made on their first request as decl says then.
func (b *Bridge) userEndpoint(name string, decl *atomic.Pointer[config.Destination], opts session.Options) *session.Endpoint {
	d := decl.Load()
	caps := session.UserCaps{Max: d.MaxUsers, Idle: d.UserIdle, Budget: b.userChildren}
	if caps.Max == 0 {
		caps.Max = config.DefaultMaxUsers
	}
	m := b.metricSet.For(name)
	var ep *session.Endpoint
	forUser := func(u session.User) *session.Endpoint {
		uopts := opts
		uopts.Logger = opts.Logger.With("user", u.String())
		catalogue := func() []json.RawMessage { t, _ := ep.Catalogue(); return t }
		d := decl.Load()
		return session.NewEndpoint(name, b.userDispatcherFactory(d, u, b.dispatcherFactory(d), catalogue)(), nil, b.limits, m, uopts)
	}
	ep = session.NewUserEndpoint(name, forUser, caps, m, opts)
	return ep
}

// userDispatcherFactory makes user u's dispatchers of destination d: with
// their own credentials in their child's environment ('credentials:'), or
// a stand-in that says how to give them while they are missing; plain
// (newDispatcher) when d declares none. catalogue is d's tools as its
// users' children listed them, for the stand-in.
func (b *Bridge) userDispatcherFactory(d *config.Destination, u session.User, newDispatcher func() *dispatch.Dispatcher, catalogue func() []json.RawMessage) func() *dispatch.Dispatcher {
	if len(d.Credentials) == 0 {
		return newDispatcher
	}
	creds, missing, err := peruser.Of(b.opts.CredentialsDir, b.opts.CredStore, d, u)
	if err != nil {
		b.log.Error("a user's credentials could not be read; their child waits for them", "destination", d.Name, "user", u.String(), "error", err)
	}
	if len(missing) > 0 || err != nil {
		return b.standInFactory(d, peruser.StandIn(d.Name, u.String(), b.credentialsURL(d.Name), missing, catalogue))
	}
	return b.dispatcherFactory(peruser.UserDestination(d, creds))
}

// recredential follows a reload that changed only destination name's
// 'credentials:' (from old to d, already stored in t.decls): the users
// with a child of it — of the destination and of each profile it is a
// member of — whose environment or missing variables d changes lose it
// (their sessions end; their next request makes one as d says); the
// others keep theirs. An endpoint made since the swap was made with d, and
// one made before is among those listed (made under the lock Users takes).
func (b *Bridge) recredential(t *table, name string, old, d *config.Destination) {
	why := fmt.Sprintf("the bridge's operator changed the credentials destination %q asks for; initialize again", name)
	restarted, kept := 0, 0
	for _, ep := range t.userEndpointsOf(name) {
		for _, ui := range ep.Users() {
			if b.sameCredentials(old, d, ui.User) {
				kept++
				continue
			}
			if ep.EndUser(ui.Key, why) {
				restarted++
			}
		}
	}
	b.log.Info("a destination's credentials changed: the children of the users it changes restarted", "destination", name, "restarted", restarted, "kept", kept)
}

// userEndpointsOf is destination dest's endpoint, when it gives each user
// a child of their own, and those of the profiles it is a member of (a
// user's endpoint of such a profile runs its own child of dest).
func (t *table) userEndpointsOf(dest string) []*session.Endpoint {
	var out []*session.Endpoint
	keys := []string{dest}
	for _, p := range t.cfg.ProfileNames {
		if slices.Contains(t.cfg.Profiles[p].Destinations, dest) {
			keys = append(keys, config.ProfileKey(p))
		}
	}
	for _, key := range keys {
		if ep := t.endpoints[key]; ep != nil && ep.UserIsolated() {
			out = append(out, ep)
		}
	}
	return out
}

// endUser lets user key's endpoints of dest go — the destination's and
// its profiles' — for why; it reports how many there were.
func (t *table) endUser(dest, key, why string) int {
	n := 0
	for _, ep := range t.userEndpointsOf(dest) {
		if ep.EndUser(key, why) {
			n++
		}
	}
	return n
}

// endUserEverywhere lets user key's endpoints go on every user-isolated
// destination and profile, for why; it reports how many there were.
func (t *table) endUserEverywhere(key, why string) int {
	n := 0
	for _, ep := range t.endpoints {
		if ep.UserIsolated() && ep.EndUser(key, why) {
			n++
		}
	}
	return n
}

// sameCredentials reports whether user u's child would get the same
// environment, and miss the same variables, under declarations a and b.
func (b *Bridge) sameCredentials(a, c *config.Destination, u session.User) bool {
	envA, missA, errA := peruser.Of(b.opts.CredentialsDir, b.opts.CredStore, a, u)
	envC, missC, errC := peruser.Of(b.opts.CredentialsDir, b.opts.CredStore, c, u)
	return errA == nil && errC == nil && maps.Equal(envA, envC) && slices.Equal(missA, missC)
}
