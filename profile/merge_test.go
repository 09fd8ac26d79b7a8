package profile

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func raws(s ...string) []json.RawMessage {
	out := make([]json.RawMessage, len(s))
	for i, x := range s {
		out[i] = json.RawMessage(x)
	}
	return out
}

// TestMergeNamed: every listed tool has its exposed name (none leaks
// unprefixed), the rest of each object is kept byte for byte, hidden and
// colliding ones are left out, and the names lead back.
func TestMergeNamed(t *testing.T) {
	listings := []Listing{
		{Destination: "everything", Prefix: "everything", Items: raws(
			`{"name":"echo","description":"Echoes","inputSchema":{"type":"object","properties":{"name":{"type":"string"}}}}`,
			`{"name":"get-env", "inputSchema":{}}`,
			`{"name":7}`,
		)},
		{Destination: "memory", Prefix: "", Items: raws(`{"inputSchema":{},"name":"create_entities"}`, `{"name":"everything__echo"}`)},
		{Destination: "fs", Prefix: "fs", Items: raws(`{"name":"read.file"}`)},
	}
	deny := func(e string) bool { return e != "everything__get-env" }
	items, names := MergeNamed(listings, deny)
	want := []string{
		`{"name":"everything__echo","description":"Echoes","inputSchema":{"type":"object","properties":{"name":{"type":"string"}}}}`,
		`{"inputSchema":{},"name":"create_entities"}`,
		`{"name":"` + Expose("fs", "read.file") + `"}`,
	}
	var got []string
	for _, it := range items {
		got = append(got, string(it))
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("merged:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, it := range items {
		name, _ := stringMember(it, "name")
		o, ok := names.Origin(name)
		if !ok {
			t.Errorf("listed %q leads nowhere", name)
		}
		if o.Destination != "memory" && name == o.Name {
			t.Errorf("%s's %q is listed unprefixed", o.Destination, name)
		}
	}
	if _, ok := names.Origin("everything__get-env"); ok {
		t.Error("a hidden tool can be routed")
	}
	if len(names.Collisions) != 1 || names.Collisions[0].Hidden != (Origin{"memory", "everything__echo"}) {
		t.Errorf("collisions %+v", names.Collisions)
	}
}

func TestMergeResources(t *testing.T) {
	res, tpls, r := MergeResources(
		[]Listing{
			{Destination: "everything", Items: raws(`{"uri":"test://static/resource/1","name":"Resource 1"}`, `{"uri":"test://secret"}`)},
			{Destination: "fs", Items: raws(`{"uri":"file:///tmp/a.txt"}`, `{"uri":"test://static/resource/1"}`)},
		},
		[]Listing{
			{Destination: "everything", Items: raws(`{"uriTemplate":"test://static/resource/{id}","name":"Static"}`)},
			{Destination: "fs", Items: raws(`{"uriTemplate":"file:///{+path}"}`, `{"uriTemplate":"search://{q}{?limit,page}"}`)},
		},
		func(uri string) bool { return uri != "test://secret" },
	)
	if len(res) != 2 || len(tpls) != 3 {
		t.Fatalf("%d resources, %d templates: %s %s", len(res), len(tpls), res, tpls)
	}
	for uri, want := range map[string]string{
		"test://static/resource/1":  "everything", // listed by both: the first keeps it
		"test://static/resource/42": "everything", // its template
		"file:///tmp/a.txt":         "fs",
		"file:///etc/hosts":         "fs", // fs's template
		"search://cats":             "fs",
		"search://cats?limit=3":     "fs",
		"test://secret":             "", // hidden, and no template matches
		"other://x":                 "",
	} {
		got, ok := r.Owner(uri)
		if got != want || ok != (want != "") {
			t.Errorf("Owner(%q) = %q %v; want %q", uri, got, ok, want)
		}
	}
	if len(r.Collisions) != 1 || r.Collisions[0].Exposed != "test://static/resource/1" {
		t.Errorf("collisions %+v", r.Collisions)
	}
}
