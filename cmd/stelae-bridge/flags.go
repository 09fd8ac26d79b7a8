package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/stelae-bridge/stelae-bridge/audit"
	"github.com/stelae-bridge/stelae-bridge/bridge"
	"github.com/stelae-bridge/stelae-bridge/config"
	"github.com/stelae-bridge/stelae-bridge/supervisor"
)

// settings are the bridge's global knobs: flags, each with an environment
// equivalent that applies when the flag is not given.
type settings struct {
	config          string
	listen          string
	listenSet       bool // -listen or STELAE_LISTEN given (else a fleet instance listens at its url)
	check           bool
	probe           bool
	version         bool
	maxSessions     int
	maxConnections  int
	maxUserChildren int
	maxStreams      int
	maxSessStreams  int
	requestTimeout  time.Duration
	auditBodies     bool
	auditLog        string
	auditMaxSize    byteSize
	auditKeep       int
	auditHash       bool
	maxMessage      byteSize
	maxBody         byteSize
	maxBodyMemory   byteSize
	bodyTimeout     time.Duration
	bodyIdle        time.Duration
	logLevel        string
	logFormat       string
	sessionTTL      time.Duration
	keepAlive       time.Duration
	linger          time.Duration
	stopGrace       time.Duration
	shutdownTimeout time.Duration
	drainTimeout    time.Duration
	watch           bool
	restartMax      int
	restartDelay    time.Duration
	restartMaxDelay time.Duration
	restartStable   time.Duration
	responseMode    string
	eventLogSize    int
	allowedHosts    string
	allowedOrigins  string
	authTokensFile  string
	authTokens      string
	publicURL       string
	publicOpen      bool
	credentialsDir  string
	credentialsKey  string
	stateDir        string
	trustProxy      bool
	noConsole       bool
	instance        string
	consoleRemote   bool
	oauthSkew       time.Duration
	oauthKeysTTL    time.Duration
	oauthRefetch    time.Duration
	introspectID    string
	introspectKey   string
	protocolEras    string
	sessionless     string
	passphrase      string
	passphraseFile  string
}

// byteSize is a flag value such as 10MiB, 512KiB or 1048576.
type byteSize int64

// String is the size in the largest binary unit that writes it exactly
// (10MiB), as -help shows a default.
func (b *byteSize) String() string { return config.FormatSize(int64(*b)) }

func (b *byteSize) Set(s string) error {
	n, err := config.ParseSize(s)
	if err != nil {
		return err
	}
	*b = byteSize(n)
	return nil
}

// newFlagSet defines every flag on a new flag set bound to s. It returns the
// set and the environment variable of each flag that has one: the one table
// parseSettings, -help and bridgeEnvVars all read.
func newFlagSet(s *settings, out io.Writer) (*flag.FlagSet, map[string]string) {
	fs := flag.NewFlagSet("stelae-bridge", flag.ContinueOnError)
	fs.SetOutput(out)
	envOf := map[string]string{}
	// Every default is the bridge's (bridge.Defaults, which takes each
	// from the package that owns it): none is written here.
	d := bridge.Defaults()
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
	boolean := func(p *bool, name, env, usage string) {
		fs.BoolVar(p, name, false, usage+envNote(env))
		envOf[name] = env
	}
	size := func(p *byteSize, name, env string, def int64, usage string) {
		*p = byteSize(def)
		fs.Var(p, name, usage+envNote(env))
		envOf[name] = env
	}
	str(&s.config, "config", "STELAE_CONFIG", "destinations.yaml", "destinations file")
	str(&s.instance, "instance", "STELAE_INSTANCE", "", "in a fleet (the file's 'instances:'), which instance this bridge is: it runs that instance's destinations and answers 421 naming the owner for the others")
	str(&s.listen, "listen", "STELAE_LISTEN", "127.0.0.1:9090", "address to listen on: HOST:PORT, :PORT for every interface, or a bare PORT for 127.0.0.1:PORT")
	fs.BoolVar(&s.check, "check", false, "validate the destinations file, list every problem, and exit (0 ok, 1 problems); also warns about commands not found on PATH")
	fs.BoolVar(&s.probe, "probe", false, "with -check: also start each shared destination once, as the bridge would, to say which protocol its child speaks (2025 or 2026-07-28) and how many tools it lists, then stop it")
	fs.BoolVar(&s.version, "version", false, "print the version, the commit it was built from and the Go version, and exit")
	// The two names the project's specification fixes keep them; every other
	// variable starts with STELAE_, so none collides with what children read.
	integer(&s.maxSessions, "max-sessions", "MAX_STDIO_CONNECTIONS", d.MaxSessions, "sessions per destination; at the cap the least recently used session with no stream and no call in flight is evicted at once, else 503")
	integer(&s.maxConnections, "max-connections", "STELAE_MAX_CONNECTIONS", d.MaxConnections, "open client connections the bridge holds at most, half of them from one address (IPv6: its /64); at the cap the connection idle longest (of that address, at its half) is closed to make room, else the new one gets 503 with Retry-After (unless set: half the file-descriptor limit, at most 16384)")
	integer(&s.maxUserChildren, "max-user-children", "STELAE_MAX_USER_CHILDREN", d.MaxUserChildren, "children of every 'isolation: user' destination together (one per user with a child, those stopping included); past it a new user gets 503 with Retry-After (each destination's 'max_users:' bounds its own)")
	integer(&s.maxStreams, "max-streams", "STELAE_MAX_STREAMS", d.MaxStreams, "open streams (GET streams and 2026-07-28 subscriptions/listen streams) the whole bridge holds at most; past it a stream gets 503 with Retry-After")
	integer(&s.maxSessStreams, "max-streams-per-session", "STELAE_MAX_STREAMS_PER_SESSION", d.MaxStreamsPerSession, "open GET streams one session may hold (past it a GET gets 429), and with auth the subscriptions/listen streams of one token (past it 503)")
	dur(&s.requestTimeout, "request-timeout", "STELAE_REQUEST_TIMEOUT", d.RequestTimeout, "longest wait for a child's answer to one request (504 after it, and the request is cancelled at the child)")
	boolean(&s.auditBodies, "audit-log-bodies", "AUDIT_LOG_BODIES", "log request and response bodies, with secret-looking values redacted")
	str(&s.auditLog, "audit-log", "STELAE_AUDIT_LOG", "", "write the audit trail, one JSON line per MCP message a client posts (who, client, destination, tool, arguments and result redacted, outcome, duration, trace id), to this file (created owner-only; rotated by -audit-log-max-size), or to standard output with -")
	size(&s.auditMaxSize, "audit-log-max-size", "STELAE_AUDIT_LOG_MAX_SIZE", audit.DefaultMaxSize, "size past which the audit trail's file is renamed FILE.1 (FILE.1 to FILE.2, …) and a new one started")
	integer(&s.auditKeep, "audit-log-keep", "STELAE_AUDIT_LOG_KEEP", audit.DefaultKeep, "rotated audit trail files kept (FILE.1 … FILE.N); the oldest beyond goes")
	boolean(&s.auditHash, "audit-log-hash", "STELAE_AUDIT_LOG_HASH", "in the audit trail, write the SHA-256 of each redacted argument, result and error instead of its text")
	size(&s.maxMessage, "max-message-size", "STELAE_MAX_MESSAGE_SIZE", int64(d.MaxMessage), "longest line accepted from a child; longer lines are discarded")
	size(&s.maxBody, "max-body-size", "STELAE_MAX_BODY_SIZE", d.MaxBodyBytes, "largest POST body (at least 5MiB); larger bodies get 413")
	size(&s.maxBodyMemory, "max-body-memory", "STELAE_MAX_BODY_MEMORY", d.MaxBodyMemory, "memory all POST bodies being read or served may hold together (at least -max-body-size); past it a POST gets 503 with Retry-After")
	dur(&s.bodyTimeout, "body-timeout", "STELAE_BODY_TIMEOUT", d.BodyTimeout, "longest time a POST body may take to arrive (408 after it)")
	dur(&s.bodyIdle, "body-idle-timeout", "STELAE_BODY_IDLE_TIMEOUT", d.BodyIdleTimeout, "longest pause within a POST body (408 after it); a body must also average 1KiB/s after 5s")
	str(&s.logLevel, "log-level", "STELAE_LOG_LEVEL", "info", "log level: trace, debug, info, warn, error")
	str(&s.logFormat, "log-format", "STELAE_LOG_FORMAT", "text", "log format: text or json")
	dur(&s.sessionTTL, "session-ttl", "STELAE_SESSION_TTL", d.SessionTTL, "idle sessions (no stream, nothing in flight) expire after this")
	dur(&s.keepAlive, "keepalive", "STELAE_KEEPALIVE_INTERVAL", d.KeepAlive, "interval of SSE keepalive comments (at most 15s is safe behind proxies)")
	dur(&s.linger, "child-linger", "STELAE_CHILD_LINGER", 0, "keep a child running this long after its last session ends")
	dur(&s.stopGrace, "stop-grace", "STELAE_STOP_GRACE", d.StopGrace, "wait after closing a child's stdin, and again after SIGTERM, before escalating")
	dur(&s.shutdownTimeout, "shutdown-timeout", "STELAE_SHUTDOWN_TIMEOUT", d.ShutdownTimeout, "longest clean shutdown on SIGINT/SIGTERM")
	dur(&s.drainTimeout, "drain-timeout", "STELAE_DRAIN_TIMEOUT", d.DrainTimeout, "how long calls in flight may take to finish, on SIGINT/SIGTERM (new requests get 503 and /readyz says draining meanwhile; the shutdown's own -shutdown-timeout follows) and for a destination a reload (SIGHUP, -watch) changed or removed")
	boolean(&s.watch, "watch", "STELAE_WATCH", "reload the destinations file when it changes (checked every second), as SIGHUP does; off by default so that a half-edited file that happens to be valid is not applied unasked")
	integer(&s.restartMax, "restart-max", "STELAE_RESTART_MAX", d.Restart.MaxRestarts, "restarts of a crashed child before its destination is marked failed")
	dur(&s.restartDelay, "restart-delay", "STELAE_RESTART_DELAY", d.Restart.Initial, "first restart delay; each next one doubles")
	dur(&s.restartMaxDelay, "restart-max-delay", "STELAE_RESTART_MAX_DELAY", d.Restart.MaxDelay, "longest delay between restarts (the doubling stops there)")
	dur(&s.restartStable, "restart-reset-after", "STELAE_RESTART_RESET_AFTER", d.Restart.StableAfter, "a child that ran this long has its restart count reset")
	str(&s.responseMode, "response-mode", "STELAE_RESPONSE_MODE", string(d.ResponseMode), "answer POSTed requests with: auto (JSON, switching to an SSE stream when the call sends progress or requests, or runs past -keepalive), json, or sse")
	str(&s.protocolEras, "protocol-eras", "STELAE_PROTOCOL_ERAS", "both", "which MCP eras every endpoint serves: both (2025 sessions and 2026-07-28 requests) or 2025 (modern requests are told -32601, so clients fall back to initialize)")
	str(&s.sessionless, "sessionless", "STELAE_SESSIONLESS", "serve", "a 2025-style request without Mcp-Session-Id: serve (on the destination's child, statelessly) or reject (400)")
	integer(&s.eventLogSize, "event-log-size", "STELAE_EVENT_LOG_SIZE", d.EventLogSize, "SSE events kept per session so a client can resume a dropped stream with Last-Event-ID")
	str(&s.allowedHosts, "allowed-hosts", "STELAE_ALLOWED_HOSTS", "", "comma-separated Host names accepted besides loopback ones (the public name of a tunnel, e.g. mcp.example.com); * accepts any")
	str(&s.allowedOrigins, "allowed-origins", "STELAE_ALLOWED_ORIGINS", "", "comma-separated browser origins accepted besides loopback ones (e.g. https://app.example.com); setting any turns CORS on; * allows every origin")
	str(&s.authTokensFile, "auth-tokens-file", "STELAE_AUTH_TOKENS_FILE", "", "file of bearer tokens, one per line (# comments allowed); when set, every route but /healthz, /readyz, the OAuth discovery documents and /console (which admits operators itself) requires Authorization: Bearer <token>")
	str(&s.authTokens, "auth-tokens", "STELAE_AUTH_TOKENS", "", "comma-separated bearer tokens (prefer the file or STELAE_AUTH_TOKENS: flags show in ps)")
	str(&s.stateDir, "state-dir", "STELAE_STATE_DIR", "", "directory for the bridge's state (created 0700): the process groups of running children, so that a restart can kill what a bridge killed outright left behind; default $XDG_STATE_HOME/stelae-bridge or ~/.local/state/stelae-bridge (macOS: ~/Library/Application Support/stelae-bridge; Windows: %LocalAppData%\\stelae-bridge)")
	str(&s.publicURL, "public-url", "STELAE_PUBLIC_URL", "", "base of absolute URLs in discovery documents (e.g. https://mcp.example.com); default: the request's Host")
	str(&s.credentialsDir, "credentials-dir", "STELAE_CREDENTIALS_DIR", "", "directory of users' credentials the operator provisions ('credentials:' with 'isolation: user'): DIR/DESTINATION/USER files of NAME=value lines (USER: a token's or invited user's name; DIR/DESTINATION/oauth/SUBJECT for an external issuer's, with characters no file name may hold written %XX); what a user enters on the credentials page overrides them")
	str(&s.credentialsKey, "credentials-key", "STELAE_CREDENTIALS_KEY", "", "key file of the users' credentials the bridge keeps encrypted (32 bytes, 0600; made on first use); default STATE_DIR/credentials.key, or the systemd credential of that name ($CREDENTIALS_DIRECTORY)")
	boolean(&s.publicOpen, "public-open", "STELAE_PUBLIC_OPEN", "serve destinations with no protection (no 'auth:', no bearer tokens) at an https -public-url; without it the bridge refuses to start so (for when a proxy in front authenticates)")
	dur(&s.oauthSkew, "oauth-clock-skew", "STELAE_OAUTH_CLOCK_SKEW", d.OAuthSkew, "clock difference tolerated on an access token's exp, nbf and iat")
	dur(&s.oauthKeysTTL, "oauth-keys-ttl", "STELAE_OAUTH_KEYS_TTL", d.OAuthKeysTTL, "how long an issuer's metadata and signing keys (JWKS) are kept before they are fetched again")
	dur(&s.oauthRefetch, "oauth-key-refetch", "STELAE_OAUTH_KEY_REFETCH", d.OAuthMinRefresh, "least time between fetches of an issuer's keys caused by tokens naming an unknown key (rotation), and between retries when the issuer cannot be reached")
	str(&s.introspectID, "oauth-introspection-client-id", "STELAE_OAUTH_INTROSPECTION_CLIENT_ID", "", "the bridge's client id at the issuers' introspection endpoints (RFC 7662), for opaque (non-JWT) access tokens")
	str(&s.introspectKey, "oauth-introspection-secret", "STELAE_OAUTH_INTROSPECTION_SECRET", "", "that client's secret (prefer the environment variable: flags show in ps)")
	str(&s.passphrase, "oauth-passphrase", "STELAE_OAUTH_PASSPHRASE", "", "passphrase of the built-in authorization server's approval page ('auth: {issuer: builtin}'); prefer the environment variable or the file: flags show in ps")
	str(&s.passphraseFile, "oauth-passphrase-file", "STELAE_OAUTH_PASSPHRASE_FILE", "", "file holding that passphrase (its first line)")
	boolean(&s.trustProxy, "trust-proxy-headers", "STELAE_TRUST_PROXY_HEADERS", "let X-Forwarded-Proto and X-Forwarded-Host shape absolute URLs (only behind a proxy you control)")
	boolean(&s.noConsole, "no-console", "STELAE_NO_CONSOLE", "turn the operator console (/console) off")
	boolean(&s.consoleRemote, "console-remote", "STELAE_CONSOLE_REMOTE", "serve the operator console beyond this machine while auth is off (it is served to loopback viewers only then); with auth on it always needs an operator token or the passphrase")
	fs.Usage = func() {
		fmt.Fprintf(out, "stelae-bridge serves stdio MCP servers as MCP Streamable HTTP at /{destination}/mcp.\n\nUsage: stelae-bridge [-config FILE] [-listen ADDR] [flags]\n       stelae-bridge -check -config FILE\n       stelae-bridge -version\n       stelae-bridge auth clients|revoke CLIENT_ID|unlock [-state-dir DIR]   the built-in authorization server's clients and lockout\n\nFlags (an environment variable applies when its flag is not given; children never see these variables):\n")
		fs.PrintDefaults()
	}
	return fs, envOf
}

// bridgeEnvVars lists, sorted, every environment variable the bridge reads:
// the flag table's. They are kept from children (see supervisor.ChildEnviron).
func bridgeEnvVars() []string {
	_, envOf := newFlagSet(&settings{}, io.Discard)
	var out []string
	for _, env := range envOf {
		out = append(out, env)
	}
	sort.Strings(out)
	return out
}

// options are the bridge's options the settings give (what run adds, it
// knows at run time: the children's environment, reaper and records, host
// checks, tokens, the authorization server, version and logger).
func (s *settings) options() bridge.Options {
	return bridge.Options{
		MaxSessions:                s.maxSessions,
		RequestTimeout:             s.requestTimeout,
		SessionTTL:                 s.sessionTTL,
		KeepAlive:                  s.keepAlive,
		ResponseMode:               s.responseMode,
		EventLogSize:               s.eventLogSize,
		ProtocolEras:               s.protocolEras,
		Sessionless:                s.sessionless,
		MaxStreamsPerSession:       s.maxSessStreams,
		AuditBodies:                s.auditBodies,
		MaxConnections:             s.maxConnections,
		MaxUserChildren:            s.maxUserChildren,
		CredentialsDir:             s.credentialsDir,
		MaxStreams:                 s.maxStreams,
		MaxBodyBytes:               int64(s.maxBody),
		MaxBodyMemory:              int64(s.maxBodyMemory),
		BodyTimeout:                s.bodyTimeout,
		BodyIdleTimeout:            s.bodyIdle,
		MaxMessage:                 int(s.maxMessage),
		StopGrace:                  s.stopGrace,
		Linger:                     s.linger,
		Restart:                    supervisor.RestartPolicy{MaxRestarts: s.restartMax, Initial: s.restartDelay, StableAfter: s.restartStable, MaxDelay: s.restartMaxDelay},
		AllowedOrigins:             list(s.allowedOrigins),
		PublicURL:                  s.publicURL,
		TrustProxyHeaders:          s.trustProxy,
		NoConsole:                  s.noConsole,
		ConsoleRemote:              s.consoleRemote,
		ShutdownTimeout:            s.shutdownTimeout,
		DrainTimeout:               s.drainTimeout,
		OAuthSkew:                  s.oauthSkew,
		OAuthKeysTTL:               s.oauthKeysTTL,
		OAuthMinRefresh:            s.oauthRefetch,
		OAuthIntrospectionClientID: s.introspectID,
		OAuthIntrospectionSecret:   s.introspectKey,
		LogJSON:                    s.logFormat == "json",
	}
}

// parseSettings reads flags from args, then environment variables for the
// flags not given.
func parseSettings(args []string, getenv func(string) string, out io.Writer) (*settings, error) {
	s := &settings{}
	fs, envOf := newFlagSet(s, out)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q; see -help", fs.Arg(0))
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	// fromEnv holds NAME=value for each flag whose value came from the
	// environment, so every message about it names the variable.
	fromEnv := map[string]string{}
	names := make([]string, 0, len(envOf))
	for name := range envOf {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		env := envOf[name]
		if given[name] {
			continue
		}
		if v := getenv(env); v != "" {
			fromEnv[name] = envAssignment(env, v)
			if err := fs.Set(name, v); err != nil {
				return nil, fmt.Errorf("%s: invalid value for -%s: %v", fromEnv[name], name, err)
			}
		}
	}
	invalid := func(name, format string, args ...any) error {
		msg := fmt.Sprintf(format, args...)
		if e, ok := fromEnv[name]; ok {
			return fmt.Errorf("%s: %s", e, msg)
		}
		return errors.New(msg)
	}
	s.listenSet = given["listen"] || fromEnv["listen"] != ""
	addr, err := listenAddress(s.listen)
	if err != nil {
		return nil, invalid("listen", "-listen %s", err)
	}
	s.listen = addr
	switch {
	case s.maxConnections < 1:
		return nil, invalid("max-connections", "-max-connections must be at least 1")
	case s.maxUserChildren < 1:
		return nil, invalid("max-user-children", "-max-user-children must be at least 1")
	case s.maxStreams < 1:
		return nil, invalid("max-streams", "-max-streams must be at least 1")
	case s.maxSessStreams < 1:
		return nil, invalid("max-streams-per-session", "-max-streams-per-session must be at least 1")
	case s.maxSessions < 1:
		return nil, invalid("max-sessions", "-max-sessions must be at least 1")
	case s.maxBody < 5<<20:
		return nil, invalid("max-body-size", "-max-body-size must be at least 5MiB (MCP clients may send that much)")
	case s.maxBodyMemory < s.maxBody:
		return nil, invalid("max-body-memory", "-max-body-memory (%d bytes) must be at least -max-body-size (%d bytes)", s.maxBodyMemory, s.maxBody)
	case s.restartMax < 0:
		return nil, invalid("restart-max", "-restart-max must not be negative (0: never restart)")
	case s.responseMode != "auto" && s.responseMode != "json" && s.responseMode != "sse":
		return nil, invalid("response-mode", "-response-mode must be auto, json or sse, not %q", s.responseMode)
	case s.sessionless != "serve" && s.sessionless != "reject":
		return nil, invalid("sessionless", "-sessionless must be serve or reject, not %q", s.sessionless)
	case s.protocolEras != "both" && s.protocolEras != "2025":
		return nil, invalid("protocol-eras", "-protocol-eras must be both or 2025, not %q", s.protocolEras)
	case s.publicURL != "" && !strings.HasPrefix(s.publicURL, "http://") && !strings.HasPrefix(s.publicURL, "https://"):
		return nil, invalid("public-url", "-public-url must start with http:// or https://, not %q", s.publicURL)
	case s.auditKeep < 1:
		return nil, invalid("audit-log-keep", "-audit-log-keep must be at least 1")
	case s.auditMaxSize < 64<<10:
		return nil, invalid("audit-log-max-size", "-audit-log-max-size must be at least 64KiB (the longest line is about that)")
	case s.eventLogSize < 1:
		return nil, invalid("event-log-size", "-event-log-size must be at least 1")
	case s.logFormat != "text" && s.logFormat != "json":
		return nil, invalid("log-format", "-log-format must be text or json, not %q", s.logFormat)
	case hclog.LevelFromString(s.logLevel) == hclog.NoLevel:
		return nil, invalid("log-level", "-log-level must be trace, debug, info, warn or error, not %q", s.logLevel)
	}
	for _, d := range []struct {
		name   string
		v      time.Duration
		zeroOK bool
	}{
		{"request-timeout", s.requestTimeout, false},
		{"body-timeout", s.bodyTimeout, false},
		{"body-idle-timeout", s.bodyIdle, false},
		{"session-ttl", s.sessionTTL, false},
		{"keepalive", s.keepAlive, false},
		{"stop-grace", s.stopGrace, false},
		{"shutdown-timeout", s.shutdownTimeout, false},
		{"drain-timeout", s.drainTimeout, false},
		{"child-linger", s.linger, true},
		{"restart-delay", s.restartDelay, true},
		{"restart-max-delay", s.restartMaxDelay, false},
		{"restart-reset-after", s.restartStable, true},
		{"oauth-clock-skew", s.oauthSkew, true},
		{"oauth-keys-ttl", s.oauthKeysTTL, false},
		{"oauth-key-refetch", s.oauthRefetch, false},
	} {
		switch {
		case d.zeroOK && d.v < 0:
			return nil, invalid(d.name, "-%s must not be negative, not %s", d.name, d.v)
		case !d.zeroOK && d.v <= 0:
			return nil, invalid(d.name, "-%s must be a positive duration such as 30s or 2m, not %s", d.name, d.v)
		}
	}
	if s.stateDir == "" {
		dir, err := supervisor.DefaultStateDir(getenv)
		if err != nil {
			return nil, err
		}
		s.stateDir = dir
	}
	return s, nil
}

// listenAddress checks a -listen value and returns the address to listen on:
// a bare port means loopback (127.0.0.1:PORT); :PORT means every interface.
func listenAddress(v string) (string, error) {
	const want = "wants HOST:PORT (e.g. 127.0.0.1:9090), :PORT for every interface, or a bare PORT for 127.0.0.1:PORT"
	addr := v
	if digits.MatchString(v) {
		addr = "127.0.0.1:" + v
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("%s, not %q", want, v)
	}
	if n, err := strconv.Atoi(port); err != nil || !digits.MatchString(port) || n > 65535 {
		return "", fmt.Errorf("%s, not %q (a port is a number from 0 to 65535)", want, v)
	}
	return addr, nil
}

var digits = regexp.MustCompile(`^[0-9]+$`)

// envAssignment shows NAME=value, quoting a value that would be ambiguous.
func envAssignment(name, v string) string {
	if strings.ContainsFunc(v, func(r rune) bool { return r <= ' ' || r == '"' || r == '\'' || r > '~' }) {
		v = strconv.Quote(v)
	}
	return name + "=" + v
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

// loadPassphrase is the built-in authorization server's passphrase.
func loadPassphrase(s *settings, readFile func(string) ([]byte, error)) (string, error) {
	if s.passphraseFile == "" {
		return s.passphrase, nil
	}
	b, err := readFile(s.passphraseFile)
	if err != nil {
		return "", fmt.Errorf("cannot read -oauth-passphrase-file: %v", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return strings.TrimSpace(line), nil
}

// tokenName is a static token's name in the tokens file ("alice: TOKEN").
var tokenName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// loadTokens gathers the bearer tokens from -auth-tokens-file and
// -auth-tokens / STELAE_AUTH_TOKENS (their values are never printed);
// names are the file's "NAME: TOKEN" lines' (token → name):
// each named token is a user of that name (the console and the logs show
// it; 'isolation: user' gives it its own children).
func loadTokens(s *settings, readFile func(string) ([]byte, error)) (tokens []string, names map[string]string, err error) {
	tokens = list(s.authTokens)
	if s.authTokensFile != "" {
		b, err := readFile(s.authTokensFile)
		if err != nil {
			return nil, nil, fmt.Errorf("cannot read -auth-tokens-file: %v", err)
		}
		n := len(tokens)
		named := map[string]int{} // name → line
		for i, line := range strings.Split(string(b), "\n") {
			if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			if name, ok := strings.CutSuffix(line, ":"); ok && tokenName.MatchString(strings.TrimSpace(name)) {
				return nil, nil, fmt.Errorf("-auth-tokens-file %s, line %d: %s has no token after the colon", s.authTokensFile, i+1, strings.TrimSpace(name))
			}
			if name, token, ok := strings.Cut(line, ": "); ok {
				name, token = strings.TrimSpace(name), strings.TrimSpace(token)
				switch {
				case !tokenName.MatchString(name):
					return nil, nil, fmt.Errorf("-auth-tokens-file %s, line %d: a token's name is 1 to 64 letters, digits, '.', '_' or '-' (a line is TOKEN, or NAME: TOKEN)", s.authTokensFile, i+1)
				case token == "":
					return nil, nil, fmt.Errorf("-auth-tokens-file %s, line %d: %s has no token after the colon", s.authTokensFile, i+1, name)
				case named[name] != 0:
					return nil, nil, fmt.Errorf("-auth-tokens-file %s, line %d: the name %s is given to another token too (line %d): each name is one user", s.authTokensFile, i+1, name, named[name])
				}
				named[name] = i + 1
				if names == nil {
					names = map[string]string{}
				}
				names[token] = name
				line = token
			}
			tokens = append(tokens, line)
		}
		if len(tokens) == n {
			return nil, nil, fmt.Errorf("-auth-tokens-file %s holds no token (one per line, or NAME: TOKEN)", s.authTokensFile)
		}
	}
	return tokens, names, nil
}
