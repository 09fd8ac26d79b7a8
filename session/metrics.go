package session

import (
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are one endpoint's series. The endpoint fills them; the bridge
// registers them (MetricSet) and serves them.
type Metrics struct {
	Inflight  prometheus.Gauge
	Latency   prometheus.Observer
	Delivered prometheus.Counter
	Dropped   prometheus.Counter
	BytesIn   prometheus.Counter
	BytesOut  prometheus.Counter
	Evicted   prometheus.Counter
	Streams   prometheus.Gauge
	// Parked counts the 2026-07-28 calls waiting for their clients'
	// input (also counted in Inflight).
	Parked prometheus.Gauge
	// Calls counts POSTed requests by outcome; Refused initializes by
	// reason.
	Calls   *prometheus.CounterVec
	Refused *prometheus.CounterVec
	// okCalls is Calls' "ok" series, looked up once (the hot path's).
	okOnce  sync.Once
	okCalls prometheus.Counter
	// Operation is mcp.server.operation.duration (OpenTelemetry's MCP
	// conventions) by method, tool and error type; ToolCalls the tool
	// calls by tool and outcome. Their tool label is capped (toolLabel).
	Operation *prometheus.HistogramVec
	ToolCalls *prometheus.CounterVec
	tools     toolLabels
}

// maxToolLabels bounds the tool names a destination's series are
// labelled with; the calls of any other are counted under "other" (a
// client may name tools that do not exist).
const maxToolLabels = 128

// toolLabels are the tool names a destination's series carry.
type toolLabels struct {
	// mu guards names.
	mu    sync.Mutex
	names map[string]struct{}
}

// label is the label of tool name: itself while there are fewer than
// maxToolLabels, else "other" for a new one.
func (t *toolLabels) label(name string) string {
	if name == "" {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.names[name]; ok {
		return name
	}
	if len(t.names) >= maxToolLabels {
		return "other"
	}
	if t.names == nil {
		t.names = map[string]struct{}{}
	}
	t.names[name] = struct{}{}
	return name
}

// metricMethods are the methods the operation series name; any other is
// "other" (a client may send any method name).
var metricMethods = map[string]bool{}

func init() {
	for _, m := range []string{"initialize", "ping", "tools/list", "tools/call", "resources/list", "resources/templates/list", "resources/read",
		"resources/subscribe", "resources/unsubscribe", "prompts/list", "prompts/get", "completion/complete", "logging/setLevel",
		"server/discover", "subscriptions/listen", "tasks/get", "tasks/result", "tasks/list", "tasks/cancel", "tasks/update"} {
		metricMethods[m] = true
	}
}

// observeOperation records one request's operation: method, the tool it
// called ("" for none), its error type ("" when it succeeded) and how long
// it took.
func (m *Metrics) observeOperation(method, tool, errType string, elapsed time.Duration) {
	if m.Operation == nil {
		return
	}
	if !metricMethods[method] {
		method = "other"
	}
	tool = m.tools.label(tool)
	m.Operation.WithLabelValues(method, tool, errType).Observe(elapsed.Seconds())
	if method == "tools/call" {
		outcome := "ok"
		if errType != "" {
			outcome = "error"
			if errType == "tool_error" {
				outcome = "tool_error"
			}
		}
		m.ToolCalls.WithLabelValues(tool, outcome).Inc()
	}
}

// MetricSet holds the series of every endpoint, labelled by destination.
type MetricSet struct {
	inflight  *prometheus.GaugeVec
	calls     *prometheus.CounterVec
	latency   *prometheus.HistogramVec
	delivered *prometheus.CounterVec
	dropped   *prometheus.CounterVec
	bytesIn   *prometheus.CounterVec
	bytesOut  *prometheus.CounterVec
	evicted   *prometheus.CounterVec
	refused   *prometheus.CounterVec
	streams   *prometheus.GaugeVec
	parked    *prometheus.GaugeVec
	operation *prometheus.HistogramVec
	toolCalls *prometheus.CounterVec
}

// NewMetricSet makes the endpoints' series and registers them with reg
// (none when reg is nil).
func NewMetricSet(reg prometheus.Registerer) *MetricSet {
	dest := []string{"destination"}
	m := &MetricSet{
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
		evicted: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "stelae_sessions_evicted_total",
			Help: "Sessions evicted at the session cap to make room for a new one (the least recently used one that was not busy)."}, dest),
		streams: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "stelae_get_streams",
			Help: "Open streams of the destination: its sessions' GET (SSE) streams and 2026-07-28 subscriptions/listen streams."}, dest),
		parked: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "stelae_parked_calls",
			Help: "2026-07-28 calls waiting for their clients' input (input_required answered, retry not yet come); counted in stelae_inflight_calls too."}, dest),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "stelae_initialize_refused_total",
			Help: "initialize requests refused by the bridge: session_cap (every session busy, or none of the client's own idle at the cap; 503), invalid_initialize (malformed params, 400), child_cap (isolation: session: the children alive and stopping are at the cap, or start too fast; 503)."}, []string{"destination", "reason"}),
	}
	m.operation = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "mcp_server_operation_duration_seconds",
		Help:    "MCP request duration as observed by the bridge, from its receipt to its answer (OpenTelemetry's mcp.server.operation.duration), by method, tool (gen_ai.tool.name) and error type (empty when it succeeded: a JSON-RPC error's code, tool_error for an isError result, or the HTTP outcome).",
		Buckets: []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}}, []string{"destination", "mcp_method_name", "gen_ai_tool_name", "error_type"})
	m.toolCalls = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "stelae_tool_calls_total",
		Help: "Tool calls by tool and outcome (ok, error, tool_error); at most 128 tool names a destination, the calls of others counted as other."}, []string{"destination", "tool", "outcome"})
	if reg != nil {
		reg.MustRegister(m.inflight, m.calls, m.latency, m.delivered, m.dropped, m.bytesIn, m.bytesOut, m.evicted, m.refused, m.streams, m.parked, m.operation, m.toolCalls)
	}
	return m
}

// For returns destination name's series.
func (m *MetricSet) For(name string) *Metrics {
	return &Metrics{
		Inflight:  m.inflight.WithLabelValues(name),
		Latency:   m.latency.WithLabelValues(name),
		Delivered: m.delivered.WithLabelValues(name),
		Dropped:   m.dropped.WithLabelValues(name),
		BytesIn:   m.bytesIn.WithLabelValues(name),
		BytesOut:  m.bytesOut.WithLabelValues(name),
		Evicted:   m.evicted.WithLabelValues(name),
		Streams:   m.streams.WithLabelValues(name),
		Parked:    m.parked.WithLabelValues(name),
		Calls:     m.calls.MustCurryWith(prometheus.Labels{"destination": name}),
		Refused:   m.refused.MustCurryWith(prometheus.Labels{"destination": name}),
		Operation: m.operation.MustCurryWith(prometheus.Labels{"destination": name}).(*prometheus.HistogramVec),
		ToolCalls: m.toolCalls.MustCurryWith(prometheus.Labels{"destination": name}),
	}
}

// NewMetrics returns unregistered series for an endpoint nobody scrapes.
func NewMetrics(reg prometheus.Registerer, name string) *Metrics { return NewMetricSet(reg).For(name) }

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
func (m *Metrics) observeCall(status int, elapsed time.Duration) {
	if status < 300 {
		m.okOnce.Do(func() { m.okCalls = m.Calls.WithLabelValues("ok") })
		m.okCalls.Inc()
	} else {
		m.Calls.WithLabelValues(outcome(status)).Inc()
	}
	m.Latency.Observe(elapsed.Seconds())
}
