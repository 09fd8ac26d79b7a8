// Package recycle holds the rules and the fences of every buffer the bridge
// reuses: pooled, batched or kept for the next request.
//
// The rule: a reused buffer has exactly one owner at a time, and the code
// that hands it on says so beside it (who owns it now, when it passes,
// who may still read it). A buffer is given back only by its owner, once
// nothing refers to it any more.
//
// The fences:
//   - Poison overwrites a buffer as it is given back, in builds with the
//     race detector (the test suite runs with -race: go test -race ./...).
//     A reference kept past the hand-off then reads bytes that are never
//     valid JSON or HTTP, at once and every time, rather than another
//     user's bytes some of the time; the tests that cover the hand-off
//     (each pool names its own) fail instead of passing by luck. Without
//     the race detector Poison compiles to nothing.
//   - Batch is the one double buffer the bridge's batched writers use (the
//     child's stdin queue, the log writer): appends go to one buffer while
//     the other is written, and a taken buffer belongs to its taker until
//     it gives it back. Give refuses, under the race detector, a buffer
//     that is still the batch's own: the aliasing that once spliced one
//     user's message into another's.
//
// It imports nothing of the bridge; every package that reuses a buffer may
// use it.
package recycle
