package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/stelae-bridge/stelae-bridge/bridge"
	"github.com/stelae-bridge/stelae-bridge/config"
	"github.com/stelae-bridge/stelae-bridge/supervisor"
)

// checkCountBound bounds -check's starting of the profiles' members (a
// member's own start timeout bounds it too).
const checkCountBound = time.Minute

// profileCounts starts the members of cfg's profiles once, as the bridge
// would, to count the tools each profile lists — and, with -probe, every
// shared destination, to say what it speaks — and stops them: -check's
// warnings about them (a profile past what clients take, names its
// members expose alike, a member or probed destination that did not
// start), the count of each profile, and what was found of each
// destination started.
func profileCounts(ctx context.Context, cfg *config.Config, s *settings, environ []string) (warnings []string, tools map[string]int, probes map[string]bridge.Probe) {
	var also []string
	if s.probe {
		for _, name := range cfg.Names {
			if iso := cfg.Destinations[name].Isolation; iso == "" || iso == config.IsolationShared {
				also = append(also, name)
			}
		}
	}
	if len(cfg.ProfileNames) == 0 && len(also) == 0 {
		return nil, nil, nil
	}
	opts := s.options()
	opts.Environ = supervisor.ChildEnviron(environ, slices.Concat(bridgeEnvVars(), systemdVars, notifyVars))
	opts.Logger = hclog.NewNullLogger()
	var err error
	if opts.Reaper, err = supervisor.ReaperCommand(); err != nil {
		return []string{fmt.Sprintf("the profiles' tools are not counted and no destination is started: %v", err)}, nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, checkCountBound)
	defer cancel()
	counts, probes := bridge.CountProfileTools(ctx, cfg, opts, also)
	for _, name := range also {
		if p := probes[name]; p.Err != "" {
			warnings = append(warnings, fmt.Sprintf("destination %q did not start: %s", name, p.Err))
		}
	}
	tools = map[string]int{}
	for _, name := range cfg.ProfileNames {
		pc := counts[name]
		tools[name] = pc.Tools
		for _, w := range pc.Warnings {
			warnings = append(warnings, fmt.Sprintf("profile %q: %s", name, w))
		}
		members := make([]string, 0, len(pc.NotStarted))
		for m := range pc.NotStarted {
			members = append(members, m)
		}
		slices.Sort(members)
		for _, m := range members {
			warnings = append(warnings, fmt.Sprintf("profile %q: its member %q did not start, so its tools are not counted: %s", name, m, pc.NotStarted[m]))
		}
	}
	return warnings, tools, probes
}

// probeLines say what -check found of each destination it started.
func probeLines(cfg *config.Config, probes map[string]bridge.Probe) []string {
	var lines []string
	for _, name := range cfg.Names {
		p, ok := probes[name]
		switch {
		case !ok:
		case p.Err != "":
			lines = append(lines, fmt.Sprintf("destination %s: did not start (see above)", name))
		default:
			lines = append(lines, fmt.Sprintf("destination %s: its child speaks MCP %s; %d tool(s)", name, p.Speaks, p.Tools))
		}
	}
	return lines
}

// sandboxProblems are what -check finds of the destinations' sandboxes:
// refused, a sandbox this system cannot hold (the destination would never
// start); warnings, one it holds in part only, under best_effort.
type sandboxProblems struct{ refused, warnings []string }

// orNothing is list joined, or "nothing".
func orNothing(list []string) string {
	if len(list) == 0 {
		return "nothing"
	}
	return strings.Join(list, "; ")
}

// sandboxReport says, for each destination with a sandbox, what it is and
// whether this system enforces it (by making its cgroup and removing it).
func sandboxReport(cfg *config.Config) (lines []string, problems sandboxProblems) {
	for _, name := range cfg.Names {
		d := cfg.Destinations[name]
		if d.Sandbox.Empty() {
			continue
		}
		held, notHeld := supervisor.CheckSandbox(d)
		switch {
		case len(notHeld) == 0:
			lines = append(lines, fmt.Sprintf("destination %s: sandbox %s: enforced here (%s)", name, d.Sandbox, strings.Join(held, "; ")))
		case d.Sandbox.BestEffort:
			lines = append(lines, fmt.Sprintf("destination %s: sandbox %s: NOT wholly enforced here (held: %s)", name, d.Sandbox, orNothing(held)))
			problems.warnings = append(problems.warnings, fmt.Sprintf("destination %q: part of its sandbox is not enforced on this system (best_effort: it starts without it): %s", name, strings.Join(notHeld, "; ")))
		default:
			problems.refused = append(problems.refused, fmt.Sprintf("destination %q: its sandbox (%s) cannot be enforced on this system, so it would never start: %s; remove what cannot be held, or set 'best_effort: true' in it", name, d.Sandbox, strings.Join(notHeld, "; ")))
		}
	}
	return lines, problems
}
