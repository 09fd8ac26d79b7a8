package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/stelae-bridge/stelae-bridge/authserver"
	"github.com/stelae-bridge/stelae-bridge/bridge"
	"github.com/stelae-bridge/stelae-bridge/config"
)

// reloader re-reads the destinations file on SIGHUP — and, with -watch,
// when its content changes — and applies it to the running bridge
// (bridge.ReloadFrom: a diff; an invalid or refused file changes nothing).
// Commands come only from the file.
type reloader struct {
	// notify tells systemd of each reload (nil: not under systemd).
	notify *notifier
	path   string
	lookup func(string) (string, bool)
	b      *bridge.Bridge
	// started is the configuration the bridge started with: the built-in
	// authorization server's clients were fixed then.
	started *config.Config
	as      *authserver.Server
	// instance is the fleet instance this bridge is (-instance; "" alone).
	instance string
	// protect applies to a reloaded file what the bridge's settings say
	// of its protection (protection.go): a passphrase's implicit 'auth:',
	// and no destination open at an https public URL.
	protect func(*config.Config) error
	log     hclog.Logger
	// last is the digest of the content last read by a reload (or at the
	// start): -watch reloads when the file's differs.
	last [32]byte
	// tokensFile is -auth-tokens-file ("" without): a reload reads it
	// again, and -watch when its content differs from lastTokens (the
	// digest of what was last read); tokens parses its content (with
	// -auth-tokens' own, as at the start).
	tokensFile string
	tokens     func(data []byte) ([]string, map[string]string, error)
	lastTokens [32]byte
}

// watchEvery is how often -watch reads the file.
const watchEvery = time.Second

// run reloads on every signal from hup, and with watch when the file
// changes, until ctx ends.
func (rl *reloader) run(ctx context.Context, hup <-chan os.Signal, watch bool) {
	var tick <-chan time.Time
	if watch {
		t := time.NewTicker(watchEvery)
		defer t.Stop()
		tick = t.C
	}
	unreadable := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			rl.notify.reloading()
			rl.reload("SIGHUP")
			rl.reloadTokens("SIGHUP")
			rl.notify.ready()
		case <-tick:
			data, err := os.ReadFile(rl.path)
			if err != nil {
				// An editor's rename, or a removed file: said once.
				if !unreadable {
					rl.log.Warn("cannot read the destinations file to watch it; the bridge goes on with the configuration it has", "file", rl.path, "error", err)
				}
				unreadable = true
				continue
			}
			unreadable = false
			if sha256.Sum256(data) != rl.last {
				rl.notify.reloading()
				rl.reload("the file changed (-watch)")
				rl.notify.ready()
			}
			if rl.tokensFile != "" {
				if data, err := os.ReadFile(rl.tokensFile); err == nil && sha256.Sum256(data) != rl.lastTokens {
					rl.reloadTokens("the tokens file changed (-watch)")
				}
			}
		}
	}
}

// reload reads the file and applies it.
func (rl *reloader) reload(why string) {
	rl.log.Info("reloading the destinations file", "file", rl.path, "why", why)
	_, _ = rl.b.ReloadFrom(func() (*config.Config, error) {
		data, err := os.ReadFile(rl.path)
		if err != nil {
			return nil, fmt.Errorf("cannot read the destinations file: %w", err)
		}
		rl.last = sha256.Sum256(data)
		cfg, err := config.Parse(rl.path, data, rl.lookup, bridge.ReservedNames...)
		if err == nil {
			cfg, err = selectInstance(cfg, rl.instance)
		}
		if err != nil {
			return nil, err
		}
		if rl.protect != nil {
			if err := rl.protect(cfg); err != nil {
				return nil, fmt.Errorf("%w: %v", bridge.ErrReloadRefused, err)
			}
		}
		for _, w := range cfg.Warnings {
			rl.log.Warn("destinations file: "+w, "file", rl.path)
		}
		if why := rl.needsRestart(cfg); why != "" {
			return nil, fmt.Errorf("%w: %s", bridge.ErrReloadRefused, why)
		}
		return cfg, nil
	})
}

// reloadTokens reads the tokens file again and gives the bridge its
// tokens (bridge.ReloadTokens: a removed token is refused from then on,
// and its user's children stop); an unreadable or invalid file, or one
// the bridge cannot take, changes nothing.
func (rl *reloader) reloadTokens(why string) {
	if rl.tokensFile == "" {
		return
	}
	rl.log.Info("reloading the tokens file", "file", rl.tokensFile, "why", why)
	_, _ = rl.b.ReloadTokens(func() ([]string, map[string]string, error) {
		data, err := os.ReadFile(rl.tokensFile)
		if err != nil {
			return nil, nil, fmt.Errorf("cannot read the tokens file: %w", err)
		}
		rl.lastTokens = sha256.Sum256(data)
		return rl.tokens(data)
	})
}

// needsRestart says what in cfg only a restart can apply ("" for nothing):
// the built-in authorization server is opened at the start, with its
// passphrase and the file's clients.
func (rl *reloader) needsRestart(cfg *config.Config) string {
	switch {
	case usesBuiltin(cfg) && rl.as == nil:
		return "it uses 'issuer: builtin', and the built-in authorization server was not started with the bridge: restart the bridge (with STELAE_OAUTH_PASSPHRASE or -oauth-passphrase-file)"
	case usesBuiltin(cfg) && !sameClients(builtinClients(cfg), builtinClients(rl.started)):
		return "it changes the clients of the built-in authorization server ('auth: clients:'), which are registered when it starts: restart the bridge to apply them"
	}
	return ""
}

// sameClients reports whether a and b register the same clients, in any
// order.
func sameClients(a, b []authserver.Client) bool {
	byID := func(x, y authserver.Client) int { return strings.Compare(x.ID, y.ID) }
	a, b = slices.Clone(a), slices.Clone(b)
	slices.SortFunc(a, byID)
	slices.SortFunc(b, byID)
	return reflect.DeepEqual(a, b)
}
