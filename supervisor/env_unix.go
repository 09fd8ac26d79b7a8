//go:build unix

package supervisor

// minimalVars are what 'base_env: minimal' keeps of the bridge's environment,
// besides every LC_* variable: what a program needs to find other programs,
// its home and temporary directory, its locale and its time zone.
var minimalVars = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "TZ", "TMPDIR", "TERM"}

// platformEnv: names are compared as written.
var platformEnv = envRules{key: func(name string) string { return name }, minimal: minimalVars, minimalPrefixes: []string{"LC_"}}
