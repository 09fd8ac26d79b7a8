package credstore

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// openTest opens a store in a fresh directory with a fresh key.
func openTest(t testing.TB) (*Store, string, Key) {
	t.Helper()
	key, _ := testKey(t)
	path := filepath.Join(t.TempDir(), "credentials.db")
	s, err := Open(path, key, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path, key
}

// envOf is the environment Env gives vars.
func envOf(vars map[string]string) []string {
	var env []string
	for _, n := range slices.Sorted(maps.Keys(vars)) {
		env = append(env, n+"="+vars[n])
	}
	return env
}

func mustEnv(t *testing.T, s *Store, dest, user string, want map[string]string) {
	t.Helper()
	env, ok, err := s.Env(dest, user)
	if err != nil {
		t.Fatalf("Env(%s, %s): %v", dest, user, err)
	}
	if want == nil {
		if ok || env != nil {
			t.Fatalf("Env(%s, %s): %d variables, want none", dest, user, len(env))
		}
		return
	}
	if !ok || !slices.Equal(env, envOf(want)) {
		t.Fatalf("Env(%s, %s) is not that user's own set (found %v, %d variables)", dest, user, ok, len(env))
	}
}

func TestRoundTrip(t *testing.T) {
	s, _, _ := openTest(t)
	clock := time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	s.now = func() time.Time { return clock }

	vars := map[string]string{
		"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_0123456789abcdefghijklmnopqrstuvwxyz",
		"B":                            "with=equals and\nnewline",
		"_EMPTY":                       "",
		"BYTES":                        "\xff\xfe not UTF-8 \x01",
		"BIG":                          strings.Repeat("v", MaxValueBytes),
	}
	if err := s.Set("github", "u1", "Alice", vars); err != nil {
		t.Fatal(err)
	}
	mustEnv(t, s, "github", "u1", vars)
	e, ok, err := s.Lookup("github", "u1")
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	want := Entry{User: "u1", Display: "Alice", Names: slices.Sorted(maps.Keys(vars)), Set: clock, Updated: clock}
	if !entryEqual(e, want) {
		t.Errorf("Lookup = %+v, want %+v", e, want)
	}

	// Set replaces the whole set; Set's time stays, Updated moves.
	later := clock.Add(time.Hour)
	s.now = func() time.Time { return later }
	vars2 := map[string]string{"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_new"}
	if err := s.Set("github", "u1", "Alice B.", vars2); err != nil {
		t.Fatal(err)
	}
	mustEnv(t, s, "github", "u1", vars2)
	e, _, _ = s.Lookup("github", "u1")
	want = Entry{User: "u1", Display: "Alice B.", Names: []string{"GITHUB_PERSONAL_ACCESS_TOKEN"}, Set: clock, Updated: later}
	if !entryEqual(e, want) {
		t.Errorf("after replacing, Lookup = %+v, want %+v", e, want)
	}

	if err := s.Delete("github", "u1"); err != nil {
		t.Fatal(err)
	}
	mustEnv(t, s, "github", "u1", nil)
	if _, ok, _ := s.Lookup("github", "u1"); ok {
		t.Error("Lookup found a deleted record")
	}
	if err := s.Delete("github", "u1"); err != nil {
		t.Errorf("deleting again: %v", err)
	}
	if err := s.Delete("nowhere", "u1"); err != nil {
		t.Errorf("deleting on an unknown destination: %v", err)
	}
	mustEnv(t, s, "nowhere", "u1", nil)
}

func entryEqual(a, b Entry) bool {
	return a.User == b.User && a.Display == b.Display && slices.Equal(a.Names, b.Names) &&
		a.Set.Equal(b.Set) && a.Updated.Equal(b.Updated) && errors.Is(a.Err, b.Err) && (a.Err == nil) == (b.Err == nil)
}

// Reopening the file with the same key gives every record back.
func TestReopen(t *testing.T) {
	s, path, key := openTest(t)
	vars := map[string]string{"TOKEN": "t-1"}
	if err := s.Set("d", "u", "", vars); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s2, err := Open(path, key, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	mustEnv(t, s2, "d", "u", vars)
}

// bystanderWorld sets a distinct value for every (destination, user) and
// returns what each should hold.
func bystanderWorld(t *testing.T, s *Store, dests, users []string) map[[2]string]map[string]string {
	t.Helper()
	world := map[[2]string]map[string]string{}
	for _, d := range dests {
		for _, u := range users {
			vars := map[string]string{
				"TOKEN":                      fmt.Sprintf("token-of-%s-on-%s", u, d),
				"SHARED_NAME":                fmt.Sprintf("shared-%s-%s", d, u),
				"ONLY_" + strings.ToUpper(u): "x-" + u,
			}
			if err := s.Set(d, u, "name "+u, vars); err != nil {
				t.Fatal(err)
			}
			world[[2]string{d, u}] = vars
		}
	}
	return world
}

func checkWorld(t *testing.T, s *Store, world map[[2]string]map[string]string, dests, users []string) {
	t.Helper()
	for _, d := range dests {
		var listed []string
		l, err := s.List(d)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range l {
			listed = append(listed, e.User)
			if want := world[[2]string{d, e.User}]; want == nil || !slices.Equal(e.Names, slices.Sorted(maps.Keys(want))) || e.Err != nil {
				t.Errorf("List(%s) shows %+v", d, e)
			}
		}
		var want []string
		for _, u := range users {
			if world[[2]string{d, u}] != nil {
				want = append(want, u)
			}
			mustEnv(t, s, d, u, world[[2]string{d, u}])
		}
		if !slices.Equal(listed, want) {
			t.Errorf("List(%s) users %q, want %q", d, listed, want)
		}
	}
}

// Each user's Env is their own on each destination; removing one record,
// or one user everywhere, leaves every other record as it was.
func TestBystanders(t *testing.T) {
	s, _, _ := openTest(t)
	dests := []string{"github", "gitlab", "slack"}
	users := []string{"u1", "u2", "u3", "u4"}
	world := bystanderWorld(t, s, dests, users)
	checkWorld(t, s, world, dests, users)

	if err := s.Delete("gitlab", "u2"); err != nil {
		t.Fatal(err)
	}
	delete(world, [2]string{"gitlab", "u2"})
	checkWorld(t, s, world, dests, users)

	n, err := s.DeleteUser("u3")
	if err != nil || n != len(dests) {
		t.Fatalf("DeleteUser = %d, %v; want %d", n, err, len(dests))
	}
	for _, d := range dests {
		delete(world, [2]string{d, "u3"})
	}
	checkWorld(t, s, world, dests, users)

	// u2 is left on two destinations only.
	if n, err := s.DeleteUser("u2"); err != nil || n != 2 {
		t.Fatalf("DeleteUser(u2) = %d, %v; want 2", n, err)
	}
	for _, d := range dests {
		delete(world, [2]string{d, "u2"})
	}
	checkWorld(t, s, world, dests, users)
	if n, err := s.DeleteUser("nobody"); err != nil || n != 0 {
		t.Fatalf("DeleteUser(nobody) = %d, %v", n, err)
	}
	checkWorld(t, s, world, dests, users)

	// Replacing one user's set changes nobody else's.
	world[[2]string{"slack", "u1"}] = map[string]string{"TOKEN": "replaced"}
	if err := s.Set("slack", "u1", "", world[[2]string{"slack", "u1"}]); err != nil {
		t.Fatal(err)
	}
	checkWorld(t, s, world, dests, users)
}

// A user key that is a prefix of another, or a destination that is, is
// another record.
func TestKeysAreExact(t *testing.T) {
	s, _, _ := openTest(t)
	a := map[string]string{"T": "a"}
	b := map[string]string{"T": "b"}
	s.Set("d", "u", "", a)
	s.Set("d", "u2", "", b)
	s.Set("dd", "u", "", b)
	mustEnv(t, s, "d", "u", a)
	mustEnv(t, s, "d", "U", nil)
	mustEnv(t, s, "d", "u ", nil)
	mustEnv(t, s, "d2", "u", nil)
}

func TestSetRefuses(t *testing.T) {
	const planted = "PLANTED-value-8c1f"
	cases := []struct {
		name                string
		dest, user, display string
		vars                map[string]string
		says                string
	}{
		{"no variables", "d", "u", "", map[string]string{}, "Delete"},
		{"nil variables", "d", "u", "", nil, "no variables"},
		{"too many", "d", "u", "", manyVars(MaxVars + 1), "33 variables, more than 32"},
		{"lower-case name", "d", "u", "", map[string]string{"token": planted}, "not of the form"},
		{"name with a digit first", "d", "u", "", map[string]string{"1A": planted}, "byte 1 of 2"},
		{"name with a dash", "d", "u", "", map[string]string{"A-B": planted}, "byte 2 of 3"},
		{"empty name", "d", "u", "", map[string]string{"": planted}, "empty name"},
		{"value as a name", "d", "u", "", map[string]string{planted: "v"}, "not of the form"},
		{"long name", "d", "u", "", map[string]string{strings.Repeat("A", MaxNameBytes+1): "v"}, "257 bytes"},
		{"NUL in value", "d", "u", "", map[string]string{"TOKEN": planted + "\x00"}, "NUL"},
		{"long value", "d", "u", "", map[string]string{"TOKEN": planted + strings.Repeat("x", MaxValueBytes)}, "more than 65536"},
		{"no destination", "", "u", "", map[string]string{"TOKEN": planted}, "no destination"},
		{"no user", "d", "", "", map[string]string{"TOKEN": planted}, "no user"},
		{"long user", "d", strings.Repeat("u", maxUserBytes+1), "", map[string]string{"TOKEN": planted}, "user key of 1025 bytes"},
		{"long destination", strings.Repeat("d", maxDestBytes+1), "u", "", map[string]string{"TOKEN": planted}, "destination name of 256"},
		{"control in display", "d", "u", "a\nb", map[string]string{"TOKEN": planted}, "control character"},
		{"display not UTF-8", "d", "u", "\xff", map[string]string{"TOKEN": planted}, "not UTF-8"},
		{"long display", "d", "u", strings.Repeat("n", maxDisplayBytes+1), map[string]string{"TOKEN": planted}, "display name of 257"},
	}
	s, _, _ := openTest(t)
	keep := map[string]string{"TOKEN": "kept"}
	if err := s.Set("d", "u", "", keep); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := s.Set(c.dest, c.user, c.display, c.vars)
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Set: %v, want ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), c.says) {
				t.Errorf("error %q does not say %q", err, c.says)
			}
			if strings.Contains(err.Error(), "PLANTED") {
				t.Errorf("error %q shows the value", err)
			}
			mustEnv(t, s, "d", "u", keep)
		})
	}
	if err := s.Set("d", "u", "", manyVars(MaxVars)); err != nil {
		t.Errorf("%d variables refused: %v", MaxVars, err)
	}
}

func manyVars(n int) map[string]string {
	m := map[string]string{}
	for i := range n {
		m[fmt.Sprintf("V%d", i)] = "x"
	}
	return m
}

func TestOpenRefuses(t *testing.T) {
	t.Run("zero key", func(t *testing.T) {
		if _, err := Open(filepath.Join(t.TempDir(), "c.db"), Key{}, Options{}); err == nil || !strings.Contains(err.Error(), "LoadKey") {
			t.Errorf("Open with no key: %v", err)
		}
	})
	t.Run("held by another", func(t *testing.T) {
		_, path, key := openTest(t)
		_, err := Open(path, key, Options{LockTimeout: 50 * time.Millisecond})
		if !errors.Is(err, ErrInUse) || !strings.Contains(err.Error(), "-state-dir") {
			t.Errorf("second Open: %v, want ErrInUse saying what to do", err)
		}
	})
	t.Run("open to others", func(t *testing.T) {
		if runtime.GOOS == "windows" {
			t.Skip("file modes say nothing of access on Windows")
		}
		s, path, key := openTest(t)
		s.Close()
		os.Chmod(path, 0o644)
		if _, err := Open(path, key, Options{}); err == nil || !strings.Contains(err.Error(), "chmod 600 "+path) {
			t.Errorf("Open of a 0644 file: %v", err)
		}
	})
	t.Run("another format", func(t *testing.T) {
		s, path, key := openTest(t)
		s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keyFormat, []byte("credstore 9")) })
		s.Close()
		if _, err := Open(path, key, Options{}); err == nil || !strings.Contains(err.Error(), "another version") {
			t.Errorf("Open of another format: %v", err)
		}
	})
	t.Run("created private", func(t *testing.T) {
		if runtime.GOOS == "windows" {
			t.Skip("file modes say nothing of access on Windows")
		}
		_, path, _ := openTest(t)
		if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
			t.Errorf("mode %#o", st.Mode().Perm())
		}
	})
}

func TestClosed(t *testing.T) {
	s, _, _ := openTest(t)
	s.Close()
	if _, _, err := s.Env("d", "u"); !errors.Is(err, ErrClosed) {
		t.Errorf("Env after Close: %v", err)
	}
	if err := s.Set("d", "u", "", map[string]string{"A": "b"}); !errors.Is(err, ErrClosed) {
		t.Errorf("Set after Close: %v", err)
	}
}

// Users setting and reading at once each read only their own.
func TestConcurrentUsers(t *testing.T) {
	s, _, _ := openTest(t)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			user := fmt.Sprintf("u%d", g)
			dest := []string{"a", "b"}[g%2]
			for i := range 50 {
				vars := map[string]string{"TOKEN": fmt.Sprintf("%s-%d", user, i)}
				if err := s.Set(dest, user, "", vars); err != nil {
					t.Error(err)
					return
				}
				env, ok, err := s.Env(dest, user)
				if err != nil || !ok || !slices.Equal(env, envOf(vars)) {
					t.Errorf("%s read %v %v (%d variables), not its own last set", user, ok, err, len(env))
					return
				}
				if _, err := s.List(dest); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// Env runs on every child start.
func BenchmarkEnv(b *testing.B) {
	s, _, _ := openTest(b)
	for u := range 100 {
		vars := map[string]string{"GITHUB_PERSONAL_ACCESS_TOKEN": strings.Repeat("t", 93), "GITHUB_HOST": "github.example.com"}
		if err := s.Set("github", fmt.Sprintf("user-%03d", u), "", vars); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, ok, err := s.Env("github", "user-042"); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
}
