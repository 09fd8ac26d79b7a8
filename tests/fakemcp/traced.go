package fakemcp

import (
	"context"
	"encoding/json"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// The "traced" tool of ModeServer is a server that traces (issue 39): it
// reads the W3C trace context in its request's _meta (traceparent,
// tracestate), does its work in a span of its own under it — "child work",
// exported at once by OTLP/HTTP to the endpoint its environment names
// (OTEL_EXPORTER_OTLP_ENDPOINT, given in its destination's env) — and
// answers with that span's trace id.

// childTracing is the process's tracer provider, made on the first
// traced call.
var childTracing struct {
	once sync.Once
	tp   *sdktrace.TracerProvider
}

// tracedWork runs the traced tool's work under the trace context of
// params._meta and returns the trace id of its span ("" without one).
func tracedWork(params json.RawMessage) string {
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	_ = json.Unmarshal(params, &p)
	carrier := propagation.MapCarrier{}
	for _, k := range []string{"traceparent", "tracestate"} {
		var v string
		if json.Unmarshal(p.Meta[k], &v) == nil && v != "" {
			carrier[k] = v
		}
	}
	ctx := propagation.TraceContext{}.Extract(context.Background(), carrier)
	childTracing.once.Do(func() {
		exp, err := otlptracehttp.New(context.Background())
		if err != nil {
			return
		}
		res := resource.NewSchemaless(attribute.String("service.name", "fake-child"))
		childTracing.tp = sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithResource(res))
	})
	if childTracing.tp == nil {
		return ""
	}
	_, span := childTracing.tp.Tracer("fakemcp").Start(ctx, "child work")
	span.End() // exported now (a syncer)
	return span.SpanContext().TraceID().String()
}
