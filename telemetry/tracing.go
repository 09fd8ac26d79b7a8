package telemetry

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Tracing is the bridge's tracer. A nil *Tracing is tracing off: every
// method is then a nil check.
type Tracing struct {
	tp     *sdktrace.TracerProvider
	tracer trace.Tracer
	prop   propagation.TextMapPropagator
}

// Setup starts tracing when the environment asks for it
// (OTEL_TRACES_EXPORTER=otlp); nil, nil when it does not. The exporter
// reads the standard OTEL_EXPORTER_OTLP_* variables itself (endpoint,
// headers, timeout, TLS); OTEL_EXPORTER_OTLP_TRACES_PROTOCOL or
// OTEL_EXPORTER_OTLP_PROTOCOL chooses http/protobuf (the default) or
// grpc; the batch processor reads OTEL_BSP_*, the sampler OTEL_TRACES_SAMPLER.
func Setup(ctx context.Context, getenv func(string) string, version string) (*Tracing, error) {
	switch exp := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); exp {
	case "", "none":
		return nil, nil
	case "otlp":
	default:
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: stelae-bridge exports traces by OTLP only (otlp, or none)", exp)
	}
	grpc, err := useGRPC(getenv, "TRACES")
	if err != nil {
		return nil, err
	}
	var exporter sdktrace.SpanExporter
	if grpc {
		exporter, err = otlptracegrpc.New(ctx)
	} else {
		exporter, err = otlptracehttp.New(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("the OTLP trace exporter: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithResource(bridgeResource(getenv, version)))
	return &Tracing{
		tp:     tp,
		tracer: tp.Tracer("github.com/stelae-bridge/stelae-bridge"),
		prop:   propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}),
	}, nil
}

// useGRPC reports whether the OTLP exporter of signal ("TRACES",
// "METRICS") speaks gRPC: OTEL_EXPORTER_OTLP_{signal}_PROTOCOL or
// OTEL_EXPORTER_OTLP_PROTOCOL is grpc; http/protobuf (the default) is not.
func useGRPC(getenv func(string) string, signal string) (bool, error) {
	name := "OTEL_EXPORTER_OTLP_" + signal + "_PROTOCOL"
	protocol := getenv(name)
	if protocol == "" {
		name = "OTEL_EXPORTER_OTLP_PROTOCOL"
		protocol = getenv(name)
	}
	switch protocol {
	case "", "http/protobuf":
		return false, nil
	case "grpc":
		return true, nil
	}
	return false, fmt.Errorf("%s=%q: use http/protobuf or grpc", name, protocol)
}

// bridgeResource is what the bridge's spans and metrics say of it: its
// service name and version, with the SDK's defaults.
func bridgeResource(getenv func(string) string, version string) *resource.Resource {
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(
		attribute.String("service.name", serviceName(getenv)), attribute.String("service.version", version)))
	if err != nil {
		return resource.Default()
	}
	return res
}

// serviceName is OTEL_SERVICE_NAME, or stelae-bridge.
func serviceName(getenv func(string) string) string {
	if n := getenv("OTEL_SERVICE_NAME"); n != "" {
		return n
	}
	return "stelae-bridge"
}

// Shutdown exports what is left and stops the exporter.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.tp.Shutdown(ctx)
}

// Span is one MCP request's server span; a nil *Span is none.
type Span struct {
	s trace.Span
}

// Request describes an MCP request for its span.
type Request struct {
	// Method is the JSON-RPC method; Target the tool's or prompt's name
	// (empty for none).
	Method, Target string
	// ID is the request's JSON-RPC id as sent; Session its Mcp-Session-Id
	// ("" for none); Version its protocol version ("" when unknown).
	ID, Session, Version string
	// Destination is the destination or profile; Principal the operator's
	// name for the user (never a token: "" when anonymous).
	Destination, Principal string
}

// Start begins the server span of one MCP request, continuing the trace
// of h's traceparent, tracestate and baggage headers, and returns a
// context carrying it.
func (t *Tracing) Start(ctx context.Context, h http.Header, r Request) (context.Context, *Span) {
	if t == nil {
		return ctx, nil
	}
	ctx = t.prop.Extract(ctx, propagation.HeaderCarrier(h))
	name := r.Method
	if r.Target != "" {
		name += " " + r.Target
	}
	attrs := []attribute.KeyValue{attribute.String("mcp.method.name", r.Method), attribute.String("stelae.destination", r.Destination)}
	if r.ID != "" {
		attrs = append(attrs, attribute.String("jsonrpc.request.id", r.ID))
	}
	if r.Session != "" {
		attrs = append(attrs, attribute.String("mcp.session.id", r.Session))
	}
	if r.Version != "" {
		attrs = append(attrs, attribute.String("mcp.protocol.version", r.Version))
	}
	if r.Principal != "" {
		attrs = append(attrs, attribute.String("enduser.id", r.Principal))
	}
	switch {
	case r.Target == "":
	case r.Method == "tools/call":
		attrs = append(attrs, attribute.String("gen_ai.tool.name", r.Target), attribute.String("gen_ai.operation.name", "execute_tool"))
	case r.Method == "prompts/get":
		attrs = append(attrs, attribute.String("gen_ai.prompt.name", r.Target))
	}
	ctx, s := t.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
	return ctx, &Span{s: s}
}

// TraceID is the span's trace id in hex ("" for a nil span).
func (s *Span) TraceID() string {
	if s == nil {
		return ""
	}
	return s.s.SpanContext().TraceID().String()
}

// End ends the span with what became of the request: its HTTP status, the
// JSON-RPC error code (0: none) and whether a tool's result was an error
// (isError).
func (s *Span) End(status, rpcCode int, toolError bool) {
	if s == nil {
		return
	}
	s.s.SetAttributes(attribute.Int("http.response.status_code", status))
	switch {
	case rpcCode != 0:
		s.s.SetAttributes(attribute.String("rpc.response.status_code", fmt.Sprint(rpcCode)), attribute.String("error.type", fmt.Sprint(rpcCode)))
		s.s.SetStatus(codes.Error, fmt.Sprintf("JSON-RPC error %d", rpcCode))
	case toolError:
		s.s.SetAttributes(attribute.String("error.type", "tool_error"))
		s.s.SetStatus(codes.Error, "the tool's result is an error (isError)")
	case status >= 400:
		s.s.SetAttributes(attribute.String("error.type", fmt.Sprint(status)))
		s.s.SetStatus(codes.Error, http.StatusText(status))
	}
	s.s.End()
}

// Detached is a context that carries ctx's span and nothing else of it
// (no deadline, no cancellation): for a call that outlives the HTTP
// request that started it.
func Detached(ctx context.Context) context.Context {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return context.Background()
	}
	return trace.ContextWithSpanContext(context.Background(), sc)
}

// With returns ctx carrying s's span (ctx itself when s is nil).
func With(ctx context.Context, s *Span) context.Context {
	if s == nil {
		return ctx
	}
	return trace.ContextWithSpan(ctx, s.s)
}

// Meta returns the W3C trace context of ctx's span as _meta members
// ("traceparent":"…" and, when there is one, ,"tracestate":"…"), the
// child's view of the trace; nil when ctx has no span.
func (t *Tracing) Meta(ctx context.Context) []byte {
	if t == nil {
		return nil
	}
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return nil
	}
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	tp := carrier.Get("traceparent")
	if tp == "" {
		return nil
	}
	out := []byte(`"traceparent":"` + tp + `"`)
	if ts := carrier.Get("tracestate"); ts != "" && !strings.ContainsAny(ts, "\"\\") {
		out = append(out, `,"tracestate":"`+ts+`"`...)
	}
	return out
}

// Wait begins the span of something the bridge waits on for a request
// ("turn": its turn on a destination whose calls run alone; "child
// starting" or "child restarting": a child to run; "input": a client's
// answers to what the child asked), named "wait WHAT", under ctx's span
// and begun at since; end ends it, as an error when err is not nil.
func (t *Tracing) Wait(ctx context.Context, what string, since time.Time) (end func(err error)) {
	if t == nil {
		return func(error) {}
	}
	_, s := t.tracer.Start(ctx, "wait "+what, trace.WithSpanKind(trace.SpanKindInternal), trace.WithTimestamp(since),
		trace.WithAttributes(attribute.String("stelae.wait", what)))
	return func(err error) {
		if err != nil {
			s.SetStatus(codes.Error, err.Error())
		}
		s.End()
	}
}

// Related notes on ctx's span (a request's) a message its child sent
// for its caller: an event "child request" or "child notification" with
// the message's mcp.method.name.
func (t *Tracing) Related(ctx context.Context, method string, request bool) {
	if t == nil {
		return
	}
	name := "child notification"
	if request {
		name = "child request"
	}
	trace.SpanFromContext(ctx).AddEvent(name, trace.WithAttributes(attribute.String("mcp.method.name", method)))
}

// ChildCall begins the client span of one request the bridge writes to a
// child (method, and target: the tool's or prompt's name, "" for none),
// under ctx's span; the returned context carries it (its traceparent is
// what the child reads) and end ends it, as an error when failed.
func (t *Tracing) ChildCall(ctx context.Context, method, target string) (context.Context, func(failed bool)) {
	if t == nil {
		return ctx, func(bool) {}
	}
	name := method
	if target != "" {
		name += " " + target
	}
	ctx, s := t.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("mcp.method.name", method), attribute.String("network.transport", "pipe")))
	return ctx, func(failed bool) {
		if failed {
			s.SetStatus(codes.Error, "the child's answer is an error, or none came")
		}
		s.End()
	}
}
