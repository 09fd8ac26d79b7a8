package doctor

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Status is a check's verdict.
type Status string

// The verdicts.
const (
	Pass Status = "pass"
	Warn Status = "warn" // some clients mind; the run still passes
	Fail Status = "fail"
	Skip Status = "skip" // not checked: Found says why
)

// Result is one check's.
type Result struct {
	// Check names it (stable, for scripts): "url", "tls", "initialize", …
	Check  string `json:"check"`
	Status Status `json:"status"`
	// Found is what the check saw; Cause the likely cause and Fix what to
	// change (both for a warning or a failure).
	Found string `json:"found"`
	Cause string `json:"cause,omitempty"`
	Fix   string `json:"fix,omitempty"`
}

// Report is a run's.
type Report struct {
	URL     string   `json:"url"`
	Results []Result `json:"results"`
	// Tools is how many tools the endpoint lists (-1: not listed).
	Tools int `json:"tools"`
	// OK: no check failed.
	OK bool `json:"ok"`
}

// Options configure a run.
type Options struct {
	// URL is the endpoint as a client is given it:
	// https://host/{destination}/mcp.
	URL string
	// Token, when set, is sent as a bearer token (a static token of the
	// bridge's, or an access token): the checks behind auth run too.
	Token string
	// RootCAs verifies TLS (nil: the system's).
	RootCAs *x509.CertPool
	// KeepaliveWait is how long a stream may go without a byte before the
	// proxy is said to buffer it (default 20 s: the bridge sends a
	// keepalive every 15 s).
	KeepaliveWait time.Duration
	// Hold is how long a stream is held open to find a proxy's timeout
	// (default 0: not held; 'doctor -hold 100s').
	Hold time.Duration
	// Timeout bounds each request (default 15 s).
	Timeout time.Duration
	// CIMDClient is a known client's metadata document URL (its client
	// id), which the run asks the authorization server to use, as that
	// client's sign-in does: the server fetches it (default claude.ai's);
	// CIMDRedirect is one of its redirect URIs (default claude.ai's).
	// Offline skips that check: the server would reach the internet.
	CIMDClient, CIMDRedirect string
	Offline                  bool
}

// claude.ai's client ID metadata document, and its redirect URI.
const (
	claudeCIMD     = "https://claude.ai/oauth/mcp-oauth-client-metadata"
	claudeCallback = "https://claude.ai/api/mcp/auth_callback"
)

// Client caps: how many tools each client keeps.
var toolCaps = []struct {
	client string
	max    int
}{{"Cursor", 40}, {"ChatGPT", 128}, {"Claude", 256}}

// Run checks opts.URL and returns what it found. It never changes state
// it did not create.
func Run(ctx context.Context, opts Options) Report {
	if opts.KeepaliveWait <= 0 {
		opts.KeepaliveWait = 20 * time.Second
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 15 * time.Second
	}
	if opts.CIMDClient == "" {
		opts.CIMDClient, opts.CIMDRedirect = claudeCIMD, claudeCallback
	}
	r := &run{ctx: ctx, opts: opts, rep: Report{URL: opts.URL, Tools: -1}}
	r.all()
	r.rep.OK = true
	for _, res := range r.rep.Results {
		if res.Status == Fail {
			r.rep.OK = false
		}
	}
	return r.rep
}

// run is one run's state.
type run struct {
	ctx  context.Context
	opts Options
	rep  Report
	u    *url.URL
	hc   *http.Client
	// sid is the session the run opened ("" for none); protected: the
	// endpoint answered 401 without a token.
	sid       string
	protected bool
	challenge string // its WWW-Authenticate
}

func (r *run) add(res Result) { r.rep.Results = append(r.rep.Results, res) }

func (r *run) pass(check, found string) { r.add(Result{Check: check, Status: Pass, Found: found}) }
func (r *run) skip(check, why string)   { r.add(Result{Check: check, Status: Skip, Found: why}) }
func (r *run) fail(check, found, cause, fix string) {
	r.add(Result{Check: check, Status: Fail, Found: found, Cause: cause, Fix: fix})
}
func (r *run) warn(check, found, cause, fix string) {
	r.add(Result{Check: check, Status: Warn, Found: found, Cause: cause, Fix: fix})
}

// all runs the checks in order; a check whose ground is missing skips.
func (r *run) all() {
	if !r.checkURL() {
		return
	}
	r.hc = &http.Client{Timeout: r.opts.Timeout, Transport: &http.Transport{
		Proxy:           nil,
		TLSClientConfig: &tls.Config{RootCAs: r.opts.RootCAs},
		DialContext:     (&net.Dialer{Timeout: r.opts.Timeout}).DialContext,
	}, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	defer r.hc.CloseIdleConnections()
	if !r.checkTLS() {
		return
	}
	r.checkInitialize()
	r.checkSession()
	r.checkTools()
	r.checkDiscover()
	r.checkKeepalive()
	r.checkHold()
	r.checkCORS()
	r.checkMetadata()
	r.endSession()
}

// noAuth as the Authorization header sends none, the token given or not.
const noAuth = "-"

// exchange is one request and its answer (body read, at most 4 MiB).
type exchange struct {
	status int
	header http.Header
	body   []byte
	err    error
}

func (r *run) do(method, target, body string, headers ...string) exchange {
	req, err := http.NewRequestWithContext(r.ctx, method, target, strings.NewReader(body))
	if err != nil {
		return exchange{err: err}
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	switch a := req.Header.Get("Authorization"); {
	case a == noAuth:
		req.Header.Del("Authorization")
	case a == "" && r.opts.Token != "":
		req.Header.Set("Authorization", "Bearer "+r.opts.Token)
	}
	resp, err := r.hc.Do(req)
	if err != nil {
		return exchange{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	return exchange{status: resp.StatusCode, header: resp.Header, body: b, err: err}
}

// post sends an MCP message to the endpoint, in the session when there
// is one.
func (r *run) post(msg string, headers ...string) exchange {
	h := append([]string{"Content-Type", "application/json", "Accept", "application/json, text/event-stream"}, headers...)
	if r.sid != "" {
		h = append(h, "Mcp-Session-Id", r.sid)
	}
	return r.do(http.MethodPost, r.u.String(), msg, h...)
}

// rpcResult is a JSON-RPC answer's result or error, from a JSON body or
// the last data event of an SSE one.
func rpcResult(ex exchange) (json.RawMessage, *rpcError) {
	body := ex.body
	if strings.HasPrefix(ex.header.Get("Content-Type"), "text/event-stream") {
		body = nil
		for _, line := range strings.Split(string(ex.body), "\n") {
			if d, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), "data:"); ok && strings.Contains(d, `"id"`) {
				body = []byte(strings.TrimSpace(d))
			}
		}
	}
	var m struct {
		Result json.RawMessage `json:"result"`
		Error  *rpcError       `json:"error"`
	}
	if json.Unmarshal(body, &m) != nil {
		return nil, &rpcError{Message: fmt.Sprintf("not a JSON-RPC answer: %.200s", body)}
	}
	return m.Result, m.Error
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// WriteText writes the report for a person: one line per check — what it
// found and, for a warning or a failure, the likely cause and the fix.
func (rep Report) WriteText(w io.Writer) {
	for _, res := range rep.Results {
		line := fmt.Sprintf("%-4s %-17s %s", strings.ToUpper(string(res.Status)), res.Check, res.Found)
		if res.Cause != "" {
			line += " — likely cause: " + res.Cause
		}
		if res.Fix != "" {
			line += " — fix: " + res.Fix
		}
		fmt.Fprintln(w, line)
	}
	if rep.OK {
		fmt.Fprintf(w, "\n%s passed.\n", rep.URL)
	} else {
		fmt.Fprintf(w, "\n%s: some checks failed (above).\n", rep.URL)
	}
}
