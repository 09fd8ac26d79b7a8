//go:build race

package recycle

// Enabled: this build has the race detector, so given-back buffers are
// poisoned and hand-offs checked.
const Enabled = true
