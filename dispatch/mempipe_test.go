package dispatch

import (
	"context"
	"sync"
)

// memPipe is the in-memory children's stdout and lifetime: lines queued for
// the dispatcher's reader, and exited, closed once by crash.
type memPipe struct {
	lines  chan []byte
	exited chan struct{}
	once   sync.Once
}

func newMemPipe() memPipe {
	return memPipe{lines: make(chan []byte, 1024), exited: make(chan struct{})}
}

func (p *memPipe) ReadMessage() ([]byte, error) {
	select {
	case l := <-p.lines:
		return l, nil
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
