package config

import "testing"

// TestPaths: a profile's key and path are written in one place, and the
// endpoint routes are a destination's whatever its name.
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
	for path, want := range map[string]bool{
		"/console/mcp": true, "/console/sse": true, "/console/message": true, "/notes/mcp": true,
		"/console": false, "/console/api/state": false, "/console/events": false, "/mcp": false, "/p/work/mcp": false, "": false,
	} {
		if got := EndpointRoute(path); got != want {
			t.Errorf("EndpointRoute(%q) = %v; want %v", path, got, want)
		}
	}
}
