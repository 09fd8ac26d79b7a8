package supervisor

import (
	"bufio"
	"errors"
	"io"

	"github.com/stelae-bridge/stelae-bridge/dispatch"
)

// lineReader splits a child's stdout into lines of at most max bytes. Unlike
// bufio.Scanner it survives an over-long line: the line is discarded and the
// next one is read.
type lineReader struct {
	br  *bufio.Reader
	max int
	// buf assembles lines longer than br's buffer; reused between calls.
	buf []byte
}

// keepBuf is the largest assembly buffer kept between lines; larger ones are
// released so one big message does not pin memory.
const keepBuf = 1 << 20

// prefixLen is how much of a discarded line is kept to read its id.
const prefixLen = 256

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next line without its line ending. The slice is valid until
// the next call.
func (r *lineReader) next() ([]byte, error) {
	if cap(r.buf) > keepBuf {
		r.buf = nil
	}
	line, err := r.br.ReadSlice('\n')
	switch {
	case err == nil:
		if len(line)-1 > r.max {
			return nil, &dispatch.LineTooLongError{Len: len(line) - 1, Prefix: clonePrefix(line), Max: r.max}
		}
		return trimEOL(line), nil
	case errors.Is(err, bufio.ErrBufferFull):
		// Longer than the buffer: assemble below.
	case len(line) > 0 && errors.Is(err, io.EOF):
		// A last line without newline.
		if len(line) > r.max {
			return nil, &dispatch.LineTooLongError{Len: len(line), Prefix: clonePrefix(line), Max: r.max}
		}
		return trimEOL(line), nil
	default:
		return nil, err
	}

	r.buf = append(r.buf[:0], line...)
	for {
		line, err = r.br.ReadSlice('\n')
		if len(r.buf)+len(line) > r.max+1 {
			return nil, r.discard(len(r.buf)+len(line), err)
		}
		r.buf = append(r.buf, line...)
		switch {
		case err == nil:
			return trimEOL(r.buf), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			return trimEOL(r.buf), nil
		default:
			return nil, err
		}
	}
}

// discard drops the rest of an over-long line whose first n bytes were read.
func (r *lineReader) discard(n int, err error) error {
	tooLong := &dispatch.LineTooLongError{Prefix: clonePrefix(r.buf), Max: r.max}
	r.buf = r.buf[:0]
	for errors.Is(err, bufio.ErrBufferFull) {
		var line []byte
		line, err = r.br.ReadSlice('\n')
		n += len(line)
	}
	tooLong.Len = n - 1
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return tooLong
}

func clonePrefix(b []byte) []byte {
	if len(b) > prefixLen {
		b = b[:prefixLen]
	}
	return append([]byte(nil), b...)
}

func trimEOL(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	return b
}
