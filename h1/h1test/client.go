// Package h1test is what tests of the HTTP/1.1 server (package h1, and the
// bridge that serves through it) use to speak to it byte for byte: raw
// requests, and a client connection from a chosen loopback address.
package h1test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// Post is a raw HTTP/1.1 POST of body to path, with extra header lines
// (each ending in \r\n).
func Post(path, body string, extra ...string) string {
	return fmt.Sprintf("POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n%sContent-Length: %d\r\n\r\n%s", path, strings.Join(extra, ""), len(body), body)
}

// Client is one test connection from a chosen loopback address.
type Client struct {
	Name string
	Conn net.Conn
	R    *bufio.Reader
}

// Dial connects to addr from the loopback address local (Linux routes all
// of 127.0.0.0/8 to lo: distinct source addresses for the per-address
// share), for the rest of the test, with a 10 s deadline on every read and
// write.
func Dial(t testing.TB, addr, local string) *Client {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dialing from %s: %v", local, err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	return &Client{Name: local, Conn: c, R: bufio.NewReader(c)}
}

// Send writes req.
func (lc *Client) Send(t testing.TB, req string) {
	t.Helper()
	_ = lc.Conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(lc.Conn, req); err != nil {
		t.Fatalf("%s: writing: %v", lc.Name, err)
	}
}

// Answer reads an answer and its body.
func (lc *Client) Answer(t testing.TB) (*http.Response, string) {
	t.Helper()
	_ = lc.Conn.SetDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(lc.R, nil)
	if err != nil {
		t.Fatalf("%s: no answer: %v", lc.Name, err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s: the answer's body: %v", lc.Name, err)
	}
	return resp, string(b)
}

// Closed wants the server to have closed the connection: a read ends (EOF
// or a reset) before its deadline, which only bounds the wait.
func (lc *Client) Closed(t testing.TB) {
	t.Helper()
	_ = lc.Conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	b, err := lc.R.ReadByte()
	switch {
	case err == nil:
		t.Errorf("%s: the connection is open (read %q), want it closed", lc.Name, b)
	case errors.Is(err, os.ErrDeadlineExceeded):
		t.Errorf("%s: the connection is still open after 10 s, want it closed", lc.Name)
	}
}

// Refused reads a refusal of the connection limit: 503, Retry-After, a
// JSON-RPC error naming the flag to raise and saying says, and the
// connection closed after it.
func (lc *Client) Refused(t testing.TB, says string) {
	t.Helper()
	resp, body := lc.Answer(t)
	var rpc struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &rpc); err != nil || resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !resp.Close ||
		rpc.Error.Code != -32000 || !strings.Contains(rpc.Error.Message, "-max-connections") || !strings.Contains(rpc.Error.Message, says) {
		t.Fatalf("%s: refused with %d %q %q, want 503 with Retry-After, Connection: close and a JSON-RPC error saying %q and naming -max-connections", lc.Name, resp.StatusCode, resp.Header, body, says)
	}
	lc.Closed(t)
}
