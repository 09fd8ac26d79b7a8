package bridge

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
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
			if (b.raw != nil) != tc.tcp {
				t.Fatalf("raw conn: %v, want %v", b.raw != nil, tc.tcp)
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
