package supervisor

import "path/filepath"

// Windows keeps no process records (records_windows.go) and runs no reaper,
// so of the platform look-ups (records.go) it has only the state's place.

// stateHome is %LocalAppData% (the user's, not roaming: the records and
// stores describe this machine).
func stateHome(getenv func(string) string) string {
	if dir := getenv("LOCALAPPDATA"); dir != "" && filepath.IsAbs(dir) {
		return dir
	}
	return ""
}
