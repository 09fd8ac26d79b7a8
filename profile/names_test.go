package profile

import (
	"crypto/sha256"
	"encoding/hex"
	"reflect"
	"strings"
	"testing"
)

func TestExpose(t *testing.T) {
	long := strings.Repeat("x", 70)
	for _, tc := range []struct {
		prefix, name, want string
	}{
		{"everything", "echo", "everything__echo"},
		{"", "echo", "echo"},
		{"fs", "read_file", "fs__read_file"},
		{"everything", "get-env", "everything__get-env"},
		// Changed: a hash of the joined name ends it.
		{"my", "a.b", "my__a_b_" + hashOf("my__a.b")},
		{"my", "a/b", "my__a_b_" + hashOf("my__a/b")},
		{"", "naïve", "na__ve_" + hashOf("naïve")},
		{"p", long, "p__" + strings.Repeat("x", MaxName-hashLen-3) + "_" + hashOf("p__"+long)},
	} {
		got := Expose(tc.prefix, tc.name)
		if got != tc.want {
			t.Errorf("Expose(%q, %q) = %q; want %q", tc.prefix, tc.name, got, tc.want)
		}
		if !Valid(got) {
			t.Errorf("Expose(%q, %q) = %q is not a valid name", tc.prefix, tc.name, got)
		}
	}
	// Names that clean up alike still differ.
	if Expose("my", "a.b") == Expose("my", "a/b") {
		t.Error("a.b and a/b expose alike")
	}
	// A name exactly at the limit is kept.
	at := strings.Repeat("y", MaxName-4)
	if got := Expose("ab", at); got != "ab__"+at {
		t.Errorf("a name of exactly %d characters: %q", MaxName, got)
	}
}

// hashOf is the expected end of a changed name: six hex digits of the
// SHA-256 of the joined name (computed here, not by Expose's helper).
func hashOf(joined string) string {
	sum := sha256.Sum256([]byte(joined))
	return hex.EncodeToString(sum[:3])
}

func TestNames(t *testing.T) {
	n := NewNames([]Member{
		{Destination: "everything", Prefix: "everything", Names: []string{"echo", "add", "echo"}},
		{Destination: "memory", Prefix: "", Names: []string{"create_entities", "everything__echo"}},
		{Destination: "fs", Prefix: "fs", Names: []string{"read_file"}},
	})
	if want := []string{"everything__echo", "everything__add", "create_entities", "fs__read_file"}; !reflect.DeepEqual(n.Exposed, want) {
		t.Errorf("exposed %q; want %q", n.Exposed, want)
	}
	if o, ok := n.Origin("fs__read_file"); !ok || o != (Origin{"fs", "read_file"}) {
		t.Errorf("fs__read_file leads to %+v %v", o, ok)
	}
	if o, ok := n.Origin("everything__echo"); !ok || o != (Origin{"everything", "echo"}) {
		t.Errorf("everything__echo leads to %+v %v; want everything's echo (the first member keeps it)", o, ok)
	}
	if _, ok := n.Origin("echo"); ok {
		t.Error("an unprefixed name of a prefixed member leads somewhere")
	}
	want := []Collision{{Exposed: "everything__echo", Kept: Origin{"everything", "echo"}, Hidden: Origin{"memory", "everything__echo"}}}
	if !reflect.DeepEqual(n.Collisions, want) {
		t.Errorf("collisions %+v; want %+v", n.Collisions, want)
	}
	if s := n.Collisions[0].String(); !strings.Contains(s, "memory's is hidden") || !strings.Contains(s, "'prefix:'") {
		t.Errorf("collision message %q", s)
	}
}

func TestToolCountWarnings(t *testing.T) {
	for n, want := range map[int]int{40: 0, 41: 1, 128: 1, 129: 2, 256: 2, 257: 3} {
		if got := ToolCountWarnings(n); len(got) != want {
			t.Errorf("%d tools: %q; want %d warnings", n, got, want)
		}
	}
	if w := ToolCountWarnings(300); !strings.Contains(w[2], "Claude") || !strings.Contains(w[0], "Cursor") {
		t.Errorf("300 tools: %q", w)
	}
}

func FuzzExpose(f *testing.F) {
	for _, s := range [][2]string{{"everything", "echo"}, {"", "a.b"}, {"p", strings.Repeat("é", 40)}, {"", ""}, {"x", "\x00"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, prefix, name string) {
		e := Expose(prefix, name)
		if !Valid(e) {
			t.Fatalf("Expose(%q, %q) = %q is not valid", prefix, name, e)
		}
		if Expose(prefix, name) != e {
			t.Fatal("not deterministic")
		}
		joined := name
		if prefix != "" {
			joined = prefix + Separator + name
		}
		if Valid(joined) && e != joined {
			t.Fatalf("a valid name %q was changed to %q", joined, e)
		}
	})
}
