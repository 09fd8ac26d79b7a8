package profile

import "testing"

// TestCollisionsSaidOnce: every list of a profile finds its collisions
// again; each is warned of once per configuration (one shared prefix once
// logged 166 warnings in 100 s), a new one when it appears, while the
// report keeps the latest for /healthz?verbose.
func TestCollisionsSaidOnce(t *testing.T) {
	r := &Report{}
	a := Collision{Exposed: "x__search", Kept: Origin{Destination: "a", Name: "search"}, Hidden: Origin{Destination: "b", Name: "search"}}
	b := Collision{Exposed: "x__fetch", Kept: Origin{Destination: "a", Name: "fetch"}, Hidden: Origin{Destination: "b", Name: "fetch"}}
	if got := r.collided("tool", []Collision{a}); len(got) != 1 {
		t.Fatalf("first list: %d to say; want 1", len(got))
	}
	for range 100 {
		if got := r.collided("tool", []Collision{a}); len(got) != 0 {
			t.Fatalf("a later list: %d to say again; want 0", len(got))
		}
	}
	if got := r.collided("tool", []Collision{a, b}); len(got) != 1 || got[0] != b {
		t.Fatalf("a new collision: %v; want only it", got)
	}
	if got := r.collided("prompt", []Collision{a}); len(got) != 1 {
		t.Fatalf("the same names among prompts: %d to say; want 1", len(got))
	}
	if w := r.Warnings(); len(w) != 3 {
		t.Errorf("Warnings %q; want the latest three", w)
	}
	// A new configuration has a new Report: said again.
	if got := (&Report{}).collided("tool", []Collision{a}); len(got) != 1 {
		t.Errorf("a new configuration: %d to say; want 1", len(got))
	}
}
