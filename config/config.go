package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"gopkg.in/yaml.v3"
)

// Config is the parsed destinations.yaml.
type Config struct {
	// Destinations by name; the name is also the URL path segment.
	Destinations map[string]*Destination
	// Names lists the destination names in file order.
	Names []string
	// Default names the destination served when a request names none;
	// empty when the file sets no 'default:'. It may name a profile
	// instead (DefaultProfile).
	Default string
	// DefaultProfile: Default names a profile, not a destination.
	DefaultProfile bool
	// Profiles by name ('profiles:'), in file order in ProfileNames: the
	// destinations each serves together at /p/{name}/mcp.
	Profiles     map[string]*Profile
	ProfileNames []string
	// Auth is the top-level 'auth:' block; nil when there is none. Every
	// destination without its own carries it too (Destination.Auth).
	Auth *Auth
	// Sandbox is the top-level 'sandbox:' block, every destination's
	// without its own (Destination.Sandbox); nil when there is none.
	Sandbox *Sandbox
	// Instances are the fleet's bridges ('instances:'), in file order in
	// InstanceNames (fleet.go); none for a lone bridge.
	Instances     map[string]*Instance
	InstanceNames []string
	// Instance is the instance this configuration was selected for
	// (ForInstance): then Destinations and Profiles are its own, Away says
	// who serves the others, and AwayDefault names the default's key
	// (a destination, or "p/" and a profile) when another instance serves
	// it.
	Instance    string
	Away        map[string]Elsewhere
	AwayDefault string
	// Warnings are what the file has that the bridge skipped ("line N:
	// warning: …"): keys of other clients in the 'mcpServers:' shape, a
	// disabled entry, a name served under a URL-safe one.
	Warnings []string
}

// Destination is one configured stdio MCP server.
type Destination struct {
	Name    string
	Command string
	Args    []string
	// Env holds extra environment variables for the child, already expanded.
	Env map[string]string
	// Cwd is the child's working directory; empty means the bridge's.
	Cwd string
	// Prestart starts the child when the bridge starts instead of on the
	// first initialize.
	Prestart bool
	// Tools hides some of the child's tools from clients; the zero value
	// hides none.
	Tools ToolFilter
	// BaseEnv is what the child's environment starts from before Env is
	// added ('base_env:'): BaseEnvInherit (the bridge's environment minus the
	// bridge's own variables) or BaseEnvMinimal (only PATH, HOME, USER,
	// LOGNAME, SHELL, LANG, LC_*, TZ, TMPDIR and TERM of it); empty means
	// inherit.
	BaseEnv string
	// Roots are the file-system roots the bridge answers roots/list with for
	// a shared child ('roots:'), each a file:// URI; nil when the file has no
	// 'roots:', empty when it lists none.
	Roots []Root
	// Isolation is IsolationShared (one child serves every session),
	// IsolationSession (one child per session) or IsolationUser (one child
	// per authenticated user) ('isolation:'); empty means shared.
	Isolation string
	// MaxUsers is how many users may have a child at once ('max_users:',
	// isolation: user); 0 when the file sets none (DefaultMaxUsers).
	MaxUsers int
	// UserIdle is how long a user's child stays with nothing to do
	// ('user_idle:', isolation: user); 0 when the file sets none.
	UserIdle time.Duration
	// Credentials are what each user supplies for their child
	// ('credentials:', isolation: user), in file order.
	Credentials []Credential
	// Sandbox is what the child may take ('sandbox:', sandbox.go): its
	// own block, else the top-level one; nil when neither is set.
	Sandbox *Sandbox
	// StartTimeout is how long a child may take to start and answer
	// initialize ('start_timeout:'); 0 when the file sets none, and the caller
	// applies its default.
	StartTimeout time.Duration
	// StderrLevel is the level the child's stderr lines are logged at
	// ('stderr_log_level:'): trace, debug, info, warn, error, or off (not
	// logged); empty means each line's own: warn when it reads like a
	// problem, else info.
	StderrLevel string
	// Auth is the OAuth protection of the destination: its own 'auth:'
	// block, else the top-level one; nil when neither is set.
	Auth *Auth
	// Interactive serves the clients' calls to a shared child one at a
	// time ('interactive: true'), so that every request and log line the
	// child sends is attributed to the call that caused it.
	Interactive bool
	// InteractiveTools, from 'interactive: [globs]', are the tools (and
	// prompts) whose calls run alone on the shared child (the ones that
	// ask their clients things); other calls run together, but not beside
	// one of them. Empty when 'interactive:' is a boolean or absent.
	InteractiveTools []string
	// Era is how the bridge learns which protocol the child speaks
	// ('era:'): EraAuto (or empty) asks it server/discover first; Era2025
	// does not ask; Era2026 requires 2026-07-28.
	Era string
	// Logs is what becomes of a child's log message that cannot be
	// attributed to one session ('logs:'): LogsAttributed, LogsFanout or
	// LogsDrop; empty means attributed.
	Logs string
	// CacheTTL and CacheScope are the caching hints MCP 2026-07-28 clients
	// get with list and read results and server/discover ('cache: {ttl,
	// scope}'): 0 and "private" (do not reuse) when the file sets none.
	CacheTTL   time.Duration
	CacheScope string
	// TaskAfter and TaskTTL shape the tasks the bridge keeps for MCP
	// 2026-07-28 clients ('tasks: {after, ttl}'): a call of a tool that
	// declares task support, from a client that declared the tasks
	// extension, becomes a task once it has run TaskAfter without an
	// answer; a task is kept TaskTTL from its creation. 0 takes the
	// bridge's defaults.
	TaskAfter time.Duration
	TaskTTL   time.Duration
	// InputWait is how long a MCP 2026-07-28 call that asked its client
	// for input (input_required) is kept for the client's retry
	// ('input_wait:'); 0 takes the bridge's default. Meanwhile the call is
	// in flight on the child: it keeps its turn on an interactive
	// destination, and requests the child sends are not another user's.
	InputWait time.Duration
	// SessionTTL is how long a session of this destination may stay idle
	// before it expires ('session_ttl:'); 0 takes the bridge's: its
	// -session-ttl, and for 'isolation: session', where every idle
	// session holds a child, at most IsolatedSessionTTL.
	SessionTTL time.Duration
	// Prefix is what its tool and prompt names start with in a profile
	// ('prefix:'; "" for none); nil: its name (ToolPrefix).
	Prefix *string
	// Line is where the destination is declared in the file.
	Line int
}

// Root is one file-system root of a destination, as MCP's roots/list
// describes it.
type Root struct {
	// URI is a file:// URI: written so in the file, or made from an absolute
	// path (cleaned and escaped).
	URI string
	// Name is the root's display name; by default the last element of its
	// path.
	Name string
}

// IsolatedSessionTTL is the longest a session of an 'isolation: session'
// destination stays idle unless its 'session_ttl:' says otherwise: each
// idle session holds a child (clients such as claude.ai never DELETE; ten
// idle npx children held 2 GiB for the default 30 minutes).
const IsolatedSessionTTL = 5 * time.Minute

// Values of Destination.BaseEnv: what a child's environment starts from.
const (
	// BaseEnvInherit starts from the bridge's environment minus the bridge's
	// own variables; the default.
	BaseEnvInherit = "inherit"
	// BaseEnvMinimal starts from only PATH, HOME, USER, LOGNAME, SHELL, LANG,
	// LC_*, TZ, TMPDIR and TERM of the bridge's environment.
	BaseEnvMinimal = "minimal"
)

// Values of Destination.Era.
const (
	EraAuto = "auto"
	Era2025 = "2025"
	Era2026 = "2026"
)

// Values of Destination.Logs.
const (
	LogsAttributed = "attributed"
	LogsFanout     = "fanout"
	LogsDrop       = "drop"
)

// Values of Destination.CacheScope.
const (
	CachePrivate = "private"
	CachePublic  = "public"
)

// Values of Destination.Isolation.
const (
	// IsolationShared runs one child for every session of the destination.
	IsolationShared = "shared"
	// IsolationSession runs one child per session.
	IsolationSession = "session"
	// IsolationUser runs one child per authenticated user, shared by
	// their sessions and stateless requests.
	IsolationUser = "user"
)

// DefaultMaxUsers is a user-isolated destination's 'max_users:' when the
// file sets none.
const DefaultMaxUsers = 20

// stderrLevels are the values of 'stderr_log_level:'.
var stderrLevels = []string{"trace", "debug", "info", "warn", "error", "off"}

// StderrLevels are the values 'stderr_log_level:' takes.
func StderrLevels() []string { return append([]string(nil), stderrLevels...) }

// ToolFilter selects the tools of a destination that clients may see and
// call. At most one of Allow and Deny is set; both hold path.Match globs
// that were validated when the file was parsed ('*' does not match '/').
type ToolFilter struct {
	// Allow, when set, lists the only tools shown.
	Allow []string
	// Deny, when set, lists the tools hidden.
	Deny []string
}

// Empty reports whether the filter hides nothing (no 'tools:' key, or an
// empty deny list); callers can then skip filtering altogether.
func (f ToolFilter) Empty() bool { return f.Allow == nil && len(f.Deny) == 0 }

// Allows reports whether the tool called name passes the filter: every tool
// when the filter is empty, only the matching ones with an allow list, all but
// the matching ones with a deny list. It fails closed: an allow list matches
// names exactly, a deny list also matches them in any letter case, so a
// server that looks tools up without regard to case cannot be handed a
// denied one as "HIDDEN".
func (f ToolFilter) Allows(name string) bool {
	if f.Allow != nil {
		return matchAny(f.Allow, name)
	}
	return !matchAnyFold(f.Deny, name)
}

// matchAnyFold reports whether a glob matches name as it is or in any
// letter case (for lists that must fail closed: a server that looks names
// up without regard to case must not be handed a listed one as "LISTED").
func matchAnyFold(globs []string, name string) bool {
	if matchAny(globs, name) {
		return true
	}
	folded := FoldCase(name)
	for _, g := range globs {
		if ok, _ := path.Match(FoldCase(g), folded); ok {
			return true
		}
	}
	return false
}

// FoldCase maps every letter of s to one representative of its Unicode
// case-folding orbit (the smallest), so that two strings that
// strings.EqualFold calls equal fold to the same string ("ſ", "S" and "s"
// all become "S").
func FoldCase(s string) string {
	return strings.Map(func(r rune) rune {
		min := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if f < min {
				min = f
			}
		}
		return min
	}, s)
}

func matchAny(globs []string, name string) bool {
	for _, g := range globs {
		if ok, _ := path.Match(g, name); ok {
			return true
		}
	}
	return false
}

// fileDestination is the YAML shape of one destination. The yaml.Node
// fields are checked by hand so that every problem carries its line.
type fileDestination struct {
	Command        string            `yaml:"command"`
	Args           []string          `yaml:"args"`
	Env            map[string]string `yaml:"env"`
	Cwd            string            `yaml:"cwd"`
	Prestart       bool              `yaml:"prestart"`
	Tools          yaml.Node         `yaml:"tools"`
	BaseEnv        yaml.Node         `yaml:"base_env"`
	Roots          yaml.Node         `yaml:"roots"`
	Isolation      yaml.Node         `yaml:"isolation"`
	StartTimeout   yaml.Node         `yaml:"start_timeout"`
	StderrLogLevel yaml.Node         `yaml:"stderr_log_level"`
	Auth           yaml.Node         `yaml:"auth"`
	Interactive    yaml.Node         `yaml:"interactive"`
	Logs           yaml.Node         `yaml:"logs"`
	Era            yaml.Node         `yaml:"era"`
	Cache          yaml.Node         `yaml:"cache"`
	Tasks          yaml.Node         `yaml:"tasks"`
	InputWait      yaml.Node         `yaml:"input_wait"`
	SessionTTL     yaml.Node         `yaml:"session_ttl"`
	Prefix         yaml.Node         `yaml:"prefix"`
	MaxUsers       yaml.Node         `yaml:"max_users"`
	UserIdle       yaml.Node         `yaml:"user_idle"`
	Credentials    yaml.Node         `yaml:"credentials"`
	Sandbox        yaml.Node         `yaml:"sandbox"`
	// Type is accepted in 'mcpServers:' entries only, and only as "stdio".
	Type yaml.Node `yaml:"type"`
}

// destinationKeys are the keys a destination may have, in the order the
// messages list them.
var destinationKeys = []string{"command", "args", "env", "cwd", "prestart", "tools", "base_env", "roots", "isolation", "start_timeout", "stderr_log_level", "auth", "interactive", "logs", "cache", "tasks", "input_wait", "session_ttl", "prefix", "max_users", "user_idle", "credentials", "sandbox", "era"}

// topKeys are the keys of the file's top level.
var topKeys = []string{"destinations", "mcpServers", "default", "auth", "sandbox", "profiles", "instances"}

// mcpServerKeys are the keys of an 'mcpServers:' entry: a destination's, and
// 'type: stdio' as Claude Desktop, Claude Code and Cursor write it.
var mcpServerKeys = append(slices.Clone(destinationKeys), "type")

// remoteTypes are 'type:' values of MCP client configurations that name a
// server reached over the network rather than started over stdio.
var remoteTypes = []string{"http", "sse", "streamable-http", "streamableHttp", "streamable_http", "ws", "websocket"}

// remoteKeys are keys that give a remote server's address.
var remoteKeys = []string{"url", "serverUrl"}

// Error lists every problem found in a configuration file.
type Error struct {
	File     string
	Problems []string
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d problem(s) in the configuration:", e.File, len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n  ")
		b.WriteString(p)
	}
	return b.String()
}

// sortByLine orders the problems by their line number, keeping the order of
// problems on one line; problems without a line come first.
func (e *Error) sortByLine() {
	line := func(p string) int {
		if m := problemLine.FindStringSubmatch(p); m != nil {
			n, _ := strconv.Atoi(m[1])
			return n
		}
		return 0
	}
	sort.SliceStable(e.Problems, func(i, j int) bool { return line(e.Problems[i]) < line(e.Problems[j]) })
}

// Load reads and validates a destinations file. Variables written as
// ${VAR} are expanded from lookup (os.LookupEnv when nil). reserved are the
// names no destination may take (any letter case): the routes the bridge
// serves itself, which it hands in.
func Load(path string, lookup func(string) (string, bool), reserved ...string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read the destinations file: %w (pass -config FILE to name another)", err)
	}
	return Parse(path, data, lookup, reserved...)
}

// validName is the set of destination names that are safe URL path segments
// and cannot be confused with the bridge's own routes.
var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// Parse parses and validates the contents of a destinations file; name
// is used in messages only. The file declares its destinations under
// 'destinations:', or under 'mcpServers:' in the shape Claude Desktop, Claude
// Code and Cursor use (JSON is YAML too).
func Parse(name string, data []byte, lookup func(string) (string, bool), reserved ...string) (*Config, error) {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	taken := map[string]bool{}
	for _, r := range reserved {
		taken[strings.ToLower(r)] = true
	}
	cerr := &Error{File: name}
	problem := func(line int, format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		if line > 0 {
			msg = fmt.Sprintf("line %d: %s", line, msg)
		}
		cerr.Problems = append(cerr.Problems, msg)
	}

	if json.Valid(data) {
		// Valid JSON holds tabs only as white space (a tab in a string is
		// written \t), which YAML refuses for indentation: make them spaces.
		data = bytes.ReplaceAll(data, []byte("\t"), []byte(" "))
	}
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			problem(0, "the file is empty; declare at least one destination under 'destinations:' (or 'mcpServers:')")
			return nil, cerr
		}
		problem(0, "%s", strings.TrimPrefix(err.Error(), "yaml: "))
		return nil, cerr
	}
	doc := &root
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		doc = doc.Content[0]
	}
	if doc.Kind != yaml.MappingNode {
		problem(doc.Line, "the top level must be a mapping with a 'destinations:' (or 'mcpServers:') key")
		return nil, cerr
	}

	cfg := &Config{Destinations: map[string]*Destination{}}
	// sections are the top-level mappings of destinations: 'destinations:'
	// or 'mcpServers:' (both is a problem, but both are checked).
	type section struct {
		key      string
		keyLine  int
		node     *yaml.Node
		mcpShape bool
	}
	var sections []section
	var def, profiles, instances *yaml.Node
	// A file in the 'mcpServers:' shape was written for another client:
	// what the bridge does not use there is skipped with a warning.
	mcpFile := false
	for i := 0; i+1 < len(doc.Content); i += 2 {
		mcpFile = mcpFile || doc.Content[i].Value == "mcpServers"
	}
	warn := func(w string) { cfg.Warnings = append(cfg.Warnings, w) }
	for i := 0; i+1 < len(doc.Content); i += 2 {
		k, v := doc.Content[i], doc.Content[i+1]
		switch k.Value {
		case "destinations", "mcpServers":
			sections = append(sections, section{key: k.Value, keyLine: k.Line, node: v, mcpShape: k.Value == "mcpServers"})
		case "default":
			def = v
		case "profiles":
			profiles = v
		case "instances":
			instances = v
		case "auth":
			a, probs := parseAuth(v, "'auth'", topExpander(lookup, problem))
			for _, p := range probs {
				problem(0, "%s", p)
			}
			cfg.Auth = a
		case "sandbox":
			cfg.Sandbox = parseSandbox(v, problem)
		case "defaults", "globalShortcut", "preferences", "servers", "inputs", "theme":
			if mcpFile {
				warn(fmt.Sprintf("line %d: warning: %q (another client's setting) is not used by the bridge: ignored", k.Line, k.Value))
				continue
			}
			fallthrough
		default:
			if mcpFile && suggest(k.Value, topKeys) == "" {
				warn(fmt.Sprintf("line %d: warning: unknown key %q at the top level ignored", k.Line, k.Value))
				continue
			}
			problem(k.Line, "unknown key %q at the top level%s (known: %s)", k.Value, didYouMean(k.Value, topKeys), strings.Join(topKeys, ", "))
		}
	}
	if len(sections) == 0 {
		problem(doc.Line, "'destinations' must be a mapping of at least one name to {%s} (or, in the Claude Desktop / Cursor shape, 'mcpServers')", strings.Join(destinationKeys, ", "))
		return nil, cerr
	}
	if len(sections) > 1 {
		problem(sections[1].keyLine, "'destinations' and 'mcpServers' are both set; keep one (move every server under it): 'mcpServers' is the Claude Desktop / Cursor shape, 'destinations' the bridge's own")
	}
	usable := false
	for _, sec := range sections {
		if sec.node.Kind != yaml.MappingNode || len(sec.node.Content) == 0 {
			problem(sec.node.Line, "'%s' must be a mapping of at least one name to {%s}", sec.key, strings.Join(destinationKeys, ", "))
			continue
		}
		usable = true
		for i := 0; i+1 < len(sec.node.Content); i += 2 {
			k, v := sec.node.Content[i], sec.node.Content[i+1]
			if d := parseDestination(k, v, sec.mcpShape, cfg, lookup, taken, problem, warn); d != nil {
				cfg.Destinations[d.Name] = d
				cfg.Names = append(cfg.Names, d.Name)
			}
		}
	}
	if !usable {
		return nil, cerr
	}
	if len(cfg.Names) == 0 && len(cerr.Problems) == 0 {
		problem(0, "no destination is served: every entry is disabled ('disabled: true') or skipped (see the warnings)")
	}
	if profiles != nil {
		parseProfiles(profiles, cfg, problem)
	}
	if instances != nil {
		parseInstances(instances, cfg, problem)
	}
	if def != nil {
		declared := map[string]bool{}
		for _, sec := range sections {
			for i := 0; sec.node.Kind == yaml.MappingNode && i+1 < len(sec.node.Content); i += 2 {
				declared[sec.node.Content[i].Value] = true
			}
		}
		for _, d := range cfg.Destinations {
			declared[d.Name] = true // as served (a name made URL-safe)
		}
		switch {
		case def.Kind != yaml.ScalarNode || def.Tag == "!!null" || def.Value == "":
			problem(def.Line, "'default' must name one of the destinations (%s)", strings.Join(cfg.Names, ", "))
		case declared[def.Value] && cfg.Profiles[def.Value] != nil:
			problem(def.Line, "'default' is %q, which names both a destination and a profile; rename one", def.Value)
		case cfg.Profiles[def.Value] != nil:
			cfg.Default, cfg.DefaultProfile = def.Value, true
		case !declared[def.Value]:
			problem(def.Line, "'default' is %q, which names no destination%s%s (declared: %s)", def.Value, profileNote(cfg), didYouMean(def.Value, append(slices.Clone(cfg.Names), cfg.ProfileNames...)), strings.Join(cfg.Names, ", "))
		default:
			cfg.Default = def.Value
		}
	}
	for _, d := range cfg.Destinations {
		if d.Auth == nil {
			d.Auth = cfg.Auth
		}
		if d.Sandbox == nil {
			d.Sandbox = cfg.Sandbox
		}
	}
	if len(cerr.Problems) > 0 {
		cerr.sortByLine()
		return nil, cerr
	}
	return cfg, nil
}

// topExpander expands ${VAR} in top-level values, reporting unset ones.
func topExpander(lookup func(string) (string, bool), problem func(int, string, ...any)) func(line int, field, s string) string {
	return func(line int, field, s string) string {
		out, missing := expandVars(s, lookup)
		for _, m := range missing {
			problem(line, "%s uses ${%s}, which is not set in the bridge's environment", field, m)
		}
		return out
	}
}

// parseDestination checks one entry, name k and body v, reporting every
// problem; it returns the destination, or nil when the name cannot be used at
// all (declared twice) or the body is not a usable mapping. mcpShape marks an
// 'mcpServers:' entry.
func parseDestination(k, v *yaml.Node, mcpShape bool, cfg *Config, lookup func(string) (string, bool), reserved map[string]bool, problem func(int, string, ...any), warn func(string)) *Destination {
	name := k.Value
	if mcpShape && !validName.MatchString(name) {
		// Another client's name ("My Notes"): served under a URL-safe one.
		if safe := servedName(name); safe != "" && !reserved[safe] && cfg.Destinations[safe] == nil {
			warn(fmt.Sprintf("line %d: warning: mcpServers entry %q is served as %q (/%s/mcp): a name must be a URL path segment", k.Line, name, safe, safe))
			name = safe
		}
	}
	switch {
	case !validName.MatchString(name):
		problem(k.Line, "destination name %q is not a safe URL path segment (use letters, digits, '.', '_' or '-', starting with a letter or digit, at most 64 characters)", name)
	case reserved[strings.ToLower(name)]:
		problem(k.Line, "destination name %q is reserved by the bridge; choose another", name)
	case cfg.Destinations[name] != nil:
		problem(k.Line, "destination %q is declared twice (first at line %d)", name, cfg.Destinations[name].Line)
		return nil
	}
	// sub reports a problem found inside the destination ("line N: ..."),
	// naming the destination after the line.
	sub := func(p string) {
		if m := problemLine.FindStringSubmatch(p); m != nil {
			n, _ := strconv.Atoi(m[1])
			problem(n, "destination %q: %s", name, p[len(m[0]):])
			return
		}
		problem(0, "destination %q: %s", name, p)
	}
	keys := destinationKeys
	if mcpShape {
		if remote, line, why := remoteEntry(v); remote {
			problem(line, "mcpServers entry %q is a remote server (%s); the bridge serves only stdio servers (command, args), and this one is already reachable over the network: point the client at its URL directly, and remove it from this file", name, why)
			return nil
		}
		keys = mcpServerKeys
		kept, warnings, skip := lenientEntry(k.Value, v)
		for _, w := range warnings {
			warn(w)
		}
		if skip {
			return nil
		}
		v = kept
	}
	var fd fileDestination
	errs := decodeStrict(v, &fd, keys)
	for _, p := range errs {
		sub(p)
	}
	if v.Kind != yaml.MappingNode {
		return nil
	}
	d := &Destination{Name: name, Line: k.Line, Env: map[string]string{}}
	expandAt := func(line int, field, s string) string {
		out, missing := expandVars(s, lookup)
		for _, m := range missing {
			problem(line, "destination %q: %s uses ${%s}, which is not set in the environment; export it or remove the reference", name, field, m)
		}
		return out
	}
	expand := func(field, s string) string { return expandAt(v.Line, field, s) }
	d.Command = expand("command", strings.TrimSpace(fd.Command))
	if d.Command == "" && !misspelt(v, keys, "command") {
		problem(v.Line, "destination %q has no command; set 'command:' to the program that speaks MCP on stdio", name)
	}
	for j, a := range fd.Args {
		d.Args = append(d.Args, expand(fmt.Sprintf("args[%d]", j), a))
	}
	envKeys := make([]string, 0, len(fd.Env))
	for key := range fd.Env {
		envKeys = append(envKeys, key)
	}
	sort.Strings(envKeys)
	for _, key := range envKeys {
		if key == "" || strings.ContainsAny(key, "=\x00") {
			problem(v.Line, "destination %q: environment variable name %q is invalid", name, key)
			continue
		}
		d.Env[key] = expand("env."+key, fd.Env[key])
	}
	d.Prestart = fd.Prestart
	if fd.Auth.Kind != 0 {
		a, probs := parseAuth(&fd.Auth, "'auth'", expandAt)
		for _, p := range probs {
			sub(p)
		}
		d.Auth = a
	}
	if fd.Tools.Kind != 0 {
		f, probs := parseTools(&fd.Tools)
		for _, p := range probs {
			sub(p)
		}
		d.Tools = f
	}
	d.Cwd = expand("cwd", fd.Cwd)
	if d.Cwd != "" {
		if st, err := os.Stat(d.Cwd); err != nil || !st.IsDir() {
			problem(v.Line, "destination %q: cwd %q is not a directory", name, d.Cwd)
		}
	}
	oneOf := func(n *yaml.Node, key string, allowed []string, meaning string) string {
		if n.Kind == 0 {
			return ""
		}
		if n.Kind != yaml.ScalarNode || !slices.Contains(allowed, n.Value) {
			problem(n.Line, "destination %q: '%s' must be %s (%s), not %s", name, key, orList(allowed), meaning, nodeText(n))
			return ""
		}
		return n.Value
	}
	d.BaseEnv = oneOf(&fd.BaseEnv, "base_env", []string{BaseEnvInherit, BaseEnvMinimal},
		"inherit: the bridge's environment without its own settings; minimal: only PATH, HOME, USER, LOGNAME, SHELL, LANG, LC_*, TZ, TMPDIR, TERM")
	d.Isolation = oneOf(&fd.Isolation, "isolation", []string{IsolationShared, IsolationSession, IsolationUser},
		"shared: one child for every session; session: one child per session; user: one child per authenticated user")
	if d.Isolation == IsolationSession && d.Prestart {
		problem(fd.Isolation.Line, "destination %q: 'prestart' cannot be used with 'isolation: session': each session starts its own child with its initialize; remove one of them", name)
	}
	if d.Isolation == IsolationUser && d.Prestart {
		problem(fd.Isolation.Line, "destination %q: 'prestart' cannot be used with 'isolation: user': each user's child starts with their first call; remove one of them", name)
	}
	for _, k := range []*yaml.Node{&fd.MaxUsers, &fd.UserIdle} {
		if k.Kind != 0 && d.Isolation != IsolationUser {
			problem(k.Line, "destination %q: 'max_users' and 'user_idle' apply to 'isolation: user' only", name)
		}
	}
	if n := &fd.MaxUsers; n.Kind != 0 {
		if v, err := strconv.Atoi(n.Value); n.Kind != yaml.ScalarNode || err != nil || v < 1 {
			problem(n.Line, "destination %q: 'max_users' must be a whole number of users, 1 or more, not %s", name, nodeText(n))
		} else {
			d.MaxUsers = v
		}
	}
	d.UserIdle = positiveDuration(&fd.UserIdle, "user_idle", "5m or 30m", func(line int, format string, args ...any) {
		problem(line, "destination %q: "+format, append([]any{name}, args...)...)
	})
	if n := &fd.Credentials; n.Kind != 0 {
		if d.Isolation != IsolationUser {
			problem(n.Line, "destination %q: 'credentials' are each user's own, so they need 'isolation: user' (a child per user); add it, or set the variables in 'env:' for everyone", name)
		}
		d.Credentials = parseCredentials(n, fd.Env, func(line int, format string, args ...any) {
			problem(line, "destination %q: "+format, append([]any{name}, args...)...)
		})
	}
	if n := &fd.Sandbox; n.Kind != 0 {
		d.Sandbox = parseSandbox(n, func(line int, format string, args ...any) {
			problem(line, "destination %q: "+format, append([]any{name}, args...)...)
		})
	}
	d.Era = oneOf(&fd.Era, "era", []string{EraAuto, Era2025, Era2026},
		"auto: ask the child server/discover first and speak MCP 2026-07-28 to it when it does, else the 2025 protocol; 2025: speak the 2025 protocol to it without asking (for a server that mishandles a method it does not know); 2026: speak 2026-07-28, and fail the start of a child that does not")
	d.Logs = oneOf(&fd.Logs, "logs", []string{LogsAttributed, LogsFanout, LogsDrop},
		"what becomes of a child's log line that cannot be attributed to one session: attributed gives it to the sole session, fanout to every session, drop to none")
	if n := &fd.Interactive; n.Kind != 0 {
		d.Interactive, d.InteractiveTools = parseInteractive(n, func(line int, format string, args ...any) {
			problem(line, "destination %q: "+format, append([]any{name}, args...)...)
		})
		if (d.Interactive || len(d.InteractiveTools) > 0) && d.Isolation == IsolationSession {
			problem(n.Line, "destination %q: 'interactive' arranges the calls of a shared child; with 'isolation: session' every session has its own child already: remove one of them", name)
		}
	}
	if fd.Cache.Kind != 0 {
		d.CacheTTL, d.CacheScope = parseCache(&fd.Cache, func(line int, format string, args ...any) {
			problem(line, "destination %q: "+format, append([]any{name}, args...)...)
		})
	}
	if fd.Tasks.Kind != 0 {
		d.TaskAfter, d.TaskTTL = parseTasks(&fd.Tasks, func(line int, format string, args ...any) {
			problem(line, "destination %q: "+format, append([]any{name}, args...)...)
		})
	}
	d.StderrLevel = oneOf(&fd.StderrLogLevel, "stderr_log_level", stderrLevels,
		"the level the child's stderr lines are logged at; off drops them")
	d.StartTimeout = positiveDuration(&fd.StartTimeout, "start_timeout", "90s or 5m", func(line int, format string, args ...any) {
		problem(line, "destination %q: "+format, append([]any{name}, args...)...)
	})
	d.InputWait = positiveDuration(&fd.InputWait, "input_wait", "30s or 2m", func(line int, format string, args ...any) {
		problem(line, "destination %q: "+format, append([]any{name}, args...)...)
	})
	d.SessionTTL = positiveDuration(&fd.SessionTTL, "session_ttl", "5m or 1h", func(line int, format string, args ...any) {
		problem(line, "destination %q: "+format, append([]any{name}, args...)...)
	})
	if fd.Prefix.Kind != 0 {
		prefix, why := parsePrefix(&fd.Prefix)
		if why != "" {
			sub(why)
		}
		d.Prefix = prefix
	}
	if fd.Roots.Kind != 0 {
		roots, probs := parseRoots(&fd.Roots, expandAt)
		for _, p := range probs {
			sub(p)
		}
		d.Roots = roots
	}
	if n := &fd.Type; n.Kind != 0 && (n.Kind != yaml.ScalarNode || n.Value != "stdio") {
		problem(n.Line, "destination %q: 'type' is %s; the bridge runs stdio servers, so write 'type: stdio' or leave it out", name, nodeText(n))
	}
	return d
}

// positiveDuration reads the duration key n (0 when absent), such as the
// examples say.
func positiveDuration(n *yaml.Node, key, examples string, problem func(line int, format string, args ...any)) time.Duration {
	if n.Kind == 0 {
		return 0
	}
	dur, err := time.ParseDuration(n.Value)
	switch {
	case n.Kind != yaml.ScalarNode || n.Tag == "!!null" || err != nil:
		hint := ""
		if _, nerr := strconv.ParseFloat(n.Value, 64); n.Kind == yaml.ScalarNode && nerr == nil {
			hint = " (a bare number has no unit)"
		}
		problem(n.Line, "'%s' must be a duration such as %s, not %s%s", key, examples, nodeText(n), hint)
	case dur <= 0:
		problem(n.Line, "'%s' must be positive (e.g. %s), not %s", key, examples, n.Value)
	default:
		return dur
	}
	return 0
}

// parseCache reads a destination's 'cache:' block (ttl: a duration, scope:
// private or public).
func parseCache(n *yaml.Node, problem func(line int, format string, args ...any)) (time.Duration, string) {
	if n.Kind != yaml.MappingNode {
		problem(n.Line, "'cache' must be a mapping with 'ttl' (a duration such as 30s) and 'scope' (private or public), not %s", nodeText(n))
		return 0, ""
	}
	var ttl time.Duration
	scope := CachePrivate
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		switch k.Value {
		case "ttl":
			dur, err := time.ParseDuration(v.Value)
			if v.Kind != yaml.ScalarNode || err != nil || dur < 0 {
				problem(v.Line, "'cache.ttl' must be a duration such as 30s or 5m (0 for do not reuse), not %s", nodeText(v))
				continue
			}
			ttl = dur
		case "scope":
			if v.Kind != yaml.ScalarNode || (v.Value != CachePrivate && v.Value != CachePublic) {
				problem(v.Line, "'cache.scope' must be private (a client may reuse the result for its own user) or public (anyone may, across users), not %s", nodeText(v))
				continue
			}
			scope = v.Value
		default:
			problem(k.Line, "'cache' has no key %q: it takes ttl and scope", k.Value)
		}
	}
	return ttl, scope
}

// parseTasks reads a destination's 'tasks:' block (after, ttl: positive
// durations).
func parseTasks(n *yaml.Node, problem func(line int, format string, args ...any)) (after, ttl time.Duration) {
	if n.Kind != yaml.MappingNode {
		problem(n.Line, "'tasks' must be a mapping with 'after' (how long a call runs before it becomes a task, such as 1s) and 'ttl' (how long a task is kept, such as 1h), not %s", nodeText(n))
		return 0, 0
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		var dst *time.Duration
		switch k.Value {
		case "after":
			dst = &after
		case "ttl":
			dst = &ttl
		default:
			problem(k.Line, "'tasks' has no key %q: it takes after and ttl", k.Value)
			continue
		}
		dur, err := time.ParseDuration(v.Value)
		if v.Kind != yaml.ScalarNode || err != nil || dur <= 0 {
			problem(v.Line, "'tasks.%s' must be a positive duration such as 500ms, 30s or 1h, not %s", k.Value, nodeText(v))
			continue
		}
		*dst = dur
	}
	return after, ttl
}

// problemLine matches the "line N: " that starts a problem.
var problemLine = regexp.MustCompile(`^line (\d+): `)

// remoteEntry reports whether the 'mcpServers:' entry v describes a remote
// server (a 'url:' or a network 'type:'), with the line and the reason.
func remoteEntry(v *yaml.Node) (bool, int, string) {
	if v.Kind != yaml.MappingNode {
		return false, 0, ""
	}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := v.Content[i], v.Content[i+1]
		switch {
		case slices.Contains(remoteKeys, k.Value):
			return true, k.Line, fmt.Sprintf("it has '%s:'", k.Value)
		case k.Value == "type" && val.Kind == yaml.ScalarNode && slices.Contains(remoteTypes, val.Value):
			return true, k.Line, fmt.Sprintf("type: %s", val.Value)
		}
	}
	return false, 0, ""
}

// parseRoots reads a destination's 'roots:' list. An entry is a string (an
// absolute path, or a file:// URI kept as written) or a mapping with 'path:'
// or 'uri:' and an optional 'name:'. ${VAR} expands in every one of them.
func parseRoots(node *yaml.Node, expand func(line int, field, s string) string) ([]Root, []string) {
	if node.Kind != yaml.SequenceNode {
		return nil, []string{fmt.Sprintf("line %d: 'roots' must be a list of absolute paths or file:// URIs (or {path: ..., name: ...} mappings)", node.Line)}
	}
	var problems []string
	bad := func(line int, format string, args ...any) {
		problems = append(problems, fmt.Sprintf("line %d: ", line)+fmt.Sprintf(format, args...))
	}
	roots := []Root{}
	firstLine := map[string]int{}
	for i, e := range node.Content {
		field := fmt.Sprintf("roots[%d]", i)
		var value, key, rootName string
		line := e.Line
		switch e.Kind {
		case yaml.ScalarNode:
			if e.Tag == "!!null" {
				bad(line, "%s is empty; write an absolute path or a file:// URI", field)
				continue
			}
			value = expand(line, field, e.Value)
		case yaml.MappingNode:
			ok := true
			var valueNode *yaml.Node
			for j := 0; j+1 < len(e.Content); j += 2 {
				k, v := e.Content[j], e.Content[j+1]
				switch k.Value {
				case "path", "uri", "name":
					if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
						bad(v.Line, "%s.%s must be a string", field, k.Value)
						ok = false
						continue
					}
					if k.Value == "name" {
						rootName = expand(v.Line, field+".name", v.Value)
						continue
					}
					if valueNode != nil {
						bad(k.Line, "%s has both 'path:' and 'uri:' (or one twice); give one", field)
						ok = false
						continue
					}
					valueNode, key = v, k.Value
				default:
					bad(k.Line, "unknown key %q in %s (known: path, uri, name)", k.Value, field)
					ok = false
				}
			}
			if !ok {
				continue
			}
			if valueNode == nil {
				bad(line, "%s has neither 'path:' nor 'uri:'; give one", field)
				continue
			}
			line = valueNode.Line
			value = expand(line, field+"."+key, valueNode.Value)
		default:
			bad(line, "%s must be an absolute path, a file:// URI, or a {path: ..., name: ...} mapping", field)
			continue
		}
		r, err := makeRoot(value, key)
		if err != nil {
			bad(line, "%s %v", field, err)
			continue
		}
		if rootName != "" {
			r.Name = rootName
		}
		if first, dup := firstLine[r.URI]; dup {
			bad(line, "%s %s is listed twice (first at line %d)", field, r.URI, first)
			continue
		}
		firstLine[r.URI] = line
		roots = append(roots, r)
	}
	if len(problems) > 0 {
		return nil, problems
	}
	return roots, nil
}

// uriScheme matches the scheme of an absolute URI.
var uriScheme = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*:`)

// makeRoot turns one 'roots:' value into a Root. key is "path" or "uri" when
// the value came from a mapping, "" for a plain string (either is accepted).
func makeRoot(value, key string) (Root, error) {
	switch {
	case value == "":
		return Root{}, fmt.Errorf("is empty; write an absolute path or a file:// URI")
	case key != "path" && uriScheme.MatchString(value):
		u, err := url.Parse(value)
		if err != nil || u.Scheme != "file" || !strings.HasPrefix(strings.ToLower(value), "file://") {
			return Root{}, fmt.Errorf("%q is not a file:// URI; roots are directories on this machine (an absolute path or file:///...)", value)
		}
		if u.Host != "" && u.Host != "localhost" {
			return Root{}, fmt.Errorf("%q names the host %q; a root is on this machine: write file:///path", value, u.Host)
		}
		if !strings.HasPrefix(u.Path, "/") {
			return Root{}, fmt.Errorf("%q has no absolute path; write file:///path", value)
		}
		return Root{URI: value, Name: path.Base(path.Clean(u.Path))}, nil
	case key == "uri":
		return Root{}, fmt.Errorf("%q is not a file:// URI (use 'path:' for a path)", value)
	case key == "path" && uriScheme.MatchString(value):
		return Root{}, fmt.Errorf("%q is a URI, not a path (use 'uri:' for a URI)", value)
	case !filepath.IsAbs(value):
		hint := ""
		if strings.HasPrefix(value, "~") {
			hint = " (~ is not expanded: write ${HOME}/...)"
		}
		return Root{}, fmt.Errorf("%q is a relative path%s; roots must be absolute paths or file:// URIs", value, hint)
	}
	clean := filepath.Clean(value)
	u := url.URL{Scheme: "file", Path: clean}
	return Root{URI: u.String(), Name: filepath.Base(clean)}, nil
}

// orList writes a, b or c.
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// nodeText shows a YAML value in a message.
func nodeText(n *yaml.Node) string {
	switch {
	case n.Kind == yaml.ScalarNode && n.Tag == "!!null":
		return "empty"
	case n.Kind == yaml.ScalarNode:
		return strconv.Quote(n.Value)
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	}
	return "not a plain value"
}

// parseInteractive reads a destination's 'interactive:': true or false, or
// a list of tool name globs (path.Match syntax), the tools whose calls run
// alone.
func parseInteractive(n *yaml.Node, problem func(line int, format string, args ...any)) (all bool, tools []string) {
	const want = "'interactive' must be true (every call runs alone), false, or a list of the tools that ask their clients things (names or globs: their calls run alone)"
	switch n.Kind {
	case yaml.ScalarNode:
		var b bool
		if n.Decode(&b) != nil || n.Tag != "!!bool" {
			problem(n.Line, "%s, not %s", want, nodeText(n))
		}
		return b, nil
	case yaml.SequenceNode:
		for _, g := range n.Content {
			if g.Kind != yaml.ScalarNode || g.Tag == "!!null" || g.Value == "" {
				problem(g.Line, "'interactive' entries must be tool names or globs (strings)")
				continue
			}
			if _, err := path.Match(g.Value, ""); err != nil {
				problem(g.Line, "'interactive' glob %q is invalid (path.Match syntax: * ? [a-z] \\x)", g.Value)
				continue
			}
			tools = append(tools, g.Value)
		}
		if len(n.Content) == 0 {
			problem(n.Line, "'interactive' is an empty list; write false, or list the tools that ask their clients things")
		}
		return false, tools
	}
	problem(n.Line, "%s", want)
	return false, nil
}

// RunsAlone reports whether a call of tool (or prompt) name runs alone on
// the shared child ('interactive:'): every call with 'interactive: true',
// the listed tools' and prompts' with a list. A listed glob also matches the name in any letter
// case, so a server that looks tools up without regard to case cannot be
// handed a listed tool that runs together.
func (d *Destination) RunsAlone(name string) bool {
	return d.Interactive || matchAnyFold(d.InteractiveTools, name)
}

// parseTools reads a destination's 'tools:' mapping: exactly one of 'allow:'
// and 'deny:', each a list of path.Match globs. Every problem carries its
// line number.
func parseTools(node *yaml.Node) (ToolFilter, []string) { return parseFilter(node, "tools", "tool") }

// parseFilter reads a 'tools:'-shaped mapping under key: exactly one of
// 'allow:' or 'deny:', a list of globs of noun names.
func parseFilter(node *yaml.Node, key, noun string) (ToolFilter, []string) {
	var f ToolFilter
	if node.Kind != yaml.MappingNode || len(node.Content) == 0 {
		return f, []string{fmt.Sprintf("line %d: '%s' must be a mapping with either 'allow:' or 'deny:', a list of %s name globs", node.Line, key, noun)}
	}
	var problems []string
	var allow, deny *yaml.Node
	for i := 0; i+1 < len(node.Content); i += 2 {
		k, v := node.Content[i], node.Content[i+1]
		switch k.Value {
		case "allow", "deny":
			if (k.Value == "allow" && allow != nil) || (k.Value == "deny" && deny != nil) {
				problems = append(problems, fmt.Sprintf("line %d: '%s.%s' is given twice", k.Line, key, k.Value))
				continue
			}
			if k.Value == "allow" {
				allow = v
			} else {
				deny = v
			}
		default:
			problems = append(problems, fmt.Sprintf("line %d: unknown key %q under '%s' (known: allow, deny)", k.Line, k.Value, key))
		}
	}
	if allow != nil && deny != nil {
		problems = append(problems, fmt.Sprintf("line %d: '%s' has both 'allow:' and 'deny:'; use one (allow lists the only %ss shown, deny the %ss hidden)", node.Line, key, noun, noun))
	}
	if len(problems) > 0 {
		return f, problems
	}
	which, list := "allow", allow
	if deny != nil {
		which, list = "deny", deny
	}
	if list.Kind != yaml.SequenceNode {
		return f, []string{fmt.Sprintf("line %d: '%s.%s' must be a list of %s name globs", list.Line, key, which, noun)}
	}
	globs := make([]string, 0, len(list.Content))
	for _, g := range list.Content {
		if g.Kind != yaml.ScalarNode || g.Tag == "!!null" {
			problems = append(problems, fmt.Sprintf("line %d: '%s.%s' entries must be %s name globs (strings)", g.Line, key, which, noun))
			continue
		}
		if g.Value == "" {
			problems = append(problems, fmt.Sprintf("line %d: '%s.%s' has an empty glob", g.Line, key, which))
			continue
		}
		if _, err := path.Match(g.Value, ""); err != nil {
			problems = append(problems, fmt.Sprintf("line %d: '%s.%s' glob %q is invalid (path.Match syntax: * ? [a-z] \\x)", g.Line, key, which, g.Value))
			continue
		}
		globs = append(globs, g.Value)
	}
	if which == "allow" && len(list.Content) == 0 {
		problems = append(problems, fmt.Sprintf("line %d: '%s.allow' is empty, which would hide every %s; write 'deny: [\"*\"]' to do that on purpose, or remove '%s:'", list.Line, key, noun, key))
	}
	if len(problems) > 0 {
		return ToolFilter{}, problems
	}
	if which == "allow" {
		f.Allow = globs
	} else {
		f.Deny = globs
	}
	return f, nil
}

// misspelt reports whether an unknown key of the mapping node looks like
// key (its "did you mean"): a problem that key's absence would add is
// already said.
func misspelt(node *yaml.Node, known []string, key string) bool {
	for i := 0; i+1 < len(node.Content); i += 2 {
		if k := node.Content[i].Value; !slices.Contains(known, k) && suggest(k, known) == key {
			return true
		}
	}
	return false
}

// decodeStrict decodes node into out, rejecting unknown keys. It returns every
// problem found, each with its line number.
func decodeStrict(node *yaml.Node, out *fileDestination, known []string) []string {
	if node.Kind != yaml.MappingNode {
		return []string{fmt.Sprintf("line %d: must be a mapping with at least 'command:'", node.Line)}
	}
	var problems []string
	// The known keys are decoded even beside an unknown one, so that
	// their own problems are reported in the same run (an unknown key
	// once hid every other problem of its entry).
	kept := *node
	kept.Content = nil
	for i := 0; i+1 < len(node.Content); i += 2 {
		k := node.Content[i]
		if !slices.Contains(known, k.Value) {
			problems = append(problems, fmt.Sprintf("line %d: unknown key %q%s (known: %s)", k.Line, k.Value, didYouMean(k.Value, known), strings.Join(known, ", ")))
			continue
		}
		kept.Content = append(kept.Content, k, node.Content[i+1])
	}
	if err := kept.Decode(out); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			return append(problems, te.Errors...)
		}
		return append(problems, fmt.Sprintf("line %d: %v", node.Line, err))
	}
	return problems
}

var varRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// expandVars replaces ${VAR} references with values from lookup and reports
// the names that are not set. A bare $VAR is left alone so shell snippets in
// args keep working.
func expandVars(s string, lookup func(string) (string, bool)) (string, []string) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var missing []string
	out := varRef.ReplaceAllStringFunc(s, func(ref string) string {
		name := ref[2 : len(ref)-1]
		v, ok := lookup(name)
		if !ok {
			missing = append(missing, name)
		}
		return v
	})
	return out, missing
}

// profileNote names the profiles, for a 'default:' that names neither.
func profileNote(cfg *Config) string {
	if len(cfg.ProfileNames) == 0 {
		return ""
	}
	return " or profile (" + strings.Join(cfg.ProfileNames, ", ") + ")"
}
