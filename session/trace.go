package session

import (
	"net/http"

	"github.com/stelae-bridge/stelae-bridge/httpx"
	"github.com/stelae-bridge/stelae-bridge/jsonrpc"
	"github.com/stelae-bridge/stelae-bridge/telemetry"
)

// startSpan begins the server span of the request p holds (tracing is
// on): named and attributed by the MCP semantic conventions, continuing
// the client's trace from r's headers. It returns r carrying the span,
// whose context the call takes to the child (dispatch.Options.TraceMeta);
// endPost ends it.
func (ep *Endpoint) startSpan(r *http.Request, p *post) *http.Request {
	req := telemetry.Request{Method: p.m.Method, ID: string(p.m.ID), Destination: ep.name,
		Session: httpx.Header(r.Header, httpx.HeaderSessionID), Version: httpx.Header(r.Header, httpx.HeaderProtocolVersion)}
	if p.env.version != nil {
		req.Version = jsonrpc.String(p.env.version)
	}
	if p.m.Method == "tools/call" || p.m.Method == "prompts/get" {
		req.Target = jsonrpc.String(p.env.name)
	}
	if u := UserFrom(r); u.Known() {
		req.Principal = u.String()
	}
	ctx, span := ep.opts.Tracing.Start(r.Context(), r.Header, req)
	p.rec.span = span
	return r.WithContext(ctx)
}
