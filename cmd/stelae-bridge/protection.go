package main

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/stelae-bridge/stelae-bridge/config"
)

// A protection the operator asked for is never silently absent. Two
// settings say the operator expects the bridge to be protected:
//
//   - a passphrase (STELAE_OAUTH_PASSPHRASE, -oauth-passphrase,
//     -oauth-passphrase-file) exists only for the built-in authorization
//     server. A file with no 'auth:' block anywhere gets it as its
//     top-level block (as if it said 'auth: {issuer: builtin}'), so the
//     README's two commands for ChatGPT and Claude serve a protected
//     bridge as written; a file whose blocks all name other issuers is
//     refused, saying which.
//   - an https -public-url puts the bridge on the internet. A destination
//     that is then still open (no 'auth:' of its own or the file's, no
//     bearer tokens) is refused unless -public-open says it is meant to be.
//
// Both are checked where the bridge starts and on every reload (a reload
// that would open a destination at the public URL is refused).

// protection applies the passphrase's implicit 'auth:' block to cfg and
// refuses what would be open against the operator's settings. It returns
// a note for the banner ("" for none).
func protection(cfg *config.Config, s *settings, tokens int) (string, error) {
	note := ""
	if s.passphrase != "" || s.passphraseFile != "" {
		switch {
		case usesBuiltin(cfg):
		case cfg.Unprotected():
			cfg.ProtectAll(&config.Auth{Issuer: config.IssuerBuiltin})
			note = "  (a passphrase is set and destinations.yaml has no 'auth:' block: every destination is protected by the built-in authorization server, as with 'auth: {issuer: builtin}')\n"
		default:
			return "", errors.New("a passphrase is set (STELAE_OAUTH_PASSPHRASE, -oauth-passphrase or -oauth-passphrase-file), which only the built-in authorization server uses, but every 'auth:' block in " + s.config + " names another issuer: add 'auth: {issuer: builtin}' to the destinations it should protect, or unset the passphrase")
		}
	}
	for _, name := range cfg.Names {
		if d := cfg.Destinations[name]; d.Isolation == config.IsolationUser && d.Auth == nil && tokens == 0 {
			return "", fmt.Errorf("destination %s is 'isolation: user' (a child per user), but nothing tells its users apart: without auth every request is nobody's. Give it an 'auth:' block (the built-in server: 'auth: {issuer: builtin}' with STELAE_OAUTH_PASSPHRASE, or your identity provider), or -auth-tokens-file with a NAME: TOKEN line per user", name)
		}
	}
	if open := openDestinations(cfg, tokens); len(open) > 0 && publicHTTPS(s.publicURL) && !s.publicOpen {
		return "", fmt.Errorf("-public-url %s puts the bridge on the internet, and %s would be open to anyone who reaches it (no 'auth:' block, no bearer tokens): protect it — 'auth: {issuer: builtin}' in %s with STELAE_OAUTH_PASSPHRASE set (what ChatGPT and claude.ai connectors need), -auth-tokens-file, or an 'auth:' block naming your identity provider — or start the bridge with -public-open if it is meant to be open (e.g. a proxy in front authenticates)",
			s.publicURL, describeOpen(open), s.config)
	}
	return note, nil
}

// openDestinations are the destinations of cfg nobody needs a credential
// for: none when bearer tokens are configured (they are required
// everywhere then).
func openDestinations(cfg *config.Config, tokens int) []string {
	if tokens > 0 {
		return nil
	}
	var open []string
	for _, name := range cfg.Names {
		if cfg.Destinations[name].Auth == nil {
			open = append(open, name)
		}
	}
	return open
}

func describeOpen(names []string) string {
	if len(names) == 1 {
		return "destination " + names[0]
	}
	return "destinations " + strings.Join(names, ", ")
}

// publicHTTPS reports whether u is an https URL (a public one: the
// bridge is reached from the internet through it).
func publicHTTPS(u string) bool {
	p, err := url.Parse(u)
	return err == nil && p.Scheme == "https" && p.Host != ""
}
