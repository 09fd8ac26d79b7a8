package bridge

import (
	"encoding/hex"
	"errors"
	"github.com/stelae-bridge/stelae-bridge/httpx"

	"github.com/stelae-bridge/stelae-bridge/session"
)

// The static bearer tokens (-auth-tokens-file, -auth-tokens): each is a
// principal and a user. The set is replaced whole by SetTokens (the
// tokens file read again on a reload); requests read it once.

// tokenIdentity is who a static token is: its principal and its user.
type tokenIdentity struct {
	principal session.Principal
	user      session.User
	named     bool // the operator named it (the tokens file's "NAME: TOKEN")
}

// tokenSet is the static tokens in force: immutable once made. operators
// are the unnamed ones, which also open the console: a named token is a
// user's, who is not the operator for having one.
type tokenSet struct {
	list      []string
	operators []string
	ids       map[string]tokenIdentity
}

// newTokenSet makes the tokens' identities: a named token's user is its
// name ("t:alice"), an unnamed one's a keyed digest of it ("h:…").
func newTokenSet(tokens []string, names map[string]string, key *session.PrincipalKey) *tokenSet {
	ts := &tokenSet{list: append([]string(nil), tokens...), ids: make(map[string]tokenIdentity, len(tokens))}
	for _, token := range tokens {
		p := key.Token(token)
		u := session.User{Key: "h:" + hex.EncodeToString(p[:12]), Name: p.Short()}
		name := names[token]
		if name != "" {
			u = session.User{Key: "t:" + name, Name: name}
		} else {
			ts.operators = append(ts.operators, token)
		}
		ts.ids[token] = tokenIdentity{p, u, name != ""}
	}
	return ts
}

// staticToken is the identity of token when it is one of the static
// tokens (compared in constant time with every one); has: the request
// carried a token at all.
func (b *Bridge) staticToken(token string, has bool) (tokenIdentity, bool) {
	if !has {
		return tokenIdentity{}, false
	}
	ts := b.tokens.Load()
	if !httpx.OneOf(ts.list, token) {
		return tokenIdentity{}, false
	}
	return ts.ids[token], true
}

// ErrTokensRefused wraps the reasons a new set of static tokens is not
// applied (SetTokens).
var ErrTokensRefused = errors.New("the tokens were not applied")

// TokensChange is what SetTokens changed.
type TokensChange struct {
	// Added and Removed count tokens; UsersGone are the users (by name,
	// or a token's digest) none of whose tokens is left: their children
	// of user-isolated destinations were stopped.
	Added, Removed int
	UsersGone      []string
}

// SetTokens replaces the static tokens (the tokens file read again): a
// token no longer listed is refused from the next request on, and a user
// none of whose tokens is left — a removed named token, an unnamed one —
// loses their children of user-isolated destinations at once (their
// sessions end); a named user whose token changed (rotated) keeps theirs.
// A bridge started without static tokens cannot take some, nor one started
// with them go without (the auth layer was set up at the start): refused.
func (b *Bridge) SetTokens(tokens []string, names map[string]string) (TokensChange, error) {
	switch {
	case !b.tokensOn && len(tokens) > 0:
		return TokensChange{}, errors.Join(ErrTokensRefused, errors.New("the bridge started without static tokens: restart it to turn token authentication on"))
	case b.tokensOn && len(tokens) == 0:
		return TokensChange{}, errors.Join(ErrTokensRefused, errors.New("no token is left: that would open every route the tokens protect; keep at least one, or restart the bridge without -auth-tokens-file"))
	}
	next := newTokenSet(tokens, names, b.opts.PrincipalKey)
	prev := b.tokens.Swap(next)
	var ch TokensChange
	users := map[string]bool{}
	for _, id := range next.ids {
		users[id.user.Key] = true
		if id.named && b.tail != nil {
			b.tail.Name(id.principal, id.user.Name)
		}
	}
	for token, id := range prev.ids {
		if _, ok := next.ids[token]; !ok {
			ch.Removed++
			if !users[id.user.Key] {
				users[id.user.Key] = true // once
				ch.UsersGone = append(ch.UsersGone, id.user.String())
				n := b.t().endUserEverywhere(id.user.Key, "your bearer token was removed from the bridge's tokens")
				b.log.Info("a static token was removed: its user's children stopped", "user", id.user.String(), "children", n)
			}
		}
	}
	for token := range next.ids {
		if _, ok := prev.ids[token]; !ok {
			ch.Added++
		}
	}
	if b.onTokens != nil {
		b.onTokens(next.operators)
	}
	return ch, nil
}

// ReloadTokens reads the static tokens with load (the tokens file again)
// and applies them (SetTokens), saying what became of it in the log and in
// stelae_tokens_reloads_total{result}: applied, unchanged, invalid (load
// failed), refused. A failed reload changes nothing.
func (b *Bridge) ReloadTokens(load func() ([]string, map[string]string, error)) (TokensChange, error) {
	tokens, names, err := load()
	if err != nil {
		b.tokenReloads.WithLabelValues("invalid").Inc()
		b.log.Error("the tokens file was not applied: it is invalid; the bridge goes on with the tokens it has", "error", err)
		return TokensChange{}, err
	}
	ch, err := b.SetTokens(tokens, names)
	switch {
	case err != nil:
		b.tokenReloads.WithLabelValues("refused").Inc()
		b.log.Error("the tokens file was not applied; the bridge goes on with the tokens it has", "error", err)
	case ch.Added+ch.Removed == 0:
		b.tokenReloads.WithLabelValues("unchanged").Inc()
		b.log.Debug("tokens file read again: no token changed")
	default:
		b.tokenReloads.WithLabelValues("applied").Inc()
		b.log.Info("tokens file applied", "added", ch.Added, "removed", ch.Removed, "users_gone", ch.UsersGone)
	}
	return ch, err
}
