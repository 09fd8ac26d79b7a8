// Package telemetry is the bridge's OpenTelemetry tracing (issue 39): one
// trace from the client through the bridge into the child. It is off
// unless asked for — OTEL_TRACES_EXPORTER=otlp, with the standard
// OTEL_EXPORTER_OTLP_* variables configuring the exporter (HTTP/protobuf by
// default, gRPC with OTEL_EXPORTER_OTLP_PROTOCOL=grpc) — and when off
// every entry point is a nil check: the hot path pays nothing.
//
// It owns:
//   - the tracer provider and its batch exporter (Setup, Shutdown);
//   - the server span of one MCP request (Start), named and attributed by
//     OpenTelemetry's MCP semantic conventions ({mcp.method.name}
//     {target}; mcp.method.name, mcp.session.id, mcp.protocol.version,
//     jsonrpc.request.id, gen_ai.tool.name; the destination and the
//     operator's name for the principal, never a token), continuing the
//     client's trace from its traceparent, tracestate and baggage headers;
//   - the W3C trace context of a span as the _meta members the child
//     reads (Meta): the request forwarded to the child carries the
//     bridge span's traceparent unless the client gave its own.
//
// It never reads JSON-RPC itself and never blocks a call: spans are
// exported in batches by the SDK's own goroutine, which Shutdown ends.
package telemetry
