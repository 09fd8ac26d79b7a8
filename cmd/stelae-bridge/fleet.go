package main

import (
	"fmt"
	"io"
	"net"
	"net/url"
	"slices"
	"strings"

	"github.com/stelae-bridge/stelae-bridge/config"
)

// selectInstance is the configuration this bridge serves: the whole file
// alone, instance's part of it in a fleet. A fleet file without -instance
// is refused: a bridge that ran every destination beside the fleet's
// owners would start second children.
func selectInstance(cfg *config.Config, instance string) (*config.Config, error) {
	switch {
	case instance != "":
		return cfg.ForInstance(instance)
	case len(cfg.InstanceNames) > 0:
		return nil, fmt.Errorf("the destinations file declares the instances of a fleet (%s): start each bridge with -instance NAME (STELAE_INSTANCE); -check without it shows who serves what", strings.Join(cfg.InstanceNames, ", "))
	}
	return cfg, nil
}

// printFleet says which instance serves what (-check on a fleet file).
func printFleet(w io.Writer, cfg *config.Config) {
	fmt.Fprintf(w, "fleet of %d instance(s):\n", len(cfg.InstanceNames))
	for _, n := range cfg.InstanceNames {
		in := cfg.Instances[n]
		at := ""
		if in.URL != "" {
			at = " (" + in.URL + ")"
		}
		var profiles []string
		for _, p := range cfg.ProfileNames {
			for _, o := range cfg.ProfileOwners(p) {
				if o == n {
					profiles = append(profiles, p)
				}
			}
		}
		fmt.Fprintf(w, "  instance %s%s: destinations %v", n, at, in.Serves)
		if len(profiles) > 0 {
			fmt.Fprintf(w, ", profiles %v", profiles)
		}
		fmt.Fprintln(w)
	}
	for _, d := range cfg.Names {
		if owners := cfg.Owners(d); len(owners) > 1 {
			fmt.Fprintf(w, "  %s (isolation: session) runs on %s: route it by Mcp-Session-Id\n", d, strings.Join(owners, " and "))
		}
	}
	if cfg.Default != "" {
		key := cfg.Default
		owners := cfg.Owners(key)
		if cfg.DefaultProfile {
			owners = cfg.ProfileOwners(key)
		}
		fmt.Fprintf(w, "  default %s (/mcp) is served by %s\n", key, strings.Join(owners, " and "))
	}
}

// awayList names what other instances serve, for the startup banner.
func awayList(cfg *config.Config) string {
	var out []string
	for key, e := range cfg.Away {
		out = append(out, key+" → "+strings.Join(e.Instances, "/"))
	}
	if len(out) == 0 {
		return "nothing"
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

// instanceListen is where a fleet instance listens when -listen was not
// given: the host and port of its 'url:' (the address the balancer
// reaches it at), not the lone bridge's default; "" when it has no url.
func instanceListen(cfg *config.Config) string {
	in := cfg.Instances[cfg.Instance]
	if in == nil || in.URL == "" {
		return ""
	}
	u, err := url.Parse(in.URL)
	if err != nil || u.Host == "" {
		return ""
	}
	if u.Port() != "" {
		return u.Host
	}
	port := "80"
	if u.Scheme == "https" {
		port = "443"
	}
	return net.JoinHostPort(u.Hostname(), port)
}
