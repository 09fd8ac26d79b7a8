package dispatch

import (
	"context"
	"sync"

	"github.com/stelae-bridge/stelae-bridge/recycle"
)

// memPipe is the in-memory children's stdout and lifetime: lines queued for
// the dispatcher's reader, and exited, closed once by crash.
type memPipe struct {
	lines  chan []byte
	exited chan struct{}
	once   sync.Once
	// lent is the last line ReadMessage returned; only the reader uses it.
	lent []byte
}

func newMemPipe() memPipe {
	return memPipe{lines: make(chan []byte, 1024), exited: make(chan struct{})}
}

// ReadMessage lends each line as the real line reader does: in a buffer
// valid until the next call, which poisons it (so the dispatcher's keeping
// a line it did not copy fails the tests that route it).
func (p *memPipe) ReadMessage() ([]byte, error) {
	select {
	case l := <-p.lines:
		for i := range p.lent {
			p.lent[i] = recycle.PoisonByte
		}
		p.lent = append(p.lent[:0], l...)
		return p.lent, nil
	case <-p.exited:
		return nil, context.Canceled
	}
}

// emit queues a line as if the child wrote it.
func (p *memPipe) emit(line string) { p.lines <- []byte(line) }

// crash makes the child exit; safe to call more than once.
func (p *memPipe) crash() { p.once.Do(func() { close(p.exited) }) }

// dead reports whether the child has exited.
func (p *memPipe) dead() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

func (p *memPipe) Exited() <-chan struct{} { return p.exited }
