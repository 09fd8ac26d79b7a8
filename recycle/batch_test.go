package recycle

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
)

// TestBatchModel drives a Batch as its users do — writers append under a
// lock, one taker at a time takes, writes elsewhere (here: copies, slowly)
// and gives back — and checks the bytes taken against a model of the
// stream: every append once, whole, in order. Batches grow past Keep and
// shrink again, so spares are kept, dropped and reused.
func TestBatchModel(t *testing.T) {
	var mu sync.Mutex
	b := Batch{Keep: 4 << 10}
	var sent, got bytes.Buffer
	taking := false
	var wg sync.WaitGroup
	const writers, each = 8, 400
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for i := range each {
				n := 1 + rng.IntN(64)
				if rng.IntN(10) == 0 {
					n = 2<<10 + rng.IntN(8<<10) // a batch over Keep
				}
				msg := bytes.Repeat([]byte{byte('a' + w)}, n)
				copy(msg, fmt.Sprintf("<%d:%d>", w, i))
				mu.Lock()
				b.AppendLine(msg)
				sent.Write(msg) // the model: what was appended, in order
				sent.WriteByte('\n')
				take := !taking && b.Len() > 0
				if take {
					taking = true
				}
				mu.Unlock()
				for take {
					mu.Lock()
					buf := b.Take()
					mu.Unlock()
					// The taker owns buf: it reads it while others append.
					snapshot := append([]byte(nil), buf...)
					for range 3 {
						if !bytes.Equal(buf, snapshot) {
							t.Errorf("a taken buffer changed while its taker held it")
							return
						}
					}
					got.Write(buf)
					mu.Lock()
					b.Give(buf)
					take = b.Len() > 0
					if !take {
						taking = false
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if !bytes.Equal(got.Bytes(), sent.Bytes()) {
		t.Fatalf("taken %d bytes differ from the %d appended", got.Len(), sent.Len())
	}
}

// TestBatchGiveKeepsNoAlias: a buffer given back is poisoned (under the
// race detector) and never the one being appended to; one over Keep is
// dropped; a buffer still the batch's own is refused.
func TestBatchGiveKeepsNoAlias(t *testing.T) {
	b := Batch{Keep: 64}
	b.AppendLine([]byte("one"))
	t1 := b.Take()
	b.AppendLine([]byte("two"))
	b.Give(t1)
	if Enabled && !Poisoned(t1[:cap(t1)]) {
		t.Errorf("a given-back buffer was not poisoned: %q", t1)
	}
	t2 := b.Take()
	if string(t2) != "two\n" {
		t.Fatalf("second take = %q", t2)
	}
	b.AppendLine([]byte("three"))
	if &b.cur[:1][0] != &t1[:1][0] {
		t.Errorf("the spare was not reused")
	}
	// A big buffer is dropped, and the spare slot stays empty.
	big := make([]byte, 0, 1024)
	b.Give(big)
	if b.spare != nil {
		t.Errorf("a buffer over Keep was kept")
	}
	if Enabled {
		defer func() {
			if recover() == nil {
				t.Errorf("giving back the buffer being appended to did not panic")
			}
		}()
		b.Give(b.cur)
	}
}

// TestPoison: every byte up to the capacity, whatever the length.
func TestPoison(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 7, 64, 1000, 1 << 20} {
		b := make([]byte, n/2, n)
		for i := range b[:cap(b)] {
			b[:cap(b)][i] = 'x'
		}
		Poison(b)
		if Enabled && n > 0 && !Poisoned(b[:cap(b)]) {
			t.Errorf("cap %d: not every byte poisoned", n)
		}
		if !Enabled && n > 0 && Poisoned(b[:cap(b)]) {
			t.Errorf("cap %d: poisoned without the race detector", n)
		}
	}
}
