package telemetry

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// TestSetup: tracing is off unless OTEL_TRACES_EXPORTER=otlp; an exporter
// or protocol it cannot use is refused, saying what it takes.
func TestSetup(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		on   bool
		fail string
	}{
		{map[string]string{}, false, ""},
		{map[string]string{"OTEL_TRACES_EXPORTER": "none"}, false, ""},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}, true, ""},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}, true, ""},
		{map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, false, "by OTLP only"},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, false, "use http/protobuf or grpc"},
	} {
		tr, err := Setup(context.Background(), env(tc.env), "test")
		if tc.fail != "" {
			if err == nil || !strings.Contains(err.Error(), tc.fail) {
				t.Errorf("%v: %v; want an error saying %q", tc.env, err, tc.fail)
			}
			continue
		}
		if err != nil || (tr != nil) != tc.on {
			t.Errorf("%v: tracing %v, %v; want on %v", tc.env, tr != nil, err, tc.on)
		}
		_ = tr.Shutdown(context.Background())
	}
}

// testTracing is a Tracing whose spans go to an in-memory recorder.
func testTracing() (*Tracing, *tracetest.SpanRecorder) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	return &Tracing{tp: tp, tracer: tp.Tracer("test"), prop: propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})}, rec
}

// TestSpansAndMeta: the server span continues the client's trace; the
// child's span is under it and Meta writes its context; off, everything
// is a no-op.
func TestSpansAndMeta(t *testing.T) {
	tr, rec := testTracing()
	h := http.Header{"Traceparent": {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}
	ctx, span := tr.Start(context.Background(), h, Request{Method: "tools/call", Target: "echo", ID: "7", Destination: "d"})
	cctx, end := tr.ChildCall(ctx, "tools/call", "echo")
	meta := string(tr.Meta(cctx))
	end(false)
	span.End(200, 0, false)
	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans ended", len(spans))
	}
	child, server := spans[0], spans[1]
	if server.Name() != "tools/call echo" || server.Parent().SpanID().String() != "00f067aa0ba902b7" || server.SpanContext().TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("server span %q under %s in %s", server.Name(), server.Parent().SpanID(), server.SpanContext().TraceID())
	}
	if child.Parent().SpanID() != server.SpanContext().SpanID() {
		t.Errorf("the child's span is not under the server's")
	}
	if want := `"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-` + child.SpanContext().SpanID().String() + `-01"`; meta != want {
		t.Errorf("Meta %s; want %s", meta, want)
	}
	var off *Tracing
	octx, ospan := off.Start(context.Background(), h, Request{Method: "ping"})
	ospan.End(200, 0, false)
	_, oend := off.ChildCall(octx, "ping", "")
	oend(true)
	if off.Meta(octx) != nil || With(octx, ospan) != octx {
		t.Error("tracing off did something")
	}
}

// BenchmarkTracedCall is what tracing adds to one call (on: a server span,
// the child's span and its _meta, ended into a batch processor whose
// exporter drops them), against off.
func BenchmarkTracedCall(b *testing.B) {
	h := http.Header{"Traceparent": {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}
	for _, on := range []bool{false, true} {
		var tr *Tracing
		if on {
			tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
			defer tp.Shutdown(context.Background())
			tr = &Tracing{tp: tp, tracer: tp.Tracer("bench"), prop: propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})}
		}
		name := map[bool]string{false: "off", true: "on"}[on]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				ctx, span := tr.Start(context.Background(), h, Request{Method: "tools/call", Target: "echo", ID: "7", Session: "s", Destination: "d"})
				cctx, end := tr.ChildCall(ctx, "tools/call", "echo")
				_ = tr.Meta(cctx)
				end(false)
				span.End(200, 0, false)
			}
		})
	}
}

// TestSetupMetrics: metrics over OTLP are off unless asked for (and
// "prometheus" is /metrics, served anyway); an exporter or protocol the
// bridge does not have is an error naming the variable.
func TestSetupMetrics(t *testing.T) {
	for _, env := range []map[string]string{{}, {"OTEL_METRICS_EXPORTER": "none"}, {"OTEL_METRICS_EXPORTER": "prometheus"}} {
		m, err := SetupMetrics(context.Background(), func(k string) string { return env[k] }, "v")
		if m != nil || err != nil {
			t.Errorf("%v: %v, %v; want off", env, m, err)
		}
		if err := m.Shutdown(context.Background()); err != nil {
			t.Errorf("a nil Metrics' Shutdown: %v", err)
		}
	}
	for _, env := range []map[string]string{{"OTEL_METRICS_EXPORTER": "zipkin"}, {"OTEL_METRICS_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}} {
		if _, err := SetupMetrics(context.Background(), func(k string) string { return env[k] }, "v"); err == nil || !strings.Contains(err.Error(), "OTEL_") {
			t.Errorf("%v: %v; want an error naming the variable", env, err)
		}
	}
	m, err := SetupMetrics(context.Background(), func(k string) string { return map[string]string{"OTEL_METRICS_EXPORTER": "otlp"}[k] }, "v")
	if err != nil || m == nil {
		t.Fatalf("otlp: %v, %v", m, err)
	}
	// Shut down before Start (the bridge did not start): the exporter
	// stops all the same.
	if err := m.Shutdown(context.Background()); err != nil {
		t.Errorf("Shutdown before Start: %v", err)
	}
}
