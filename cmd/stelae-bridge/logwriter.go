package main

import (
	"io"
	"sync"
	"time"

	"github.com/stelae-bridge/stelae-bridge/recycle"
)

// logWriter batches log lines so that a busy bridge does not pay one
// write(2) per access-log entry. Lines reach the output within flushEvery,
// at once when maxPending bytes are waiting, and on Close. Two buffers take
// turns (one filling while the other is written, recycle.Batch), so a busy
// bridge's log allocates nothing: before, every batch grew a new buffer,
// and that was 44 % of all the bytes the bridge allocated at 8 × 64.
type logWriter struct {
	out io.Writer

	// mu guards pending, timer, timerSet and closed. A batch taken from
	// pending is its flush's alone (under outMu) until given back.
	mu       sync.Mutex
	pending  recycle.Batch
	timer    *time.Timer
	timerSet bool
	closed   bool

	// outMu serialises writes to out, in order.
	outMu sync.Mutex
}

const (
	flushEvery = 50 * time.Millisecond
	maxPending = 32 << 10
	// keepLog is the largest buffer kept for the next batch.
	keepLog = 4 * maxPending
)

func newLogWriter(out io.Writer) *logWriter {
	return &logWriter{out: out, pending: recycle.Batch{Keep: keepLog}}
}

// Write implements io.Writer; hclog writes one whole entry per call.
func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return w.out.Write(p)
	}
	w.pending.Append(p)
	full := w.pending.Len() >= maxPending
	if !full && !w.timerSet {
		w.timerSet = true
		if w.timer == nil {
			w.timer = time.AfterFunc(flushEvery, w.flush)
		} else {
			w.timer.Reset(flushEvery)
		}
	}
	w.mu.Unlock()
	if full {
		w.flush()
	}
	return len(p), nil
}

// flush writes what is pending.
func (w *logWriter) flush() {
	w.outMu.Lock()
	defer w.outMu.Unlock()
	w.mu.Lock()
	buf := w.pending.Take()
	w.timerSet = false
	w.mu.Unlock()
	if len(buf) > 0 {
		_, _ = w.out.Write(buf)
	}
	w.mu.Lock()
	w.pending.Give(buf)
	w.mu.Unlock()
}

// Close flushes and makes later writes go straight through.
func (w *logWriter) Close() error {
	w.mu.Lock()
	w.closed = true
	if w.timer != nil {
		w.timer.Stop()
	}
	w.mu.Unlock()
	w.flush()
	return nil
}
