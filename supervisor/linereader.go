package supervisor

import (
	"bufio"
	"errors"
	"io"

	"github.com/stelae-bridge/stelae-bridge/recycle"
)

// lineReader splits a child's stdout into lines of at most max bytes. Unlike
// bufio.Scanner it survives an over-long line: the line is discarded and the
// next one is read.
type lineReader struct {
	br  *bufio.Reader
	max int
	// buf assembles lines longer than br's buffer; reused between calls.
	buf []byte
	// lent is, under the race detector only, the copy of the last line
	// next returned: the next call poisons it, so a caller that keeps a
	// line past the next read reads garbage at once (without the race
	// detector the line is br's or buf's memory, overwritten later).
	lent []byte
}

// keepBuf is the largest assembly buffer kept after a line that did not
// need more: a larger one is kept while big lines follow each other (each
// would grow a new one, copy by copy) and released at the first line of at
// most keepBuf bytes, so one big message does not pin memory.
const keepBuf = 1 << 20

// prefixLen is how much of a discarded line is kept to read its id.
const prefixLen = 256

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next line without its line ending. The slice is valid
// until the next call: the caller borrows it and copies what it keeps.
func (r *lineReader) next() ([]byte, error) {
	line, err := r.read()
	if recycle.Enabled && err == nil {
		recycle.Poison(r.lent)
		r.lent = append(r.lent[:0], line...)
		line = r.lent
	}
	return line, err
}

func (r *lineReader) read() ([]byte, error) {
	r.buf = r.buf[:0]
	n := 0 // bytes of the current line so far, without its '\n'
	var tooLong *LineTooLongError
	for {
		line, err := r.br.ReadSlice('\n')
		complete := err == nil
		chunk := line
		if complete {
			chunk = line[:len(line)-1]
		}
		if n == 0 && complete && len(chunk) <= r.max {
			r.dropBig(len(chunk))
			return trimCR(chunk), nil // the common case: no copy
		}
		if tooLong == nil && n+len(chunk) > r.max {
			tooLong = &LineTooLongError{Prefix: linePrefix(r.buf, chunk), Max: r.max}
			r.buf = r.buf[:0]
		}
		if tooLong == nil {
			r.buf = append(r.buf, chunk...)
		}
		n += len(chunk)
		switch {
		case complete, err != nil && !errors.Is(err, bufio.ErrBufferFull) && n > 0:
			// The end of a line, or a last line without a newline (its error
			// comes again with the next call).
			if tooLong != nil {
				tooLong.Len = n
				return nil, tooLong
			}
			line := r.buf
			r.dropBig(n)
			return trimCR(line), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return nil, err
		}
	}
}

// dropBig drops a big assembly buffer after a line of n bytes that did not
// need it. The line returned may still be in it: the caller's slice keeps
// it alive until the next call.
func (r *lineReader) dropBig(n int) {
	if n <= keepBuf && cap(r.buf) > keepBuf {
		r.buf = nil
	}
}

// linePrefix copies the first prefixLen bytes of head followed by tail.
func linePrefix(head, tail []byte) []byte {
	p := make([]byte, 0, prefixLen)
	p = append(p, head[:min(len(head), prefixLen)]...)
	return append(p, tail[:min(len(tail), prefixLen-len(p))]...)
}

func trimCR(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	return b
}
