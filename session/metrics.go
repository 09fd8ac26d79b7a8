package session

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the bridge's Prometheus series, per destination.
type metrics struct {
	reg        *prometheus.Registry
	inflight   *prometheus.GaugeVec
	calls      *prometheus.CounterVec
	latency    *prometheus.HistogramVec
	delivered  *prometheus.CounterVec
	dropped    *prometheus.CounterVec
	bytesIn    *prometheus.CounterVec
	bytesOut   *prometheus.CounterVec
	legacyHits *prometheus.CounterVec
	evicted    *prometheus.CounterVec
	refused    *prometheus.CounterVec
	streams    *prometheus.GaugeVec
}

// endpointMetrics are one destination's series, resolved once.
type endpointMetrics struct {
	inflight   prometheus.Gauge
	latency    prometheus.Observer
	delivered  prometheus.Counter
	dropped    prometheus.Counter
	bytesIn    prometheus.Counter
	bytesOut   prometheus.Counter
	legacyHits prometheus.Counter
	evicted    prometheus.Counter
	streams    prometheus.Gauge
	calls      *prometheus.CounterVec // by outcome
	refused    *prometheus.CounterVec // by reason
}

func newMetrics(h *Handler) *metrics {
	dest := []string{"destination"}
	m := &metrics{
		reg: prometheus.NewRegistry(),
		inflight: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "stelae_inflight_calls",
			Help: "Requests forwarded to the child and not yet answered."}, dest),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "stelae_calls_total",
			Help: "POSTed requests by outcome: ok, timeout, unavailable, too_large, cancelled, rejected."}, []string{"destination", "outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "stelae_call_duration_seconds",
			Help: "Time from a POSTed request to its answer.", Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10)}, dest),
		delivered: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "stelae_notifications_delivered_total",
			Help: "Messages from the child queued for a session's GET streams."}, dest),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "stelae_notifications_dropped_total",
			Help: "Messages dropped: a full backlog, or a stream closed for falling behind."}, dest),
		bytesIn: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "stelae_bytes_in_total",
			Help: "Bytes of POSTed bodies."}, dest),
		bytesOut: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "stelae_bytes_out_total",
			Help: "Bytes of answers and SSE events written to clients."}, dest),
		legacyHits: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "stelae_legacy_route_hits_total",
			Help: "Requests to the removed HTTP+SSE routes (/sse, /message), answered 410."}, dest),
		evicted: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "stelae_sessions_evicted_total",
			Help: "Sessions evicted at the session cap to make room for a new one (the least recently used one that was not busy)."}, dest),
		streams: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "stelae_get_streams",
			Help: "Open GET (SSE) streams of the destination's sessions."}, dest),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "stelae_initialize_refused_total",
			Help: "initialize requests refused by the bridge: session_cap (every session busy, 503) or invalid_initialize (malformed params, 400)."}, []string{"destination", "reason"}),
	}
	m.reg.MustRegister(m.inflight, m.calls, m.latency, m.delivered, m.dropped, m.bytesIn, m.bytesOut, m.legacyHits, m.evicted, m.refused, m.streams,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "stelae_request_body_bytes",
			Help: "Buffer memory held by POST bodies being read or served, against -max-body-memory."}, func() float64 { return float64(h.bodies.used.Load()) }),
		&stateCollector{h: h}, prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	return m
}

func (m *metrics) forEndpoint(name string) *endpointMetrics {
	// Refusals show as 0 from the start, not only once one happened.
	for _, reason := range []string{"session_cap", "invalid_initialize"} {
		m.refused.WithLabelValues(name, reason)
	}
	return &endpointMetrics{
		inflight:   m.inflight.WithLabelValues(name),
		latency:    m.latency.WithLabelValues(name),
		delivered:  m.delivered.WithLabelValues(name),
		dropped:    m.dropped.WithLabelValues(name),
		bytesIn:    m.bytesIn.WithLabelValues(name),
		bytesOut:   m.bytesOut.WithLabelValues(name),
		legacyHits: m.legacyHits.WithLabelValues(name),
		evicted:    m.evicted.WithLabelValues(name),
		streams:    m.streams.WithLabelValues(name),
		calls:      m.calls.MustCurryWith(prometheus.Labels{"destination": name}),
		refused:    m.refused.MustCurryWith(prometheus.Labels{"destination": name}),
	}
}

// outcome names a POST's result for stelae_calls_total.
func outcome(status int) string {
	switch {
	case status < 300:
		return "ok"
	case status == http.StatusGatewayTimeout:
		return "timeout"
	case status == http.StatusServiceUnavailable:
		return "unavailable"
	case status == http.StatusBadGateway:
		return "too_large"
	case status == http.StatusNotFound:
		return "cancelled"
	}
	return "rejected"
}

// observeCall records one POSTed request.
func (em *endpointMetrics) observeCall(status int, start time.Time) {
	em.calls.WithLabelValues(outcome(status)).Inc()
	em.latency.Observe(time.Since(start).Seconds())
}

// stateCollector reports what the dispatchers and registries know at scrape
// time: sessions, child state and restarts.
type stateCollector struct{ h *Handler }

var (
	descSessions = prometheus.NewDesc("stelae_sessions", "Live sessions.", []string{"destination"}, nil)
	descState    = prometheus.NewDesc("stelae_child_state", "1 for the child's current state.", []string{"destination", "state"}, nil)
	descRestarts = prometheus.NewDesc("stelae_child_restarts_total", "Restarts of the child after it crashed.", []string{"destination"}, nil)
)

var childStates = []string{"idle", "starting", "running", "restarting", "failed"}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descSessions
	ch <- descState
	ch <- descRestarts
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	for _, name := range c.h.names {
		ep := c.h.endpoints[name]
		st := ep.status()
		ch <- prometheus.MustNewConstMetric(descSessions, prometheus.GaugeValue, float64(ep.reg.count()), name)
		ch <- prometheus.MustNewConstMetric(descRestarts, prometheus.CounterValue, float64(st.RestartsTotal), name)
		for _, s := range childStates {
			v := 0.0
			if s == st.State {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(descState, prometheus.GaugeValue, v, name, s)
		}
	}
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
