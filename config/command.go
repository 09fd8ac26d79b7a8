package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ResolveCommand finds the program d runs, the way Start does: a command with
// a path separator is taken as a path (relative to d.Cwd when it is
// relative); a bare name is looked up in the destination's own 'env: PATH'
// when it sets one, else in pathList (the bridge's PATH). On Windows a name
// without an extension is found with the extensions of PATHEXT, as Windows
// finds it (npx is npx.cmd). It returns the program's path, or an error that
// says where it looked and what to do.
func (d *Destination) ResolveCommand(pathList string) (string, error) {
	return platformCommands.resolve(d, pathList)
}

// CommandIsPath reports whether command names a path (it has a path
// separator) rather than a program to look up on PATH.
func CommandIsPath(command string) bool { return platformCommands.isPath(command) }

// commandRules are how a platform finds programs (command_unix.go,
// command_windows.go hold platformCommands).
type commandRules struct {
	// separators are the characters that make a command a path.
	separators string
	// exts lists the extensions a program may be named without (nil: a
	// program is found by its name as written).
	exts func() []string
	// runnable reports why the file p, which exists and is no directory,
	// cannot be run, or nil.
	runnable func(p string, st os.FileInfo) error
}

func (r commandRules) isPath(command string) bool { return strings.ContainsAny(command, r.separators) }

func (r commandRules) resolve(d *Destination, pathList string) (string, error) {
	if r.isPath(d.Command) {
		p := d.Command
		if !filepath.IsAbs(p) && d.Cwd != "" {
			p = filepath.Join(d.Cwd, p)
		}
		found, err := r.find(p)
		if err != nil {
			where := "relative to the bridge's working directory"
			if filepath.IsAbs(d.Command) {
				where = "an absolute path"
			} else if d.Cwd != "" {
				where = fmt.Sprintf("relative to cwd %s", d.Cwd)
			}
			return "", fmt.Errorf("command %q (%s) %v: fix 'command:' or install the program there", d.Command, where, err)
		}
		return found, nil
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
		if p, err := r.find(filepath.Join(dir, d.Command)); err == nil {
			return p, nil
		}
	}
	shown := pathList
	if shown == "" {
		shown = "empty"
	}
	return "", fmt.Errorf("command %q is not found on %s (%s): install it, set 'command:' to its absolute path, or add its directory to PATH", d.Command, which, shown)
}

// find returns the program p names: p itself, or (where programs are
// named without their extensions) p with one of them; else why not.
func (r commandRules) find(p string) (string, error) {
	err := r.executable(p)
	if err == nil || r.exts == nil || r.hasExt(p) {
		return p, err // found, or named with its extension
	}
	for _, ext := range r.exts() {
		if r.executable(p+ext) == nil {
			return p + ext, nil
		}
	}
	return "", err
}

// hasExt reports whether p is named with one of the program extensions.
func (r commandRules) hasExt(p string) bool {
	for _, ext := range r.exts() {
		if strings.EqualFold(filepath.Ext(p), ext) {
			return true
		}
	}
	return false
}

// executable reports why p cannot be run, or nil.
func (r commandRules) executable(p string) error {
	st, err := os.Stat(p)
	switch {
	case err != nil:
		return fmt.Errorf("does not exist")
	case st.IsDir():
		return fmt.Errorf("is a directory")
	}
	return r.runnable(p, st)
}
