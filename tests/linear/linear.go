// Package linear is a test of cost: that an operation — a parser, a
// scanner, a redactor, a whole POST — takes time linear in its input
// (issue 34: validString looked for the next quote again after every
// escape, and 640 KB of \n cost 8.5 s of CPU). It compares the time per
// byte of an input of n bytes with that of one of 16n: a linear operation
// keeps it (a ratio near 1), a quadratic one multiplies it by about 16.
// Each side is repeated until it takes long enough for the clock to time
// it, is the least of several runs, interleaved, and handles the same
// number of bytes as the other; a ratio over Limit is asked for three
// times before the test fails, so a loaded machine does not fail it.
//
// Test support only: imported by the packages' tests, never by the bridge.
package linear

import (
	"testing"
	"time"
)

// Limit is the most the time per byte may grow from n to 16n bytes.
const Limit = 4

// sample is the least time a measured side takes: a few ticks of a coarse
// clock (Windows' interrupt time, under Wine too, ticks every 0.5 ms or
// more, and times a scan of a few KiB as zero).
const sample = 5 * time.Millisecond

// Input is what the operations take.
type Input interface{ ~string | ~[]byte }

// Growth is how many times the time per byte of f grows from small to
// big (len(big) about 16·len(small)): the least of runs runs each, each
// side repeated until it takes sample. It is 0 when the clock could not
// time either side.
func Growth[T Input](f func(T), small, big T, runs int) float64 {
	reps := len(big) / len(small)
	// k: how many times each side runs in one timing (the big input k
	// times, the small one k·reps times: the same bytes).
	k := 1
	for ; k < 1<<20; k *= 2 {
		start := time.Now()
		for range k {
			f(big)
		}
		if time.Since(start) >= sample {
			break
		}
	}
	tSmall, tBig := time.Duration(1<<62), time.Duration(1<<62)
	for range runs {
		start := time.Now()
		for range k * reps {
			f(small)
		}
		tSmall = min(tSmall, time.Since(start))
		start = time.Now()
		for range k {
			f(big)
		}
		tBig = min(tBig, time.Since(start))
	}
	if tSmall <= 0 || tBig <= 0 {
		return 0
	}
	return (float64(tBig) / float64(len(big))) / (float64(tSmall) / float64(reps*len(small)))
}

// Check fails t when f's time per byte grows over Limit from n to 16n
// bytes three times in a row; make(n) builds an input of about n bytes.
// what names f in the failure.
func Check[T Input](t testing.TB, what string, f func(T), make func(n int) T, n int) {
	t.Helper()
	small, big := make(n), make(16*n)
	if len(big) < 8*len(small) || len(big) > 32*len(small) {
		t.Fatalf("%s: inputs of %d and %d bytes: not about n and 16n", what, len(small), len(big))
	}
	var ratios []float64
	for range 3 {
		r := Growth(f, small, big, 3)
		if r == 0 {
			t.Skipf("%s: the clock here cannot time it", what)
		}
		if r <= Limit {
			return
		}
		ratios = append(ratios, r)
	}
	t.Errorf("%s: the time per byte grows with the input: %.1f× from %d to %d bytes, three times (%.1f); a linear operation keeps it (about 1×), a quadratic one multiplies it by about 16",
		what, ratios[0], len(small), len(big), ratios)
}
