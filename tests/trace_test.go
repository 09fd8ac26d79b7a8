//go:build unix

package tests

// Tracing (issue 39, in progress): with OTEL_TRACES_EXPORTER=otlp the
// bridge sends one server span per MCP request to a loopback OTLP/HTTP
// receiver, continuing the client's traceparent, and the request the
// child reads carries the bridge span's context in _meta.traceparent.

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	colmetricspb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	metricspb "go.opentelemetry.io/proto/otlp/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

// otlpReceiver is a loopback OTLP receiver of traces and metrics, over
// HTTP (protobuf) at url and over gRPC at grpcURL: it decodes each export
// and keeps its spans and metrics.
type otlpReceiver struct {
	url, grpcURL string
	// mu guards spans and metrics.
	mu      sync.Mutex
	spans   []*tracepb.Span
	metrics []serviceMetric
}

// serviceMetric is a metric and the service.name of who sent it.
type serviceMetric struct {
	service string
	m       *metricspb.Metric
}

func (rcv *otlpReceiver) addSpans(req *coltracepb.ExportTraceServiceRequest) {
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			rcv.spans = append(rcv.spans, ss.Spans...)
		}
	}
}

func (rcv *otlpReceiver) addMetrics(req *colmetricspb.ExportMetricsServiceRequest) {
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	for _, rm := range req.ResourceMetrics {
		service := ""
		for _, kv := range rm.GetResource().GetAttributes() {
			if kv.Key == "service.name" {
				service = kv.Value.GetStringValue()
			}
		}
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				rcv.metrics = append(rcv.metrics, serviceMetric{service, m})
			}
		}
	}
}

// otlpGRPC is the trace service into a receiver.
type otlpGRPC struct {
	coltracepb.UnimplementedTraceServiceServer
	rcv *otlpReceiver
}

func (g otlpGRPC) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	g.rcv.addSpans(req)
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// otlpGRPCMetrics is the metrics service (its method has the trace
// service's name).
type otlpGRPCMetrics struct {
	colmetricspb.UnimplementedMetricsServiceServer
	rcv *otlpReceiver
}

func (g otlpGRPCMetrics) Export(_ context.Context, req *colmetricspb.ExportMetricsServiceRequest) (*colmetricspb.ExportMetricsServiceResponse, error) {
	g.rcv.addMetrics(req)
	return &colmetricspb.ExportMetricsServiceResponse{}, nil
}

func startOTLPReceiver(t testing.TB) *otlpReceiver {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rcv := &otlpReceiver{url: "http://" + ln.Addr().String(), grpcURL: "http://" + gln.Addr().String()}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
		var out proto.Message
		switch r.URL.Path {
		case "/v1/traces":
			var req coltracepb.ExportTraceServiceRequest
			if err = errors.Join(err, proto.Unmarshal(body, &req)); err == nil {
				rcv.addSpans(&req)
				out = &coltracepb.ExportTraceServiceResponse{}
			}
		case "/v1/metrics":
			var req colmetricspb.ExportMetricsServiceRequest
			if err = errors.Join(err, proto.Unmarshal(body, &req)); err == nil {
				rcv.addMetrics(&req)
				out = &colmetricspb.ExportMetricsServiceResponse{}
			}
		}
		if out == nil {
			http.Error(w, "not an OTLP export", http.StatusBadRequest)
			return
		}
		b, _ := proto.Marshal(out)
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(b)
	})}
	go srv.Serve(ln)
	gs := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(gs, otlpGRPC{rcv: rcv})
	colmetricspb.RegisterMetricsServiceServer(gs, otlpGRPCMetrics{rcv: rcv})
	go gs.Serve(gln)
	t.Cleanup(func() { srv.Close(); gs.Stop() })
	return rcv
}

// histogramCount is how many observations service's latest export of
// histogram name counted where attribute key is value (-1: none seen).
func (rcv *otlpReceiver) histogramCount(service, name, key, value string) int {
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	n := -1
	for _, sm := range rcv.metrics {
		m := sm.m
		if sm.service != service || m.Name != name || m.GetHistogram() == nil {
			continue
		}
		for _, dp := range m.GetHistogram().DataPoints {
			for _, kv := range dp.Attributes {
				if kv.Key == key && kv.Value.GetStringValue() == value {
					n = int(dp.Count) // cumulative: the latest is the largest
				}
			}
		}
	}
	return n
}

// span is the first server span named name (nil: none yet).
func (rcv *otlpReceiver) span(name string) *tracepb.Span {
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	for _, s := range rcv.spans {
		if s.Name == name && s.Kind == tracepb.Span_SPAN_KIND_SERVER {
			return s
		}
	}
	return nil
}

func spanAttr(s *tracepb.Span, key string) string {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.Value.GetStringValue()
		}
	}
	return ""
}

// TestTraceThroughTheBridge: a client's traceparent is continued by the
// bridge's server span ("tools/call params", attributed by the MCP
// conventions), which the receiver gets, with the client span of the
// request to the child under it; the child reads that span's context in
// _meta.traceparent; a client's own _meta.traceparent is kept; a
// 2026-07-28 request and a failed call have spans of their own; the
// bridge's OTEL_* variables do not reach the child.
func TestTraceThroughTheBridge(t *testing.T) {
	rcv := startOTLPReceiver(t)
	cfg := fakeDestinations(t, map[string]string{"fake": fakemcp.ModeServer})
	cmd := exec.Command(bridgeBinary(t), "-config", cfg, "-listen", "127.0.0.1:0", "-state-dir", t.TempDir())
	cmd.Env = append(os.Environ(), "OTEL_TRACES_EXPORTER=otlp", "OTEL_EXPORTER_OTLP_ENDPOINT="+rcv.url,
		"OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf", "OTEL_BSP_SCHEDULE_DELAY=50", "OTEL_EXPORTER_OTLP_HEADERS=x-collector-key=secret-of-the-bridge")
	p := runBinary(t, cmd)
	c := newClient(t, p.base+"/fake/mcp")
	c.initialize()
	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	r := c.post(toolCallBody("7", "params", map[string]any{"x": 1}), "traceparent", "00-"+traceID+"-"+parentID+"-01")
	got := textOf(resultOK(t, "params", r))
	var bridgeSpan *tracepb.Span
	waitFor(t, 10*time.Second, "the bridge's span of the call at the receiver", func() bool {
		bridgeSpan = rcv.span("tools/call params")
		return bridgeSpan != nil
	})
	if hex.EncodeToString(bridgeSpan.TraceId) != traceID || hex.EncodeToString(bridgeSpan.ParentSpanId) != parentID {
		t.Errorf("the bridge's span is in trace %x under %x; want the client's %s under %s", bridgeSpan.TraceId, bridgeSpan.ParentSpanId, traceID, parentID)
	}
	if bridgeSpan.Kind != tracepb.Span_SPAN_KIND_SERVER {
		t.Errorf("span kind %v; want server", bridgeSpan.Kind)
	}
	for k, want := range map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "params", "jsonrpc.request.id": "7", "mcp.session.id": c.sid} {
		if v := spanAttr(bridgeSpan, k); v != want {
			t.Errorf("span attribute %s = %q; want %q", k, v, want)
		}
	}
	// The request to the child is a client span under the bridge's, and
	// its context is what the child read.
	var toChild *tracepb.Span
	waitFor(t, 10*time.Second, "the span of the request to the child", func() bool {
		rcv.mu.Lock()
		defer rcv.mu.Unlock()
		for _, s := range rcv.spans {
			if s.Kind == tracepb.Span_SPAN_KIND_CLIENT && string(s.ParentSpanId) == string(bridgeSpan.SpanId) {
				toChild = s
			}
		}
		return toChild != nil
	})
	if toChild.Name != "tools/call params" || spanAttr(toChild, "network.transport") != "pipe" {
		t.Errorf("the request to the child: span %q, transport %q", toChild.Name, spanAttr(toChild, "network.transport"))
	}
	want := fmt.Sprintf(`"traceparent":"00-%s-%s-01"`, traceID, hex.EncodeToString(toChild.SpanId))
	if !strings.Contains(got, want) {
		t.Errorf("the child read params %s; want _meta with %s", got, want)
	}
	// A client's own _meta.traceparent is the child's.
	own := `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"params","arguments":{},"_meta":{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}}`
	if got := textOf(resultOK(t, "params", c.post(own))); !strings.Contains(got, "b7ad6b7169203331") || strings.Count(got, "traceparent") != 1 {
		t.Errorf("the child read %s; want the client's own traceparent, once", got)
	}
	// A 2026-07-28 request: its own span, its era, no session.
	const trace2 = "0af7651916cd43dd8448eb211c80319d"
	r = modernCall(t, c.url, "9", "tools/call", `{"name":"echo","arguments":{"text":"m"},`+modernMeta+`}`, "traceparent", "00-"+trace2+"-"+parentID+"-01")
	resultOK(t, "modern echo", r)
	var modern *tracepb.Span
	waitFor(t, 10*time.Second, "the 2026-07-28 request's span", func() bool {
		modern = rcv.span("tools/call echo")
		return modern != nil
	})
	if hex.EncodeToString(modern.TraceId) != trace2 || spanAttr(modern, "mcp.protocol.version") != "2026-07-28" || spanAttr(modern, "mcp.session.id") != "" {
		t.Errorf("the 2026-07-28 request's span: trace %x, version %q, session %q", modern.TraceId, spanAttr(modern, "mcp.protocol.version"), spanAttr(modern, "mcp.session.id"))
	}
	// A JSON-RPC error marks its span an error.
	c.post(`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"no-such-tool","arguments":{}}}`)
	var failed *tracepb.Span
	waitFor(t, 10*time.Second, "the failed call's span", func() bool {
		failed = rcv.span("tools/call no-such-tool")
		return failed != nil
	})
	if failed.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR || spanAttr(failed, "error.type") == "" {
		t.Errorf("the failed call's span: status %v, error.type %q", failed.Status, spanAttr(failed, "error.type"))
	}
	if bridgeSpan.Status.GetCode() == tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("the call that succeeded is marked an error: %v", bridgeSpan.Status)
	}
	// The bridge's tracing configuration is not the child's.
	if v, _, _ := getenvCall(t, c, "OTEL_EXPORTER_OTLP_HEADERS"); v != "" {
		t.Errorf("the child sees the bridge's OTEL_EXPORTER_OTLP_HEADERS: %q", v)
	}
}

// TestTraceIntoAChildThatTraces: a child that traces (fakemcp's traced
// tool, exporting to the same receiver) hangs its own span under the
// bridge's span of the request to it, in the client's trace — at its
// destination and through a profile.
func TestTraceIntoAChildThatTraces(t *testing.T) {
	rcv := startOTLPReceiver(t)
	command, args, env := fakemcp.Command(fakemcp.ModeServer)
	env["OTEL_EXPORTER_OTLP_ENDPOINT"], env["OTEL_EXPORTER_OTLP_PROTOCOL"] = rcv.url, "http/protobuf"
	var b strings.Builder
	fmt.Fprintf(&b, "destinations:\n  fake:\n    command: %q\n    args: [%q]\n    env:\n", command, args[0])
	for k, v := range env {
		fmt.Fprintf(&b, "      %s: %q\n", k, v)
	}
	b.WriteString("profiles:\n  all: {destinations: [fake]}\n")
	cfg := filepath.Join(t.TempDir(), "destinations.yaml")
	if err := os.WriteFile(cfg, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bridgeBinary(t), "-config", cfg, "-listen", "127.0.0.1:0", "-state-dir", t.TempDir())
	cmd.Env = append(os.Environ(), "OTEL_TRACES_EXPORTER=otlp", "OTEL_EXPORTER_OTLP_ENDPOINT="+rcv.url, "OTEL_BSP_SCHEDULE_DELAY=50")
	p := runBinary(t, cmd)
	node := node24(t)
	for _, tc := range []struct {
		url, tool, traceID string
		ts                 bool // the TypeScript SDK's client (else the test's)
	}{
		{p.base + "/fake/mcp", "traced", "11111111111111111111111111111111", false},
		{p.base + "/p/all/mcp", "fake__traced", "22222222222222222222222222222222", false},
		{p.base + "/fake/mcp", "traced", "33333333333333333333333333333333", true},
		{p.base + "/p/all/mcp", "fake__traced", "44444444444444444444444444444444", true},
	} {
		traceparent := "00-" + tc.traceID + "-00f067aa0ba902b7-01"
		var got string
		if tc.ts {
			// The official TypeScript SDK client, sending the traceparent
			// header with every request of its session.
			run := runClientScript(node, "ts-session.mjs", tc.url, "--label", "traced", "--header", "traceparent: "+traceparent, "--call", tc.tool+" {}")
			var s tsSession
			if err := json.Unmarshal([]byte(run.last), &s); err != nil || !s.OK || len(s.Calls) != 1 {
				t.Fatalf("the TypeScript client: %v %v\nstdout %s\nstderr %s", run.err, err, run.stdout, run.stderr)
			}
			got = s.text(0)
		} else {
			c := newClient(t, tc.url)
			c.initialize()
			got = textOf(resultOK(t, tc.tool, c.post(toolCallBody("1", tc.tool, map[string]any{}), "traceparent", traceparent)))
		}
		if got != tc.traceID {
			t.Errorf("%s (TypeScript SDK %v): the child worked in trace %q; want the client's %s", tc.tool, tc.ts, got, tc.traceID)
		}
		var server, client, child *tracepb.Span
		waitFor(t, 10*time.Second, tc.tool+": the bridge's spans and the child's at the receiver", func() bool {
			rcv.mu.Lock()
			defer rcv.mu.Unlock()
			for _, s := range rcv.spans {
				if hex.EncodeToString(s.TraceId) != tc.traceID {
					continue
				}
				// (The TypeScript client's session has other requests in
				// the trace: its initialize, its tools/list.)
				switch {
				case s.Kind == tracepb.Span_SPAN_KIND_SERVER && s.Name == "tools/call "+tc.tool:
					server = s
				case s.Kind == tracepb.Span_SPAN_KIND_CLIENT && s.Name == "tools/call traced":
					client = s
				case s.Name == "child work":
					child = s
				}
			}
			return server != nil && client != nil && child != nil
		})
		if server.Name != "tools/call "+tc.tool || hex.EncodeToString(server.ParentSpanId) != "00f067aa0ba902b7" || string(client.ParentSpanId) != string(server.SpanId) || string(child.ParentSpanId) != string(client.SpanId) {
			t.Errorf("%s: server span %q %x, client span %x under %x, child's span under %x; want client under server, child under client",
				tc.tool, server.Name, server.SpanId, client.SpanId, client.ParentSpanId, child.ParentSpanId)
		}
	}
}

// spansIn are the receiver's spans of one trace.
func (rcv *otlpReceiver) spansIn(traceID string) []*tracepb.Span {
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	var out []*tracepb.Span
	for _, s := range rcv.spans {
		if hex.EncodeToString(s.TraceId) == traceID {
			out = append(out, s)
		}
	}
	return out
}

// spanNamed is the span of spans named name (nil for none).
func spanNamed(spans []*tracepb.Span, name string) *tracepb.Span {
	for _, s := range spans {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// serverSpan is the server span of spans named name (nil for none).
func serverSpan(spans []*tracepb.Span, name string) *tracepb.Span {
	for _, s := range spans {
		if s.Name == name && s.Kind == tracepb.Span_SPAN_KIND_SERVER {
			return s
		}
	}
	return nil
}

// TestTraceWaits: what the bridge waits on for a request is a span under
// the request's: its turn on a destination whose calls run one at a time,
// its child's restart, and a 2026-07-28 call parked for its client's
// input, which ends when the retry comes.
func TestTraceWaits(t *testing.T) {
	rcv := startOTLPReceiver(t)
	command, args, env := fakemcp.Command(fakemcp.ModeServer)
	var b strings.Builder
	b.WriteString("destinations:\n")
	for _, d := range []struct{ name, keys string }{{"solo", "    interactive: true\n"}, {"crashy", ""}, {"fake", ""}} {
		fmt.Fprintf(&b, "  %s:\n    command: %q\n    args: [%q]\n%s    env:\n", d.name, command, args[0], d.keys)
		for k, v := range env {
			fmt.Fprintf(&b, "      %s: %q\n", k, v)
		}
	}
	cfg := filepath.Join(t.TempDir(), "destinations.yaml")
	if err := os.WriteFile(cfg, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bridgeBinary(t), "-config", cfg, "-listen", "127.0.0.1:0", "-state-dir", t.TempDir(), "-restart-delay", "1s")
	cmd.Env = append(os.Environ(), "OTEL_TRACES_EXPORTER=otlp", "OTEL_EXPORTER_OTLP_ENDPOINT="+rcv.url, "OTEL_BSP_SCHEDULE_DELAY=50")
	p := runBinary(t, cmd)
	traceparent := func(id string) []string { return []string{"traceparent", "00-" + id + "-00f067aa0ba902b7-01"} }

	// Two calls at once where calls run one at a time: one of them waits
	// for the other's turn (1.5 s: the second starts well within it, even
	// on a loaded machine), under its own span.
	c := newClient(t, p.base+"/solo/mcp")
	c.initialize()
	traces := []string{"a1111111111111111111111111111111", "b2222222222222222222222222222222"}
	var wg sync.WaitGroup
	for i, id := range traces {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resultOK(t, "slow", c.post(toolCallBody(strconv.Itoa(10+i), "slow", map[string]any{"ms": 1500, "text": "x"}), traceparent(id)...))
		}()
	}
	wg.Wait()
	var waited []*tracepb.Span
	waitFor(t, 10*time.Second, "both calls' spans", func() bool {
		return serverSpan(rcv.spansIn(traces[0]), "tools/call slow") != nil && serverSpan(rcv.spansIn(traces[1]), "tools/call slow") != nil
	})
	for _, id := range traces {
		spans := rcv.spansIn(id)
		if w := spanNamed(spans, "wait turn"); w != nil {
			if server := serverSpan(spans, "tools/call slow"); string(w.ParentSpanId) != string(server.SpanId) || w.Status.GetCode() == tracepb.Status_STATUS_CODE_ERROR {
				t.Errorf("the wait for the turn: under %x (the call's span is %x), status %v", w.ParentSpanId, server.SpanId, w.Status)
			}
			waited = append(waited, w)
		}
	}
	if len(waited) != 1 {
		t.Errorf("%d of the two calls have a span of their wait for the turn; want exactly 1 (calls run one at a time)", len(waited))
	}

	// A call that comes while its child restarts (a second: within the
	// bridge's patience of 3 s) waits for it.
	cr := newClient(t, p.base+"/crashy/mcp")
	cr.initialize()
	if r := cr.callTool("1", "crash", map[string]any{}); r.status != http.StatusServiceUnavailable {
		t.Fatalf("the crash call: %d %s", r.status, r.body)
	}
	const restartTrace = "c3333333333333333333333333333333"
	resultOK(t, "echo after the crash", cr.post(toolCallBody("2", "echo", map[string]any{"text": "back"}), traceparent(restartTrace)...))
	var restart, server *tracepb.Span
	waitFor(t, 10*time.Second, "the span of the wait for the restart, and the call's", func() bool {
		restart, server = spanNamed(rcv.spansIn(restartTrace), "wait child restarting"), serverSpan(rcv.spansIn(restartTrace), "tools/call echo")
		return restart != nil && server != nil
	})
	if string(restart.ParentSpanId) != string(server.SpanId) {
		t.Errorf("the wait for the restart is under %x, not the call's span %x", restart.ParentSpanId, server.SpanId)
	}

	// A 2026-07-28 call parked for its client's input: the wait is a span
	// under the first request's, ended by the retry.
	const parkTrace = "d4444444444444444444444444444444"
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{}}}`
	askArgs := `"arguments":{"method":"sampling/createMessage","params":"{\"messages\":[{\"role\":\"user\",\"content\":{\"type\":\"text\",\"text\":\"hi\"}}],\"maxTokens\":5}"}`
	key, state := inputRequired(t, modernCall(t, p.base+"/fake/mcp", `"first"`, "tools/call", `{"name":"ask",`+askArgs+`,`+meta+`}`, traceparent(parkTrace)...))
	if w := spanNamed(rcv.spansIn(parkTrace), "wait input"); w != nil {
		t.Fatalf("the park's span was exported before the retry came: %v", w)
	}
	retry := fmt.Sprintf(`{"name":"ask",%s,"inputResponses":{%q:{"role":"assistant","content":{"type":"text","text":"answered"},"model":"m"}},"requestState":%q,%s}`, askArgs, key, state, meta)
	resultOK(t, "the retry", modernCall(t, p.base+"/fake/mcp", `"retry"`, "tools/call", retry, traceparent(parkTrace)...))
	var park, first *tracepb.Span
	waitFor(t, 10*time.Second, "the park's span, and the first request's", func() bool {
		park = spanNamed(rcv.spansIn(parkTrace), "wait input")
		for _, s := range rcv.spansIn(parkTrace) {
			if s.Kind == tracepb.Span_SPAN_KIND_SERVER && spanAttr(s, "jsonrpc.request.id") == `"first"` {
				first = s
			}
		}
		return park != nil && first != nil
	})
	if first == nil || string(park.ParentSpanId) != string(first.SpanId) || park.EndTimeUnixNano < first.EndTimeUnixNano || park.Status.GetCode() == tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("the park's span: under %x (the first request's span: %v), ends %d (the first request's %d), status %v",
			park.ParentSpanId, first, park.EndTimeUnixNano, first.GetEndTimeUnixNano(), park.Status)
	}
}

// TestOTLPProtocols: with OTEL_TRACES_EXPORTER=otlp and
// OTEL_METRICS_EXPORTER=otlp the bridge sends its spans and its metrics —
// the MCP conventions' operation duration among them, as /metrics has
// it — to a loopback collector, over HTTP (protobuf) and over gRPC.
func TestOTLPProtocols(t *testing.T) {
	rcv := startOTLPReceiver(t)
	cfg := fakeDestinations(t, map[string]string{"fake": fakemcp.ModeServer})
	for _, tc := range []struct{ protocol, endpoint, traceID string }{
		{"http/protobuf", rcv.url, "e5555555555555555555555555555555"},
		{"grpc", rcv.grpcURL, "f6666666666666666666666666666666"},
	} {
		t.Run(strings.ReplaceAll(tc.protocol, "/", "-"), func(t *testing.T) {
			cmd := exec.Command(bridgeBinary(t), "-config", cfg, "-listen", "127.0.0.1:0", "-state-dir", t.TempDir())
			cmd.Env = append(os.Environ(), "OTEL_TRACES_EXPORTER=otlp", "OTEL_METRICS_EXPORTER=otlp", "OTEL_EXPORTER_OTLP_PROTOCOL="+tc.protocol,
				"OTEL_EXPORTER_OTLP_ENDPOINT="+tc.endpoint, "OTEL_BSP_SCHEDULE_DELAY=50", "OTEL_METRIC_EXPORT_INTERVAL=100", "OTEL_SERVICE_NAME=bridge-"+tc.protocol)
			p := runBinary(t, cmd)
			c := newClient(t, p.base+"/fake/mcp")
			c.initialize()
			tool := "echo"
			const calls = 3
			for i := range calls {
				resultOK(t, "echo", c.post(toolCallBody(strconv.Itoa(i+1), tool, map[string]any{"text": "x"}), "traceparent", "00-"+tc.traceID+"-00f067aa0ba902b7-01"))
			}
			waitFor(t, 10*time.Second, "the calls' server spans at the collector", func() bool {
				n := 0
				for _, s := range rcv.spansIn(tc.traceID) {
					if s.Kind == tracepb.Span_SPAN_KIND_SERVER && s.Name == "tools/call echo" {
						n++
					}
				}
				return n == calls
			})
			// Both bridges export to the one receiver: each by its own
			// service name.
			waitFor(t, 10*time.Second, "the operation duration at the collector", func() bool {
				return rcv.histogramCount("bridge-"+tc.protocol, "mcp_server_operation_duration_seconds", "gen_ai_tool_name", tool) == calls
			})
			// /metrics says the same.
			if v := metricsOf(t, p)[`mcp_server_operation_duration_seconds_count{destination="fake",error_type="",gen_ai_tool_name="echo",mcp_method_name="tools/call"}`]; v != calls {
				t.Errorf("/metrics counts %v echo calls; want %d", v, calls)
			}
		})
	}
}

// spanEvents are the names and mcp.method.name of s's events.
func spanEvents(s *tracepb.Span) []string {
	var out []string
	for _, e := range s.Events {
		m := ""
		for _, kv := range e.Attributes {
			if kv.Key == "mcp.method.name" {
				m = kv.Value.GetStringValue()
			}
		}
		out = append(out, e.Name+" "+m)
	}
	return out
}

// TestTraceRelated: what a child sends for a call — its progress
// notifications, its sampling request — is noted on the call's span (an
// event each), and nothing of it on another call's.
func TestTraceRelated(t *testing.T) {
	rcv := startOTLPReceiver(t)
	cfg := fakeDestinations(t, map[string]string{"fake": fakemcp.ModeServer})
	cmd := exec.Command(bridgeBinary(t), "-config", cfg, "-listen", "127.0.0.1:0", "-state-dir", t.TempDir())
	cmd.Env = append(os.Environ(), "OTEL_TRACES_EXPORTER=otlp", "OTEL_EXPORTER_OTLP_ENDPOINT="+rcv.url, "OTEL_BSP_SCHEDULE_DELAY=50")
	p := runBinary(t, cmd)
	c := newClient(t, p.base+"/fake/mcp")
	c.initialize()
	const progressTrace, sampleTrace, quietTrace = "a7777777777777777777777777777777", "b8888888888888888888888888888888", "c9999999999999999999999999999999"
	tp := func(id string) string { return "00-" + id + "-00f067aa0ba902b7-01" }
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"progress","arguments":{"steps":3,"ms":1},"_meta":{"progressToken":"pt"}}}`
	st := openSSE(t, http.MethodPost, c.url, c.sid, body, "traceparent", tp(progressTrace))
	st.rest(t, 10*time.Second)
	// The sampling request, answered on the call's stream.
	st = openSSE(t, http.MethodPost, c.url, c.sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sample","arguments":{"prompt":"hi"}}}`, "traceparent", tp(sampleTrace))
	var req rpc
	for req.Method == "" {
		if ev := st.event(t, 10*time.Second); len(ev.data) > 0 {
			req = decode(t, ev.data)
		}
	}
	if r := c.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"role":"assistant","content":{"type":"text","text":"ok"},"model":"m"}}`, req.ID)); r.status != http.StatusAccepted {
		t.Fatalf("the answer to the sampling request: %d %s", r.status, r.body)
	}
	st.rest(t, 10*time.Second)
	resultOK(t, "echo", c.post(toolCallBody("3", "echo", map[string]any{"text": "x"}), "traceparent", tp(quietTrace)))
	var progress, sample, quiet *tracepb.Span
	waitFor(t, 10*time.Second, "the three calls' spans", func() bool {
		progress, sample, quiet = serverSpan(rcv.spansIn(progressTrace), "tools/call progress"), serverSpan(rcv.spansIn(sampleTrace), "tools/call sample"), serverSpan(rcv.spansIn(quietTrace), "tools/call echo")
		return progress != nil && sample != nil && quiet != nil
	})
	if got := strings.Join(spanEvents(progress), ", "); got != strings.Repeat("child notification notifications/progress, ", 2)+"child notification notifications/progress" {
		t.Errorf("the progress call's events: %s", got)
	}
	if got := strings.Join(spanEvents(sample), ", "); got != "child request sampling/createMessage" {
		t.Errorf("the sampling call's events: %s", got)
	}
	if got := spanEvents(quiet); len(got) != 0 {
		t.Errorf("the echo call's span has events: %q", got)
	}
}
