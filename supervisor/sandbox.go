package supervisor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/stelae-bridge/stelae-bridge/config"
)

// A child's sandbox (issue 37, 'sandbox:'): what it may read and write,
// reach on the network, and take in memory and processes. Before a child
// starts, newJail works out how this system holds each restriction:
//   - memory and processes: a cgroup of the child's own (cgroup_linux.go);
//   - network none: a network namespace of its own (the reaper is started
//     in it; the joiner brings up its loopback);
//   - network loopback or addresses: eBPF filters on a cgroup v2 directory
//     of the child's own (netfilter_linux.go);
//   - files: Landlock, applied by the joiner before the command's exec
//     (landlock_linux.go).
// The reaper hands what concerns the command to the joiner (reaper.go),
// which applies it and becomes the command: the command and everything it
// starts are held from their first instruction, in the order the reaper
// already keeps, and a killed bridge leaves nothing behind (the reaper
// kills the cgroups' members and removes them).
//
// A restriction this system cannot hold refuses the start, saying why and
// what to do, unless the sandbox says best_effort: then the child starts
// with the rest, and the log and -check say what is not held. Never a
// silent pass.

// jail is how one child is held to its sandbox here. Its fields are set
// by newJail and then only read.
type jail struct {
	// cg is the cgroup of the caps and the network filter (nil: none);
	// the child's Process removes it when the child is gone.
	cg *cgroup
	// args are what the reaper hands the joiner.
	args sandboxArgs
	// tmp is the child's own temporary directory (its TMPDIR; "" when
	// files are not restricted), removed with the child.
	tmp string
	// held says what is enforced ("memory 512MiB by a cgroup", ...);
	// notHeld what is not, and why (best_effort only: otherwise the
	// start is refused).
	held, notHeld []string
}

// newJail works out how d's child (whose command is cmdPath) is held to
// its sandbox, making what must exist before it starts (the cgroups). It
// returns nil for a destination without a sandbox, and an error (a
// sandboxError) when a restriction cannot be held and the sandbox is not
// best_effort.
func newJail(d *config.Destination, cmdPath string) (*jail, error) {
	s := d.Sandbox
	if s.Empty() {
		return nil, nil
	}
	j := &jail{}
	miss := func(what string, err error) { j.notHeld = append(j.notHeld, what+": "+err.Error()) }
	if s.Files != nil {
		read, write, err := sandboxPaths(d, cmdPath)
		var notes []string
		if err == nil {
			notes, err = checkLandlockHere()
		}
		if err == nil {
			// A temporary directory of its own, not the system's: /tmp
			// holds other programs' files.
			j.tmp, err = os.MkdirTemp("", "stelae-"+cgroupName(d.Name)+"-")
		}
		if err != nil {
			miss("files", err)
		} else {
			j.args.read, j.args.write, j.args.tmp = read, append(write, j.tmp), j.tmp
			j.held = append(j.held, notes...)
		}
	}
	var rules []netRule
	switch s.Network {
	case config.NetworkNone:
		if err := checkNetns(); err != nil {
			miss("network none", err)
		} else {
			j.args.netns = true
			j.held = append(j.held, "network none by a network namespace")
		}
	case config.NetworkLoopback, config.NetworkList:
		var err error
		if rules, err = netRules(s); err != nil {
			miss("network", err)
		}
	}
	if s.Memory > 0 || s.Processes > 0 {
		cg, err := newCgroup(d.Name, cgroupCaps{Memory: s.Memory, Processes: s.Processes})
		switch {
		case err == nil:
			j.cg = cg
			j.held = append(j.held, "memory and processes by "+capsBy)
		case s.Processes == 0 && rlimitData:
			// The fallback that does not break Node: a data limit on
			// each process (an address-space limit would: V8 reserves
			// far more than it uses).
			j.args.dataLimit = s.Memory
			j.held = append(j.held, "memory by RLIMIT_DATA on each process (no cgroup here: "+err.Error()+"; each process of the tree may take that much, and one over it fails to allocate rather than being stopped)")
		default:
			miss("memory and processes", err)
		}
	}
	if rules != nil {
		if j.cg == nil {
			// No caps: a cgroup of the filter's alone (newCgroup
			// makes nothing for none, and cannot fail).
			j.cg, _ = newCgroup(d.Name, cgroupCaps{})
		}
		err := j.cg.filterNetwork(rules)
		switch {
		case err == nil:
			j.held = append(j.held, "network by an eBPF filter on the child's cgroup ("+strconv.Itoa(len(rules))+" addresses)")
		case s.Network == config.NetworkList && s.BestEffort && landlockPorts:
			// What Landlock can hold of a list: its TCP ports, on
			// any host.
			miss("network's hosts and UDP", err)
			j.args.ports = listPorts(s.Allow)
			j.held = append(j.held, "network: TCP connections to ports "+strings.Join(j.args.ports, ", ")+" only, on any host, by Landlock")
		default:
			miss("network", err)
		}
	}
	if j.cg != nil {
		j.args.cgroups = j.cg.procsFiles()
	}
	if len(j.notHeld) > 0 && !s.BestEffort {
		j.release()
		return nil, sandboxError{errors.New(strings.Join(j.notHeld, "; "))}
	}
	return j, nil
}

// release removes what newJail made, once the child (if any) is gone:
// what is left in its cgroups is killed.
func (j *jail) release() error {
	if j == nil {
		return nil
	}
	return endLeftovers(j.cg, j.tmp)
}

// cgroup is j's cgroup (nil: none, or no jail).
func (j *jail) cgroup() *cgroup {
	if j == nil {
		return nil
	}
	return j.cg
}

// endLeftovers ends what a child's sandbox leaves once the child is gone:
// it kills what is left in g (nil: none) and removes g and the child's
// temporary directory tmp ("": none). The bridge calls it when a child
// exits (jail.release), the reaper when the bridge is gone, the sweep
// when both died together.
func endLeftovers(g *cgroup, tmp string) error {
	var err error
	if g != nil {
		g.killAll()
		if err = g.remove(); err != nil {
			err = fmt.Errorf("the child's cgroup stays: %w", err)
		}
	}
	if tmp != "" {
		if rerr := os.RemoveAll(tmp); rerr != nil && err == nil {
			err = fmt.Errorf("the child's temporary directory stays: %w", rerr)
		}
	}
	return err
}

// CheckSandbox says how this system would hold d to its sandbox (-check):
// what is held, and what is not and why (nothing for a destination
// without a sandbox). It makes what a start makes, and removes it again.
func CheckSandbox(d *config.Destination) (held, notHeld []string) {
	if d.Sandbox.Empty() {
		return nil, nil
	}
	cmd, err := command(d)
	path := d.Command
	if err == nil && cmd.Err == nil {
		path = cmd.Path
	}
	best := *d.Sandbox
	best.BestEffort = true
	probe := *d
	probe.Sandbox = &best
	j, err := newJail(&probe, path)
	if err != nil {
		return nil, []string{err.Error()}
	}
	_ = j.release()
	return j.held, j.notHeld
}

// cgroupName is dest as a cgroup directory's name may hold it.
func cgroupName(dest string) string {
	b := []byte(dest)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			b[i] = '_'
		}
	}
	if len(b) > 64 {
		b = b[:64]
	}
	return string(b)
}

// systemRead are the paths a child under 'files:' may always read and
// execute: the system's programs, libraries and configuration, and what
// the process reads of itself. systemWrite are the devices it may always
// write.
var (
	systemRead  = []string{"/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/etc", "/proc", "/run/systemd/resolve", "/sys/devices/system/cpu", "/dev/random", "/dev/urandom"}
	systemWrite = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty"}
)

// sandboxPaths are the paths d's child may read and write: the system's
// (systemRead, systemWrite), its command's installation, its preset's and
// 'files:' (each of which must exist).
func sandboxPaths(d *config.Destination, cmdPath string) (read, write []string, err error) {
	s := d.Sandbox
	home, _ := os.UserHomeDir()
	read = append(read, systemRead...)
	write = append(write, systemWrite...)
	read = append(read, installation(cmdPath)...)
	switch s.Preset {
	case "npx":
		if node, err := exec.LookPath("node"); err == nil {
			read = append(read, installation(node)...)
		}
		read = append(read, filepath.Join(home, ".npmrc"))
		w, err := presetDirs(home, ".npm")
		if err != nil {
			return nil, nil, err
		}
		write = append(write, w...)
	case "uvx":
		if prefix := pythonPrefix(); prefix != "" {
			read = append(read, prefix)
		}
		w, err := presetDirs(home, ".cache/uv", ".local/share/uv")
		if err != nil {
			return nil, nil, err
		}
		write = append(write, w...)
	}
	expand := func(list []string, into *[]string) error {
		for _, p := range list {
			var paths []string
			switch {
			case p == config.RootsPath:
				if len(d.Roots) == 0 {
					return errors.New("'files' lists ${roots}, and the destination has no 'roots:' (list them, or remove ${roots})")
				}
				for _, r := range d.Roots {
					u, err := url.Parse(r.URI)
					if err != nil || u.Scheme != "file" {
						return fmt.Errorf("'files' lists ${roots}, and the root %s is not a file:// URI", r.URI)
					}
					paths = append(paths, filepath.FromSlash(u.Path))
				}
			case p == "~" || strings.HasPrefix(p, "~/"):
				if home == "" {
					return fmt.Errorf("'files' lists %s, and the bridge's user has no home directory", p)
				}
				paths = append(paths, filepath.Join(home, strings.TrimPrefix(p, "~")))
			default:
				paths = append(paths, p)
			}
			for _, p := range paths {
				if _, err := os.Stat(p); err != nil {
					return fmt.Errorf("'files' lists %s, which the bridge cannot open (%v): make it, or remove it from the list", p, err)
				}
			}
			*into = append(*into, paths...)
		}
		return nil
	}
	if err := expand(s.Files.Read, &read); err != nil {
		return nil, nil, err
	}
	if err := expand(s.Files.Write, &write); err != nil {
		return nil, nil, err
	}
	return read, write, nil
}

// installation are the paths that hold the program at path: its
// directory, and where a bin directory's installation is (its parent:
// node's lib next to its bin), or a shims directory's version manager
// (pyenv, rbenv, asdf: the shim runs the manager, which runs a version
// beside it), for the path as given and as its symlinks resolve.
func installation(path string) []string {
	if path == "" {
		return nil
	}
	var out []string
	for _, p := range []string{path, resolved(path)} {
		if p == "" {
			continue
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			continue
		}
		dir := filepath.Dir(abs)
		if base := filepath.Base(dir); (base == "bin" || base == "shims") && filepath.Dir(dir) != "/" {
			dir = filepath.Dir(dir)
		}
		out = append(out, dir)
	}
	return out
}

// pythonPrefix is where the python3 on PATH is installed, as it says
// (sys.base_prefix: a shim's or a symlink's target may be elsewhere);
// asked once per bridge, "" when there is none.
var pythonPrefix = sync.OnceValue(func() string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "python3", "-c", "import sys; print(sys.base_prefix)").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
})

// resolved is path with its symlinks resolved ("" when it cannot be).
func resolved(path string) string {
	p, err := filepath.EvalSymlinks(path)
	if err != nil {
		return ""
	}
	return p
}

// presetDirs makes a preset's directories under home (a runtime's cache:
// it must exist to be granted) and returns them.
func presetDirs(home string, dirs ...string) ([]string, error) {
	if home == "" {
		return nil, errors.New("the preset's cache is under the home directory, and the bridge's user has none")
	}
	var out []string
	for _, d := range dirs {
		p := filepath.Join(home, d)
		if err := os.MkdirAll(p, 0o700); err != nil {
			return nil, fmt.Errorf("cannot make the preset's directory %s: %w", p, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// netRule is one address the child may reach: an address prefix, and a
// port (0: any).
type netRule struct {
	prefix netip.Prefix
	port   uint16
}

func (r netRule) String() string {
	if r.port == 0 {
		return r.prefix.String()
	}
	return r.prefix.String() + " port " + strconv.Itoa(int(r.port))
}

// netRules are the addresses 'network:' lets s's child reach: loopback's,
// or its list's (a DNS name resolved now, at the child's start, and then
// the system's resolvers on port 53 too, for the child's own lookups).
func netRules(s *config.Sandbox) ([]netRule, error) {
	loopback := []netRule{{prefix: netip.MustParsePrefix("127.0.0.0/8")}, {prefix: netip.MustParsePrefix("::1/128")}}
	if s.Network == config.NetworkLoopback {
		return loopback, nil
	}
	rules := []netRule{}
	named := false
	for _, a := range s.Allow {
		host, portText, _ := net.SplitHostPort(a)
		port, _ := strconv.Atoi(portText)
		var addrs []netip.Addr
		if ip, err := netip.ParseAddr(host); err == nil {
			addrs = []netip.Addr{ip}
		} else if host == "localhost" {
			addrs = []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")}
		} else {
			named = true
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
			cancel()
			if err != nil {
				return nil, fmt.Errorf("cannot resolve %s to hold the child to it: %w", host, err)
			}
			addrs = ips
		}
		for _, ip := range addrs {
			ip = ip.Unmap()
			rules = append(rules, netRule{prefix: netip.PrefixFrom(ip, ip.BitLen()), port: uint16(port)})
		}
	}
	if named {
		for _, ns := range resolvers() {
			rules = append(rules, netRule{prefix: netip.PrefixFrom(ns, ns.BitLen()), port: 53})
		}
	}
	return rules, nil
}

// listPorts are the distinct ports of a list of host:port.
func listPorts(allow []string) []string {
	var out []string
	for _, a := range allow {
		if _, port, err := net.SplitHostPort(a); err == nil && !slices.Contains(out, port) {
			out = append(out, port)
		}
	}
	return out
}

// resolvers are the name servers /etc/resolv.conf lists.
func resolvers() []netip.Addr {
	if runtime.GOOS == "windows" {
		return nil
	}
	data, err := os.ReadFile("/etc/resolv.conf")
	if err != nil {
		return nil
	}
	var out []netip.Addr
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "nameserver" {
			if ip, err := netip.ParseAddr(f[1]); err == nil {
				out = append(out, ip.Unmap())
			}
		}
	}
	return out
}
