package peruser

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stelae-bridge/stelae-bridge/config"
	"github.com/stelae-bridge/stelae-bridge/credstore"
	"github.com/stelae-bridge/stelae-bridge/session"
)

// TestOf: a user's credentials are what they entered (the
// encrypted store) over what the operator provisioned, the declared ones
// only; a required one absent or not of its pattern is missing, named with
// its description, its value never in the answer; another user's are never
// taken.
func TestOf(t *testing.T) {
	// Not t.TempDir: under Wine a bbolt file may still be mapped when
	// the test's cleanup removes it (bridge's bboltDir).
	dir, err := os.MkdirTemp("", "stelae-peruser-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	key, err := credstore.LoadKey(filepath.Join(dir, "credentials.key"), "")
	if err != nil {
		t.Fatal(err)
	}
	store, err := credstore.Open(filepath.Join(dir, "credentials.db"), key, credstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	prov := filepath.Join(dir, "provisioned")
	if err := os.MkdirAll(filepath.Join(prov, "gh"), 0o700); err != nil {
		t.Fatal(err)
	}
	write := func(user, content string) {
		if err := os.WriteFile(filepath.Join(prov, "gh", user), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("alice", "TOKEN=tok-provisioned\nHOST=example.test\nEXTRA=x\n")
	write("bob", "TOKEN=bad-form-s3cret\n")
	if err := os.MkdirAll(filepath.Join(prov, "gh", "oauth"), 0o700); err != nil {
		t.Fatal(err)
	}
	write("oauth/auth0%7Cext-1", "TOKEN=tok-external\n") // auth0|ext-1 (fileName)
	write("oauth/alice", "TOKEN=tok-external-alice\n")
	if err := store.Set("gh", "t:alice", "alice", map[string]string{"TOKEN": "tok-entered"}); err != nil {
		t.Fatal(err)
	}
	if err := store.Set("gh", "t:carol", "carol", map[string]string{"TOKEN": "tok-carol"}); err != nil {
		t.Fatal(err)
	}
	d := &config.Destination{Name: "gh", Isolation: config.IsolationUser, Credentials: []config.Credential{
		{Name: "TOKEN", Description: "a token", Pattern: regexp.MustCompile(`^tok-`)}, {Name: "HOST", Optional: true}}}
	for _, tc := range []struct {
		user    session.User
		want    map[string]string
		missing string
	}{
		{session.User{Key: "t:alice", Name: "alice"}, map[string]string{"TOKEN": "tok-entered", "HOST": "example.test"}, ""},
		{session.User{Key: "t:bob", Name: "bob"}, map[string]string{}, "TOKEN (a token), which does not have the expected form"},
		{session.User{Key: "t:dave", Name: "dave"}, map[string]string{}, "TOKEN (a token)"},
		{session.User{Key: "t:carol", Name: "../carol"}, map[string]string{"TOKEN": "tok-carol"}, ""},
		// The name alice is the file alice only for a user the operator
		// named so: an invited user of the built-in server, not an external
		// issuer's subject "alice", not an unnamed token's digest.
		{session.User{Key: "b:u_1", Name: "alice"}, map[string]string{"TOKEN": "tok-provisioned", "HOST": "example.test"}, ""},
		{session.User{Key: "o:0a1b", Name: "alice"}, map[string]string{"TOKEN": "tok-external-alice"}, ""},
		{session.User{Key: "h:0a1b", Name: "alice"}, map[string]string{}, "TOKEN (a token)"},
		{session.User{Key: "o:2c3d", Name: "auth0|ext-1"}, map[string]string{"TOKEN": "tok-external"}, ""},
		{session.User{Key: "o:4e5f", Name: "../alice"}, map[string]string{}, "TOKEN (a token)"},
		// A separator of any system is a character of the name, never a
		// way out of its folder (Windows reads '\\' as one).
		{session.User{Key: "o:6a7b", Name: `..\alice`}, map[string]string{}, "TOKEN (a token)"},
		{session.User{Key: "o:6a7c", Name: `..\..\gh\alice`}, map[string]string{}, "TOKEN (a token)"},
		// A file is its user's by its exact name: not another case of it
		// (one file where the file system ignores case), not the name
		// with a final dot (which Windows drops).
		{session.User{Key: "t:Alice", Name: "Alice"}, map[string]string{}, "TOKEN (a token)"},
		{session.User{Key: "t:alice.", Name: "alice."}, map[string]string{}, "TOKEN (a token)"},
		{session.User{Key: "o:8c9d", Name: "ALICE"}, map[string]string{}, "TOKEN (a token)"},
		// The folder of the external issuer's users is not the named
		// user "oauth"'s file (it failed their every call before).
		{session.User{Key: "t:oauth", Name: "oauth"}, map[string]string{}, "TOKEN (a token)"},
	} {
		env, missing, err := Of(prov, store, d, tc.user)
		if err != nil {
			t.Fatalf("%s: %v", tc.user.Name, err)
		}
		if len(env) != len(tc.want) || strings.Join(missing, ";") != tc.missing {
			t.Errorf("%s: env %v missing %q; want %v and %q", tc.user.Name, env, missing, tc.want, tc.missing)
		}
		for k, v := range tc.want {
			if env[k] != v {
				t.Errorf("%s: %s=%q; want %q", tc.user.Name, k, env[k], v)
			}
		}
		if strings.Contains(strings.Join(missing, ";"), "s3cret") {
			t.Errorf("%s: a value in what is missing: %q", tc.user.Name, missing)
		}
	}
}

// TestFileName: a provisioning file's name is its user's name with what no
// file name may hold on some system written %XX, one to one.
func TestFileName(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"alice", "alice"},
		{"alice@example.com", "alice@example.com"},
		{"auth0|123", "auth0%7C123"},
		{"google-oauth2|1234", "google-oauth2%7C1234"},
		{"a%7Cb", "a%257Cb"},
		{".", "%2E"},
		{"..", ".%2E"},
		{"x/y", "x%2Fy"},
		{`x\y`, "x%5Cy"},
		{`<>:"?*`, "%3C%3E%3A%22%3F%2A"},
		{"tab\t", "tab%09"},
		{"end ", "end%20"},
		{"a.b", "a.b"},
	} {
		if got := fileName(tc.name); got != tc.want {
			t.Errorf("fileName(%q) = %q; want %q", tc.name, got, tc.want)
		}
	}
	// One to one: no two names share a file.
	seen := map[string]string{}
	for _, n := range []string{"a|b", "a%7Cb", "a%7cb", "a.", "a%2E", "a", "a ", "a%20"} {
		f := fileName(n)
		if other, ok := seen[f]; ok {
			t.Errorf("%q and %q share the file %q", n, other, f)
		}
		seen[f] = n
	}
}
