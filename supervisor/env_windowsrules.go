package supervisor

import "strings"

// windowsEnv: Windows compares variable names without regard to case, so
// stelae_auth_tokens is the bridge's STELAE_AUTH_TOKENS (the bridge reads it
// so, and so it is kept from children) and a destination's 'env: PATH'
// replaces the inherited Path. 'base_env: minimal' keeps what Windows
// programs need to find programs and libraries (Path, PATHEXT, SystemRoot,
// ComSpec), the user's folders and temporary directory, and the machine's
// description that runtimes such as Node.js read.
var windowsEnv = envRules{key: strings.ToUpper, minimal: []string{
	"PATH", "PATHEXT", "SYSTEMROOT", "SYSTEMDRIVE", "WINDIR", "COMSPEC",
	"TEMP", "TMP", "USERPROFILE", "HOMEDRIVE", "HOMEPATH", "APPDATA", "LOCALAPPDATA", "PROGRAMDATA",
	"PROGRAMFILES", "PROGRAMFILES(X86)", "PROGRAMW6432", "COMMONPROGRAMFILES", "COMMONPROGRAMFILES(X86)", "COMMONPROGRAMW6432",
	"USERNAME", "USERDOMAIN", "COMPUTERNAME", "OS", "PROCESSOR_ARCHITECTURE", "NUMBER_OF_PROCESSORS", "TZ", "LANG",
}}
