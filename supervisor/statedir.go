package supervisor

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// DefaultStateDir is where the bridge keeps its state when -state-dir is
// not given: the platform's place for a user's state (stateHome: Linux:
// $XDG_STATE_HOME/stelae-bridge, else ~/.local/state/stelae-bridge; macOS:
// ~/Library/Application Support/stelae-bridge; Windows:
// %LocalAppData%\stelae-bridge), else (no home) a directory of the user's
// in the temporary directory.
func DefaultStateDir(getenv func(string) string) (string, error) {
	if dir := stateHome(getenv); dir != "" {
		return filepath.Join(dir, "stelae-bridge"), nil
	}
	// No home (a bare service): the records matter only until the next
	// boot, so the temporary directory serves.
	name := "stelae-bridge"
	if uid := os.Getuid(); uid >= 0 { // -1 on Windows, whose temporary directory is the user's
		name += "-" + strconv.Itoa(uid)
	}
	return filepath.Join(os.TempDir(), name), nil
}

// prepareDir creates the state directory dir (0700) when missing and checks
// that the bridge can write in it.
func prepareDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("cannot create the state directory %s: %w (pass -state-dir DIR or set STELAE_STATE_DIR to a writable directory)", dir, err)
	}
	probe := filepath.Join(dir, ".probe")
	if err := os.WriteFile(probe, nil, 0o600); err != nil {
		return fmt.Errorf("cannot write in the state directory %s: %w (pass -state-dir DIR or set STELAE_STATE_DIR to a writable directory)", dir, err)
	}
	os.Remove(probe)
	return nil
}
