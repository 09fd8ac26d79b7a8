package h1

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stelae-bridge/stelae-bridge/recycle"
)

// connPair returns the two ends of a connection: over loopback TCP (which
// offers a syscall.RawConn) or net.Pipe (which does not).
func connPair(t *testing.T, tcp bool) (server, client net.Conn) {
	t.Helper()
	if !tcp {
		server, client = net.Pipe()
	} else {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		accepted := make(chan net.Conn, 1)
		go func() {
			c, _ := ln.Accept()
			accepted <- c
		}()
		client, err = net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		server = <-accepted
		if server == nil {
			t.Fatal("accept failed")
		}
	}
	t.Cleanup(func() { server.Close(); client.Close() })
	return server, client
}

// send writes s to c from a goroutine (net.Pipe's writes wait for the
// reader) and reports a failed write to t.
func send(t *testing.T, c net.Conn, s string) {
	go func() {
		if _, err := c.Write([]byte(s)); err != nil {
			t.Errorf("write %q: %v", s, err)
		}
	}()
}

// TestConnBuf: a connection's buffer holds bytes only while some are
// buffered (it is back in the pool once they are read or discarded), reads
// wait for what they need, and a deadline, the peer's close and a byte a
// watch read come through as they would from a bufio.Reader.
func TestConnBuf(t *testing.T) {
	for _, tc := range []struct {
		name string
		tcp  bool
	}{{"tcp", true}, {"pipe", false}} {
		t.Run(tc.name, func(t *testing.T) {
			server, client := connPair(t, tc.tcp)
			cr := &connReader{nc: server}
			var b connBuf
			b.init(cr)
			if (b.raw != nil) != (tc.tcp && rawReads) {
				t.Fatalf("raw conn: %v, want %v", b.raw != nil, tc.tcp && rawReads)
			}
			if b.buf != nil || b.Buffered() != 0 {
				t.Fatal("a new connection holds a buffer")
			}

			send(t, client, "hello")
			if p, err := b.Peek(5); err != nil || string(p) != "hello" {
				t.Fatalf("Peek(5) = %q, %v", p, err)
			}
			if b.buf == nil || b.Buffered() != 5 {
				t.Fatalf("after Peek: buffer %v, %d buffered", b.buf != nil, b.Buffered())
			}
			b.Discard(5)
			if b.buf != nil {
				t.Fatal("the buffer is held with nothing in it after Discard")
			}

			// A head that arrives in two writes: Peek waits for all of it
			// and keeps what came first.
			send(t, client, "ab")
			if p, err := b.Peek(1); err != nil || p[0] != 'a' {
				t.Fatalf("Peek(1) = %q, %v", p, err)
			}
			b.Discard(1)
			send(t, client, "cd")
			if p, err := b.Peek(3); err != nil || string(p) != "bcd" {
				t.Fatalf("Peek(3) = %q, %v", p, err)
			}

			// Read hands out what is buffered and gives the buffer back
			// with the last byte.
			p := make([]byte, 2)
			if n, err := b.Read(p); err != nil || string(p[:n]) != "bc" {
				t.Fatalf("Read = %q, %v", p[:n], err)
			}
			if b.buf == nil {
				t.Fatal("the buffer was given back with a byte in it")
			}
			if n, err := b.Read(p); err != nil || string(p[:n]) != "d" {
				t.Fatalf("Read = %q, %v", p[:n], err)
			}
			if b.buf != nil {
				t.Fatal("the buffer is held after its last byte was read")
			}

			// A byte a watch read comes first.
			cr.pending, cr.hasPending = 'x', true
			send(t, client, "yz")
			if p, err := b.Peek(3); err != nil || string(p) != "xyz" {
				t.Fatalf("Peek(3) with a pending byte = %q, %v", p, err)
			}
			b.Discard(3)

			// A read deadline ends a wait, holding no buffer.
			_ = server.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
			if _, err := b.Peek(1); !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("Peek past the deadline: %v, want a deadline error", err)
			}
			if b.buf != nil {
				t.Fatal("a timed-out wait left a buffer held")
			}
			_ = server.SetReadDeadline(time.Time{})

			// The peer's close.
			client.Close()
			if _, err := b.Peek(1); !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrClosedPipe) {
				t.Fatalf("Peek after the peer closed: %v, want EOF", err)
			}
			if b.buf != nil {
				t.Fatal("a closed connection's buffer is held")
			}
		})
	}
}

// TestConnBufFull: a buffer full of bytes with no end in sight says so
// rather than waiting (readHead hands such a head to net/http).
func TestConnBufFull(t *testing.T) {
	server, client := connPair(t, true)
	var b connBuf
	b.init(&connReader{nc: server})
	big := make([]byte, connBufSize)
	for i := range big {
		big[i] = 'h'
	}
	send(t, client, string(big)+"more")
	if _, err := b.Peek(connBufSize); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Peek(connBufSize + 1); !errors.Is(err, errBufferFull) {
		t.Fatalf("Peek past the buffer: %v, want errBufferFull", err)
	}
}

// chunkConn is a connection whose reads return its chunks one by one, then
// io.EOF; it offers no RawConn.
type chunkConn struct {
	net.Conn
	chunks [][]byte
}

func (c *chunkConn) Read(p []byte) (int, error) {
	for len(c.chunks) > 0 && len(c.chunks[0]) == 0 {
		c.chunks = c.chunks[1:]
	}
	if len(c.chunks) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.chunks[0])
	c.chunks[0] = c.chunks[0][n:]
	return n, nil
}

// FuzzConnBuf holds connBuf to a model of its stream (the bytes and how many
// were consumed) over any split of the stream into reads and any sequence
// of Peek, Discard and Read: each hands out exactly the stream's next bytes,
// Buffered never exceeds the buffer, and no buffer is held while nothing is
// buffered.
func FuzzConnBuf(f *testing.F) {
	f.Add([]byte("POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\nabc"), []byte{3, 7, 1, 200, 65, 130})
	f.Add(make([]byte, 5000), []byte{255, 255, 128, 64, 1, 0, 191})
	// A full-buffer Peek after a Discard: the buffer must move its bytes
	// to its start.
	f.Add(make([]byte, 5000), []byte{127, 130, 127})
	f.Fuzz(func(t *testing.T, stream, ops []byte) {
		if len(ops) == 0 {
			return
		}
		// The first op's value splits the stream into chunks of
		// 1..64 bytes, cycling through ops.
		var chunks [][]byte
		rest := stream
		for i := 0; len(rest) > 0; i++ {
			n := min(int(ops[i%len(ops)])%64+1, len(rest))
			chunks = append(chunks, rest[:n])
			rest = rest[n:]
		}
		cr := &connReader{nc: &chunkConn{chunks: chunks}}
		var b connBuf
		b.init(cr)
		off := 0 // the model: stream[off:] is still to come
		for _, op := range ops {
			n := int(op&63) + 1
			switch op >> 6 {
			case 0, 1: // Peek: a head may need up to the whole buffer
				if op>>6 == 1 {
					n = min(n*64, connBufSize)
				}
				p, err := b.Peek(n)
				if off+n <= len(stream) {
					if err != nil || !bytes.Equal(p, stream[off:off+n]) {
						t.Fatalf("Peek(%d) at %d of %d = %d bytes %.32q, %v; want the stream's next %d", n, off, len(stream), len(p), p, err, n)
					}
				} else if err == nil {
					t.Fatalf("Peek(%d) at %d of %d returned %d bytes without an error", n, off, len(stream), len(p))
				}
			case 2: // Discard what is buffered, up to n
				k := min(n, b.Buffered())
				b.Discard(k)
				off += k
			case 3:
				p := make([]byte, n)
				k, err := b.Read(p)
				if off == len(stream) {
					if err == nil {
						t.Fatalf("Read at the end returned %d bytes without an error", k)
					}
					continue
				}
				if err != nil || k == 0 || !bytes.Equal(p[:k], stream[off:off+k]) {
					t.Fatalf("Read(%d) at %d of %d = %d bytes %.32q, %v; want a prefix of the stream's next %d", n, off, len(stream), k, p[:k], err, n)
				}
				off += k
			}
			if b.Buffered() > connBufSize || b.Buffered() < 0 {
				t.Fatalf("Buffered() = %d", b.Buffered())
			}
			if b.Buffered() == 0 && b.buf != nil && op>>6 >= 2 {
				t.Fatal("a buffer is held with nothing in it after Discard or Read")
			}
		}
	})
}

// TestConnBufPoisoned: a read buffer given back to bufPool is poisoned
// under -race, so a slice of it kept past its release (here, the test's
// Peek result) reads 0xFE, never the next request's bytes.
func TestConnBufPoisoned(t *testing.T) {
	if !recycle.Enabled {
		t.Skip("poisoning is on only under -race")
	}
	for _, tcp := range []bool{true, false} {
		server, client := connPair(t, tcp)
		var b connBuf
		b.init(&connReader{nc: server})
		send(t, client, "alice's token")
		kept, err := b.Peek(13)
		if err != nil || string(kept) != "alice's token" {
			t.Fatalf("Peek = %q, %v", kept, err)
		}
		b.Discard(13)
		if !recycle.Poisoned(kept) {
			t.Errorf("tcp %v: a released read buffer still holds %q", tcp, kept)
		}
	}
}
