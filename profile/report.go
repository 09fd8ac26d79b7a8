package profile

import (
	"sort"
	"sync"
	"sync/atomic"
)

// Report is what a profile's child found in its members' lists, for the
// operator (/healthz?verbose): the names two members met on, and how many
// tools it lists. Safe for concurrent use; the child of each run writes
// it, the bridge reads it.
type Report struct {
	// mu guards collisions, said and tools.
	mu         sync.Mutex
	collisions map[string][]Collision // by kind: tool, prompt, resource
	// said holds the collisions already warned of ("kind collision"):
	// each is said once per configuration of the profile (a Report lives
	// as long as its configuration), not at every list.
	said  map[string]bool
	tools int
	// dropped counts what the profile's child could not pass on to its
	// clients (its queue was full).
	dropped atomic.Uint64
}

// drop counts a message the child dropped; true for the first.
func (r *Report) drop() bool {
	if r == nil {
		return true
	}
	return r.dropped.Add(1) == 1
}

// Dropped is how many messages of its members the profile's child could
// not pass on to its clients because its queue was full (a member that
// floods notifications faster than the profile's clients take them).
func (r *Report) Dropped() uint64 {
	if r == nil {
		return 0
	}
	return r.dropped.Load()
}

// collided records the latest collisions of one kind and returns those
// not said before (all of them without a Report).
func (r *Report) collided(kind string, cs []Collision) []Collision {
	if r == nil {
		return cs
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.collisions == nil {
		r.collisions, r.said = map[string][]Collision{}, map[string]bool{}
	}
	r.collisions[kind] = cs
	var fresh []Collision
	for _, c := range cs {
		if key := kind + " " + c.String(); !r.said[key] {
			r.said[key] = true
			fresh = append(fresh, c)
		}
	}
	return fresh
}

// listed records how many tools the profile lists.
func (r *Report) listed(n int) {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.tools = n
	r.mu.Unlock()
}

// Warnings are the collisions as last listed and the clients that cut a
// list of the profile's tools, each a sentence for the operator.
func (r *Report) Warnings() []string {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var kinds []string
	for k := range r.collisions {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var out []string
	for _, k := range kinds {
		for _, c := range r.collisions[k] {
			out = append(out, k+" "+c.String())
		}
	}
	return append(out, ToolCountWarnings(r.tools)...)
}

// Tools is how many tools the profile listed last.
func (r *Report) Tools() int {
	if r == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.tools
}
