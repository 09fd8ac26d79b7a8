package telemetry

import (
	"context"
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	promotel "go.opentelemetry.io/contrib/bridges/prometheus"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// Metrics sends the bridge's metrics — every series /metrics shows, the
// MCP conventions' operation duration and tool calls among them — over
// OTLP. A nil *Metrics is off.
//
// The series are kept once, in the bridge's Prometheus registry; the
// OpenTelemetry Prometheus bridge (a producer the periodic reader asks at
// each export) reads them there, so /metrics and OTLP cannot disagree
// and the call path records each value once.
type Metrics struct {
	exporter sdkmetric.Exporter
	getenv   func(string) string
	version  string
	// mp is set by Start (once, before the bridge serves).
	mp *sdkmetric.MeterProvider
}

// SetupMetrics makes the exporter of the bridge's metrics when the
// environment asks for it (OTEL_METRICS_EXPORTER=otlp); nil, nil when it
// does not. Start starts it on the bridge's registry. The exporter
// reads the standard OTEL_EXPORTER_OTLP_* variables (endpoint, headers,
// TLS); OTEL_EXPORTER_OTLP_METRICS_PROTOCOL or OTEL_EXPORTER_OTLP_PROTOCOL
// chooses http/protobuf (the default) or grpc; the reader exports every
// OTEL_METRIC_EXPORT_INTERVAL (60 s by default).
func SetupMetrics(ctx context.Context, getenv func(string) string, version string) (*Metrics, error) {
	switch exp := strings.TrimSpace(getenv("OTEL_METRICS_EXPORTER")); exp {
	case "", "none", "prometheus":
		// prometheus: /metrics, which is always served.
		return nil, nil
	case "otlp":
	default:
		return nil, fmt.Errorf("OTEL_METRICS_EXPORTER=%q: stelae-bridge exports metrics by OTLP (otlp), or serves them at /metrics (prometheus, or none)", exp)
	}
	grpc, err := useGRPC(getenv, "METRICS")
	if err != nil {
		return nil, err
	}
	var exporter sdkmetric.Exporter
	if grpc {
		exporter, err = otlpmetricgrpc.New(ctx)
	} else {
		exporter, err = otlpmetrichttp.New(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("the OTLP metric exporter: %w", err)
	}
	return &Metrics{exporter: exporter, getenv: getenv, version: version}, nil
}

// Start exports g's series every interval from now on.
func (m *Metrics) Start(g prometheus.Gatherer) {
	if m == nil {
		return
	}
	reader := sdkmetric.NewPeriodicReader(m.exporter, sdkmetric.WithProducer(promotel.NewMetricProducer(promotel.WithGatherer(g))))
	m.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader), sdkmetric.WithResource(bridgeResource(m.getenv, m.version)))
}

// Shutdown exports the metrics once more and stops the exporter.
func (m *Metrics) Shutdown(ctx context.Context) error {
	switch {
	case m == nil:
		return nil
	case m.mp == nil:
		return m.exporter.Shutdown(ctx)
	}
	return m.mp.Shutdown(ctx)
}
