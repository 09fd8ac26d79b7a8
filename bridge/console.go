package bridge

import (
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/stelae-bridge/stelae-bridge/authserver"
	"github.com/stelae-bridge/stelae-bridge/console"
	"github.com/stelae-bridge/stelae-bridge/dispatch"
	"github.com/stelae-bridge/stelae-bridge/session"
	"github.com/stelae-bridge/stelae-bridge/supervisor"
)

// The operator console's seam (package console): the bridge hands it its
// routing table's status — destinations, profiles, the built-in server's
// clients — and takes its three actions.

// newConsole makes the console. Its viewers need an operator's credential
// whenever the bridge asks for any (or runs the built-in server, whose
// passphrase is one).
func (b *Bridge) newConsole() *console.Console {
	o := console.Options{Backend: (*consoleBackend)(b), Tail: b.tail, AuthOn: b.authOn || b.opts.AuthServer != nil, Tokens: b.opts.AuthTokens,
		Remote: b.opts.ConsoleRemote, BaseURL: b.baseURL, Version: b.opts.Version, Done: b.streams, Logger: b.opts.Logger.Named("console")}
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
	return console.New(o)
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
		session.WriteError(w, http.StatusNotFound, codeServer, "the operator console is off (-no-console)")
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
		out = append(out, describe(n, "/"+n+"/mcp", t.endpoints[n]))
	}
	for _, n := range t.cfg.ProfileNames {
		if ep := t.profileEndpoint(n); ep != nil {
			d := describe(profileKey(n), "/p/"+n+"/mcp", ep)
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
		out = append(out, console.Profile{Name: n, URL: "/p/" + n + "/mcp", Members: t.cfg.Profiles[n].Destinations})
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
	stamp := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format(time.RFC3339)
	}
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
	if name, ok := strings.CutPrefix(dest, "p/"); ok {
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
