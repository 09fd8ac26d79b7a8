package bridge

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/stelae-bridge/stelae-bridge/config"
	"github.com/stelae-bridge/stelae-bridge/dispatch"
	"github.com/stelae-bridge/stelae-bridge/profile"
	"github.com/stelae-bridge/stelae-bridge/session"
)

// This file serves the profiles ('profiles:'): each at /p/{profile}/mcp
// (and at /mcp when it is the default) by an endpoint and a dispatcher of
// its own, as a destination is, whose child is the profile's (package
// profile) on the members' shared dispatchers. In the table a profile is
// keyed "p/{name}" beside the destinations (a destination's name has no
// '/'), so that what goes over every endpoint and dispatcher — the
// drain, the shutdown, the metrics, the sessions' store — goes over the
// profiles too; the names and lists of destinations do not hold them.

// buildProfiles adds cfg's profiles to t, keeping those prev serves the
// same way on the same members.
func (b *Bridge) buildProfiles(t, prev *table, cfg *config.Config, sopts session.Options) error {
	for _, name := range cfg.ProfileNames {
		key, p := config.ProfileKey(name), cfg.Profiles[name]
		if prev.keepsProfile(name, t) {
			t.endpoints[key], t.dispatchers[key], t.reports[name] = prev.endpoints[key], prev.dispatchers[key], prev.reports[name]
			continue
		}
		report := &profile.Report{}
		t.reports[name] = report
		if _, err := profileAuth(cfg, p); err != nil {
			return err
		}
		var members []profile.MemberDest
		isolated, perUser := false, false
		caps := session.UserCaps{Budget: b.userChildren}
		for _, m := range p.Destinations {
			d := cfg.Destinations[m]
			md := profile.MemberDest{Name: m, Prefix: d.ToolPrefix(), D: t.dispatchers[m]}
			switch d.Isolation {
			case config.IsolationSession:
				// A child per session: the profile's sessions get theirs.
				md.New, isolated = b.dispatcherFactory(d), true
			case config.IsolationUser:
				// A child per user: each user of the profile gets theirs
				// (forUser below), with their own credentials.
				perUser = true
				caps.Max = minPositive(caps.Max, d.MaxUsers)
				caps.Idle = max(caps.Idle, d.UserIdle)
			}
			members = append(members, md)
		}
		if isolated && perUser {
			return fmt.Errorf("profile %q combines a destination with a child per session and one with a child per user: a profile's sessions cannot be both; make two profiles", name)
		}
		o := b.opts
		newDispatcherOf := func(members []profile.MemberDest) *dispatch.Dispatcher {
			prof := profile.New(profile.Options{Name: name, Members: members, Tools: filterOf(p.Tools), Prompts: filterOf(p.Prompts), Resources: filterOf(p.Resources),
				Timeout: o.RequestTimeout, Version: o.Version, Report: report, Logger: o.Logger})
			return dispatch.New(dispatch.Options{
				Name:            key,
				Launch:          prof.Launcher(),
				Fan:             prof,
				NewBackOff:      o.Restart.NewBackOff,
				StableAfter:     o.Restart.StableAfter,
				Linger:          o.Linger,
				UnclaimedLinger: o.UnclaimedLinger,
				RestartPatience: o.RestartPatience,
				StopTimeout:     o.stopTimeout(),
				BridgeVersion:   o.Version,
				Logger:          o.Logger.Named("dispatch"),
			})
		}
		newDispatcher := func() *dispatch.Dispatcher { return newDispatcherOf(members) }
		if perUser {
			if caps.Max == 0 {
				caps.Max = config.DefaultMaxUsers
			}
			popts := sopts
			popts.SessionTTL = min(popts.SessionTTL, config.IsolatedSessionTTL)
			m := b.metricSet.For(key)
			forUser := func(u session.User) *session.Endpoint {
				own := slices.Clone(members)
				for i := range own {
					if decl := t.decls[own[i].Name]; decl != nil {
						d := decl.Load()
						memberEp := t.endpoints[own[i].Name]
						catalogue := func() []json.RawMessage { tl, _ := memberEp.Catalogue(); return tl }
						own[i].New = b.userDispatcherFactory(d, u, b.dispatcherFactory(d), catalogue)
					}
				}
				uopts := popts
				uopts.Logger = popts.Logger.With("user", u.String())
				return session.NewEndpoint(key, newDispatcherOf(own), nil, b.limits, m, uopts)
			}
			t.endpoints[key] = session.NewUserEndpoint(key, forUser, caps, m, popts)
			continue
		}
		if isolated {
			popts := sopts
			popts.SessionTTL = min(popts.SessionTTL, config.IsolatedSessionTTL)
			t.endpoints[key] = session.NewEndpoint(key, nil, newDispatcher, b.limits, b.metricSet.For(key), popts)
			continue
		}
		pd := newDispatcher()
		t.dispatchers[key] = pd
		t.endpoints[key] = session.NewEndpoint(key, pd, nil, b.limits, b.metricSet.For(key), sopts)
	}
	return nil
}

// profileAuth is the 'auth:' block that protects profile p: the one its
// members share (every member without its own carries the top-level
// block); nil when none has one. Members protected differently — by two
// issuers, or some not at all while others are — cannot be one resource:
// an error that says so.
func profileAuth(cfg *config.Config, p *config.Profile) (*config.Auth, error) {
	var a *config.Auth
	for i, m := range p.Destinations {
		ma := cfg.Destinations[m].Auth
		if i == 0 {
			a = ma
			continue
		}
		if !config.SameAuth(a, ma) {
			return nil, fmt.Errorf("profile %q: its members are protected differently (%s and %s): a profile is one resource with one 'auth:'; give its members the same 'auth:' block (or a top-level one), or make two profiles", p.Name, authName(cfg.Destinations[p.Destinations[0]].Name, a), authName(m, ma))
		}
	}
	return a, nil
}

func authName(dest string, a *config.Auth) string {
	if a == nil {
		return fmt.Sprintf("%q open", dest)
	}
	return fmt.Sprintf("%q by %s", dest, a.Issuer)
}

// filterOf is a profile's filter as a function (nil: none).
func filterOf(f config.ToolFilter) func(string) bool {
	if f.Empty() {
		return nil
	}
	return f.Allows
}

// keepsProfile reports whether the table serves profile name as next's
// configuration says, on the members next keeps: next keeps it.
func (t *table) keepsProfile(name string, next *table) bool {
	key := config.ProfileKey(name)
	if t == nil || t.endpoints[key] == nil || !config.SameProfile(t.cfg.Profiles[name], next.cfg.Profiles[name]) {
		return false
	}
	for _, m := range next.cfg.Profiles[name].Destinations {
		if next.endpoints[m] == nil || next.endpoints[m] != t.endpoints[m] || next.cfg.Destinations[m].ToolPrefix() != t.cfg.Destinations[m].ToolPrefix() {
			return false
		}
	}
	return true
}

// defaultKey is the key of what /mcp serves: the default destination's
// name, or its profile's key.
func (t *table) defaultKey() string {
	if t.cfg.DefaultProfile {
		return config.ProfileKey(t.cfg.Default)
	}
	return t.cfg.Default
}

// profileEndpoint is the endpoint of /p/{name}/mcp; nil when there is no
// such profile.
func (t *table) profileEndpoint(name string) *session.Endpoint {
	if name == "" || strings.Contains(name, "/") {
		return nil
	}
	return t.endpoints[config.ProfileKey(name)]
}

// profileHealth is a profile in /healthz: its URL, members, child state
// and sessions; with ?verbose what its lists found (collisions, clients
// that cut its tools).
type profileHealth struct {
	URL      string   `json:"url"`
	Members  []string `json:"members"`
	State    string   `json:"state"`
	Sessions int      `json:"sessions"`
	Tools    int      `json:"tools"`
	// Dropped counts the members' messages the profile could not pass on
	// to its clients (its queue was full).
	Dropped  uint64   `json:"dropped"`
	Warnings []string `json:"warnings,omitempty"`
}

// profilesHealth is the profiles' part of /healthz.
func (t *table) profilesHealth(verbose bool) map[string]profileHealth {
	if len(t.cfg.ProfileNames) == 0 {
		return nil
	}
	out := map[string]profileHealth{}
	for _, name := range t.cfg.ProfileNames {
		ep := t.endpoints[config.ProfileKey(name)]
		if ep == nil {
			continue
		}
		ph := profileHealth{URL: config.ProfilePath(name), Members: t.cfg.Profiles[name].Destinations, State: ep.Status().State, Sessions: ep.SessionCount(), Tools: t.reports[name].Tools(), Dropped: t.reports[name].Dropped()}
		if verbose {
			ph.Warnings = t.reports[name].Warnings()
		}
		out[name] = ph
	}
	return out
}

// minPositive is the smaller of a and b, a zero being none.
func minPositive(a, b int) int {
	switch {
	case a == 0:
		return b
	case b == 0:
		return a
	}
	return min(a, b)
}
