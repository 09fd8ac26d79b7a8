package bridge

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/stelae-bridge/stelae-bridge/authserver"
	"github.com/stelae-bridge/stelae-bridge/config"
	"github.com/stelae-bridge/stelae-bridge/credstore"
	"github.com/stelae-bridge/stelae-bridge/peruser"
	"github.com/stelae-bridge/stelae-bridge/session"
)

// This file is the bridge's side of the built-in server's credentials page
// (authserver/credentials.go): which variables a destination asks each
// user for, and what a user set, kept in the encrypted store under their
// user key. The page reaches the bridge through authserver.Credentials,
// never the other way: authserver imports neither bridge nor session.
//
// A user of the built-in server is "b:" and their subject (BuiltinUserKey),
// whatever name the bridge was reached by: the issuer of its tokens is the
// bridge's URL of each request, so issuer and subject (an external
// issuer's user key) would make one person two users under two Hosts, and
// the page, which has no token, could not tell which.

// BuiltinUserKey is the user key of the built-in server's subject (a
// user's "u_…", or "operator"): what the auth layer gives their requests
// and what the credentials page stores under.
func BuiltinUserKey(subject string) string { return "b:" + subject }

// credentialPages implements authserver.Credentials over the bridge's
// current table and its store.
type credentialPages struct{ b *Bridge }

var _ authserver.Credentials = credentialPages{}

// declared is destination dest when it asks each user of the built-in
// server for credentials: user-isolated, served here, with 'credentials:',
// behind the built-in server.
func (cp credentialPages) declared(dest string) *config.Destination {
	t := cp.b.t()
	d := t.cfg.Destinations[dest]
	if d == nil || d.Isolation != config.IsolationUser || len(d.Credentials) == 0 || t.endpoints[dest] == nil {
		return nil
	}
	if p := t.policies[dest]; p == nil || !p.Auth.Builtin() {
		return nil
	}
	return d
}

// Declared implements authserver.Credentials.
func (cp credentialPages) Declared(dest string) ([]authserver.CredentialSpec, bool) {
	d := cp.declared(dest)
	if d == nil {
		return nil, false
	}
	return specsOf(d), true
}

// specsOf is d's credentials as credstore reads them. A pattern of
// 'credentials:' is found anywhere in the value, as the spawn reads it
// (peruser.Of: "^github_pat_" is a prefix); a Spec's matches the whole
// value, so it is wrapped to say the same. It compiled alone in config,
// so it cannot escape the wrapping.
func specsOf(d *config.Destination) []authserver.CredentialSpec {
	out := make([]authserver.CredentialSpec, 0, len(d.Credentials))
	for _, c := range d.Credentials {
		sp := authserver.CredentialSpec{Name: c.Name, Description: c.Description, Required: !c.Optional}
		if c.Pattern != nil {
			sp.Pattern = `(?s:.*)(?:` + c.Pattern.String() + `)(?s:.*)`
		}
		out = append(out, sp)
	}
	return out
}

// user is the built-in server's subject as the auth layer knows them.
func (cp credentialPages) user(subject string) session.User {
	name := subject
	if as := cp.b.opts.AuthServer; as != nil {
		if n, ok := as.UserName(subject); ok {
			name = n
		}
	}
	return session.User{Key: BuiltinUserKey(subject), Name: name}
}

// Names implements authserver.Credentials: the names the store holds for
// the user (never a value), and those the operator provisioned.
func (cp credentialPages) Names(dest, subject string) (authserver.CredentialNames, error) {
	d := cp.declared(dest)
	if d == nil {
		return authserver.CredentialNames{}, fmt.Errorf("destination %q asks its users for no credentials", dest)
	}
	u := cp.user(subject)
	var out authserver.CredentialNames
	var err error
	if store := cp.b.opts.CredStore; store != nil {
		e, ok, lerr := store.Lookup(dest, u.Key)
		switch {
		case lerr != nil:
			err = lerr
		case ok && e.Err != nil:
			err = e.Err
		case ok:
			out.Stored, out.Updated = e.Names, e.Updated
		}
	}
	out.Provisioned = cp.provisioned(d, u)
	return out, err
}

// provisioned are the declared variables the operator provisioned for u
// (names only: the values are read, as peruser.Of reads them, and
// dropped).
func (cp credentialPages) provisioned(d *config.Destination, u session.User) []string {
	found, _ := peruser.ReadProvisioned(cp.b.opts.CredentialsDir, d.Name, u)
	var out []string
	for _, c := range d.Credentials {
		if found[c.Name] != "" {
			out = append(out, c.Name)
		}
	}
	return out
}

// Set implements authserver.Credentials: what the user typed over what
// they set before (the declared variables only), checked again, stored,
// and their child stopped so that their next call starts one with them.
func (cp credentialPages) Set(dest, subject, display string, vars map[string]string) error {
	d := cp.declared(dest)
	store := cp.b.opts.CredStore
	switch {
	case d == nil:
		return fmt.Errorf("destination %q asks its users for no credentials", dest)
	case store == nil:
		return errors.New("the bridge keeps no users' credentials (it opened no credentials store at start; restart it after adding 'credentials:')")
	}
	u := cp.user(subject)
	specs := specsOf(d)
	// The variables not typed stay as they were: the set stored is
	// replaced whole, so the stored values are read (and go straight back
	// into the store, nowhere else). A record that cannot be read is
	// replaced by what was typed.
	merged := map[string]string{}
	if env, ok, err := store.Env(dest, u.Key); err == nil && ok {
		for _, kv := range env {
			if k, v, ok := strings.Cut(kv, "="); ok && slices.ContainsFunc(specs, func(sp authserver.CredentialSpec) bool { return sp.Name == k }) {
				merged[k] = v
			}
		}
	}
	maps.Copy(merged, vars)
	some := slices.Clone(specs)
	for i := range some {
		some[i].Required = false // the page asks for the missing ones
	}
	problems, err := credstore.Check(merged, some)
	switch {
	case err != nil:
		return err
	case len(problems) > 0:
		return authserver.CredentialProblems(problems)
	}
	if err := store.Set(dest, u.Key, display, merged); err != nil {
		return err
	}
	cp.restart(dest, u, "your credentials changed")
	return nil
}

// Delete implements authserver.Credentials.
func (cp credentialPages) Delete(dest, subject string) error {
	store := cp.b.opts.CredStore
	if cp.declared(dest) == nil || store == nil {
		return fmt.Errorf("destination %q asks its users for no credentials", dest)
	}
	u := cp.user(subject)
	if err := store.Delete(dest, u.Key); err != nil {
		return err
	}
	cp.restart(dest, u, "you deleted your credentials")
	return nil
}

// restart lets user u's endpoint of dest go (their sessions end, their
// child stops), and theirs of every profile dest is a member of (whose
// child of dest is theirs): their next request makes one with what is
// stored now. Endpoints are made under the same lock EndUser takes, so
// none made with the credentials from before survives this.
func (cp credentialPages) restart(dest string, u session.User, why string) {
	if n := cp.b.t().endUser(dest, u.Key, why); n > 0 {
		cp.b.log.Info("a user's children stopped: their credentials changed", "destination", dest, "user", u.String(), "children", n)
	}
}

// BuiltinUserGone is the built-in server's OnUserGone function for the
// bridge (New registers it): the user of subject was disabled (the server
// still knows them) or removed (UserGone).
func (b *Bridge) BuiltinUserGone(subject string) {
	known := false
	if as := b.opts.AuthServer; as != nil {
		_, known = as.UserName(subject)
	}
	b.UserGone(BuiltinUserKey(subject), !known)
}

// UserGone stops the children of user key on every user-isolated
// destination at once (their sessions end); removed: the user is gone for
// good, and their stored credentials are deleted too.
func (b *Bridge) UserGone(key string, removed bool) {
	why := "your account was disabled by the bridge's operator"
	if removed {
		why = "your account was removed by the bridge's operator"
	}
	if n := b.t().endUserEverywhere(key, why); n > 0 {
		b.log.Info("a user's children stopped: the user is gone", "user", key, "children", n, "removed", removed)
	}
	if removed && b.opts.CredStore != nil {
		n, err := b.opts.CredStore.DeleteUser(key)
		if err != nil {
			b.log.Error("a removed user's stored credentials could not be deleted; delete them in the console", "user", key, "error", err)
			return
		}
		if n > 0 {
			b.log.Info("a removed user's stored credentials deleted", "user", key, "destinations", n)
		}
	}
}

// BuiltinClientRevoked is the built-in server's OnClientRevoked function
// for the bridge (New registers it): a client the operator revoked
// stops the children of the users its tokens spoke for, on every
// user-isolated destination (their sessions end, whichever client made
// them; their other clients' next request makes a child again).
func (b *Bridge) BuiltinClientRevoked(clientID string, subjects []string) {
	why := fmt.Sprintf("the bridge's operator revoked client %s", clientID)
	t := b.t()
	for _, sub := range subjects {
		if n := t.endUserEverywhere(BuiltinUserKey(sub), why); n > 0 {
			b.log.Info("a user's children stopped: a client of theirs was revoked", "client_id", clientID, "user", BuiltinUserKey(sub), "children", n)
		}
	}
}
