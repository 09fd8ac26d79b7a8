package peruser

import (
	"bufio"
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/stelae-bridge/stelae-bridge/config"
	"github.com/stelae-bridge/stelae-bridge/credstore"
	"github.com/stelae-bridge/stelae-bridge/session"
)

// A user's credentials for a destination's 'credentials:' (issue 35) come
// from two places, the second over the first: the operator's provisioning
// (the bridge's -credentials-dir: a file DIR/{destination}/{user}, NAME=value
// lines, for static-token users and automation) and what the user entered
// themself (credstore, encrypted at rest). Only the declared
// variables are taken. They reach nothing but the environment of that
// user's child: never its argv, a log line, an error or a page.

// provisionedUser is a user name a provisioning file may be named by.
var provisionedUser = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,127}$`)

// ProvisionedFile is where the operator provisions user u's credentials
// for destination dest — the folder and the file's name in it —, ok false
// when nowhere may: DIR/DEST/NAME for a user whose name the operator gave
// — a named static token ("t:") or an invited user of the built-in server
// ("b:"): one name is one person —, DIR/DEST/oauth/SUBJECT for a user of an
// external issuer ("o:", a destination has one issuer), and none for an
// unnamed token, whose name is a digest nobody chose. An external subject
// is a name too, but not one the operator gave: in its own folder it
// cannot take a named user's file. It is written as fileName writes it.
func ProvisionedFile(dir, dest string, u session.User) (folder, name string, ok bool) {
	if dir == "" {
		return "", "", false
	}
	kind, _, _ := strings.Cut(u.Key, ":")
	switch kind {
	case "t", "b":
		if provisionedUser.MatchString(u.Name) {
			return filepath.Join(dir, dest), fileName(u.Name), true
		}
	case "o":
		if u.Name != "" && len(u.Name) <= 255 {
			return filepath.Join(dir, dest, "oauth"), fileName(u.Name), true
		}
	}
	return "", "", false
}

// fileName is the name of a provisioning file of user name: the name with
// what no file name may hold on some system written %XX — '%' itself, the
// separators '/' and '\', '<>:"|?*', control characters, and a final '.'
// or ' ' (which Windows drops) —, so that one name is one file name on
// every system and no two names share one ("auth0|123" is
// "auth0%7C123"; "." and ".." are "%2E" and ".%2E").
func fileName(name string) string {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		last := i == len(name)-1
		if c < 0x20 || c == 0x7f || strings.IndexByte(`%/\<>:"|?*`, c) >= 0 || last && (c == '.' || c == ' ') {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// ReadProvisioned reads user u's provisioning file for destination dest:
// its variables, nil when there is none; err when it could not be read
// (naming the file, never a value). The file is found by its exact name
// among the folder's entries, not opened by a path the system may read
// otherwise: on a file system that ignores case ("Alice" and "alice" one
// file) or reserves names (NUL, COM1), a user whose exact name is not
// there has none, never another's.
func ReadProvisioned(dir, dest string, u session.User) (map[string]string, error) {
	folder, name, ok := ProvisionedFile(dir, dest, u)
	if !ok {
		return nil, nil
	}
	entries, err := os.ReadDir(folder)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read the provisioned credentials of %s for %s (%s): %v", u.Name, dest, folder, err)
	}
	for _, e := range entries {
		if e.Name() != name || e.IsDir() {
			// A folder is none of a user's: DIR/DEST/oauth holds the
			// external issuer's users, not the named user "oauth"'s.
			continue
		}
		path := filepath.Join(folder, e.Name())
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("cannot read the provisioned credentials of %s for %s (%s): %v", u.Name, dest, path, err)
		}
		return parseProvisioned(data), nil
	}
	return nil, nil
}

// Of resolves user u's credentials for destination d from the operator's
// provisioning under dir ("" for none) and, over them, store (nil for
// none): the variables for their child, and the required ones that are
// missing or do not match their pattern ("NAME (description)"). err is a
// source that could not be read (its message names the source, never a
// value).
func Of(dir string, store *credstore.Store, d *config.Destination, u session.User) (env map[string]string, missing []string, err error) {
	found := map[string]string{}
	provisioned, err := ReadProvisioned(dir, d.Name, u)
	maps.Copy(found, provisioned)
	if store != nil {
		vars, ok, serr := store.Env(d.Name, u.Key)
		switch {
		case serr != nil:
			err = fmt.Errorf("cannot read the stored credentials of %s for %s: %w", u.Name, d.Name, serr)
		case ok:
			for _, kv := range vars {
				if k, v, ok := strings.Cut(kv, "="); ok {
					found[k] = v
				}
			}
		}
	}
	env = map[string]string{}
	for _, c := range d.Credentials {
		v, ok := found[c.Name]
		switch {
		case ok && v != "" && (c.Pattern == nil || c.Pattern.MatchString(v)):
			env[c.Name] = v
		case c.Optional && (!ok || v == ""):
		default:
			what := c.Name
			if c.Description != "" {
				what += " (" + c.Description + ")"
			}
			if ok && v != "" {
				what += ", which does not have the expected form"
			}
			missing = append(missing, what)
		}
	}
	return env, missing, err
}

// parseProvisioned reads NAME=value lines ('#' comments, blank lines).
func parseProvisioned(data []byte) map[string]string {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok {
			out[strings.TrimSpace(k)] = v
		}
	}
	return out
}

// UserDestination is d for user u's child: d with their credentials in
// its environment (a copy; d is shared by every user's).
func UserDestination(d *config.Destination, creds map[string]string) *config.Destination {
	du := *d
	du.Env = maps.Clone(d.Env)
	if du.Env == nil {
		du.Env = map[string]string{}
	}
	maps.Copy(du.Env, creds)
	return &du
}
