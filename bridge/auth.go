package bridge

import (
	"errors"
	"fmt"
	"github.com/stelae-bridge/stelae-bridge/httpx"
	"net/http"
	"slices"
	"strings"

	"github.com/stelae-bridge/stelae-bridge/authserver"
	"github.com/stelae-bridge/stelae-bridge/config"
	"github.com/stelae-bridge/stelae-bridge/oauth"
	"github.com/stelae-bridge/stelae-bridge/session"
)

// This file is the auth layer: static bearer tokens (the operator's, for
// scripts and Claude Code --header) and OAuth access tokens (for every
// destination with an 'auth:' block), and the protected-resource metadata
// clients discover the authorization server by.

// prmPath is where protected-resource metadata lives (RFC 9728 §3).
const prmPath = "/.well-known/oauth-protected-resource"

// buildPolicies makes one policy per 'auth:' block, sharing one remote
// issuer per issuer URL.
func (b *Bridge) buildPolicies(t *table) error {
	t.policies = map[string]*oauth.Policy{}
	needBuiltin := false
	issuers := map[string]*oauth.RemoteIssuer{}
	byBlock := map[*config.Auth]*oauth.Policy{}
	policy := func(a *config.Auth) *oauth.Policy {
		if a == nil {
			return nil
		}
		if p := byBlock[a]; p != nil {
			return p
		}
		if a.Builtin() {
			needBuiltin = true
			if b.opts.AuthServer == nil {
				return nil
			}
			p := &oauth.Policy{Verifier: b.opts.AuthServer.Verifier(), Auth: a}
			byBlock[a] = p
			return p
		}
		iss := issuers[a.Issuer]
		if iss == nil {
			iss = oauth.NewRemoteIssuer(a.Issuer, oauth.IssuerOptions{KeysTTL: b.opts.OAuthKeysTTL, MinRefresh: b.opts.OAuthMinRefresh, Skew: b.opts.OAuthSkew,
				IntrospectionClientID: b.opts.OAuthIntrospectionClientID, IntrospectionSecret: b.opts.OAuthIntrospectionSecret})
			issuers[a.Issuer] = iss
		}
		p := &oauth.Policy{Verifier: iss, Auth: a}
		byBlock[a] = p
		return p
	}
	t.topPolicy = policy(t.cfg.Auth)
	for _, name := range t.names {
		if p := policy(t.cfg.Destinations[name].Auth); p != nil {
			t.policies[name] = p
		}
	}
	for _, name := range t.cfg.ProfileNames {
		a, err := profileAuth(t.cfg, t.cfg.Profiles[name])
		if err != nil {
			return err
		}
		if p := policy(a); p != nil {
			t.policies[config.ProfileKey(name)] = p
		}
	}
	if needBuiltin && b.opts.AuthServer == nil {
		return errors.New("an 'auth:' block says 'issuer: builtin', but the built-in authorization server is not running (it needs STELAE_OAUTH_PASSPHRASE or -oauth-passphrase-file)")
	}
	// The operator's routes follow the top-level block; without one, a
	// token any destination accepts will do.
	if t.topPolicy != nil {
		t.operatorPolicies = []*oauth.Policy{t.topPolicy}
	} else {
		for _, p := range byBlock {
			t.operatorPolicies = append(t.operatorPolicies, p)
		}
	}
	return nil
}

// builtinResource tells the built-in server whether resource (under base)
// is an endpoint it may issue tokens for, and names its destination.
func (b *Bridge) builtinResource(base, resource string) (string, bool) {
	t := b.t()
	resource = strings.TrimSuffix(resource, "/")
	for _, name := range t.names {
		if p := t.policies[name]; p != nil && p.Auth.Builtin() {
			for _, r := range b.resources(base, guarded{dest: name, route: "dest"}) {
				if r == resource {
					return name, true
				}
			}
		}
	}
	for _, name := range t.cfg.ProfileNames {
		key := config.ProfileKey(name)
		if p := t.policies[key]; p != nil && p.Auth.Builtin() && slices.Contains(b.resources(base, guarded{dest: key, route: "dest"}), resource) {
			return key, true
		}
	}
	if p := t.policies[t.defaultKey()]; p != nil && p.Auth.Builtin() && (resource == base+"/mcp" || resource == base) {
		return t.defaultKey(), true
	}
	return "", false
}

// guarded is what protects one request.
type guarded struct {
	open bool
	// dest is the destination whose endpoint the request reaches; "" for
	// the operator's routes.
	dest string
	// route is "dest" (/{dest}/mcp), "default" (/mcp) or "root" (/).
	route string
}

// protection classifies a request, whose target is tg, for the auth
// layer.
func (b *Bridge) protection(r *http.Request, tg target) guarded {
	t := b.t()
	switch tg.kind {
	case kindOperator:
		switch tg.path {
		case "/readyz":
			return guarded{open: true}
		case "/healthz":
			if _, verbose := r.URL.Query()["verbose"]; !verbose {
				return guarded{open: true}
			}
		}
		return guarded{}
	case kindMetadata, kindOAuth:
		return guarded{open: true}
	case kindConsole:
		// The console admits its viewers itself: an operator's
		// credential, never an MCP client's token (console/access.go).
		return guarded{open: true}
	case kindDefault, kindRoot:
		// At the root only an MCP request is the default's.
		if tg.kind == kindRoot && r.Method != http.MethodPost && r.Method != http.MethodDelete && !httpx.OpensStream(r) {
			return guarded{}
		}
		if t.cfg.AwayDefault != "" {
			return b.awayGuard()
		}
		if tg.kind == kindRoot {
			return guarded{dest: t.defaultKey(), route: "root"}
		}
		return guarded{dest: t.defaultKey(), route: "default"}
	}
	switch {
	case tg.route == "":
		return guarded{}
	case t.away(tg.key):
		return b.awayGuard()
	case config.IsProfileKey(tg.key):
		// A profile: its key is its URL's path, so its resource and
		// metadata URLs are made as a destination's.
		if name, _ := config.ProfileName(tg.key); tg.route == "mcp" && t.profileEndpoint(name) != nil {
			return guarded{dest: tg.key, route: "dest"}
		}
	case t.endpoints[tg.key] != nil:
		return guarded{dest: tg.key, route: "dest"}
	}
	return guarded{}
}

// awayGuard guards a request another instance of the fleet serves (421
// naming its owner, fleet.go): open when auth is off; with auth on it
// needs a credential of the bridge's own routes first (401 without), so
// nobody unauthenticated learns what the fleet serves where.
func (b *Bridge) awayGuard() guarded {
	if !b.tokensOn && len(b.t().operatorPolicies) == 0 {
		return guarded{open: true}
	}
	return guarded{}
}

// resources are the resource URLs a token for g may name (RFC 8707). The
// default destination is one resource under its three names — the origin
// (the bare metadata's), /mcp and /{default}/mcp — at all its routes, as
// the built-in server issues them (builtinResource); any other
// destination is its own URL only.
func (b *Bridge) resources(base string, g guarded) []string {
	t := b.t()
	switch {
	case g.route != "" && g.dest != "" && g.dest == t.defaultKey():
		return []string{base, base + "/mcp", base + "/" + g.dest + "/mcp"}
	case g.route != "":
		return []string{base + "/" + g.dest + "/mcp"}
	}
	out := []string{base, base + "/mcp"}
	for _, n := range t.names {
		out = append(out, base+"/"+n+"/mcp")
	}
	return out
}

// metadataURL is where g's protected-resource metadata is.
func metadataURL(base string, g guarded) string {
	switch g.route {
	case "dest":
		return base + prmPath + "/" + g.dest + "/mcp"
	case "default":
		return base + prmPath + "/mcp"
	}
	return base + prmPath
}

// auth lets a request through when it needs no token or carries a good one,
// with its principal in the context; otherwise it answers 401, 403 or (the
// issuer cannot be reached) 503. Without tokens or OAuth there is no
// layer.
func (b *Bridge) auth(next targetHandler) targetHandler {
	if !b.authOn {
		return next
	}
	return &authLayer{b, next}
}

// authLayer is auth's handler (a type: see guardLayer). The checks run in
// admit, which returns before the request goes on: their frame (nearly
// 1 KiB) is not on the stack of a call waiting for its answer.
type authLayer struct {
	b    *Bridge
	next targetHandler
}

func (a *authLayer) serveTarget(w http.ResponseWriter, r *http.Request, tg target) {
	if r = a.b.admit(w, r, tg); r != nil {
		a.next.serveTarget(w, r, tg)
	}
}

// admit returns the request to serve (with its principal), or nil when it
// has answered it with an error.
func (b *Bridge) admit(w http.ResponseWriter, r *http.Request, tg target) *http.Request {
	t := b.t()
	g := b.protection(r, tg)
	if g.open {
		return r
	}
	policies := t.operatorPolicies
	if g.dest != "" {
		policies = nil
		if p := t.policies[g.dest]; p != nil {
			policies = []*oauth.Policy{p}
		}
	}
	token, hasToken := httpx.Bearer(r)
	if id, ok := b.staticToken(token, hasToken); ok {
		return r.WithContext(session.WithIdentity(r.Context(), id.principal, id.user))
	}
	if len(policies) == 0 {
		if !b.tokensOn {
			return r // an open destination
		}
		reason := "wrong_token"
		if !hasToken {
			reason = "missing"
		}
		b.refusedTokens.WithLabelValues(g.dest, reason).Inc()
		w.Header().Set("WWW-Authenticate", `Bearer realm="stelae-bridge"`)
		httpx.WriteErrorFor(w, r, http.StatusUnauthorized, codeServer, "missing or wrong bearer token: send Authorization: Bearer <token> with a token the bridge's operator configured")
		return nil
	}
	base := b.baseURL(r)
	if !hasToken {
		b.refuseToken(w, r, g, policies, base, nil)
		return nil
	}
	var err error
	resources := b.resources(base, g)
	ctx := authserver.WithBase(r.Context(), base)
	for _, pol := range policies {
		var c *oauth.Claims
		if c, err = pol.Check(ctx, token, resources); err == nil {
			if b.log.IsDebug() {
				b.logAccepted(g, c)
			}
			p := b.opts.PrincipalKey.Identity(c.Principal())
			if b.console != nil {
				b.console.NoteClient(p, c.ClientID) // the console shows the principal with its client
			}
			return r.WithContext(session.WithIdentity(r.Context(), p, b.oauthUser(pol, c)))
		}
	}
	b.refuseToken(w, r, g, policies, base, err)
	return nil
}

func (b *Bridge) logAccepted(g guarded, c *oauth.Claims) {
	b.log.Debug("access token accepted", "destination", g.dest, "issuer", c.Issuer, "subject", c.Subject, "client_id", c.ClientID)
}

// refuseToken answers a request without an access token (err nil) or with
// one refused by err. (Out of admit, whose frame is on the stack when the
// token is checked: see authLayer.)
func (b *Bridge) refuseToken(w http.ResponseWriter, r *http.Request, g guarded, policies []*oauth.Policy, base string, err error) {
	prm := metadataURL(base, g)
	b.refusedTokens.WithLabelValues(g.dest, refusal(err)).Inc()
	if err == nil {
		w.Header().Set("WWW-Authenticate", oauth.Challenge(prm, policies[0].Auth.Scopes, nil))
		httpx.WriteErrorFor(w, r, http.StatusUnauthorized, codeServer, fmt.Sprintf("this endpoint needs an OAuth access token from %s: send Authorization: Bearer <token> (the authorization server is named in %s)", oauth.IssuerFor(policies[0].Verifier, base), prm))
		return
	}
	status := oauth.Status(err)
	b.log.Info("access token refused", "destination", g.dest, "status", status, "reason", err)
	if status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "10")
		httpx.WriteErrorFor(w, r, status, codeServer, "the bridge cannot validate access tokens now: "+err.Error()+"; retry shortly (the operator should check that the issuer is reachable from the bridge)")
		return
	}
	w.Header().Set("WWW-Authenticate", oauth.Challenge(prm, policies[0].Auth.Scopes, err))
	msg := err.Error()
	if errors.Is(err, oauth.ErrInvalidToken) {
		msg = "the access token was refused: " + msg
	}
	httpx.WriteErrorFor(w, r, status, codeServer, msg)
}

// refusal is the reason label of a refused OAuth token (err nil: none
// sent).
func refusal(err error) string {
	switch {
	case err == nil:
		return "missing"
	case errors.Is(err, oauth.ErrUnavailable):
		return "unavailable"
	case errors.Is(err, oauth.ErrInsufficientScope):
		return "insufficient_scope"
	case errors.Is(err, oauth.ErrForbidden):
		return "forbidden"
	}
	return "invalid"
}

// oauthUser is the person an access token speaks for: its issuer and
// subject (one person across their clients and token refreshes). A token
// of the built-in server (admitted by its policy) is its subject alone
// (BuiltinUserKey), named as the server names them: its issuer is the
// bridge's URL of each request, which differs by Host, and the
// credentials page stores under the subject.
func (b *Bridge) oauthUser(p *oauth.Policy, c *oauth.Claims) session.User {
	if as := b.opts.AuthServer; as != nil && p.Auth.Builtin() {
		name, ok := as.UserName(c.Subject)
		if !ok {
			name = c.Subject
		}
		return session.User{Key: BuiltinUserKey(c.Subject), Name: name}
	}
	return session.User{Key: b.opts.PrincipalKey.UserKey(c.Issuer, c.Subject), Name: c.Subject}
}

// serveResourceMetadata answers RFC 9728 documents: at
// /.well-known/oauth-protected-resource/{dest}/mcp for a destination, at
// .../mcp for the default one, and bare for the origin (the default
// destination, else the top-level block).
func (b *Bridge) serveResourceMetadata(w http.ResponseWriter, r *http.Request, tg target) {
	t := b.t()
	if !onlyGet(w, r) {
		return
	}
	base := b.baseURL(r)
	var p *oauth.Policy
	var resource, name string
	switch tg.of {
	case ofOrigin:
		resource, name = base, "stelae-bridge"
		if p = t.policies[t.defaultKey()]; p == nil {
			p = t.topPolicy
		}
	case ofDefault:
		p, resource, name = t.policies[t.defaultKey()], base+"/mcp", t.cfg.Default
	case ofEndpoint:
		pn, profile := config.ProfileName(tg.key)
		switch {
		case tg.route != "mcp":
		case profile && t.profileEndpoint(pn) != nil:
			p, resource, name = t.policies[tg.key], base+config.ProfilePath(pn), "profile "+pn
		case !profile && t.endpoints[tg.key] != nil:
			p, resource, name = t.policies[tg.key], base+config.KeyPath(tg.key), tg.key
		}
	}
	if p == nil {
		msg := "no protected resource here: this endpoint does not use OAuth"
		if len(t.operatorPolicies) == 0 {
			msg = "this bridge does not use OAuth; it is open, or protected by a bearer token its operator gives you (Authorization: Bearer …)"
		}
		httpx.WriteErrorFor(w, r, http.StatusNotFound, codeServer, msg)
		return
	}
	w.Header().Set("Cache-Control", "public, max-age=300")
	writeJSON(w, r, http.StatusOK, oauth.NewResourceMetadata(base, resource, name, p))
}
