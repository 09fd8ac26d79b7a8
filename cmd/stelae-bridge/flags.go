package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// settings are the bridge's global knobs: flags, each with an environment
// equivalent that applies when the flag is not given.
type settings struct {
	config          string
	listen          string
	check           bool
	version         bool
	maxSessions     int
	requestTimeout  time.Duration
	auditBodies     bool
	maxMessage      byteSize
	maxBody         byteSize
	logLevel        string
	logFormat       string
	sessionTTL      time.Duration
	keepAlive       time.Duration
	linger          time.Duration
	stopGrace       time.Duration
	shutdownTimeout time.Duration
	restartMax      int
	restartDelay    time.Duration
	restartStable   time.Duration
	responseMode    string
	eventLogSize    int
	allowedHosts    string
	allowedOrigins  string
	authTokensFile  string
	authTokens      string
	publicURL       string
	trustProxy      bool
}

// byteSize is a flag value such as 10MiB, 512KiB or 1048576.
type byteSize int64

func (b *byteSize) String() string { return strconv.FormatInt(int64(*b), 10) }

func (b *byteSize) Set(s string) error {
	s = strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"B", 1}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n > math.MaxInt64/mult {
		return fmt.Errorf("want a positive size such as 10MiB, 512KiB or 1048576")
	}
	*b = byteSize(n * mult)
	return nil
}

// parseSettings reads flags from args, then environment variables for the
// flags not given.
func parseSettings(args []string, getenv func(string) string, out io.Writer) (*settings, error) {
	s := &settings{maxMessage: 10 << 20, maxBody: 10 << 20}
	fs := flag.NewFlagSet("stelae-bridge", flag.ContinueOnError)
	fs.SetOutput(out)
	envOf := map[string]string{}
	str := func(p *string, name, env, def, usage string) {
		fs.StringVar(p, name, def, usage+envNote(env))
		envOf[name] = env
	}
	dur := func(p *time.Duration, name, env string, def time.Duration, usage string) {
		fs.DurationVar(p, name, def, usage+envNote(env))
		envOf[name] = env
	}
	integer := func(p *int, name, env string, def int, usage string) {
		fs.IntVar(p, name, def, usage+envNote(env))
		envOf[name] = env
	}
	str(&s.config, "config", "STELAE_CONFIG", "destinations.yaml", "destinations file")
	str(&s.listen, "listen", "STELAE_LISTEN", "127.0.0.1:9090", "address to listen on")
	fs.BoolVar(&s.check, "check", false, "validate the destinations file, list every problem, and exit (0 ok, 1 problems)")
	fs.BoolVar(&s.version, "version", false, "print the version and exit")
	integer(&s.maxSessions, "max-sessions", "MAX_STDIO_CONNECTIONS", 10, "sessions per destination; at the cap an idle session (no stream, nothing in flight, idle ≥ 60s) is evicted, else 503")
	dur(&s.requestTimeout, "request-timeout", "REQUEST_TIMEOUT", 30*time.Second, "longest wait for a child's answer to one request (504 after it, and the request is cancelled at the child)")
	fs.BoolVar(&s.auditBodies, "audit-log-bodies", false, "log request and response bodies, with secret-looking values redacted"+envNote("AUDIT_LOG_BODIES"))
	envOf["audit-log-bodies"] = "AUDIT_LOG_BODIES"
	fs.Var(&s.maxMessage, "max-message-size", "longest line accepted from a child (default 10MiB); longer lines are discarded"+envNote("MAX_MESSAGE_SIZE"))
	envOf["max-message-size"] = "MAX_MESSAGE_SIZE"
	fs.Var(&s.maxBody, "max-body-size", "largest POST body (default 10MiB, at least 5MiB); larger bodies get 413"+envNote("MAX_BODY_SIZE"))
	envOf["max-body-size"] = "MAX_BODY_SIZE"
	str(&s.logLevel, "log-level", "LOG_LEVEL", "info", "log level: trace, debug, info, warn, error")
	str(&s.logFormat, "log-format", "LOG_FORMAT", "text", "log format: text or json")
	dur(&s.sessionTTL, "session-ttl", "SESSION_TTL", 30*time.Minute, "idle sessions (no stream, nothing in flight) expire after this")
	dur(&s.keepAlive, "keepalive", "KEEPALIVE_INTERVAL", 15*time.Second, "interval of SSE keepalive comments (at most 15s is safe behind proxies)")
	dur(&s.linger, "child-linger", "CHILD_LINGER", 0, "keep a child running this long after its last session ends")
	dur(&s.stopGrace, "stop-grace", "STOP_GRACE", 2*time.Second, "wait after closing a child's stdin, and again after SIGTERM, before escalating")
	dur(&s.shutdownTimeout, "shutdown-timeout", "SHUTDOWN_TIMEOUT", 10*time.Second, "longest clean shutdown on SIGINT/SIGTERM")
	integer(&s.restartMax, "restart-max", "RESTART_MAX", 3, "restarts of a crashed child before its destination is marked failed")
	dur(&s.restartDelay, "restart-delay", "RESTART_DELAY", 500*time.Millisecond, "first restart delay; each next one doubles")
	dur(&s.restartStable, "restart-reset-after", "RESTART_RESET_AFTER", 30*time.Second, "a child that ran this long has its restart count reset")
	str(&s.responseMode, "response-mode", "RESPONSE_MODE", "auto", "answer POSTed requests with: auto (JSON, switching to an SSE stream when the call sends progress or requests, or runs past -keepalive), json, or sse")
	integer(&s.eventLogSize, "event-log-size", "EVENT_LOG_SIZE", 512, "SSE events kept per session so a client can resume a dropped stream with Last-Event-ID")
	str(&s.allowedHosts, "allowed-hosts", "ALLOWED_HOSTS", "", "comma-separated Host names accepted besides loopback ones (the public name of a tunnel, e.g. mcp.example.com); * accepts any")
	str(&s.allowedOrigins, "allowed-origins", "ALLOWED_ORIGINS", "", "comma-separated browser origins accepted besides loopback ones (e.g. https://app.example.com); setting any turns CORS on; * allows every origin")
	str(&s.authTokensFile, "auth-tokens-file", "STELAE_AUTH_TOKENS_FILE", "", "file of bearer tokens, one per line (# comments allowed); when set, every route but /healthz requires Authorization: Bearer <token>")
	envOf["auth-tokens"] = "STELAE_AUTH_TOKENS"
	fs.StringVar(&s.authTokens, "auth-tokens", "", "comma-separated bearer tokens (prefer the file or STELAE_AUTH_TOKENS: flags show in ps)"+envNote("STELAE_AUTH_TOKENS"))
	str(&s.publicURL, "public-url", "PUBLIC_URL", "", "base of absolute URLs in discovery documents (e.g. https://mcp.example.com); default: the request's Host")
	fs.BoolVar(&s.trustProxy, "trust-proxy-headers", false, "let X-Forwarded-Proto and X-Forwarded-Host shape absolute URLs (only behind a proxy you control)"+envNote("TRUST_PROXY_HEADERS"))
	envOf["trust-proxy-headers"] = "TRUST_PROXY_HEADERS"
	fs.Usage = func() {
		fmt.Fprintf(out, "stelae-bridge serves stdio MCP servers as MCP Streamable HTTP at /{destination}/mcp.\n\nUsage: stelae-bridge [-config FILE] [-listen ADDR] [flags]\n       stelae-bridge -check -config FILE\n       stelae-bridge -version\n\nFlags (an environment variable applies when its flag is not given):\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q; see -help", fs.Arg(0))
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for name, env := range envOf {
		if given[name] {
			continue
		}
		if v := getenv(env); v != "" {
			if err := fs.Set(name, v); err != nil {
				return nil, fmt.Errorf("environment variable %s=%q: %v", env, v, err)
			}
		}
	}
	switch {
	case s.maxSessions < 1:
		return nil, fmt.Errorf("-max-sessions must be at least 1")
	case s.maxBody < 5<<20:
		return nil, fmt.Errorf("-max-body-size must be at least 5MiB")
	case s.requestTimeout <= 0 || s.sessionTTL <= 0 || s.keepAlive <= 0 || s.stopGrace <= 0 || s.shutdownTimeout <= 0:
		return nil, fmt.Errorf("durations must be positive (e.g. 30s, 2m)")
	case s.restartMax < 0:
		return nil, fmt.Errorf("-restart-max must not be negative")
	case s.responseMode != "auto" && s.responseMode != "json" && s.responseMode != "sse":
		return nil, fmt.Errorf("-response-mode must be auto, json or sse, not %q", s.responseMode)
	case s.publicURL != "" && !strings.HasPrefix(s.publicURL, "http://") && !strings.HasPrefix(s.publicURL, "https://"):
		return nil, fmt.Errorf("-public-url must start with http:// or https://, not %q", s.publicURL)
	case s.eventLogSize < 1:
		return nil, fmt.Errorf("-event-log-size must be at least 1")
	case s.logFormat != "text" && s.logFormat != "json":
		return nil, fmt.Errorf("-log-format must be text or json, not %q", s.logFormat)
	}
	return s, nil
}

func envNote(env string) string { return " (env " + env + ")" }

// list splits a comma-separated flag value.
func list(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// loadTokens gathers the bearer tokens from -auth-tokens-file and
// -auth-tokens / STELAE_AUTH_TOKENS. Their values are never printed.
func loadTokens(s *settings, readFile func(string) ([]byte, error)) ([]string, error) {
	tokens := list(s.authTokens)
	if s.authTokensFile != "" {
		b, err := readFile(s.authTokensFile)
		if err != nil {
			return nil, fmt.Errorf("cannot read -auth-tokens-file: %v", err)
		}
		n := len(tokens)
		for _, line := range strings.Split(string(b), "\n") {
			if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
				tokens = append(tokens, line)
			}
		}
		if len(tokens) == n {
			return nil, fmt.Errorf("-auth-tokens-file %s holds no token (one per line)", s.authTokensFile)
		}
	}
	return tokens, nil
}
