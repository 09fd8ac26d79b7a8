package supervisor

import (
	"github.com/stelae-bridge/stelae-bridge/config"
	"os/exec"
	"slices"
	"sort"
	"strings"
)

// BridgeVarPrefix starts the name of every environment variable the bridge
// reads for its own settings, except the two in specVars. Children never see
// such a variable unless their destination's 'env:' sets it.
const BridgeVarPrefix = "STELAE_"

// OTelVarPrefix starts the OpenTelemetry variables that configure the
// bridge's own tracing (its exporter's headers may carry a collector's
// credentials): children do not inherit them either; a child that traces
// gets its own in its destination's 'env:'.
const OTelVarPrefix = "OTEL_"

// specVars are the variables the bridge reads whose names the project's
// specification fixes, so they cannot carry BridgeVarPrefix. Start strips them
// even when ProcessOptions.Environ is nil.
var specVars = []string{"MAX_STDIO_CONNECTIONS", "AUDIT_LOG_BODIES"}

// envRules are how a platform names environment variables (env_unix.go
// and env_windows.go hold platformEnv; windowsEnv, in env_windowsrules.go,
// is Windows's, here for every platform so that its test runs everywhere).
type envRules struct {
	// key is a variable's name as the platform compares names: the name
	// on Unix, its upper case on Windows (where PATH and Path, STELAE_X
	// and stelae_x, are one variable).
	key func(string) string
	// minimal are the names (keys) 'base_env: minimal' keeps of the
	// bridge's environment, and minimalPrefixes the prefixes.
	minimal         []string
	minimalPrefixes []string
}

// ChildEnviron returns environ (KEY=VALUE entries, as from os.Environ)
// without the bridge's own variables: every STELAE_* variable, whether or not
// the bridge reads it today, and every name in bridgeVars. The result is a
// new slice; environ is not modified.
func ChildEnviron(environ []string, bridgeVars []string) []string {
	return platformEnv.childEnviron(environ, bridgeVars)
}

func (r envRules) childEnviron(environ []string, bridgeVars []string) []string {
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		key := r.key(name)
		if strings.HasPrefix(key, BridgeVarPrefix) || strings.HasPrefix(key, OTelVarPrefix) || slices.ContainsFunc(bridgeVars, func(v string) bool { return r.key(v) == key }) {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// minimalEnviron keeps only the entries of environ that r.minimal names,
// and those with one of r.minimalPrefixes.
func (r envRules) minimalEnviron(environ []string) []string {
	var out []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		key := r.key(name)
		if slices.Contains(r.minimal, key) || slices.ContainsFunc(r.minimalPrefixes, func(p string) bool { return strings.HasPrefix(key, p) }) {
			out = append(out, kv)
		}
	}
	return out
}

// childEnv is the complete environment of d's child: base (the bridge's
// environment already stripped of its own variables), reduced to the minimal
// set when d asks for it, then d's 'env:' entries, which win over inherited
// ones of the same name.
func childEnv(d *config.Destination, base []string) []string { return platformEnv.childEnv(d, base) }

func (r envRules) childEnv(d *config.Destination, base []string) []string {
	if d.BaseEnv == config.BaseEnvMinimal {
		base = r.minimalEnviron(base)
	}
	set := make(map[string]bool, len(d.Env))
	for k := range d.Env {
		set[r.key(k)] = true
	}
	env := make([]string, 0, len(base)+len(d.Env))
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		if !set[r.key(name)] {
			env = append(env, kv)
		}
	}
	keys := make([]string, 0, len(d.Env))
	for k := range d.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		env = append(env, k+"="+d.Env[k])
	}
	return env
}

// command builds the exec.Cmd for d. A bare command name is looked up in the
// destination's own 'env: PATH' when it sets one (the PATH the child will
// have), else in the bridge's PATH by exec itself; argv[0] stays as written
// in the file.
func command(d *config.Destination) (*exec.Cmd, error) {
	if _, ok := d.Env["PATH"]; ok && !config.CommandIsPath(d.Command) {
		path, err := d.ResolveCommand("")
		if err != nil {
			return nil, err
		}
		return &exec.Cmd{Path: path, Args: append([]string{d.Command}, d.Args...)}, nil
	}
	return exec.Command(d.Command, d.Args...), nil
}
