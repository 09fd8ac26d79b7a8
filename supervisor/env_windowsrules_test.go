package supervisor

import (
	"reflect"
	"testing"

	"github.com/stelae-bridge/stelae-bridge/config"
)

// TestWindowsEnvRules: on Windows, where variable names are one whatever
// their case, the bridge's settings and secrets are kept from children in
// any case they are written (the bridge reads stelae_auth_tokens as
// STELAE_AUTH_TOKENS: before, such a token reached the child), a
// destination's 'env: PATH' replaces the inherited Path rather than
// standing beside it, and 'base_env: minimal' keeps what Windows programs
// need (SystemRoot, PATHEXT, the user's folders), in the case Windows
// wrote them. (Run on every platform.)
func TestWindowsEnvRules(t *testing.T) {
	in := []string{"Path=C:\\Windows", "SystemRoot=C:\\Windows", "PATHEXT=.EXE;.CMD", "APPDATA=C:\\Users\\a\\AppData\\Roaming",
		"stelae_auth_tokens=secret", "Stelae_Listen=:1", "max_stdio_connections=3", "Audit_Log_Bodies=1", "HOMEPATH=\\Users\\a", "EDITOR=vim"}
	kept := windowsEnv.childEnviron(in, specVars)
	want := []string{"Path=C:\\Windows", "SystemRoot=C:\\Windows", "PATHEXT=.EXE;.CMD", "APPDATA=C:\\Users\\a\\AppData\\Roaming", "HOMEPATH=\\Users\\a", "EDITOR=vim"}
	if !reflect.DeepEqual(kept, want) {
		t.Errorf("childEnviron = %q\nwant %q", kept, want)
	}
	d := &config.Destination{Env: map[string]string{"PATH": "D:\\tools"}}
	if got, want := windowsEnv.childEnv(d, kept), []string{"SystemRoot=C:\\Windows", "PATHEXT=.EXE;.CMD", "APPDATA=C:\\Users\\a\\AppData\\Roaming", "HOMEPATH=\\Users\\a", "EDITOR=vim", "PATH=D:\\tools"}; !reflect.DeepEqual(got, want) {
		t.Errorf("childEnv with env: PATH = %q\nwant %q", got, want)
	}
	d = &config.Destination{BaseEnv: config.BaseEnvMinimal}
	if got, want := windowsEnv.childEnv(d, kept), []string{"Path=C:\\Windows", "SystemRoot=C:\\Windows", "PATHEXT=.EXE;.CMD", "APPDATA=C:\\Users\\a\\AppData\\Roaming", "HOMEPATH=\\Users\\a"}; !reflect.DeepEqual(got, want) {
		t.Errorf("childEnv with base_env: minimal = %q\nwant %q", got, want)
	}
}
