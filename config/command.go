package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ResolveCommand finds the program d runs, the way Start does: a command with
// a slash is taken as a path (relative to d.Cwd when it is relative); a bare
// name is looked up in the destination's own 'env: PATH' when it sets one,
// else in pathList (the bridge's PATH). It returns the program's path, or an
// error that says where it looked and what to do.
func (d *Destination) ResolveCommand(pathList string) (string, error) {
	if strings.Contains(d.Command, "/") {
		p := d.Command
		if !filepath.IsAbs(p) && d.Cwd != "" {
			p = filepath.Join(d.Cwd, p)
		}
		if err := executable(p); err != nil {
			where := "relative to the bridge's working directory"
			if filepath.IsAbs(d.Command) {
				where = "an absolute path"
			} else if d.Cwd != "" {
				where = fmt.Sprintf("relative to cwd %s", d.Cwd)
			}
			return "", fmt.Errorf("command %q (%s) %v: fix 'command:' or install the program there", d.Command, where, err)
		}
		return p, nil
	}
	which := "the bridge's PATH"
	if p, ok := d.Env["PATH"]; ok {
		pathList, which = p, "the destination's 'env: PATH'"
	}
	for _, dir := range filepath.SplitList(pathList) {
		// Like exec.LookPath, never run a program found through a relative
		// PATH entry (the current directory).
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		if p := filepath.Join(dir, d.Command); executable(p) == nil {
			return p, nil
		}
	}
	shown := pathList
	if shown == "" {
		shown = "empty"
	}
	return "", fmt.Errorf("command %q is not found on %s (%s): install it, set 'command:' to its absolute path, or add its directory to PATH", d.Command, which, shown)
}

// executable reports why p cannot be run, or nil.
func executable(p string) error {
	st, err := os.Stat(p)
	switch {
	case err != nil:
		return fmt.Errorf("does not exist")
	case st.IsDir():
		return fmt.Errorf("is a directory")
	case st.Mode()&0o111 == 0:
		return fmt.Errorf("is not executable (chmod +x it)")
	}
	return nil
}
