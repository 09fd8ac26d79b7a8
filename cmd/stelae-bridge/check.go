package main

import (
	"context"
	"fmt"
	"slices"
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
// would, to count the tools each profile lists, and stops them: -check's
// warnings about them (a profile past what clients take, names its
// members expose alike, a member that did not start), and the count of
// each profile.
func profileCounts(ctx context.Context, cfg *config.Config, s *settings, environ []string) (warnings []string, tools map[string]int) {
	if len(cfg.ProfileNames) == 0 {
		return nil, nil
	}
	opts := s.options()
	opts.Environ = supervisor.ChildEnviron(environ, append(bridgeEnvVars(), systemdVars...))
	opts.Logger = hclog.NewNullLogger()
	var err error
	if opts.Reaper, err = supervisor.ReaperCommand(); err != nil {
		return []string{fmt.Sprintf("the profiles' tools are not counted: %v", err)}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, checkCountBound)
	defer cancel()
	counts := bridge.CountProfileTools(ctx, cfg, opts)
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
	return warnings, tools
}

// sandboxProblems are what -check finds of the destinations' sandboxes:
// refused, a sandbox this system cannot hold (the destination would never
// start); warnings, one it holds in part only, under best_effort.
type sandboxProblems struct{ refused, warnings []string }

// sandboxReport says, for each destination with a sandbox, what it is and
// whether this system enforces it (by making its cgroup and removing it).
func sandboxReport(cfg *config.Config) (lines []string, problems sandboxProblems) {
	for _, name := range cfg.Names {
		d := cfg.Destinations[name]
		if d.Sandbox.Empty() {
			continue
		}
		err := supervisor.CheckSandbox(d)
		switch {
		case err == nil:
			lines = append(lines, fmt.Sprintf("destination %s: sandbox %s: enforced here", name, d.Sandbox))
		case d.Sandbox.BestEffort:
			lines = append(lines, fmt.Sprintf("destination %s: sandbox %s: NOT enforced here", name, d.Sandbox))
			problems.warnings = append(problems.warnings, fmt.Sprintf("destination %q: its sandbox is not enforced on this system (best_effort: it starts without): %v", name, err))
		default:
			problems.refused = append(problems.refused, fmt.Sprintf("destination %q: its sandbox (%s) cannot be enforced on this system, so it would never start: %v; remove the sandbox, or set 'best_effort: true' in it", name, d.Sandbox, err))
		}
	}
	return lines, problems
}
