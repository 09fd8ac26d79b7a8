package bridge

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/stelae-bridge/stelae-bridge/config"
	"github.com/stelae-bridge/stelae-bridge/dispatch"
	"github.com/stelae-bridge/stelae-bridge/profile"
)

// This file is what -check learns by running servers: the tools each
// profile will list, and what protocol each child speaks, which no reading
// of the file can tell.

// ProfileCount is what a profile's tools/list will have, as -check found
// it.
type ProfileCount struct {
	// Tools is how many tools it lists (its members' that started).
	Tools int
	// Warnings name the clients that cut a list this long and the tool
	// names its members expose alike.
	Warnings []string
	// NotStarted are the members that did not start (by destination: the
	// reason); their tools are not counted.
	NotStarted map[string]string
}

// Probe is what -check found of one destination by starting it.
type Probe struct {
	// Speaks is the protocol its child is spoken to in ("2026-07-28",
	// "2025"); "" when it did not start.
	Speaks string
	// Tools is how many tools it lists (after its tool filter).
	Tools int
	// Err is why it did not start ("" when it did).
	Err string
}

// countPoll is how often CountProfileTools looks whether a started
// member's tools are listed (the bridge lists them right after its
// handshake).
const countPoll = 20 * time.Millisecond

// CountProfileTools starts each member of cfg's profiles, and each
// destination named in also, once, as the bridge starts it (its command,
// environment, reaper and tool filter), waits for its tools — each within
// its start timeout and ctx — and stops them all before it returns what
// each profile will list, by profile, and what it found of each
// destination it started, by destination.
func CountProfileTools(ctx context.Context, cfg *config.Config, opts Options, also []string) (map[string]ProfileCount, map[string]Probe) {
	opts.setDefaults()
	b := &Bridge{opts: opts, log: opts.Logger}
	members := map[string]*dispatch.Dispatcher{}
	start := slices.Clone(also)
	for _, name := range cfg.ProfileNames {
		start = append(start, cfg.Profiles[name].Destinations...)
	}
	for _, m := range start {
		if members[m] == nil {
			members[m] = b.dispatcherFactory(cfg.Destinations[m])()
		}
	}
	// mu guards failed.
	var mu sync.Mutex
	failed := map[string]string{}
	var wg sync.WaitGroup
	for name, d := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := listTools(ctx, d, cfg.Destinations[name].StartTimeout); err != nil {
				mu.Lock()
				failed[name] = err.Error()
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	probes := make(map[string]Probe, len(members))
	for name, d := range members {
		if why, ok := failed[name]; ok {
			probes[name] = Probe{Err: why}
			continue
		}
		tools, _ := d.Tools()
		p := Probe{Speaks: "2025", Tools: len(tools)}
		if d.SpeaksModern() {
			p.Speaks = dispatch.ModernVersion
		}
		probes[name] = p
	}
	stop, cancel := context.WithTimeout(context.Background(), opts.stopTimeout()+time.Second)
	defer cancel()
	for _, d := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = d.Close(stop)
		}()
	}
	wg.Wait()

	out := map[string]ProfileCount{}
	for _, name := range cfg.ProfileNames {
		p := cfg.Profiles[name]
		pc := ProfileCount{NotStarted: map[string]string{}}
		var listings []profile.Listing
		for _, m := range p.Destinations {
			if why, ok := failed[m]; ok {
				pc.NotStarted[m] = why
				continue
			}
			tools, _ := members[m].Tools()
			listings = append(listings, profile.Listing{Destination: m, Prefix: cfg.Destinations[m].ToolPrefix(), Items: tools})
		}
		items, names := profile.MergeNamed(listings, filterOf(p.Tools))
		pc.Tools = len(items)
		pc.Warnings = profile.ToolCountWarnings(len(items))
		for _, c := range names.Collisions {
			pc.Warnings = append(pc.Warnings, "two members expose the same tool name: "+c.String())
		}
		out[name] = pc
	}
	return out, probes
}

// listTools starts d's child and waits until its tools are listed, for
// at most timeout (the destination's start timeout; 0: the default).
func listTools(ctx context.Context, d *dispatch.Dispatcher, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = dispatch.DefaultStartTimeout()
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if _, err := d.ServerCapabilities(ctx, timeout); err != nil {
		return err
	}
	tick := time.NewTicker(countPoll)
	defer tick.Stop()
	for {
		if _, known := d.Tools(); known {
			return nil
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return fmt.Errorf("it started but did not list its tools in time (%s)", timeout)
		}
	}
}
