package bridge

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stelae-bridge/stelae-bridge/h1"
	"runtime"

	"github.com/stelae-bridge/stelae-bridge/dispatch"
	"github.com/stelae-bridge/stelae-bridge/supervisor"
)

// registerMetrics registers the bridge-wide series with b.reg: legacy route
// hits, the body budget, what the endpoints know at scrape time, and the Go
// runtime's and the process's own. (The endpoints' series are registered by
// session.NewMetricSet.)
func (b *Bridge) registerMetrics() {
	b.legacyHits = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "stelae_legacy_route_hits_total",
		Help: "Requests to the removed HTTP+SSE routes (/sse, /message), answered 410."}, []string{"destination"})
	for _, n := range b.t().names {
		b.legacyHits.WithLabelValues(n) // 0 from the start
	}
	b.reloads = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "stelae_config_reloads_total",
		Help: "Reloads of the destinations file (SIGHUP, -watch) by result: applied, unchanged, invalid (the file did not load), refused (the running bridge cannot take it)."}, []string{"result"})
	for _, r := range []string{"applied", "unchanged", "invalid", "refused"} {
		b.reloads.WithLabelValues(r) // 0 from the start
	}
	b.tokenReloads = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "stelae_tokens_reloads_total",
		Help: "Reloads of the static tokens file (SIGHUP, -watch) by result: applied, unchanged, invalid (the file did not load), refused (the running bridge cannot take it: no token left, or tokens on a bridge started without)."}, []string{"result"})
	for _, r := range []string{"applied", "unchanged", "invalid", "refused"} {
		b.tokenReloads.WithLabelValues(r) // 0 from the start
	}
	b.lastReload = prometheus.NewGauge(prometheus.GaugeOpts{Name: "stelae_config_last_reload_success_timestamp_seconds",
		Help: "When the destinations file was last loaded and applied (Unix time; the start, before any reload)."})
	b.lastReload.SetToCurrentTime()
	b.refusedTokens = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "stelae_auth_refused_total",
		Help: "Requests the auth layer refused, by destination (\"\" for the operator's routes) and reason: missing (no token), wrong_token (not a configured static token), invalid (an access token refused: signature, expiry, audience…), insufficient_scope, forbidden (subject not allowed), unavailable (the issuer cannot be reached)."}, []string{"destination", "reason"})
	b.reg.MustRegister(b.legacyHits, b.reloads, b.tokenReloads, b.lastReload, b.refusedTokens, connCollector{b.conns},
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "stelae_request_body_bytes",
			Help: "Buffer memory held by POST bodies being read or served, against -max-body-memory."}, func() float64 { return float64(b.limits.BodyBytes()) }),
		stateCollector{b: b}, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "stelae_build_info",
			Help:        "1, labelled with the bridge's version, the commit it was built from (\"\" when unknown, -dirty with changes) and its Go version.",
			ConstLabels: prometheus.Labels{"version": b.opts.Version, "commit": b.opts.Commit, "go_version": runtime.Version()}}, func() float64 { return 1 }))
	if b.opts.Audit != nil {
		b.reg.MustRegister(b.opts.Audit.Collectors()...)
	}
	b.metricsHandler = promhttp.HandlerFor(b.reg, promhttp.HandlerOpts{})
}

// connCollector reports the connection limit's counts (h1.ConnLimit).
type connCollector struct{ l *h1.ConnLimit }

var (
	descConns        = prometheus.NewDesc("stelae_connections", "Open client connections, against -max-connections: the fast path's, net/http's and hijacked GET streams'.", nil, nil)
	descConnsEvicted = prometheus.NewDesc("stelae_connections_evicted_total", "Idle connections closed to make room for a new one, by the limit reached: max_connections, or per_address (the new one's address held half of -max-connections).", []string{"limit"}, nil)
	descConnsRefused = prometheus.NewDesc("stelae_connections_refused_total", "New connections answered 503 because a limit was reached and no connection it could close was idle, by that limit (max_connections, per_address).", []string{"limit"}, nil)
)

func (c connCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descConns
	ch <- descConnsEvicted
	ch <- descConnsRefused
}

func (c connCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(descConns, prometheus.GaugeValue, float64(c.l.Open()))
	c.l.Counts(func(limit string, evicted, refused uint64) {
		ch <- prometheus.MustNewConstMetric(descConnsEvicted, prometheus.CounterValue, float64(evicted), limit)
		ch <- prometheus.MustNewConstMetric(descConnsRefused, prometheus.CounterValue, float64(refused), limit)
	})
}

// stateCollector reports what the endpoints know at scrape time: sessions,
// child state and restarts.
type stateCollector struct{ b *Bridge }

var (
	descSessions = prometheus.NewDesc("stelae_sessions", "Live sessions.", []string{"destination"}, nil)
	descState    = prometheus.NewDesc("stelae_child_state", "1 for the child's current state.", []string{"destination", "state"}, nil)
	descRestarts = prometheus.NewDesc("stelae_child_restarts_total", "Restarts of the child after it crashed.", []string{"destination"}, nil)
	descLogsDrop = prometheus.NewDesc("stelae_child_logs_dropped_total", "Log messages of the child's that reached no session: not attributable to one ('logs:').", []string{"destination"}, nil)
	descRefused  = prometheus.NewDesc("stelae_child_requests_refused_total", "Requests of the child's (sampling, elicitation, roots) answered with an error because the bridge could not know whose they were: several_users (calls of more than one user in flight: see 'interactive:'), no_call, abandoned, capability, no_session, queue_full.", []string{"destination", "reason"}, nil)
)

// childStates are the states stelae_child_state reports (stopping is brief
// and only at shutdown).
var childStates = []string{supervisor.StateIdle, supervisor.StateStarting, supervisor.StateRunning, supervisor.StateRestarting, supervisor.StateFailed}

func (c stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descSessions
	ch <- descState
	ch <- descRestarts
	ch <- descLogsDrop
	ch <- descRefused
}

func (c stateCollector) Collect(ch chan<- prometheus.Metric) {
	t := c.b.t()
	for _, name := range t.names {
		ep := t.endpoints[name]
		st := ep.Status()
		ch <- prometheus.MustNewConstMetric(descSessions, prometheus.GaugeValue, float64(ep.SessionCount()), name)
		ch <- prometheus.MustNewConstMetric(descRestarts, prometheus.CounterValue, float64(st.RestartsTotal), name)
		ch <- prometheus.MustNewConstMetric(descLogsDrop, prometheus.CounterValue, float64(st.LogsDropped), name)
		for _, reason := range dispatch.RefusalReasons() {
			ch <- prometheus.MustNewConstMetric(descRefused, prometheus.CounterValue, float64(st.Refused[reason]), name, reason)
		}
		for _, s := range childStates {
			v := 0.0
			if s == st.State {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(descState, prometheus.GaugeValue, v, name, s)
		}
	}
}

// Gatherer is the bridge's metrics registry, what /metrics serves (for an
// exporter that sends the same series elsewhere: telemetry.SetupMetrics).
func (b *Bridge) Gatherer() prometheus.Gatherer { return b.reg }
