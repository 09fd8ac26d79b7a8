package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/stelae-bridge/stelae-bridge/audit"
	"github.com/stelae-bridge/stelae-bridge/authserver"
	"github.com/stelae-bridge/stelae-bridge/bridge"
	"github.com/stelae-bridge/stelae-bridge/config"
	"github.com/stelae-bridge/stelae-bridge/oauth"
	"github.com/stelae-bridge/stelae-bridge/session"
	"github.com/stelae-bridge/stelae-bridge/supervisor"
	"github.com/stelae-bridge/stelae-bridge/telemetry"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "0.1.0-dev"

func main() {
	// A child's reaper is this binary in a hidden mode (see supervisor).
	supervisor.RunReaperIfAsked()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Environ(), os.Stdout, os.Stderr))
}

// run is the whole program; environ is the bridge's environment (KEY=VALUE
// entries). It returns the exit code.
func run(ctx context.Context, args []string, environ []string, stdout, stderr io.Writer) int {
	getenv := environLookup(environ)
	if len(args) > 0 && args[0] == "auth" {
		return runAuth(ctx, args[1:], getenv, stdout, stderr)
	}
	if len(args) > 0 && args[0] == "doctor" {
		return runDoctor(ctx, args[1:], getenv, stdout, stderr)
	}
	if len(args) > 0 && args[0] == "service" {
		return runService(ctx, args[1:], stdout, stderr)
	}
	// -help is asked for: it goes to stdout; a flag error's usage to
	// stderr.
	var usage bytes.Buffer
	s, err := parseSettings(args, getenv, &usage)
	if errors.Is(err, flag.ErrHelp) {
		_, _ = stdout.Write(usage.Bytes())
		return 0
	}
	_, _ = stderr.Write(usage.Bytes())
	if err != nil {
		fmt.Fprintln(stderr, "stelae-bridge:", err)
		return 2
	}
	if s.version {
		fmt.Fprintln(stdout, readBuild())
		return 0
	}
	lookup := func(k string) (string, bool) {
		v := getenv(k)
		return v, v != ""
	}
	// The digest first: a change after it is seen by -watch (at worst
	// one reload that finds nothing changed).
	startDigest := fileDigest(s.config)
	cfg, err := config.Load(s.config, lookup, bridge.ReservedNames...)
	if err != nil {
		fmt.Fprintln(stderr, "stelae-bridge:", err)
		return 1
	}
	if s.check && s.instance == "" && len(cfg.InstanceNames) > 0 {
		// The whole fleet: who owns what; the file is checked whole.
		printFleet(stdout, cfg)
	} else if cfg, err = selectInstance(cfg, s.instance); err != nil {
		fmt.Fprintln(stderr, "stelae-bridge:", err)
		return 1
	} else if addr := instanceListen(cfg); addr != "" && !s.listenSet {
		s.listen = addr
	}
	if s.check {
		if tokens, _, err := loadTokens(s, os.ReadFile); err == nil {
			if _, err := protection(cfg, s, len(tokens)); err != nil {
				fmt.Fprintln(stderr, "stelae-bridge:", err)
				return 1
			}
		}
		warnings := append(slices.Clone(cfg.Warnings), commandWarnings(cfg, getenv("PATH"))...)
		warnings = append(warnings, issuerWarnings(ctx, cfg)...)
		profileWarnings, tools, probes := profileCounts(ctx, cfg, s, environ)
		warnings = append(warnings, profileWarnings...)
		sandboxes, sandboxProblems := sandboxReport(cfg)
		warnings = append(warnings, sandboxProblems.warnings...)
		if len(sandboxProblems.refused) > 0 {
			for _, p := range sandboxProblems.refused {
				fmt.Fprintf(stderr, "%s: %s\n", s.config, p)
			}
			return 1
		}
		for _, w := range warnings {
			fmt.Fprintf(stdout, "%s: %s\n", s.config, w)
		}
		note := ""
		if len(warnings) > 0 {
			note = fmt.Sprintf(" (%d warning(s) above)", len(warnings))
		}
		fmt.Fprintf(stdout, "%s: ok, %d destination(s): %v%s\n", s.config, len(cfg.Names), cfg.Names, note)
		for _, name := range cfg.ProfileNames {
			fmt.Fprintf(stdout, "  profile %s (%s): %v, %d tools\n", name, config.ProfilePath(name), cfg.Profiles[name].Destinations, tools[name])
		}
		if len(cfg.ProfileNames) > 0 {
			fmt.Fprintf(stdout, "  (counted by starting each profile's members once, as the bridge does; they are stopped again)\n")
		}
		for _, line := range probeLines(cfg, probes) {
			fmt.Fprintf(stdout, "  %s\n", line)
		}
		for _, line := range sandboxes {
			fmt.Fprintf(stdout, "  %s\n", line)
		}
		return 0
	}
	systemdCredentials(s, getenv, os.Stat)
	tokens, tokenNames, err := loadTokens(s, os.ReadFile)
	if err != nil {
		fmt.Fprintln(stderr, "stelae-bridge:", err)
		return 1
	}
	protectionNote, err := protection(cfg, s, len(tokens))
	if err != nil {
		fmt.Fprintln(stderr, "stelae-bridge:", err)
		return 1
	}
	level := hclog.LevelFromString(s.logLevel) // checked by parseSettings
	logOut := newLogWriter(stderr)
	defer logOut.Close()
	log := hclog.New(&hclog.LoggerOptions{Name: "stelae-bridge", Level: level, JSONFormat: s.logFormat == "json", Output: logOut})
	notify, err := newNotifier(getenv, log.Named("systemd"))
	if err != nil {
		fmt.Fprintln(stderr, "stelae-bridge:", err)
		return 1
	}
	defer notify.close()
	for _, w := range cfg.Warnings {
		log.Warn("destinations file: "+w, "file", s.config)
	}

	ln, shared, err := listen(s.listen, getenv)
	if err != nil {
		if cfg.Instance != "" && !s.listenSet {
			err = fmt.Errorf("%w (instance %s listens at the address of its 'url:' when -listen is not given: give -listen HOST:PORT if the url is not this machine's address)", err, cfg.Instance)
		}
		fmt.Fprintln(stderr, "stelae-bridge:", err)
		return 1
	}
	if open := openDestinations(cfg, len(tokens)); len(open) > 0 && !ln.Addr().(*net.TCPAddr).IP.IsLoopback() && !s.publicOpen {
		log.Warn("the bridge listens beyond this machine and "+describeOpen(open)+" is open to whoever reaches it: protect it (an 'auth:' block, or -auth-tokens-file), or listen on loopback; -public-open silences this", "listen", ln.Addr().String())
	}
	allowedHosts := list(s.allowedHosts)
	// On loopback, only loopback (or explicitly allowed) Host names: the
	// DNS-rebinding protection.
	checkHost := ln.Addr().(*net.TCPAddr).IP.IsLoopback() || len(allowedHosts) > 0
	// The public URL's host is the bridge's own name: always allowed.
	if u, err := url.Parse(s.publicURL); err == nil && u.Host != "" {
		allowedHosts = append(allowedHosts, u.Host, u.Hostname())
	}
	// Children start from the bridge's environment without the bridge's own
	// settings and secrets (STELAE_AUTH_TOKENS and the rest), each under a
	// reaper, with its process group recorded in the state directory; what
	// a bridge killed outright left running is killed first.
	run := runChildren{environ: supervisor.ChildEnviron(environ, slices.Concat(bridgeEnvVars(), systemdVars, notifyVars))}
	if run.reaper, err = supervisor.ReaperCommand(); err != nil {
		fmt.Fprintln(stderr, "stelae-bridge:", err)
		return 1
	}
	if err = prepareStateDir(s.stateDir, log); err != nil {
		fmt.Fprintln(stderr, "stelae-bridge:", err)
		return 1
	}
	if run.records, err = supervisor.OpenRecords(filepath.Join(s.stateDir, "children")); err != nil {
		fmt.Fprintln(stderr, "stelae-bridge:", err)
		return 1
	}
	if n := run.records.Sweep(log.Named("supervisor")); n > 0 {
		log.Warn("killed processes left by an earlier bridge that did not stop", "processes", n)
	}
	principalKey, err := loadPrincipalKey(s.stateDir, log)
	if err != nil {
		fmt.Fprintln(stderr, "stelae-bridge:", err)
		return 1
	}
	// The sessions of shared children outlive a restart in the state
	// directory; a second bridge on the same directory goes without.
	var store *session.BoltStore
	switch store, err = session.OpenStore(filepath.Join(s.stateDir, "sessions.db")); {
	case errors.Is(err, session.ErrStoreInUse):
		log.Warn("sessions will not survive a restart of this bridge: another bridge uses the same state directory (give each its own -state-dir)", "state_dir", s.stateDir)
	case err != nil:
		log.Warn("sessions will not survive a restart of this bridge", "error", err)
	default:
		defer store.Close()
		// Sessions whose owner was not made with this key (a file from
		// before principals were keyed) could never be resumed.
		if n, err := store.UsePrincipalKey(principalKey.ID()); err != nil {
			log.Warn("cannot check the owners of the kept sessions; those kept before principals were keyed will answer their clients 404", "error", err)
		} else if n > 0 {
			log.Info("kept sessions whose owner was not made with this install's principal key (kept before principals were keyed, or under a removed principal.key) are removed: their clients get 404 and initialize again", "sessions", n)
		}
	}
	var as *authserver.Server
	if usesBuiltin(cfg) {
		pass, err := loadPassphrase(s, os.ReadFile)
		if err == nil {
			as, err = authserver.Open(filepath.Join(s.stateDir, "oauth.db"), authserver.Options{Passphrase: pass, Clients: builtinClients(cfg), Logger: log.Named("authserver")})
		}
		if err != nil {
			ln.Close()
			fmt.Fprintln(stderr, "stelae-bridge:", err)
			return 1
		}
		defer as.Close()
		stopAdmin, err := serveAdmin(as, filepath.Join(s.stateDir, adminSocket), log.Named("authserver"))
		if err != nil {
			ln.Close()
			fmt.Fprintln(stderr, "stelae-bridge:", err)
			return 1
		}
		defer stopAdmin()
	}
	credStore, err := openCredentials(cfg, s, getenv, log.Named("credentials"))
	if err != nil {
		ln.Close()
		fmt.Fprintln(stderr, "stelae-bridge:", err)
		return 1
	}
	if credStore != nil {
		defer credStore.Close()
	}
	opts := s.options()
	opts.CredStore = credStore
	opts.Environ, opts.Reaper, opts.Records = run.environ, run.reaper, run.records
	opts.CheckHost, opts.AllowedHosts, opts.AuthTokens, opts.TokenNames, opts.AuthServer = checkHost, allowedHosts, tokens, tokenNames, as
	opts.Version, opts.Logger, opts.LogOutput = version, log, logOut
	opts.Commit = readBuild().commitLabel()
	opts.SharedListener = shared
	opts.PrincipalKey = principalKey
	if store != nil {
		opts.SessionStore = store
	}
	// Tracing (OTEL_TRACES_EXPORTER=otlp), off by default.
	if opts.Tracing, err = telemetry.Setup(ctx, getenv, version); err != nil {
		ln.Close()
		fmt.Fprintln(stderr, "stelae-bridge:", err)
		return 1
	}
	defer exportLast(log, "the last spans could not be exported", opts.Tracing.Shutdown)
	// Metrics over OTLP (OTEL_METRICS_EXPORTER=otlp), beside /metrics:
	// started on the bridge's registry once the bridge is made.
	otlpMetrics, err := telemetry.SetupMetrics(ctx, getenv, version)
	if err != nil {
		ln.Close()
		fmt.Fprintln(stderr, "stelae-bridge:", err)
		return 1
	}
	defer exportLast(log, "the last metrics could not be exported", otlpMetrics.Shutdown)
	// The audit trail (-audit-log), off by default. It is closed after
	// the bridge's shutdown (defers run last-in first-out): the last
	// calls' lines are written and fsynced.
	if s.auditLog != "" {
		trail, err := audit.Open(audit.Options{Path: s.auditLog, MaxSize: int64(s.auditMaxSize), Keep: s.auditKeep, Hash: s.auditHash,
			Stdout: stdout, Logger: log.Named("audit")})
		if err != nil {
			ln.Close()
			fmt.Fprintln(stderr, "stelae-bridge:", err)
			return 1
		}
		defer func() {
			if err := trail.Close(); err != nil {
				log.Error("closing the audit trail", "error", err, "path", s.auditLog)
			}
		}()
		opts.Audit = trail
		if s.auditLog == audit.Stdout {
			// Standard output is the trail's: what the bridge prints for
			// the user goes to standard error.
			stdout = stderr
		}
	}
	b, err := bridge.New(cfg, opts)
	if err != nil {
		ln.Close()
		fmt.Fprintln(stderr, "stelae-bridge:", err)
		return 1
	}
	otlpMetrics.Start(b.Gatherer())
	// The addresses go to stdout whatever the log level: they are what the
	// user needs to configure a client.
	fmt.Fprintf(stdout, "stelae-bridge %s listening on http://%s\n", version, ln.Addr())
	if shared {
		fmt.Fprintf(stdout, "  on the socket systemd passed (-listen is not used): a restart hands its connections over\n")
	}
	if len(tokens) > 0 {
		fmt.Fprintf(stdout, "  bearer-token auth is on (%d token(s)); /healthz stays open\n", len(tokens))
	}
	switch {
	case cfg.Auth.Builtin():
		fmt.Fprintf(stdout, "  OAuth: the built-in authorization server (approve clients with the passphrase; 'stelae-bridge auth clients' lists them)\n")
		fmt.Fprint(stdout, protectionNote)
	case cfg.Auth != nil:
		fmt.Fprintf(stdout, "  OAuth: access tokens from %s\n", cfg.Auth.Issuer)
	}
	if s.publicURL != "" {
		fmt.Fprintf(stdout, "  public URL: %s (clients use %s/{destination}/mcp)\n", strings.TrimSuffix(s.publicURL, "/"), strings.TrimSuffix(s.publicURL, "/"))
	}
	for _, name := range cfg.Names {
		note := ""
		if a := cfg.Destinations[name].Auth; a != nil && a != cfg.Auth {
			note = " (OAuth: " + a.Issuer + ")"
		}
		fmt.Fprintf(stdout, "  %s: http://%s/%s/mcp%s\n", name, ln.Addr(), name, note)
	}
	for _, name := range cfg.ProfileNames {
		fmt.Fprintf(stdout, "  profile %s (%s): http://%s%s\n", name, strings.Join(cfg.Profiles[name].Destinations, ", "), ln.Addr(), config.ProfilePath(name))
	}
	if cfg.Default != "" {
		fmt.Fprintf(stdout, "  default (%s): http://%s/mcp\n", cfg.Default, ln.Addr())
	}
	if !s.noConsole {
		// With auth off, the link carries the console's per-run token: this
		// line is the only place it is shown.
		link := fmt.Sprintf("http://%s/console", ln.Addr())
		if token := b.ConsoleToken(); token != "" {
			link += "?token=" + token
		}
		fmt.Fprintf(stdout, "  operator console: %s\n", link)
	}
	if cfg.Instance != "" {
		fmt.Fprintf(stdout, "  instance %s of the fleet %v; served elsewhere (421 here): %s\n", cfg.Instance, cfg.InstanceNames, awayList(cfg))
	}
	// SIGHUP (and with -watch a change of the file) reloads the file; it
	// no longer ends the bridge. The reloader ends with ctx, before Serve
	// returns its shutdown.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	rl := &reloader{path: s.config, lookup: lookup, b: b, started: cfg, as: as, instance: s.instance, log: log.Named("config"), last: startDigest,
		protect:    func(cfg *config.Config) error { _, err := protection(cfg, s, len(tokens)); return err },
		tokensFile: s.authTokensFile,
		tokens: func(data []byte) ([]string, map[string]string, error) {
			return loadTokens(s, func(string) ([]byte, error) { return data, nil })
		}}
	if s.authTokensFile != "" {
		if data, err := os.ReadFile(s.authTokensFile); err == nil {
			rl.lastTokens = sha256.Sum256(data)
		}
	}
	rl.notify = notify
	rctx, stopReloads := context.WithCancel(ctx)
	reloads := make(chan struct{})
	go func() {
		defer close(reloads)
		rl.run(rctx, hup, s.watch)
	}()
	// systemd (Type=notify-reload): ready now that the bridge listens and
	// has started its children; the watchdog while it serves; STOPPING=1
	// when the drain begins.
	notify.ready()
	served, notified := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(notified)
		notify.serve(ctx.Done(), served, getenv)
	}()
	err = b.Serve(ctx, ln)
	close(served)
	<-notified
	stopReloads()
	<-reloads
	if err != nil {
		return 1
	}
	return 0
}

// fileDigest is the digest of path's content (zero when it cannot be
// read).
func fileDigest(path string) [32]byte {
	data, err := os.ReadFile(path)
	if err != nil {
		return [32]byte{}
	}
	return sha256.Sum256(data)
}

// runChildren is how children are run: their environment, their reaper and
// the records of their process groups.
type runChildren struct {
	environ []string
	reaper  []string
	records *supervisor.Records
}

// environLookup is getenv over environ; the first entry of a name wins, as
// with os.Getenv.
func environLookup(environ []string) func(string) string {
	vars := make(map[string]string, len(environ))
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		if _, seen := vars[k]; !seen {
			vars[k] = v
		}
	}
	return func(k string) string { return vars[k] }
}

// issuerWarnings are -check's warnings about issuers it cannot reach now
// (the bridge still starts: it answers 503 until they can be).
func issuerWarnings(ctx context.Context, cfg *config.Config) []string {
	seen := map[string]bool{}
	var out []string
	for _, a := range append([]*config.Auth{cfg.Auth}, authBlocks(cfg)...) {
		if a == nil || a.Builtin() || seen[a.Issuer] {
			continue
		}
		seen[a.Issuer] = true
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := oauth.NewRemoteIssuer(a.Issuer, oauth.IssuerOptions{Timeout: 5 * time.Second}).Check(cctx)
		cancel()
		if err != nil {
			out = append(out, fmt.Sprintf("line %d: warning: %v (tokens will be refused with 503 until it can be reached)", a.Line, err))
		}
	}
	return out
}

// authBlocks are the destinations' 'auth:' blocks, in file order.
func authBlocks(cfg *config.Config) []*config.Auth {
	var out []*config.Auth
	for _, name := range cfg.Names {
		out = append(out, cfg.Destinations[name].Auth)
	}
	return out
}

// commandWarnings are -check's warnings: destinations whose command cannot be
// found the way the bridge will look for it, with pathList as the bridge's
// PATH.
func commandWarnings(cfg *config.Config, pathList string) []string {
	var out []string
	for _, name := range cfg.Names {
		d := cfg.Destinations[name]
		if _, err := d.ResolveCommand(pathList); err != nil {
			out = append(out, fmt.Sprintf("line %d: warning: destination %q will not start: %v", d.Line, name, err))
		}
	}
	return out
}

// exportLast runs an exporter's shutdown (its last export) within 5 s,
// and logs why when it fails.
func exportLast(log hclog.Logger, failed string, shutdown func(context.Context) error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := shutdown(ctx); err != nil {
		log.Warn(failed, "error", err)
	}
}
