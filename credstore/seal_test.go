package credstore

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// rawRecord reads the stored record of (dest, user) straight from bbolt.
func rawRecord(t *testing.T, s *Store, dest, user string) map[string]any {
	t.Helper()
	var rec map[string]any
	err := s.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketDests).Bucket([]byte(dest)).Get([]byte(user))
		return json.Unmarshal(v, &rec)
	})
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// putRaw writes v as the record of (dest, user) straight into bbolt.
func putRaw(t *testing.T, s *Store, dest, user string, v []byte) {
	t.Helper()
	err := s.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.Bucket(bucketDests).CreateBucketIfNotExists([]byte(dest))
		if err != nil {
			return err
		}
		return b.Put([]byte(user), v)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func putRecord(t *testing.T, s *Store, dest, user string, rec map[string]any) {
	t.Helper()
	v, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	putRaw(t, s, dest, user, v)
}

const alicesToken = "ghp_ALICE-planted-4f0c2a9e71"

// A record copied to another (destination, user) does not open there:
// as it is (its plaintext names where it belongs), or with its plaintext
// made to match (the additional data does not).
func TestMovedRecordDoesNotOpen(t *testing.T) {
	s, _, _ := openTest(t)
	alice := map[string]string{"TOKEN": alicesToken}
	bob := map[string]string{"TOKEN": "bobs-own"}
	if err := s.Set("github", "alice", "Alice", alice); err != nil {
		t.Fatal(err)
	}
	if err := s.Set("github", "bob", "Bob", bob); err != nil {
		t.Fatal(err)
	}
	for _, to := range [][2]string{{"github", "bob"}, {"gitlab", "alice"}, {"gitlab", "bob"}} {
		for _, edited := range []bool{false, true} {
			rec := rawRecord(t, s, "github", "alice")
			if edited {
				rec["dest"], rec["user"] = to[0], to[1]
			}
			putRecord(t, s, to[0], to[1], rec)
			env, ok, err := s.Env(to[0], to[1])
			want := ErrMisplaced
			if edited {
				want = ErrDamaged
			}
			if !errors.Is(err, want) || ok || env != nil {
				t.Fatalf("alice's record at %v (plaintext edited %v): Env = %v, %v (%d variables), want %v", to, edited, ok, err, len(env), want)
			}
			for _, w := range []string{to[0], to[1], "ask the user to enter them again"} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), alicesToken) {
				t.Errorf("error %q shows the value", err)
			}
			if e, _, _ := s.Lookup(to[0], to[1]); !edited && !errors.Is(e.Err, ErrMisplaced) {
				t.Errorf("Lookup of the moved record: Err %v", e.Err)
			}
		}
	}
	mustEnv(t, s, "github", "alice", alice)
}

// Under another key a record says so; with its key again it opens.
func TestWrongKey(t *testing.T) {
	s, path, key := openTest(t)
	vars := map[string]string{"TOKEN": alicesToken}
	if err := s.Set("github", "alice", "Alice", vars); err != nil {
		t.Fatal(err)
	}
	s.Close()
	other, _ := testKey(t)
	s2, err := Open(path, other, Options{})
	if err != nil {
		t.Fatal(err)
	}
	env, ok, err := s2.Env("github", "alice")
	if !errors.Is(err, ErrOtherKey) || ok || env != nil {
		t.Fatalf("Env under another key = %v, %v", ok, err)
	}
	for _, w := range []string{"stored under another key: restore the key file or ask users to enter them again", `"alice" (Alice)`, "github"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
	l, _ := s2.List("github")
	if len(l) != 1 || !errors.Is(l[0].Err, ErrOtherKey) {
		t.Errorf("List under another key: %+v", l)
	}
	s2.Close()
	s3, err := Open(path, key, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s3.Close()
	mustEnv(t, s3, "github", "alice", vars)
}

// A record whose bytes changed does not open, and says which record.
func TestDamagedRecord(t *testing.T) {
	b64 := func(rec map[string]any, field string) []byte {
		b, _ := base64.StdEncoding.DecodeString(rec[field].(string))
		return b
	}
	set := func(rec map[string]any, field string, b []byte) { rec[field] = base64.StdEncoding.EncodeToString(b) }
	flip := func(field string, i func(n int) int) func(map[string]any) {
		return func(rec map[string]any) {
			b := b64(rec, field)
			b[i(len(b))] ^= 0x01
			set(rec, field, b)
		}
	}
	cases := []struct {
		name   string
		change func(rec map[string]any)
		says   string
	}{
		{"first sealed byte flipped", flip("sealed", func(int) int { return 0 }), "damaged"},
		{"middle sealed byte flipped", flip("sealed", func(n int) int { return n / 2 }), "damaged"},
		{"tag flipped", flip("sealed", func(n int) int { return n - 1 }), "damaged"},
		{"nonce flipped", flip("nonce", func(int) int { return 3 }), "damaged"},
		{"sealed truncated", func(rec map[string]any) { set(rec, "sealed", b64(rec, "sealed")[:20]) }, "damaged"},
		{"sealed emptied", func(rec map[string]any) { set(rec, "sealed", nil) }, "damaged"},
		{"nonce short", func(rec map[string]any) { set(rec, "nonce", b64(rec, "nonce")[:8]) }, "damaged"},
		{"a name added", func(rec map[string]any) { rec["names"] = []string{"TOKEN", "ZZ"} }, "damaged"},
		{"a name renamed", func(rec map[string]any) { rec["names"] = []string{"LD_PRELOAD"} }, "damaged"},
		{"names emptied", func(rec map[string]any) { rec["names"] = []string{} }, "damaged"},
		{"newer format", func(rec map[string]any) { rec["format"] = 2 }, "newer bridge"},
		{"key id changed", func(rec map[string]any) { rec["key_id"] = "0000000000000000" }, "another key"},
	}
	s, _, _ := openTest(t)
	vars := map[string]string{"TOKEN": alicesToken}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := s.Set("github", "alice", "Alice", vars); err != nil {
				t.Fatal(err)
			}
			if err := s.Set("github", "bob", "Bob", map[string]string{"TOKEN": "bobs"}); err != nil {
				t.Fatal(err)
			}
			rec := rawRecord(t, s, "github", "alice")
			c.change(rec)
			putRecord(t, s, "github", "alice", rec)
			env, ok, err := s.Env("github", "alice")
			if err == nil || ok || env != nil {
				t.Fatalf("Env of a damaged record = %v, %v (%d variables)", ok, err, len(env))
			}
			for _, w := range []string{c.says, `"alice"`, `"github"`} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), alicesToken) || strings.Contains(err.Error(), "ALICE") {
				t.Errorf("error %q shows the value", err)
			}
			mustEnv(t, s, "github", "bob", map[string]string{"TOKEN": "bobs"})
		})
	}
	t.Run("not a record", func(t *testing.T) {
		putRaw(t, s, "github", "alice", []byte(`{"sealed": "`+alicesToken))
		_, _, err := s.Env("github", "alice")
		if !errors.Is(err, ErrDamaged) || strings.Contains(err.Error(), "ALICE") {
			t.Errorf("Env of garbage: %v", err)
		}
		if e, _, _ := s.Lookup("github", "alice"); !errors.Is(e.Err, ErrDamaged) {
			t.Errorf("Lookup of garbage: %+v", e)
		}
	})
}

// Each write takes a fresh nonce: the same set sealed twice differs.
func TestFreshNonce(t *testing.T) {
	s, _, _ := openTest(t)
	vars := map[string]string{"TOKEN": alicesToken}
	seen := map[string]bool{}
	for range 4 {
		s.Set("d", "u", "", vars)
		rec := rawRecord(t, s, "d", "u")
		n, c := rec["nonce"].(string), rec["sealed"].(string)
		if seen[n] || seen[c] {
			t.Fatal("a nonce or a ciphertext repeated")
		}
		seen[n], seen[c] = true, true
	}
}

// encodings are the forms a value might take in a file: as it is, hex,
// base64 (standard and URL, at each alignment in a longer stream), and as
// a JSON string.
func encodings(v string) map[string]string {
	forms := map[string]string{"plain": v, "hex": hex.EncodeToString([]byte(v)), "HEX": strings.ToUpper(hex.EncodeToString([]byte(v)))}
	j, _ := json.Marshal(v)
	forms["json"] = string(j[1 : len(j)-1])
	for pad := range 3 {
		for name, enc := range map[string]*base64.Encoding{"base64": base64.StdEncoding, "base64url": base64.URLEncoding} {
			e := enc.EncodeToString([]byte(strings.Repeat("\x00", pad) + v))
			// what an encoding of v inside a longer stream shares with this
			// one whatever surrounds it: the middle.
			forms[name+string(rune('0'+pad))] = e[4 : len(e)-4]
		}
	}
	return forms
}

// The file holds no planted value in any form, after sets, replacements
// and deletes.
func TestFileHoldsNoValue(t *testing.T) {
	s, path, _ := openTest(t)
	planted := []string{
		"ghp_PLANTED0a1b2c3d4e5f6g7h8i9j0k1l2m3n4o5p",
		`PLANTED "quoted" <json> & escaped \ value 77`,
		"PLANTED-second-value-in-the-same-record-f00d",
		"PLANTED-replaced-then-gone-9e8d7c6b5a",
		"PLANTED-deleted-1234567890abcdef",
	}
	if err := s.Set("github", "alice", "Alice", map[string]string{"TOKEN": planted[0], "OTHER": planted[2]}); err != nil {
		t.Fatal(err)
	}
	if err := s.Set("gitlab", "bob", "Bob", map[string]string{"TOKEN": planted[1]}); err != nil {
		t.Fatal(err)
	}
	if err := s.Set("slack", "carol", "", map[string]string{"TOKEN": planted[3]}); err != nil {
		t.Fatal(err)
	}
	if err := s.Set("slack", "carol", "", map[string]string{"TOKEN": "short"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Set("slack", "dave", "", map[string]string{"TOKEN": planted[4]}); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete("slack", "dave"); err != nil {
		t.Fatal(err)
	}
	for _, closed := range []bool{false, true} {
		if closed {
			s.Close()
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range planted {
			for form, enc := range encodings(p) {
				if bytes.Contains(raw, []byte(enc)) {
					t.Errorf("the file holds a planted value as %s (closed %v)", form, closed)
				}
			}
		}
		// What a listing needs is there: the file is what we think it is.
		if !bytes.Contains(raw, []byte("GITHUB")) && !bytes.Contains(raw, []byte("TOKEN")) {
			t.Fatal("the file holds no variable name: not the store's file?")
		}
	}
	if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 1 {
		t.Errorf("beside the store: %v", ents)
	}
}
