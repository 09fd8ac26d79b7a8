package session

import (
	"runtime"
	"testing"
	"time"
)

// TestDroppedBodiesCollect: body buffers dropped past an eighth of the
// body budget start one collection, and the count starts again.
func TestDroppedBodiesCollect(t *testing.T) {
	l := NewLimits(8<<20, 1<<20, 1)
	numGC := func() uint32 {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.NumGC
	}
	before := numGC()
	l.dropped.drop(512 << 10)
	if l.dropped.collecting.Load() {
		t.Fatal("a collection started below the threshold")
	}
	l.dropped.drop(512 << 10) // 1 MiB: an eighth of 8 MiB
	deadline := time.Now().Add(10 * time.Second)
	for numGC() == before || l.dropped.collecting.Load() {
		if time.Now().After(deadline) {
			t.Fatal("no collection ran once the dropped buffers reached the threshold")
		}
		time.Sleep(time.Millisecond)
	}
	if n := l.dropped.bytes.Load(); n != 0 {
		t.Errorf("after the collection the count is %d, want 0", n)
	}
}
