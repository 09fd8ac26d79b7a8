package config

import (
	"reflect"
	"strings"
	"testing"
)

const fleetFile = `destinations:
  notes: {command: x}
  files: {command: x}
  search: {command: x}
  scratch: {command: x, isolation: session}
profiles:
  docs: {destinations: [notes, files]}
default: docs
instances:
  a: {url: "http://10.0.0.1:9090", serves: [notes, files, scratch]}
  b: {serves: [search, scratch]}
`

// TestFleetSelection: each instance gets its destinations, the profiles
// of them and the default when it serves it; the rest are Away, naming
// their owners.
func TestFleetSelection(t *testing.T) {
	cfg, err := Parse("fleet.yaml", []byte(fleetFile), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cfg.InstanceNames, []string{"a", "b"}) || !reflect.DeepEqual(cfg.Owners("scratch"), []string{"a", "b"}) || !reflect.DeepEqual(cfg.ProfileOwners("docs"), []string{"a"}) {
		t.Fatalf("instances %v, scratch's owners %v, docs' owners %v", cfg.InstanceNames, cfg.Owners("scratch"), cfg.ProfileOwners("docs"))
	}
	a, err := cfg.ForInstance("a")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a.Names, []string{"notes", "files", "scratch"}) || !reflect.DeepEqual(a.ProfileNames, []string{"docs"}) || a.Default != "docs" || a.AwayDefault != "" {
		t.Errorf("a: %v %v default %q away default %q", a.Names, a.ProfileNames, a.Default, a.AwayDefault)
	}
	if e := a.Away["search"]; !reflect.DeepEqual(e.Instances, []string{"b"}) {
		t.Errorf("a: search is away at %+v", e)
	}
	b, err := cfg.ForInstance("b")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(b.Names, []string{"search", "scratch"}) || len(b.ProfileNames) != 0 || b.Default != "" || b.AwayDefault != "p/docs" {
		t.Errorf("b: %v %v default %q away default %q", b.Names, b.ProfileNames, b.Default, b.AwayDefault)
	}
	if e := b.Away["p/docs"]; !reflect.DeepEqual(e.Instances, []string{"a"}) || b.Instances["a"].URL != "http://10.0.0.1:9090" {
		t.Errorf("b: docs is away at %+v", e)
	}
	if len(cfg.Names) != 4 {
		t.Errorf("ForInstance changed the whole file's configuration: %v", cfg.Names)
	}
	if _, err := cfg.ForInstance("c"); err == nil || !strings.Contains(err.Error(), "declared: a, b") {
		t.Errorf("an unknown instance: %v", err)
	}
}

// TestFleetErrors: what a fleet file must not say.
func TestFleetErrors(t *testing.T) {
	const dests = "destinations:\n  notes: {command: x}\n  files: {command: x}\nprofiles:\n  both: {destinations: [notes, files]}\n"
	for _, tc := range []struct{ name, src, want string }{
		{"a shared destination on two instances", dests + "instances:\n  a: {serves: [notes, files]}\n  b: {serves: [notes]}\n", `"notes" is served by instances a and b`},
		{"a destination with no owner", dests + "instances:\n  a: {serves: [notes]}\n", `no instance serves destination "files"`},
		{"a profile split", dests + "instances:\n  a: {serves: [notes]}\n  b: {serves: [files]}\n", `profile "both" combines destinations that no one instance serves together (notes on a, files on b)`},
		{"an unknown destination", dests + "instances:\n  a: {serves: [notes, filez]}\n", `"filez" names no destination (did you mean "files"?)`},
		{"a bad url", dests + "instances:\n  a: {serves: [notes, files], url: ftp://x}\n", `'url' must be an http(s) URL`},
		{"an unknown key", dests + "instances:\n  a: {server: [notes]}\n", `unknown key "server" (did you mean "serves"?)`},
		{"not a mapping", dests + "instances: [a, b]\n", `'instances' must be a mapping`},
		{"the built-in server on two instances", "auth: {issuer: builtin}\n" + dests + "instances:\n  a: {serves: [notes, files]}\n  b: {serves: [files]}\n", `served by instances a and b`},
		{"the built-in server's destinations split", "destinations:\n  notes: {command: x, auth: {issuer: builtin}}\n  files: {command: x, auth: {issuer: builtin}}\ninstances:\n  a: {serves: [notes]}\n  b: {serves: [files]}\n", `use the built-in authorization server (notes, files) are served by more than one instance`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("fleet.yaml", []byte(tc.src), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v; want %q", err, tc.want)
			}
		})
	}
	if _, err := Parse("one.yaml", []byte(dests), nil); err != nil {
		t.Errorf("a file without instances: %v", err)
	}
}
