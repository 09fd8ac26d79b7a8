package bridge

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
	"github.com/stelae-bridge/stelae-bridge/session"
)

// A user's credentials for a destination's 'credentials:' (issue 35) come
// from two places, the second over the first: the operator's provisioning
// (Options.CredentialsDir: a file DIR/{destination}/{user}, NAME=value
// lines, for static-token users and automation) and what the user entered
// themself (Options.CredStore, encrypted at rest). Only the declared
// variables are taken. They reach nothing but the environment of that
// user's child: never its argv, a log line, an error or a page.

// provisionedUser is a user name a provisioning file may be named by.
var provisionedUser = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,127}$`)

// provisionedPath is the file where the operator provisions user u's
// credentials for destination dest, "" when none may be: DIR/DEST/NAME
// for a user whose name the operator gave — a named static token ("t:")
// or an invited user of the built-in server ("b:"): one name is one
// person —, DIR/DEST/oauth/SUBJECT for a user of an external issuer ("o:",
// a destination has one issuer), and none for an unnamed token, whose name
// is a digest nobody chose. An external subject is a name too, but not one
// the operator gave: in its own directory it cannot take a named user's
// file.
func provisionedPath(dir, dest string, u session.User) string {
	if dir == "" {
		return ""
	}
	kind, _, _ := strings.Cut(u.Key, ":")
	switch kind {
	case "t", "b":
		if provisionedUser.MatchString(u.Name) {
			return filepath.Join(dir, dest, u.Name)
		}
	case "o":
		if u.Name != "" && len(u.Name) <= 255 && u.Name != "." && u.Name != ".." && !strings.ContainsAny(u.Name, "/\x00") {
			return filepath.Join(dir, dest, "oauth", u.Name)
		}
	}
	return ""
}

// credentialsOf resolves user u's credentials for destination d: the
// variables for their child, and the required ones that are missing or do
// not match their pattern ("NAME (description)"). err is a source that
// could not be read (its message names the source, never a value).
func (b *Bridge) credentialsOf(d *config.Destination, u session.User) (env map[string]string, missing []string, err error) {
	found := map[string]string{}
	if path := provisionedPath(b.opts.CredentialsDir, d.Name, u); path != "" {
		data, rerr := os.ReadFile(path)
		switch {
		case rerr == nil:
			maps.Copy(found, parseProvisioned(data))
		case !os.IsNotExist(rerr):
			err = fmt.Errorf("cannot read the provisioned credentials of %s for %s (%s): %v", u.Name, d.Name, path, rerr)
		}
	}
	if store := b.opts.CredStore; store != nil {
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

// userDestination is d for user u's child: d with their credentials in
// its environment (a copy; d is shared by every user's).
func userDestination(d *config.Destination, creds map[string]string) *config.Destination {
	du := *d
	du.Env = maps.Clone(d.Env)
	if du.Env == nil {
		du.Env = map[string]string{}
	}
	maps.Copy(du.Env, creds)
	return &du
}
