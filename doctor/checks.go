package doctor

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// checkURL: the URL is one a client can be given; false when it is not
// (nothing else can be checked).
func (r *run) checkURL() bool {
	u, err := url.Parse(r.opts.URL)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		r.fail("url", fmt.Sprintf("%q is not an http(s) URL", r.opts.URL), "", "give the endpoint's whole URL, such as https://mcp.example.com/files/mcp")
		return false
	}
	r.u = u
	host := u.Hostname()
	loopback := host == "localhost" || net.ParseIP(host) != nil && net.ParseIP(host).IsLoopback()
	switch {
	case u.Scheme == "http" && !loopback:
		r.fail("url", "the URL is http:// on "+host, "ChatGPT and claude.ai connect only to https URLs", "put TLS in front (a tunnel such as cloudflared or ngrok gives one; nginx, HAProxy or Caddy with a certificate)")
	case u.Scheme == "http":
		r.warn("url", "the URL is http:// on this machine ("+host+")", "desktop clients on this machine can use it; ChatGPT and claude.ai cannot reach it", "for ChatGPT and claude.ai, put a tunnel in front (cloudflared, ngrok) and check its https URL")
	default:
		r.pass("url", u.String())
	}
	if !strings.HasSuffix(u.Path, "/mcp") {
		r.warn("url", "the path "+u.Path+" does not end in /mcp", "the bridge serves each destination at /{destination}/mcp and each profile at /p/{profile}/mcp", "give the endpoint's URL, not the bridge's root")
	}
	if port := u.Port(); u.Scheme == "https" && port != "" && port != "443" {
		r.warn("port", "port "+port, "claude.ai connects only on port 443", "serve the public URL on 443 (the proxy's or tunnel's listening port)")
	} else {
		r.pass("port", map[string]string{"https": "443", "http": "80"}[u.Scheme]+" (the scheme's)")
		if port != "" {
			r.rep.Results[len(r.rep.Results)-1].Found = port
		}
	}
	return true
}

// checkTLS: the certificate is valid for the host, and not about to
// expire; false when the handshake fails (nothing else can be reached).
func (r *run) checkTLS() bool {
	if r.u.Scheme != "https" {
		r.skip("tls", "not https")
		return true
	}
	addr := r.u.Host
	if r.u.Port() == "" {
		addr = net.JoinHostPort(r.u.Hostname(), "443")
	}
	d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: r.opts.Timeout}, Config: &tls.Config{RootCAs: r.opts.RootCAs, ServerName: r.u.Hostname()}}
	conn, err := d.DialContext(r.ctx, "tcp", addr)
	if err != nil {
		var cv *tls.CertificateVerificationError
		var hn x509HostnameError
		switch {
		case errors.As(err, &hn):
			r.fail("tls", err.Error(), "the certificate does not name "+r.u.Hostname(), "get a certificate for the public host name (Let's Encrypt through Caddy, certbot for nginx/HAProxy)")
		case errors.As(err, &cv):
			r.fail("tls", err.Error(), "the certificate is not trusted (self-signed, expired, or its chain is incomplete)", "serve the full chain from a public CA; clients do not accept a private CA")
		case errors.Is(err, io.EOF) || strings.Contains(err.Error(), "does not look like a TLS handshake"):
			r.fail("tls", "no TLS at "+addr+": "+err.Error(), "that port speaks plain HTTP, not TLS", "use http:// for it, or put TLS in front and give that URL")
		default:
			r.fail("tls", "cannot reach "+addr+": "+err.Error(), "nothing listens there, or a firewall drops it", "check the tunnel or proxy is running and listening on that address")
		}
		return false
	}
	defer conn.Close()
	state := conn.(*tls.Conn).ConnectionState()
	leaf := state.PeerCertificates[0]
	left := time.Until(leaf.NotAfter)
	if left < 14*24*time.Hour {
		r.warn("tls", fmt.Sprintf("the certificate expires in %s (%s)", left.Round(time.Hour), leaf.NotAfter.Format(time.DateOnly)), "it is about to expire", "renew it, and automate renewal")
		return true
	}
	r.pass("tls", fmt.Sprintf("%s, certificate for %s until %s", tls.VersionName(state.Version), r.u.Hostname(), leaf.NotAfter.Format(time.DateOnly)))
	return true
}

// initializeBody opens a session of 2025-11-25, whose GET stream the
// bridge primes at once: a stream that delivers nothing is held back.
const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"stelae-bridge-doctor","version":"1"}}}`

// checkInitialize: the endpoint answers initialize through whatever is
// in front, with a session.
func (r *run) checkInitialize() {
	if r.opts.Token != "" {
		// Is the endpoint protected? A message without a token shows it
		// (401 and its challenge) before anything is parsed, and opens
		// no session where it is not.
		probe := r.do(http.MethodPost, r.u.String(), "{}", "Content-Type", "application/json", "Accept", "application/json, text/event-stream", "Authorization", noAuth)
		if probe.err == nil && probe.status == http.StatusUnauthorized {
			r.protected, r.challenge = true, probe.header.Get("WWW-Authenticate")
		}
	}
	ex := r.post(initializeBody)
	switch {
	case ex.err != nil:
		r.fail("initialize", ex.err.Error(), "the request did not get an answer", "check the proxy forwards the MCP path to the bridge")
		return
	case ex.status == http.StatusUnauthorized:
		r.protected, r.challenge = true, ex.header.Get("WWW-Authenticate")
		if r.opts.Token != "" {
			r.fail("initialize", "401 with the token given", "the token is not one this endpoint accepts", "give a token of the bridge's (-auth-tokens-file) or of its issuer")
			return
		}
		r.pass("initialize", "401: the endpoint needs a token (clients sign in through OAuth); the checks behind it are skipped unless -token is given")
		return
	case ex.status == http.StatusForbidden && strings.Contains(string(ex.body), "Host"):
		r.fail("initialize", fmt.Sprintf("403: %.200s", ex.body), "the bridge refuses the Host header the proxy passes (its DNS-rebinding guard)", fixHost)
		return
	case ex.status == http.StatusNotFound:
		r.fail("initialize", fmt.Sprintf("404: %.200s", ex.body), "the path does not reach a destination: the proxy does not forward it, or the destination's name is wrong", "check the URL's /{destination}/mcp against the bridge's list, and that the proxy forwards that path")
		return
	case ex.status != http.StatusOK:
		r.fail("initialize", fmt.Sprintf("%d: %.200s", ex.status, ex.body), "the endpoint did not answer initialize", "look at the bridge's log for this request")
		return
	}
	res, rpcErr := rpcResult(ex)
	if rpcErr != nil {
		r.fail("initialize", rpcErr.Message, "the answer is not MCP's", "check the proxy passes the bridge's answer as it is (no HTML error page, no rewriting)")
		return
	}
	var init struct {
		ProtocolVersion string `json:"protocolVersion"`
		ServerInfo      struct{ Name, Version string }
	}
	_ = json.Unmarshal(res, &init)
	r.sid = ex.header.Get("Mcp-Session-Id")
	if r.sid == "" {
		r.fail("initialize", "the answer has no Mcp-Session-Id header", "the proxy drops the header", fixSessionHeader)
		return
	}
	r.pass("initialize", fmt.Sprintf("protocol %s, server %s %s, a session", init.ProtocolVersion, init.ServerInfo.Name, init.ServerInfo.Version))
}

// checkSession: the session's id, sent back, reaches the bridge.
func (r *run) checkSession() {
	if r.sid == "" {
		r.skip("session", "no session was opened")
		return
	}
	ex := r.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	switch {
	case ex.err != nil:
		r.fail("session", ex.err.Error(), "", "check the proxy")
	case ex.status == http.StatusAccepted:
		r.pass("session", "the Mcp-Session-Id header survives the way back")
	case ex.status == http.StatusBadRequest || ex.status == http.StatusNotFound:
		r.fail("session", fmt.Sprintf("%d: %.200s", ex.status, ex.body), "the session's id did not reach the bridge: the proxy drops Mcp-Session-Id, or spreads a session over several bridges", fixSessionHeader+"; in a fleet, route by path to one instance")
	default:
		r.fail("session", fmt.Sprintf("%d: %.200s", ex.status, ex.body), "", "look at the bridge's log for this request")
	}
}

// checkTools: the tools listed, against what each client keeps.
func (r *run) checkTools() {
	if r.sid == "" {
		r.skip("tools", "no session was opened")
		return
	}
	ex := r.post(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	res, rpcErr := rpcResult(ex)
	if ex.err != nil || ex.status != http.StatusOK || rpcErr != nil {
		msg := fmt.Sprintf("%d", ex.status)
		if rpcErr != nil {
			msg += ": " + rpcErr.Message
		}
		r.fail("tools", "tools/list failed: "+msg, "", "look at the bridge's log for this request")
		return
	}
	var list struct {
		Tools      []json.RawMessage `json:"tools"`
		NextCursor string            `json:"nextCursor"`
	}
	_ = json.Unmarshal(res, &list)
	n := len(list.Tools)
	r.rep.Tools = n
	var over []string
	for _, c := range toolCaps {
		if n > c.max {
			over = append(over, fmt.Sprintf("%s keeps %d", c.client, c.max))
		}
	}
	switch {
	case len(over) == 0:
		r.pass("tools", fmt.Sprintf("%d tools: within every client's limit (Cursor 40, ChatGPT 128, Claude 256)", n))
	case n > 128:
		r.fail("tools", fmt.Sprintf("%d tools: more than %s", n, strings.Join(over, ", ")), "the clients drop the tools past their limit, or refuse the server", fixTools)
	default:
		r.warn("tools", fmt.Sprintf("%d tools: more than %s", n, strings.Join(over, ", ")), "that client drops the tools past its limit", fixTools)
	}
}

// checkDiscover: a 2026-07-28 client's first request.
func (r *run) checkDiscover() {
	if r.protected && r.opts.Token == "" {
		r.skip("discover", "the endpoint needs a token")
		return
	}
	sid := r.sid
	r.sid = "" // a stateless request
	ex := r.post(`{"jsonrpc":"2.0","id":3,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
		"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "server/discover")
	r.sid = sid
	_, rpcErr := rpcResult(ex)
	switch {
	case ex.err != nil:
		r.fail("discover", ex.err.Error(), "", "check the proxy")
	case ex.status == http.StatusOK && rpcErr == nil:
		r.pass("discover", "server/discover answered (MCP 2026-07-28 clients)")
	default:
		r.warn("discover", fmt.Sprintf("%d: %.200s", ex.status, ex.body), "clients of MCP 2026-07-28 cannot connect (older clients can)", "let the bridge serve both eras (-protocol-eras both), and the proxy pass the MCP-Protocol-Version and Mcp-Method headers")
	}
}

// checkKeepalive: a GET stream delivers something (the bridge's
// keepalive) within KeepaliveWait: a proxy that buffers delivers nothing.
func (r *run) checkKeepalive() {
	if r.sid == "" {
		r.skip("stream", "no session was opened")
		return
	}
	start := time.Now()
	n, err := r.stream(r.opts.KeepaliveWait, true)
	switch {
	case err != nil && n == 0 && !errors.Is(err, errQuiet):
		r.fail("stream", "the GET stream failed: "+err.Error(), "the proxy does not pass long-lived responses", fixBuffering)
	case n == 0:
		r.fail("stream", fmt.Sprintf("nothing arrived on the GET stream in %s (the bridge sends its first event at once, then a keepalive every 15 s)", r.opts.KeepaliveWait), "the proxy buffers the stream", fixBuffering)
	default:
		r.pass("stream", fmt.Sprintf("the GET stream delivered its first bytes after %s, unbuffered", time.Since(start).Round(time.Millisecond)))
	}
}

// checkHold holds a GET stream for Hold, to find a proxy that cuts
// streams (a read timeout shorter than the keepalive interval).
func (r *run) checkHold() {
	switch {
	case r.opts.Hold <= 0:
		r.skip("hold", "not held (give -hold 100s to find a proxy's stream timeout)")
		return
	case r.sid == "":
		r.skip("hold", "no session was opened")
		return
	}
	start := time.Now()
	_, err := r.stream(r.opts.Hold, false)
	if errors.Is(err, errQuiet) || err == nil {
		r.pass("hold", fmt.Sprintf("a stream stayed open %s", r.opts.Hold))
		return
	}
	r.fail("hold", fmt.Sprintf("the stream was cut after %s: %v", time.Since(start).Round(time.Second), err), "the proxy ends a response that is quiet longer than its read timeout, or any after its total timeout", fixStreamTimeout)
}

// errQuiet ends a stream the run was done with.
var errQuiet = errors.New("held long enough")

// stream opens the session's GET stream and reads it for up to d (only
// to the first byte when first); n is the bytes read; err errQuiet when
// d ran out with the stream open.
func (r *run) stream(d time.Duration, first bool) (int, error) {
	ctx, cancel := contextWithTimeout(r.ctx, d)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, r.u.String(), nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", r.sid)
	if r.opts.Token != "" {
		req.Header.Set("Authorization", "Bearer "+r.opts.Token)
	}
	hc := *r.hc
	hc.Timeout = 0 // the context bounds it
	resp, err := hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return 0, errQuiet
		}
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	n := 0
	buf := make([]byte, 4096)
	for {
		k, err := resp.Body.Read(buf)
		n += k
		if first && n > 0 {
			return n, nil
		}
		if err != nil {
			if ctx.Err() != nil {
				return n, errQuiet
			}
			return n, err
		}
	}
}

// checkCORS: a browser client's preflight is answered.
func (r *run) checkCORS() {
	const origin = "https://inspector.example"
	ex := r.do(http.MethodOptions, r.u.String(), "", "Origin", origin, "Access-Control-Request-Method", "POST",
		"Access-Control-Request-Headers", "content-type, mcp-session-id, mcp-protocol-version, authorization")
	allow := ex.header.Get("Access-Control-Allow-Origin")
	switch {
	case ex.err != nil:
		r.fail("cors", ex.err.Error(), "", fixCORS)
	case allow == "" && (ex.status == http.StatusForbidden || ex.status < 300):
		r.pass("cors", "a browser client from another origin is refused, as the bridge is set (-allowed-origins lets one in); desktop and hosted clients do not need CORS")
	case allow == origin || allow == "*":
		if !strings.Contains(strings.ToLower(ex.header.Get("Access-Control-Expose-Headers")), "mcp-session-id") {
			r.fail("cors", "the preflight allows the origin but does not expose Mcp-Session-Id", "a browser client cannot read its session", fixCORS)
			return
		}
		r.pass("cors", "a browser client's preflight is answered and exposes Mcp-Session-Id")
	default:
		r.warn("cors", fmt.Sprintf("the preflight got %d (Allow-Origin %q)", ex.status, allow), "the proxy answers OPTIONS itself, or drops it", fixCORS)
	}
}

// endSession deletes the session the run opened.
func (r *run) endSession() {
	if r.sid != "" {
		r.do(http.MethodDelete, r.u.String(), "", "Mcp-Session-Id", r.sid)
		r.sid = ""
	}
}

// x509HostnameError is the handshake's error for a certificate of another
// host.
type x509HostnameError = x509.HostnameError

func contextWithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, d)
}
