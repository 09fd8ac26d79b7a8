package config

import "testing"

// TestPaths: a profile's key and path are written in one place, a path
// splits into the key it names and its route, and the endpoint routes are
// an endpoint's whatever its name.
func TestPaths(t *testing.T) {
	if k := ProfileKey("work"); k != "p/work" || !IsProfileKey(k) || IsProfileKey("work") {
		t.Errorf("ProfileKey(work) = %q", k)
	}
	if name, ok := ProfileName("p/work"); name != "work" || !ok {
		t.Errorf("ProfileName(p/work) = %q, %v", name, ok)
	}
	if _, ok := ProfileName("work"); ok {
		t.Error("ProfileName(work): a destination's key read as a profile's")
	}
	if p := ProfilePath("work"); p != "/p/work/mcp" {
		t.Errorf("ProfilePath(work) = %q", p)
	}
	if p := KeyPath("notes"); p != "/notes/mcp" {
		t.Errorf("KeyPath(notes) = %q", p)
	}
	for path, want := range map[string][2]string{
		"/notes/mcp": {"notes", "mcp"}, "/console/sse": {"console", "sse"}, "/p/work/mcp": {"p/work", "mcp"},
		"/p/work/a/b": {"p/work", "a/b"}, "/p/work": {"p", "work"}, "/notes": {"notes", ""}, "": {"", ""},
		"/console/api/state": {"console", "api/state"}, "/mcp": {"mcp", ""},
	} {
		if key, route := SplitKeyPath(path); key != want[0] || route != want[1] {
			t.Errorf("SplitKeyPath(%q) = %q, %q; want %q, %q", path, key, route, want[0], want[1])
		}
		if path == "/p/work/mcp" || path == "/notes/mcp" {
			if key, route := SplitKeyPath(path); KeyPath(key) != path || !EndpointRoute(route) {
				t.Errorf("SplitKeyPath(%q) is not KeyPath's inverse", path)
			}
		}
	}
	for route, want := range map[string]bool{"mcp": true, "sse": true, "message": true, "": false, "api/state": false, "events": false, "mcp/x": false} {
		if got := EndpointRoute(route); got != want {
			t.Errorf("EndpointRoute(%q) = %v; want %v", route, got, want)
		}
	}
}
