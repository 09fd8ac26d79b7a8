//go:build unix

package tests

// SSE helpers: stream reads a GET stream or a POST answered as SSE (event, next, none, collect,
// rest, raw lines, waitClosed); openSSE, openSSEWith and client.openStream open one.

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// sseEvent is one server-sent event. A priming event has empty, non-nil
// data.
type sseEvent struct {
	id, event, retry string
	data             []byte
}

// stream is an SSE answer (a GET stream or a POST switched to SSE) read as
// it arrives by one goroutine: events on events, and, for streams opened
// raw, every line as sent on lines (for checks of the exact wire format).
type stream struct {
	resp   *http.Response
	events chan sseEvent
	lines  chan string
	cancel context.CancelFunc
	// headersAfter is how long the response headers took.
	headersAfter time.Duration
	// mu guards comments, the count of comment lines (keepalives).
	mu       sync.Mutex
	comments int
}

// sseOptions shape openSSE's request.
type sseOptions struct {
	// raw also delivers every line on stream.lines.
	raw bool
	// anyStatus returns the stream whatever its status and Content-Type
	// (the caller checks them); otherwise anything but a 200 SSE answer
	// fails the test.
	anyStatus bool
}

// openSSE sends a request (with request's headers) and reads its SSE answer.
// The stream is closed when the test ends.
func openSSE(t testing.TB, method, url, sid, body string, headers ...string) *stream {
	t.Helper()
	return openSSEWith(t, sseOptions{}, method, url, sid, body, headers...)
}

func openSSEWith(t testing.TB, o sseOptions, method, url, sid, body string, headers ...string) *stream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := newRequest(ctx, method, url, sid, body, headers...)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	start := time.Now()
	// No overall timeout: the body is a stream. The header wait is bounded.
	hc := &http.Client{Transport: &http.Transport{ResponseHeaderTimeout: 10 * time.Second}}
	resp, err := hc.Do(req)
	if err != nil {
		cancel()
		t.Fatalf("%s %s: %v", method, url, err)
	}
	if !o.anyStatus && (resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")) {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		t.Fatalf("%s %s: status %d, Content-Type %q; want an SSE stream: %s", method, url, resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	s := &stream{resp: resp, events: make(chan sseEvent, 1024), cancel: cancel, headersAfter: time.Since(start)}
	if o.raw {
		s.lines = make(chan string, 4096)
	}
	go s.read()
	t.Cleanup(s.close)
	return s
}

// openStream opens the session's GET stream.
func (c *client) openStream() *stream {
	c.t.Helper()
	return openSSE(c.t, http.MethodGet, c.url, c.sid, "")
}

func (s *stream) close() {
	s.cancel()
	s.resp.Body.Close()
}

// read is the stream's one reader.
func (s *stream) read() {
	defer close(s.events)
	if s.lines != nil {
		defer close(s.lines)
	}
	br := bufio.NewReader(s.resp.Body)
	var ev sseEvent
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		line = strings.TrimRight(line, "\r\n")
		if s.lines != nil {
			select {
			case s.lines <- line:
			default: // the test stopped reading lines
			}
		}
		switch {
		case line == "":
			if ev.data != nil || ev.id != "" {
				s.events <- ev
			}
			ev = sseEvent{}
		case strings.HasPrefix(line, ":"):
			s.mu.Lock()
			s.comments++
			s.mu.Unlock()
		case strings.HasPrefix(line, "id: "):
			ev.id = line[4:]
		case strings.HasPrefix(line, "event: "):
			ev.event = line[7:]
		case strings.HasPrefix(line, "retry: "):
			ev.retry = line[7:]
		case strings.HasPrefix(line, "data: "):
			ev.data = append(ev.data, line[6:]...)
		case line == "data:":
			ev.data = []byte{}
		}
	}
}

// line returns the next line of a raw stream, failing after within.
func (s *stream) line(t testing.TB, within time.Duration) string {
	t.Helper()
	select {
	case l, ok := <-s.lines:
		if !ok {
			t.Fatalf("stream closed")
		}
		return l
	case <-time.After(within):
		t.Fatalf("no line on the stream within %s", within)
	}
	return ""
}

// event returns the next event, failing after within.
func (s *stream) event(t testing.TB, within time.Duration) sseEvent {
	t.Helper()
	select {
	case ev, ok := <-s.events:
		if !ok {
			t.Fatalf("stream ended")
		}
		return ev
	case <-time.After(within):
		t.Fatalf("no event within %s", within)
	}
	return sseEvent{}
}

// rest reads events until the stream ends.
func (s *stream) rest(t testing.TB, within time.Duration) []sseEvent {
	t.Helper()
	var out []sseEvent
	deadline := time.After(within)
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				return out
			}
			out = append(out, ev)
		case <-deadline:
			t.Fatalf("stream still open after %s (got %d events)", within, len(out))
		}
	}
}

// next waits for the next event carrying a message with the given method.
func (s *stream) next(t testing.TB, method string, within time.Duration) rpc {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				t.Fatalf("stream closed while waiting for %s", method)
			}
			if len(ev.data) == 0 {
				continue // priming event
			}
			if m := decode(t, ev.data); m.Method == method {
				return m
			}
		case <-deadline:
			t.Fatalf("no %s on the stream within %s", method, within)
		}
	}
}

// none asserts that no message with method arrives within d.
func (s *stream) none(t testing.TB, method string, d time.Duration) {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				return
			}
			if len(ev.data) == 0 {
				continue
			}
			if m := decode(t, ev.data); m.Method == method {
				t.Fatalf("unexpected %s on the stream: %s", method, ev.data)
			}
		case <-deadline:
			return
		}
	}
}

// collect gathers the messages with method arriving until d passes.
func (s *stream) collect(t testing.TB, method string, d time.Duration) []rpc {
	t.Helper()
	var out []rpc
	deadline := time.After(d)
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				return out
			}
			if len(ev.data) == 0 {
				continue
			}
			if m := decode(t, ev.data); m.Method == method {
				out = append(out, m)
			}
		case <-deadline:
			return out
		}
	}
}

// waitClosed drains the stream until the server ends it; it fails with what
// when the stream is still open after within.
func (s *stream) waitClosed(t testing.TB, within time.Duration, what string) {
	t.Helper()
	deadline := time.After(within)
	for {
		select {
		case _, ok := <-s.events:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal(what)
		}
	}
}
