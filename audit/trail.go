package audit

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/stelae-bridge/stelae-bridge/session"
)

// Defaults.
const (
	// DefaultMaxSize is the size past which the file rotates.
	DefaultMaxSize = 100 << 20
	// DefaultKeep is how many rotated files are kept.
	DefaultKeep = 10
	// DefaultSyncEvery is the longest a written line waits for its fsync.
	DefaultSyncEvery = time.Second
	// MaxBody is the longest body an entry keeps whole (a longer one is
	// shrunk: session.Options.TailBodies); longer redacted text is
	// written as a capped string.
	MaxBody = 64 << 10
	// queueEntries and queueBytes bound the queue: past either an entry
	// is dropped, not waited for.
	queueEntries = 8192
	queueBytes   = 64 << 20
	// warnEvery spaces the warnings about dropped entries.
	warnEvery = 10 * time.Second
)

// Stdout is the Path that writes the trail to standard output.
const Stdout = "-"

// Options configure a Trail.
type Options struct {
	// Path is the file (created 0600 if missing, appended to), or Stdout.
	Path string
	// MaxSize and Keep: past MaxSize bytes the file is renamed PATH.1
	// (PATH.1 to PATH.2, …) and a new one started; Keep old files are
	// kept. Zero: the defaults. Not used for Stdout.
	MaxSize int64
	Keep    int
	// Hash writes the SHA-256 of the redacted arguments, result and error
	// instead of their text.
	Hash bool
	// SyncEvery is the longest a line waits for its fsync (0: the
	// default).
	SyncEvery time.Duration
	// Stdout is where Stdout writes (os.Stdout when nil).
	Stdout io.Writer
	Logger hclog.Logger
}

// Trail is an open audit trail. It is safe for concurrent use.
type Trail struct {
	opts Options
	log  hclog.Logger

	// mu guards queue, queued, dropped, unsaid and closed: the hand-over
	// between Access (any goroutine) and the writer.
	mu      sync.Mutex
	queue   []session.AccessEntry
	queued  int    // bytes of the bodies in queue
	dropped uint64 // entries dropped since the start
	unsaid  uint64 // dropped entries the trail has no "dropped" line for yet
	closed  bool
	// maxEntries and maxBytes bound the queue (queueEntries, queueBytes;
	// smaller in tests).
	maxEntries, maxBytes int
	// wake tells the writer the queue has entries (or Close was called).
	wake chan struct{}
	done chan struct{} // closed when the writer has returned

	// The writer's own (only the writer goroutine touches them after Open).
	out      *output
	spare    []session.AccessEntry // the queue's other buffer: owned by the writer between swaps
	lastWarn time.Time
	enc      encoder

	m metrics
}

// Open opens the trail and starts its writer.
func Open(opts Options) (*Trail, error) {
	if opts.MaxSize <= 0 {
		opts.MaxSize = DefaultMaxSize
	}
	if opts.Keep <= 0 {
		opts.Keep = DefaultKeep
	}
	if opts.SyncEvery <= 0 {
		opts.SyncEvery = DefaultSyncEvery
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if opts.Path == "" {
		return nil, errors.New("the audit trail needs a file (or - for standard output)")
	}
	out, err := openOutput(opts)
	if err != nil {
		return nil, err
	}
	t := &Trail{opts: opts, log: opts.Logger, out: out, wake: make(chan struct{}, 1), done: make(chan struct{}), m: newMetrics(), enc: encoder{hash: opts.Hash},
		maxEntries: queueEntries, maxBytes: queueBytes}
	go t.run()
	return t, nil
}

// Collectors are the trail's metrics, for the bridge's registry.
func (t *Trail) Collectors() []prometheus.Collector { return t.m.collectors() }

// Path is where the trail is written.
func (t *Trail) Path() string { return t.opts.Path }

// Dropped is how many entries were dropped since the start (the queue was
// full).
func (t *Trail) Dropped() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.dropped
}

// Access queues e (session.Tail): it never blocks. A full queue, or a
// closed trail, drops it and counts it.
func (t *Trail) Access(e session.AccessEntry) {
	size := len(e.Arguments) + len(e.Result) + len(e.Error)
	t.mu.Lock()
	if t.closed || len(t.queue) >= t.maxEntries || t.queued+size > t.maxBytes {
		t.dropped++
		t.unsaid++
		t.mu.Unlock()
		t.m.dropped.Inc()
		t.signal()
		return
	}
	t.queue = append(t.queue, e)
	t.queued += size
	t.mu.Unlock()
	t.signal()
}

func (t *Trail) signal() {
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// Close writes what is queued, fsyncs and closes the file, and waits for
// the writer. Entries handed to Access afterwards are dropped.
func (t *Trail) Close() error {
	t.mu.Lock()
	already := t.closed
	t.closed = true
	t.mu.Unlock()
	if !already {
		t.signal()
	}
	<-t.done
	return t.out.closeErr
}

// run is the writer: it takes the queue whole, writes its lines, and
// fsyncs at most SyncEvery after the first unsynced line.
func (t *Trail) run() {
	defer close(t.done)
	syncT := time.NewTimer(time.Hour)
	syncT.Stop()
	defer syncT.Stop()
	armed := false
	for {
		select {
		case <-t.wake:
		case <-syncT.C:
			armed = false
			t.out.sync(t.log, &t.m)
			continue
		}
		t.mu.Lock()
		batch, closed, unsaid := t.queue, t.closed, t.unsaid
		t.queue, t.queued, t.unsaid = t.spare[:0], 0, 0
		t.mu.Unlock()
		for i := range batch {
			t.write(t.enc.entry(&batch[i]))
			batch[i] = session.AccessEntry{} // the bodies go with it
		}
		if unsaid > 0 {
			t.write(t.enc.dropped(unsaid))
			if time.Since(t.lastWarn) >= warnEvery {
				t.lastWarn = time.Now()
				t.log.Warn("the audit trail dropped entries: its queue was full (the file is written slower than calls come, or the disk is stuck); the trail has a \"dropped\" line where they were", "dropped", unsaid, "path", t.opts.Path)
			}
		}
		t.spare = batch[:0]
		t.out.flush(t.log, &t.m)
		if closed {
			t.out.close(t.log, &t.m)
			return
		}
		if !armed && t.out.unsynced {
			armed = true
			syncT.Reset(t.opts.SyncEvery)
		}
	}
}

// write writes one line, rotating the file first when it would pass
// MaxSize.
func (t *Trail) write(line []byte) {
	if t.out.file != nil && t.out.size > 0 && t.out.size+int64(len(line)) > t.opts.MaxSize {
		t.out.rotate(t.opts.Keep, t.log, &t.m)
	}
	t.out.write(line, t.log, &t.m)
	t.m.records.Inc()
}

// output is where lines go: a file (rotated) or a stream.
type output struct {
	w *bufio.Writer
	// dst is what w writes to: file, or the stream.
	dst io.Writer
	// path is the file's ("" for a stream); file is nil when it could not
	// be opened again after a rotation (writes then fail, and say so).
	path     string
	file     *os.File
	size     int64 // of the current file
	unsynced bool  // lines written since the last fsync
	failing  bool  // the last write failed (said once until one works)
	closeErr error
}

func openOutput(opts Options) (*output, error) {
	if opts.Path == Stdout {
		w := opts.Stdout
		if w == nil {
			w = os.Stdout
		}
		return &output{w: bufio.NewWriterSize(w, 64<<10), dst: w}, nil
	}
	f, size, err := openFile(opts.Path)
	if err != nil {
		return nil, err
	}
	return &output{w: bufio.NewWriterSize(f, 64<<10), dst: f, path: opts.Path, file: f, size: size}, nil
}

// openFile opens path for appending, owner-only when it creates it.
func openFile(path string) (*os.File, int64, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, 0, fmt.Errorf("cannot open the audit trail: %w (give -audit-log a file in a directory that exists and the bridge may write)", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("cannot open the audit trail: %w", err)
	}
	return f, st.Size(), nil
}

// errNoFile is a write to a file that could not be opened again.
var errNoFile = errors.New("the audit trail's file could not be opened again after a rotation")

func (o *output) write(line []byte, log hclog.Logger, m *metrics) {
	if o.path != "" && o.file == nil {
		o.reopen(log, m)
		if o.file == nil {
			o.failed(errNoFile, log, m)
			return
		}
	}
	if _, err := o.w.Write(line); err != nil {
		o.failed(err, log, m)
		return
	}
	o.size += int64(len(line))
	o.unsynced = o.file != nil
}

func (o *output) flush(log hclog.Logger, m *metrics) {
	if err := o.w.Flush(); err != nil {
		o.failed(err, log, m)
		return
	}
	if o.failing {
		o.failing = false
		log.Info("the audit trail is written again")
	}
}

// failed notes a write error: counted, and said once until writes work
// again. A bufio.Writer keeps its error: it is reset, so a disk that
// frees up is written to again (what the failed write held is lost).
func (o *output) failed(err error, log hclog.Logger, m *metrics) {
	m.errors.Inc()
	if !o.failing {
		o.failing = true
		log.Error("cannot write the audit trail: entries are being lost until it can (free the disk, or fix the file's permissions)", "error", err, "path", o.path)
	}
	o.w.Reset(o.dst)
}

func (o *output) sync(log hclog.Logger, m *metrics) {
	if o.file == nil || !o.unsynced {
		return
	}
	o.unsynced = false
	if err := o.file.Sync(); err != nil {
		m.errors.Inc()
		log.Error("cannot fsync the audit trail", "error", err, "path", o.path)
	}
}

// rotate closes the file (fsynced), shifts the old ones up (the oldest
// past keep is replaced) and starts a new one. The file is closed before
// it is renamed, as Windows needs.
func (o *output) rotate(keep int, log hclog.Logger, m *metrics) {
	o.flush(log, m)
	o.unsynced = true
	o.sync(log, m)
	if err := o.file.Close(); err != nil {
		log.Warn("closing the audit trail file to rotate it", "error", err, "path", o.path)
	}
	o.file = nil
	for i := keep - 1; i >= 1; i-- {
		_ = os.Rename(fmt.Sprintf("%s.%d", o.path, i), fmt.Sprintf("%s.%d", o.path, i+1))
	}
	if err := os.Rename(o.path, o.path+".1"); err != nil {
		m.errors.Inc()
		log.Error("cannot rotate the audit trail: it grows past its size", "error", err, "path", o.path)
	} else {
		m.rotations.Inc()
	}
	o.reopen(log, m)
}

// reopen opens the file again (after a rotation).
func (o *output) reopen(log hclog.Logger, m *metrics) {
	f, size, err := openFile(o.path)
	if err != nil {
		m.errors.Inc()
		if !o.failing {
			log.Error("cannot open the audit trail file after rotating it", "error", err)
		}
		return
	}
	o.file, o.dst, o.size = f, f, size
	o.w.Reset(f)
}

func (o *output) close(log hclog.Logger, m *metrics) {
	o.flush(log, m)
	if o.file == nil {
		return
	}
	o.unsynced = true
	o.sync(log, m)
	o.closeErr = o.file.Close()
}
