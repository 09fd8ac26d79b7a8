package supervisor

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"unsafe"
)

// bufSize is the lineReader's bufio buffer size.
const bufSize = 64 << 10

// item is one result of lineReader.next: a line or a too-long report.
type item struct {
	line    string
	tooLong bool
	n       int // length of the discarded line, for tooLong
	prefix  string
}

func (it item) String() string {
	if it.tooLong {
		return fmt.Sprintf("tooLong(len=%d, prefix=%.40q)", it.n, it.prefix)
	}
	return fmt.Sprintf("line(%d bytes: %.40q)", len(it.line), it.line)
}

// readAll drains r, stopping at the first error that is not a
// *LineTooLongError. It gives up after limit results.
func readAll(t *testing.T, r *lineReader, limit int) ([]item, error) {
	t.Helper()
	var out []item
	for i := 0; i < limit; i++ {
		line, err := r.next()
		var tl *LineTooLongError
		switch {
		case errors.As(err, &tl):
			if line != nil {
				t.Errorf("next returned a line along with LineTooLongError")
			}
			out = append(out, item{tooLong: true, n: tl.Len, prefix: string(tl.Prefix)})
		case err != nil:
			return out, err
		default:
			out = append(out, item{line: string(line)})
		}
	}
	t.Fatalf("reader did not reach the end after %d results", limit)
	return nil, nil
}

// oracle splits input on '\n' the way lineReader is specified to: every
// newline-terminated segment is a line, and so is a non-empty final segment
// without a newline; a trailing "\r" is trimmed; a line whose raw length
// (without the '\n', with any '\r') is over max is reported as too long.
func oracle(input []byte, max int) []item {
	var out []item
	segs := bytes.Split(input, []byte("\n"))
	for i, seg := range segs {
		last := i == len(segs)-1
		if last && len(seg) == 0 {
			break
		}
		if len(seg) > max {
			p := seg
			if len(p) > prefixLen {
				p = p[:prefixLen]
			}
			out = append(out, item{tooLong: true, n: len(seg), prefix: string(p)})
			continue
		}
		out = append(out, item{line: string(bytes.TrimSuffix(seg, []byte("\r")))})
	}
	return out
}

// compare checks got against want; prefixes may carry the line's '\n' when
// the line is shorter than prefixLen.
func compare(t *testing.T, got, want []item) {
	t.Helper()
	n := len(got)
	if len(want) > n {
		n = len(want)
	}
	for i := 0; i < n; i++ {
		if i >= len(got) {
			t.Fatalf("result %d: missing; want %v (got %d results, want %d)", i, want[i], len(got), len(want))
		}
		if i >= len(want) {
			t.Fatalf("result %d: unexpected %v (got %d results, want %d)", i, got[i], len(got), len(want))
		}
		g, w := got[i], want[i]
		if g.tooLong != w.tooLong {
			t.Fatalf("result %d: got %v; want %v", i, g, w)
		}
		if !g.tooLong {
			if g.line != w.line {
				t.Fatalf("result %d: got %v; want %v", i, g, w)
			}
			continue
		}
		if g.n != w.n {
			t.Errorf("result %d: LineTooLongError.Len = %d; want %d (the discarded line's length)", i, g.n, w.n)
		}
		if g.prefix != w.prefix && g.prefix != w.prefix+"\n" {
			t.Fatalf("result %d: Prefix = %.60q; want the line's first bytes %.60q", i, g.prefix, w.prefix)
		}
	}
}

func TestLineReaderSplits(t *testing.T) {
	tests := []struct {
		name  string
		input string
		max   int
		want  []item
	}{
		{"empty input", "", 100, nil},
		{"one line", "hello\n", 100, []item{{line: "hello"}}},
		{"several lines", "a\nbb\nccc\n", 100, []item{{line: "a"}, {line: "bb"}, {line: "ccc"}}},
		{"empty lines kept", "\n\na\n\n", 100, []item{{line: ""}, {line: ""}, {line: "a"}, {line: ""}}},
		{"CRLF trimmed", "a\r\nb\r\n", 100, []item{{line: "a"}, {line: "b"}}},
		{"only CR trimmed once", "a\r\r\n", 100, []item{{line: "a\r"}}},
		{"CR inside a line kept", "a\rb\n", 100, []item{{line: "a\rb"}}},
		{"final line without newline", "a\nlast", 100, []item{{line: "a"}, {line: "last"}}},
		{"final line CR without newline", "a\nlast\r", 100, []item{{line: "a"}, {line: "last"}}},
		{"line exactly at max", "12345\nab\n", 5, []item{{line: "12345"}, {line: "ab"}}},
		{"final line exactly at max", "ab\n12345", 5, []item{{line: "ab"}, {line: "12345"}}},
		{"line one over max", "123456\nab\n", 5, []item{{tooLong: true, n: 6, prefix: "123456"}, {line: "ab"}}},
		{"final line one over max", "ab\n123456", 5, []item{{line: "ab"}, {tooLong: true, n: 6, prefix: "123456"}}},
		{"zero max", "\nx\n\n", 0, []item{{line: ""}, {tooLong: true, n: 1, prefix: "x"}, {line: ""}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readAll(t, newLineReader(strings.NewReader(tc.input), tc.max), 1000)
			if err != io.EOF {
				t.Fatalf("final error = %v; want io.EOF", err)
			}
			compare(t, got, tc.want)
			compare(t, oracle([]byte(tc.input), tc.max), tc.want) // the oracle agrees with the table
		})
	}
}

// TestLineReaderLongLines covers lines around and beyond the bufio buffer.
func TestLineReaderLongLines(t *testing.T) {
	big := func(n int) string {
		// Starts like a response so the prefix is recognisable.
		head := `{"jsonrpc":"2.0","id":42,"result":"`
		if n <= len(head) {
			return strings.Repeat("x", n)
		}
		return head + strings.Repeat("y", n-len(head))
	}
	tests := []struct {
		name  string
		input string
		max   int
	}{
		{"long line under max", big(200<<10) + "\nnext\n", 300 << 10},
		{"long line exactly at max", big(200<<10) + "\nnext\n", 200 << 10},
		{"long CRLF line exactly at max", big(200<<10-1) + "\r\nnext\n", 200 << 10},
		{"line exactly the buffer size", big(bufSize) + "\nnext\n", bufSize},
		{"line exactly the buffer size plus one", big(bufSize+1) + "\nnext\n", bufSize + 1},
		{"line one over the buffer size is over max", big(bufSize+1) + "\nnext\n", bufSize},
		{"short line over a small max", big(1000) + "\nnext\n", 100},
		{"line over max but shorter than buffer", big(bufSize-10) + "\nnext\n", 1000},
		{"line over max and longer than buffer", big(300<<10) + "\nnext\n", 100 << 10},
		{"line one over max, longer than buffer", big(100<<10+1) + "\nnext\n", 100 << 10},
		{"line over max, much longer than buffer", big(1<<20) + "\n{\"id\":1}\n", 1000},
		{"two long lines in a row", big(200<<10) + "\n" + big(150<<10) + "\nnext\n", 100 << 10},
		{"long line at max then long over", big(100<<10) + "\n" + big(100<<10+1) + "\nnext\n", 100 << 10},
		{"huge line then EOF", big(1 << 20), 1000},
		{"huge line then EOF, max over the buffer", big(1 << 20), 100 << 10},
		{"final line without newline at max, longer than buffer", big(100 << 10), 100 << 10},
		{"final line without newline one over max, longer than buffer", big(100<<10 + 1), 100 << 10},
		{"final line without newline two over max, longer than buffer", big(100<<10 + 2), 100 << 10},
		{"final line one over max, longer than buffer, after a line", "first\n" + big(100<<10+1), 100 << 10},
		{"huge line then newline at EOF", big(1<<20) + "\n", 1000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			input := []byte(tc.input)
			for _, rd := range []struct {
				name string
				r    io.Reader
			}{
				{"reader", bytes.NewReader(input)},
				{"half reader", iotest.HalfReader(bytes.NewReader(input))},
				{"data+EOF reader", iotest.DataErrReader(bytes.NewReader(input))},
			} {
				got, err := readAll(t, newLineReader(rd.r, tc.max), 100)
				if err != io.EOF {
					t.Fatalf("%s: final error = %v; want io.EOF", rd.name, err)
				}
				compare(t, got, oracle(input, tc.max))
			}
		})
	}
}

func TestLineReaderTooLongErrorFields(t *testing.T) {
	line := `{"jsonrpc":"2.0","id":42,"result":"` + strings.Repeat("z", 300<<10) + `"}`
	r := newLineReader(strings.NewReader(line+"\n"+`{"jsonrpc":"2.0","id":43,"result":{}}`+"\n"), 100<<10)
	_, err := r.next()
	var tl *LineTooLongError
	if !errors.As(err, &tl) {
		t.Fatalf("next() error = %v; want *LineTooLongError", err)
	}
	if tl.Max != 100<<10 {
		t.Errorf("Max = %d; want %d", tl.Max, 100<<10)
	}
	if tl.Len != len(line) {
		t.Errorf("Len = %d; want %d", tl.Len, len(line))
	}
	if string(tl.Prefix) != line[:prefixLen] {
		t.Errorf("Prefix = %q; want %q", tl.Prefix, line[:prefixLen])
	}
	if !strings.Contains(tl.Error(), "100") && !strings.Contains(tl.Error(), fmt.Sprint(100<<10)) {
		t.Errorf("Error() = %q does not give the maximum", tl.Error())
	}
	next, err := r.next()
	if err != nil || string(next) != `{"jsonrpc":"2.0","id":43,"result":{}}` {
		t.Fatalf("line after the discarded one = %q, %v", next, err)
	}
	if _, err := r.next(); err != io.EOF {
		t.Fatalf("after the last line: %v; want io.EOF", err)
	}
}

// TestLineReaderPrefixIsACopy checks the prefix survives later reads.
func TestLineReaderPrefixIsACopy(t *testing.T) {
	long := strings.Repeat("a", 500)
	r := newLineReader(strings.NewReader(long+"\n"+strings.Repeat("b", 500)+"\n"), 100)
	_, err := r.next()
	var tl *LineTooLongError
	if !errors.As(err, &tl) {
		t.Fatalf("err = %v", err)
	}
	_, _ = r.next()
	if string(tl.Prefix) != long[:prefixLen] {
		t.Errorf("Prefix changed after the next read: %q", tl.Prefix)
	}
}

// TestLineReaderReleasesBigBuffer checks a big assembled line does not pin
// its buffer for the next call.
func TestLineReaderReleasesBigBuffer(t *testing.T) {
	r := newLineReader(strings.NewReader(strings.Repeat("a", 2<<20)+"\nb\nc\n"), 4<<20)
	line, err := r.next()
	if err != nil || len(line) != 2<<20 {
		t.Fatalf("big line: %d bytes, %v", len(line), err)
	}
	if line, err := r.next(); err != nil || string(line) != "b" {
		t.Fatalf("next: %q, %v", line, err)
	}
	if cap(r.buf) > keepBuf {
		t.Errorf("assembly buffer of %d bytes kept after a small line", cap(r.buf))
	}
}

// TestLineReaderKeepsBufferForBigLines checks big lines in a row share one
// assembly buffer (each grew a new one, copy by copy, before).
func TestLineReaderKeepsBufferForBigLines(t *testing.T) {
	big := strings.Repeat("a", 2<<20) + "\n"
	r := newLineReader(strings.NewReader(big+big+"b\n"), 4<<20)
	first, err := r.next()
	if err != nil || len(first) != 2<<20 {
		t.Fatalf("first big line: %d bytes, %v", len(first), err)
	}
	at := unsafe.SliceData(first)
	second, err := r.next()
	if err != nil || len(second) != 2<<20 {
		t.Fatalf("second big line: %d bytes, %v", len(second), err)
	}
	if unsafe.SliceData(second) != at {
		t.Errorf("the second big line was assembled in a new buffer")
	}
	if line, err := r.next(); err != nil || string(line) != "b" {
		t.Fatalf("next: %q, %v", line, err)
	}
	if cap(r.buf) > keepBuf {
		t.Errorf("assembly buffer of %d bytes kept after a small line", cap(r.buf))
	}
}

type errAfter struct {
	data []byte
	err  error
}

func (e *errAfter) Read(p []byte) (int, error) {
	if len(e.data) == 0 {
		return 0, e.err
	}
	n := copy(p, e.data)
	e.data = e.data[n:]
	return n, nil
}

func TestLineReaderPassesReadErrors(t *testing.T) {
	boom := errors.New("boom")
	r := newLineReader(&errAfter{data: []byte("a\n"), err: boom}, 100)
	if line, err := r.next(); err != nil || string(line) != "a" {
		t.Fatalf("first: %q, %v", line, err)
	}
	if _, err := r.next(); !errors.Is(err, boom) {
		t.Fatalf("second: %v; want the reader's error", err)
	}
}

func FuzzLineReader(f *testing.F) {
	f.Add([]byte("a\nb\r\nc"), uint32(3), uint16(0), uint32(0))
	f.Add([]byte("hello world\n\n"), uint32(5), uint16(1), uint32(10))
	f.Add([]byte("x\ny"), uint32(70000), uint16(1), uint32(70000))
	f.Add([]byte("x\ny\n"), uint32(65536), uint16(1), uint32(65536))
	f.Add([]byte("\r\n\r\n"), uint32(0), uint16(0), uint32(0))
	f.Add([]byte("{\"id\":1}\n"), uint32(100000), uint16(3), uint32(100000))
	f.Fuzz(func(t *testing.T, data []byte, maxSeed uint32, padAt uint16, padLen uint32) {
		// Optionally splice a long run into the input so lines longer than
		// the bufio buffer are exercised; max is chosen relative to the
		// input so it often falls near a line's length.
		input := data
		if pad := int(padLen % (200 << 10)); pad > 0 {
			at := 0
			if len(data) > 0 {
				at = int(padAt) % (len(data) + 1)
			}
			input = make([]byte, 0, len(data)+pad)
			input = append(input, data[:at]...)
			input = append(input, bytes.Repeat([]byte{'p'}, pad)...)
			input = append(input, data[at:]...)
		}
		max := int(maxSeed % uint32(len(input)+2))
		got, err := readAll(t, newLineReader(bytes.NewReader(input), max), len(input)+2)
		if err != io.EOF {
			t.Fatalf("final error = %v; want io.EOF", err)
		}
		compare(t, got, oracle(input, max))
	})
}
