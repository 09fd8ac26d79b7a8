package main

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestLogWriterKeepsEveryLine: lines written from many goroutines reach the
// output whole, once, each writer's in order, through full-buffer flushes,
// timer flushes and Close.
func TestLogWriterKeepsEveryLine(t *testing.T) {
	var out syncBuffer // (main_test.go)
	w := newLogWriter(&out)
	const writers, each = 8, 2000
	var wg sync.WaitGroup
	for g := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				fmt.Fprintf(w, "writer=%d line=%d %s\n", g, i, strings.Repeat("x", i%300))
				if i%500 == 0 {
					time.Sleep(2 * flushEvery) // let the timer flush too
				}
			}
		}()
	}
	wg.Wait()
	w.Close()
	next := make([]int, writers)
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != writers*each {
		t.Fatalf("%d lines out, want %d", len(lines), writers*each)
	}
	for _, l := range lines {
		var g, i int
		var pad string
		if n, err := fmt.Sscanf(l, "writer=%d line=%d %s", &g, &i, &pad); n < 2 || err != nil && n != 2 {
			t.Fatalf("a broken line: %q (%v)", l, err)
		}
		if i != next[g] || len(pad) != i%300 {
			t.Fatalf("writer %d: line %d (pad %d) came when %d was next", g, i, len(pad), next[g])
		}
		next[g]++
	}
}

// TestLogWriterAllocatesNothing: once warm, writing and flushing batches
// allocates nothing (its two buffers take turns).
func TestLogWriterAllocatesNothing(t *testing.T) {
	var out bytes.Buffer
	out.Grow(64 << 20)
	w := newLogWriter(&out)
	defer w.Close()
	line := []byte(strings.Repeat("a", 1023) + "\n")
	batch := func() {
		for range maxPending / len(line) {
			w.Write(line) // the last one fills the buffer and flushes
		}
	}
	batch()
	batch()
	if n := testing.AllocsPerRun(20, batch); n != 0 {
		t.Errorf("%.1f allocations per batch, want 0", n)
	}
}

// slowOut is an output that takes its time over each write and checks that
// the bytes it was given do not change meanwhile (io.Writer lends them for
// the call): a batch reused while still being written fails here.
type slowOut struct {
	syncBuffer
	changed chan string
}

func (o *slowOut) Write(p []byte) (int, error) {
	before := string(p)
	time.Sleep(time.Millisecond)
	if string(p) != before {
		select {
		case o.changed <- fmt.Sprintf("a batch of %d bytes changed while it was written", len(p)):
		default:
		}
	}
	return o.syncBuffer.Write(p)
}

// TestLogWriterBatchesAreTheirFlushsAlone: with an output slow to take each
// batch, writers keep appending (batches of every size, some over keepLog,
// so spares are kept and dropped) while a batch is written; none of the
// written bytes may change under the write.
func TestLogWriterBatchesAreTheirFlushsAlone(t *testing.T) {
	out := &slowOut{changed: make(chan string, 1)}
	w := newLogWriter(out)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 3000 {
				n := i % 200
				if i%97 == 0 {
					n = keepLog / 2 // a few of these make a batch over keepLog
				}
				fmt.Fprintf(w, "writer=%d line=%d %s\n", g, i, strings.Repeat("y", n))
			}
		}()
	}
	wg.Wait()
	w.Close()
	select {
	case msg := <-out.changed:
		t.Fatal(msg)
	default:
	}
}
