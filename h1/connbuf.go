package h1

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"

	"github.com/stelae-bridge/stelae-bridge/recycle"
)

// connBufSize is a fast-path connection's read buffer: a request whose
// head does not fit goes to net/http (MaxHeaderBytes 64 KiB).
const connBufSize = 4 << 10

// bufPool holds the read buffers of connections that have nothing
// buffered.
//
// Ownership: a pooled buffer is bufPool's. take (or readFD) hands it to one
// connBuf, which owns it while bytes are in it (its connection's serving
// goroutine, or the handler reading the body under its request's mu) and
// gives it back (putBuf) once they are all read or discarded; what a
// request keeps of them is copied out first (the head into a string, the
// body into the handler's slice, a hand-off into replayConn's own). Given
// back, it is poisoned (recycle.Poison, under -race), so a slice of it kept
// past its release reads 0xFE, not the next request's bytes.
var bufPool = sync.Pool{New: func() any { b := make([]byte, connBufSize); return &b }}

// connBuf is a fast-path connection's read buffer. It holds a buffer of
// bufPool only while bytes are in it: a connection that waits for its next
// request, or for its answer once its request has been read, holds none
// (with 512 calls in flight the buffers were a third of the bridge's live
// heap). When the connection offers a syscall.RawConn (TCP and Unix
// sockets do) and the platform reads sockets with read(2) (rawReads: Unix,
// connbuf_unix.go), the wait for the next bytes holds no buffer either: the
// buffer is taken once the socket is readable, for the same read a held
// buffer would have made.
//
// A connBuf is used by the connection's serving goroutine only.
type connBuf struct {
	cr   *connReader
	raw  syscall.RawConn // nil: reads go through cr, with a buffer held
	buf  *[]byte         // nil while nothing is buffered
	r, w int             // the buffered bytes are (*buf)[r:w]
	// readRaw is b.readFD, made once: a closure per read would allocate.
	// rn and rerr are its last read's result.
	readRaw func(fd uintptr) bool
	rn      int
	rerr    error
}

// init readies b to read cr's connection; b must not move afterwards.
func (b *connBuf) init(cr *connReader) {
	b.cr = cr
	if sc, ok := cr.nc.(syscall.Conn); ok && rawReads {
		if raw, err := sc.SyscallConn(); err == nil {
			b.raw, b.readRaw = raw, b.readFD
		}
	}
}

// Buffered is the number of bytes buffered.
func (b *connBuf) Buffered() int { return b.w - b.r }

// bytes returns the buffered bytes, valid until the next read or Discard.
func (b *connBuf) bytes() []byte {
	if b.buf == nil {
		return nil
	}
	return (*b.buf)[b.r:b.w]
}

// Peek returns the next n bytes (n ≤ connBufSize), reading until they are
// buffered; with fewer, the read's error.
func (b *connBuf) Peek(n int) ([]byte, error) {
	for b.Buffered() < n {
		if err := b.fill(); err != nil {
			return nil, err
		}
	}
	return (*b.buf)[b.r : b.r+n], nil
}

// Discard drops the next n buffered bytes (n ≤ Buffered); the buffer goes
// back to the pool once it is empty.
func (b *connBuf) Discard(n int) {
	b.r += n
	b.release()
}

// Read reads buffered bytes, or reads the connection once when there are
// none.
func (b *connBuf) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if b.Buffered() == 0 {
		if err := b.fill(); err != nil {
			return 0, err
		}
	}
	n := copy(p, (*b.buf)[b.r:b.w])
	b.r += n
	b.release()
	return n, nil
}

// release returns the buffer to the pool when it holds nothing.
func (b *connBuf) release() {
	if b.buf != nil && b.r == b.w {
		putBuf(b.buf)
		b.buf, b.r, b.w = nil, 0, 0
	}
}

// putBuf gives p back to bufPool, poisoned.
func putBuf(p *[]byte) {
	recycle.Poison(*p)
	bufPool.Put(p)
}

// take gives b a buffer when it has none.
func (b *connBuf) take() {
	if b.buf == nil {
		b.buf, b.r, b.w = bufPool.Get().(*[]byte), 0, 0
	}
}

// fill reads at least one more byte into the buffer (whose free space it
// first moves to its end), or returns why it cannot.
func (b *connBuf) fill() error {
	if b.buf != nil && b.r > 0 {
		b.w = copy(*b.buf, (*b.buf)[b.r:b.w])
		b.r = 0
	}
	if b.w == connBufSize {
		return errBufferFull
	}
	if b.cr.hasPending {
		b.take()
		(*b.buf)[b.w] = b.cr.pending
		b.w++
		b.cr.hasPending = false
		return nil
	}
	if b.buf == nil && b.raw != nil {
		return b.fillRaw()
	}
	b.take()
	n, err := b.cr.nc.Read((*b.buf)[b.w:])
	b.w += n
	if n > 0 {
		return nil // an error comes again with the next read
	}
	b.release()
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

// fillRaw waits, holding no buffer, until the connection is readable (or
// its read deadline passes), then reads into a buffer from the pool.
func (b *connBuf) fillRaw() error {
	err := b.raw.Read(b.readRaw)
	n, rerr := b.rn, b.rerr
	b.rerr = nil
	switch {
	case err != nil:
		return err // a deadline, or the connection closed
	case rerr != nil:
		nc := b.cr.nc
		return &net.OpError{Op: "read", Net: nc.LocalAddr().Network(), Source: nc.LocalAddr(), Addr: nc.RemoteAddr(), Err: os.NewSyscallError("read", rerr)}
	case n == 0:
		return io.EOF
	}
	return nil
}

var errBufferFull = errors.New("connection buffer full")
