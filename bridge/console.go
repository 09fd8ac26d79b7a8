package bridge

import (
	"errors"
	"fmt"
	"github.com/stelae-bridge/stelae-bridge/config"
	"github.com/stelae-bridge/stelae-bridge/httpx"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/stelae-bridge/stelae-bridge/audit"
	"github.com/stelae-bridge/stelae-bridge/authserver"
	"github.com/stelae-bridge/stelae-bridge/console"
	"github.com/stelae-bridge/stelae-bridge/dispatch"
	"github.com/stelae-bridge/stelae-bridge/session"
	"github.com/stelae-bridge/stelae-bridge/supervisor"
)

// The operator console's seam (package console): the bridge hands it its
// routing table's status — destinations, profiles, the built-in server's
// clients and users — and takes its actions.

// newConsole makes the console. Its viewers need an operator's credential
// whenever the bridge asks for any (or runs the built-in server, whose
// passphrase is one).
func (b *Bridge) newConsole() *console.Console {
	o := console.Options{Backend: (*consoleBackend)(b), Tail: b.tail, AuthOn: b.authOn || b.opts.AuthServer != nil, Tokens: b.tokens.Load().operators,
		Remote: b.opts.ConsoleRemote, BaseURL: b.baseURL, Version: b.opts.Version, PublicURL: b.opts.PublicURL, Done: b.streams, Logger: b.opts.Logger.Named("console")}
	if b.opts.AuthServer != nil {
		o.Passphrase = b.opts.AuthServer
	}
	switch {
	case o.AuthOn && len(o.Tokens) > 0 && o.Passphrase != nil:
		o.AuthMode = "operator token or passphrase"
	case o.AuthOn && len(o.Tokens) > 0:
		o.AuthMode = "operator token"
	case o.AuthOn && o.Passphrase != nil:
		o.AuthMode = "passphrase"
	case o.AuthOn:
		o.AuthMode = "no operator credential configured"
	case o.Remote:
		o.AuthMode = "off (console open to all: -console-remote)"
	default:
		o.AuthMode = "off (console on this machine only)"
	}
	c := console.New(o)
	b.onTokens = c.SetTokens
	return c
}

// ConsoleToken is the console's per-run token while auth is off ("" with
// auth on, or with the console off): the startup banner prints it once,
// in the console's link (http://HOST:PORT/console?token=…), and nothing
// else may show or log it.
func (b *Bridge) ConsoleToken() string {
	if b.console == nil {
		return ""
	}
	return b.console.OpenToken()
}

// serveConsole serves /console and under it, or says how to turn it on.
func (b *Bridge) serveConsole(w http.ResponseWriter, r *http.Request) {
	if b.console == nil {
		httpx.WriteError(w, http.StatusNotFound, codeServer, "the operator console is off (-no-console)")
		return
	}
	b.console.ServeHTTP(w, r)
}

// consoleBackend is the bridge as the console's Backend.
type consoleBackend Bridge

// Destinations describes every destination, then every profile's own
// endpoint (its sessions are the profile's, at /p/{name}/mcp).
func (cb *consoleBackend) Destinations() []console.Destination {
	b := (*Bridge)(cb)
	t := b.t()
	out := make([]console.Destination, 0, len(t.names)+len(t.cfg.ProfileNames))
	for _, n := range t.names {
		d := describe(n, config.KeyPath(n), t.endpoints[n])
		if sb := t.cfg.Destinations[n].Sandbox; !sb.Empty() {
			d.Sandbox = sb.String()
		}
		out = append(out, d)
	}
	for _, n := range t.cfg.ProfileNames {
		if ep := t.profileEndpoint(n); ep != nil {
			d := describe(config.ProfileKey(n), config.ProfilePath(n), ep)
			d.Isolation = "profile"
			out = append(out, d)
		}
	}
	for i := range out {
		if ep := t.endpoints[out[i].Name]; ep != nil && ep.UserIsolated() {
			out[i].Users = b.consoleUsers(out[i].Name, ep)
		}
	}
	// A named static token's sessions show its name, not its hash.
	for i := range out {
		for j := range out[i].Sessions {
			for _, id := range b.tokens.Load().ids {
				if id.named && id.principal.Short() == out[i].Sessions[j].Principal {
					out[i].Sessions[j].Principal = id.user.Name
				}
			}
		}
	}
	return out
}

// describe is one endpoint as the console shows it.
func describe(name, url string, ep *session.Endpoint) console.Destination {
	now := time.Now()
	st := ep.Status()
	d := console.Destination{Name: name, URL: url, Isolation: "shared", State: st.State, PID: st.PID, Restarts: st.RestartsTotal, RecentRestarts: st.Restarts,
		LastExit: st.LastExit, FailedReason: st.Failed, Waiting: st.Waiting, Stopping: st.Stopping, Sessions: []console.Session{}, Tools: []console.Tool{}}
	d.SandboxHeld, d.SandboxNotHeld = strings.Join(st.SandboxHeld, "; "), strings.Join(st.SandboxNotHeld, "; ")
	d.ChildSpeaks = childSpeaks(st)
	switch {
	case ep.Isolated():
		d.Isolation = "session"
	case ep.UserIsolated():
		d.Isolation = "user"
	}
	if !st.Started.IsZero() {
		d.UptimeS = now.Sub(st.Started).Round(time.Millisecond).Seconds()
	}
	if !st.StartingSince.IsZero() {
		d.StartingS = now.Sub(st.StartingSince).Round(100 * time.Millisecond).Seconds()
	}
	if !st.NextRestart.IsZero() {
		d.NextRestartS = max(0, st.NextRestart.Sub(now).Round(100*time.Millisecond).Seconds())
	}
	for _, s := range ep.Sessions() {
		d.Sessions = append(d.Sessions, console.Session{ID: s.ID, Client: s.Client, ProtocolVersion: s.ProtocolVersion, Era: session.EraSession,
			Principal: s.Principal, AgeS: s.AgeS, IdleS: s.IdleS, Inflight: s.Inflight, Streams: s.Streams})
	}
	marks, known := ep.ToolMarks()
	d.ToolsKnown = known
	for _, m := range marks {
		d.Tools = append(d.Tools, console.Tool{Name: m.Name, Allowed: m.Allowed})
	}
	return d
}

// Profiles lists the profiles and their members.
func (cb *consoleBackend) Profiles() []console.Profile {
	t := (*Bridge)(cb).t()
	out := []console.Profile{}
	for _, n := range t.cfg.ProfileNames {
		out = append(out, console.Profile{Name: n, URL: config.ProfilePath(n), Members: t.cfg.Profiles[n].Destinations})
	}
	return out
}

// Clients lists the built-in server's clients.
func (cb *consoleBackend) Clients() ([]console.Client, bool, error) {
	srv := cb.opts.AuthServer
	if srv == nil {
		return []console.Client{}, false, nil
	}
	list, err := srv.Store().Clients()
	out := make([]console.Client, 0, len(list))
	for _, c := range list {
		out = append(out, console.Client{ID: c.ID, Name: c.Name, Source: c.Source, Created: stamp(c.Created), Approved: stamp(c.Approved),
			LastUsed: stamp(c.LastUsed), Revoked: c.Revoked})
	}
	return out, true, err
}

// RevokeClient revokes a client of the built-in server, as 'stelae-bridge
// auth revoke' does: its tokens are refused from now on.
func (cb *consoleBackend) RevokeClient(id string) error {
	srv := cb.opts.AuthServer
	if srv == nil {
		return fmt.Errorf("%w: the built-in authorization server is not running", console.ErrNotFound)
	}
	if err := srv.RevokeClient(id); err != nil {
		if errors.Is(err, authserver.ErrUnknownClient) {
			return fmt.Errorf("%w: %v", console.ErrNotFound, err)
		}
		return err
	}
	return nil
}

// endpoint is the endpoint the console names name by (a destination, or
// p/{profile}).
func (cb *consoleBackend) endpoint(name string) (*session.Endpoint, error) {
	if ep := (*Bridge)(cb).t().endpoints[name]; ep != nil {
		return ep, nil
	}
	return nil, fmt.Errorf("%w: no destination named %q", console.ErrNotFound, name)
}

// EndSession ends a session as its client's DELETE would.
func (cb *consoleBackend) EndSession(dest, id string) error {
	ep, err := cb.endpoint(dest)
	if err != nil {
		return err
	}
	if err := ep.EndSession(id); errors.Is(err, session.ErrNoSuchSession) {
		return fmt.Errorf("%w: session %s of %s: %v", console.ErrNotFound, id, dest, err)
	} else if err != nil {
		return err
	}
	return nil
}

// Restart restarts a destination's child with the command it has, and
// says what happened: a destination with no child running starts none
// (the next call starts one); a profile has no process of its own.
func (cb *consoleBackend) Restart(dest string) (string, error) {
	if name, ok := config.ProfileName(dest); ok {
		if p := (*Bridge)(cb).t().cfg.Profiles[name]; p != nil {
			return "", fmt.Errorf("profile %s has no process of its own, so there is nothing of its to restart: restart its members (%s) one by one — each restart reaches every user of that destination", name, strings.Join(p.Destinations, ", "))
		}
	}
	ep, err := cb.endpoint(dest)
	if err != nil {
		return "", err
	}
	n, err := ep.Restart()
	if err != nil {
		if errors.Is(err, supervisor.ErrUnavailable) {
			return "", err
		}
		return "", fmt.Errorf("restarting %s: %w", dest, err)
	}
	switch {
	case n == 0 && ep.Isolated():
		return "no session of " + dest + " has a child running, so none was restarted; each new session starts its own", nil
	case n == 0 && ep.UserIsolated():
		return "no user of " + dest + " has a child running, so none was restarted; each user's next call starts theirs", nil
	case ep.UserIsolated():
		return fmt.Sprintf("%d children of %s (one per user) are restarting", n, dest), nil
	case n == 0:
		return "no child of " + dest + " is running, so none was restarted; the next call starts one", nil
	case ep.Isolated():
		return fmt.Sprintf("%d children of %s (one per session) are restarting", n, dest), nil
	}
	return "the child of " + dest + " is restarting", nil
}

// consoleUsers lists a user-isolated destination's users: those with a
// child, and those with credentials stored (names and times, never a
// value).
func (b *Bridge) consoleUsers(dest string, ep *session.Endpoint) []console.User {
	byKey := map[string]*console.User{}
	var keys []string
	add := func(key, name string) *console.User {
		if u := byKey[key]; u != nil {
			return u
		}
		u := &console.User{Key: key, Name: name, State: dispatch.StateIdle, Credentials: []string{}}
		byKey[key] = u
		keys = append(keys, key)
		return u
	}
	for _, ui := range ep.Users() {
		u := add(ui.Key, ui.Name)
		u.State, u.PID, u.Sessions = ui.State, ui.PID, ui.Sessions
	}
	if store := b.opts.CredStore; store != nil {
		entries, err := store.List(dest)
		if err != nil {
			b.log.Warn("the users' credentials could not be listed for the console", "destination", dest, "error", err)
		}
		for _, e := range entries {
			u := add(e.User, e.Display)
			u.Credentials = append(u.Credentials, e.Names...)
			if !e.Updated.IsZero() {
				u.CredentialsUpdated = e.Updated.UTC().Format(time.RFC3339)
			}
		}
	}
	sort.Strings(keys)
	out := make([]console.User, 0, len(keys))
	for _, k := range keys {
		out = append(out, *byKey[k])
	}
	return out
}

// StopUser stops a user's child of a user-isolated destination.
func (cb *consoleBackend) StopUser(dest, user string) error {
	ep, err := cb.endpoint(dest)
	if err != nil {
		return err
	}
	if !ep.UserIsolated() {
		return fmt.Errorf("%s does not give each user a child of their own ('isolation: user')", dest)
	}
	if !ep.EndUser(user, "the bridge's operator stopped your child") {
		return fmt.Errorf("%w: user %s has no child of %s", console.ErrNotFound, user, dest)
	}
	return nil
}

// DeleteCredentials deletes what a user entered for a destination and
// stops their children that had them (of the destination and of its
// profiles).
func (cb *consoleBackend) DeleteCredentials(dest, user string) error {
	if _, err := cb.endpoint(dest); err != nil {
		return err
	}
	store := cb.opts.CredStore
	if store == nil {
		return fmt.Errorf("%w: the bridge keeps no users' credentials (no destination declares 'credentials:')", console.ErrNotFound)
	}
	if err := store.Delete(dest, user); err != nil {
		return fmt.Errorf("deleting %s's credentials for %s: %w", user, dest, err)
	}
	(*Bridge)(cb).t().endUser(dest, user, "your credentials were deleted by the bridge's operator")
	return nil
}

// noBuiltinServer is the error of a people action without the built-in
// server.
func noBuiltinServer() error {
	return console.Refusal(console.ErrNotFound, "the built-in authorization server is not running, so there are no people to manage (an 'auth:' block with 'issuer: builtin' runs it)")
}

// stamp is a time as the console gets it ("" for none).
func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// People lists the built-in server's users, oldest first.
func (cb *consoleBackend) People() ([]console.Person, bool, error) {
	srv := cb.opts.AuthServer
	if srv == nil {
		return []console.Person{}, false, nil
	}
	us, err := srv.Users()
	sort.Slice(us, func(i, j int) bool {
		if !us[i].Created.Equal(us[j].Created) {
			return us[i].Created.Before(us[j].Created)
		}
		return us[i].Name < us[j].Name
	})
	out := make([]console.Person, 0, len(us))
	for _, u := range us {
		out = append(out, console.Person{Name: u.Name, Subject: u.Subject, Key: BuiltinUserKey(u.Subject), Created: stamp(u.Created),
			LastSignIn: stamp(u.LastSignIn), State: u.State()})
	}
	return out, true, err
}

// person is the built-in server's user named name (whatever its case),
// false when there is none.
func (cb *consoleBackend) person(name string) (authserver.User, bool, error) {
	us, err := cb.opts.AuthServer.Users()
	if err != nil {
		return authserver.User{}, false, fmt.Errorf("the built-in server's users could not be read: %w", err)
	}
	for _, u := range us {
		if strings.EqualFold(u.Name, name) {
			return u, true, nil
		}
	}
	return authserver.User{}, false, nil
}

// thePerson is the user name of subject, or the error that says why the
// console will not act on them: no such name, or the name is now another
// person's (the one the operator saw was removed and the name invited
// again) — then nothing is done.
func (cb *consoleBackend) thePerson(name, subject string) (authserver.User, error) {
	if cb.opts.AuthServer == nil {
		return authserver.User{}, noBuiltinServer()
	}
	if subject == "" {
		return authserver.User{}, console.Refusal(console.ErrInvalid, "name the user by their subject too, as the console's state lists it (a name can pass to another person)")
	}
	u, ok, err := cb.person(name)
	switch {
	case err != nil:
		return u, err
	case !ok:
		return u, console.Refusal(console.ErrNotFound, fmt.Sprintf("no user is named %q (removed meanwhile?); reload the console to see who there is", name))
	case u.Subject != subject:
		return u, fmt.Errorf("the user named %s is now another person (subject %s, not %s: the one you acted on was removed and the name invited again); nothing was done — reload the console and act again", u.Name, u.Subject, subject)
	}
	return u, nil
}

// userError is an authserver user error as the console shows it.
func userError(name string, err error) error {
	switch {
	case errors.Is(err, authserver.ErrUnknownUser):
		return console.Refusal(console.ErrNotFound, fmt.Sprintf("no user is named %q (removed meanwhile?); reload the console to see who there is", name))
	case errors.Is(err, authserver.ErrBadName):
		return console.Refusal(console.ErrInvalid, fmt.Sprintf("%q cannot be a user's name: %v; choose another", name, err))
	}
	return err
}

// Invite invites a person, or gives a user a new link, as 'stelae-bridge
// auth invite' does. The link is in the answer only: authserver stores
// the code hashed and logs no code.
func (cb *consoleBackend) Invite(name, subject string, again bool) (console.Invitation, error) {
	srv := cb.opts.AuthServer
	if srv == nil {
		return console.Invitation{}, noBuiltinServer()
	}
	if err := authserver.CheckName(name); err != nil {
		return console.Invitation{}, userError(name, err)
	}
	if again {
		if _, err := cb.thePerson(name, subject); err != nil {
			return console.Invitation{}, err
		}
	} else if u, ok, err := cb.person(name); err != nil {
		return console.Invitation{}, err
	} else if ok {
		return console.Invitation{}, fmt.Errorf("%s is already a user (subject %s): to give them a new link with which they set a new secret, use \"New link\" on their row (their current secret works until they use it); to invite another person, choose another name", u.Name, u.Subject)
	}
	code, u, existed, err := srv.InviteUser(name)
	if err != nil {
		return console.Invitation{}, userError(name, err)
	}
	var inv console.Invitation
	switch {
	case existed && again:
		inv.Message = fmt.Sprintf("%s (subject %s) can set a new secret with this link; their current one works until then, and their earlier links no longer do.", u.Name, u.Subject)
	case existed:
		// 'auth invite' made them between the check and now.
		inv.Message = fmt.Sprintf("%s (subject %s) had just been invited by someone else: this link replaces theirs.", u.Name, u.Subject)
	case again:
		inv.Message = fmt.Sprintf("%s had just been removed by someone else: this invites them again, as a new user (subject %s).", u.Name, u.Subject)
	default:
		inv.Message = fmt.Sprintf("Invited %s (subject %s).", u.Name, u.Subject)
	}
	inv.Message += " Send them this link; it works once, for 7 days, and only while a bridge runs. It is shown here only, this once."
	link := authserver.PathInvite + "?code=" + url.QueryEscape(code)
	if pub := cb.opts.PublicURL; pub != "" {
		inv.Link = strings.TrimSuffix(pub, "/") + link
	} else {
		inv.Link = link
		inv.Note = "Prefix it with the bridge's public URL, e.g. https://mcp.example.com" + authserver.PathInvite + "?code=…; with -public-url (or STELAE_PUBLIC_URL) the console shows it whole."
	}
	return inv, nil
}

// DisableUser disables a user: their tokens are refused and their
// children stopped at once (OnUserGone).
func (cb *consoleBackend) DisableUser(name, subject string) (string, error) {
	u, err := cb.thePerson(name, subject)
	if err != nil {
		return "", err
	}
	if u.Disabled {
		return u.Name + " is already disabled; nothing changed", nil
	}
	if _, err := cb.opts.AuthServer.DisableUser(u.Name); err != nil {
		return "", userError(name, err)
	}
	return u.Name + " is disabled: their tokens are refused from now on, they cannot sign in, and their children are stopped; Enable lets them sign in again", nil
}

// EnableUser enables a disabled user; their tokens from before stay
// refused.
func (cb *consoleBackend) EnableUser(name, subject string) (string, error) {
	u, err := cb.thePerson(name, subject)
	if err != nil {
		return "", err
	}
	if !u.Disabled {
		return u.Name + " is not disabled; nothing changed", nil
	}
	if _, err := cb.opts.AuthServer.EnableUser(u.Name); err != nil {
		return "", userError(name, err)
	}
	return u.Name + " is enabled: they may sign in again (their tokens from before stay refused: their clients ask them to sign in)", nil
}

// RemoveUser removes a user: their tokens are refused, their children
// stopped and their stored credentials deleted (OnUserGone).
func (cb *consoleBackend) RemoveUser(name, subject string) (string, error) {
	u, err := cb.thePerson(name, subject)
	if err != nil {
		return "", err
	}
	if _, err := cb.opts.AuthServer.RemoveUser(u.Name); err != nil {
		return "", userError(name, err)
	}
	return u.Name + " is removed: their tokens are refused, their children stopped and the credentials they entered deleted; inviting the name again makes another user", nil
}

// tails is what the endpoints hand each POST's entry to: the audit trail
// (first: it takes the bodies) and the console's live log; nil for
// neither.
func (b *Bridge) tails() session.Tail {
	switch {
	case b.opts.Audit == nil && b.tail == nil:
		return nil
	case b.opts.Audit == nil:
		return b.tail
	case b.tail == nil:
		return b.opts.Audit
	}
	return bothTails{b.opts.Audit, b.tail}
}

// bothTails hands an entry to the audit trail and then the console.
type bothTails struct {
	audit   *audit.Trail
	console *console.Tail
}

func (t bothTails) Access(e session.AccessEntry) {
	t.audit.Access(e)
	t.console.Access(e)
}
