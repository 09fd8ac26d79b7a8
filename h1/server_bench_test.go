package h1

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// benchHead is a POST head as Node's fetch sends an MCP call (lower-case
// names, 8 header map entries besides Host).
const benchHead = "POST /everything/mcp HTTP/1.1\r\nhost: 127.0.0.1:9090\r\nconnection: keep-alive\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\nmcp-session-id: 0b5a3c4e-9f1d-4a43-b7a2-6c1e8d2f0a11\r\nmcp-protocol-version: 2025-11-25\r\nuser-agent: node\r\naccept-encoding: gzip, deflate\r\ncontent-length: "

// BenchmarkServePipelined serves small POSTs pipelined 8 at a time on one
// loopback connection, with a trivial handler that reads the body, sets
// Content-Type and echoes it: the fast path's own cost per request (one
// op is one request; allocs/op are the server's, the client reads fixed-size
// answers into one buffer and allocates nothing per request).
func BenchmarkServePipelined(b *testing.B) {
	var handed atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, fast := w.(*fastResponse); !fast {
			handed.Add(1)
		}
		var buf [128]byte
		n, _ := io.ReadFull(r.Body, buf[:r.ContentLength])
		w.Header()["Content-Type"] = jsonType
		w.Write(buf[:n])
	})
	_, addr := startTestServer(b, h)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"x":1}}}`
	req := benchHead + strconv.Itoa(len(body)) + "\r\n\r\n" + body
	const batch = 8 // 3.7 KiB: a batch fits the read buffer, so no body straddles its end (which would hand the connection to net/http)
	reqs := []byte(strings.Repeat(req, batch))
	c := dial(b, addr)
	br := bufio.NewReaderSize(c, 64<<10)
	// One answer first, to learn its size (fixed: the Date header has a
	// fixed width).
	if _, err := c.Write([]byte(req)); err != nil {
		b.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		b.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	if string(got) != body {
		b.Fatalf("answer %q", got)
	}
	// The second, raw: every answer has its size.
	if _, err := c.Write([]byte(req)); err != nil {
		b.Fatal(err)
	}
	raw := readRawAnswer(b, br)
	answers := make([]byte, len(raw)*batch)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += batch {
		n := min(batch, b.N-i)
		if _, err := c.Write(reqs[:n*len(req)]); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(br, answers[:n*len(raw)]); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if n := handed.Load(); n > 0 {
		b.Fatalf("%d requests went to net/http", n)
	}
	if !bytes.HasSuffix(answers[:len(raw)], []byte(body)) {
		b.Fatalf("answer %q", answers[:len(raw)])
	}
}

var jsonType = []string{"application/json"}

// readRawAnswer reads one answer with a Content-Length as bytes.
func readRawAnswer(b *testing.B, br *bufio.Reader) []byte {
	var raw []byte
	length := -1
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			b.Fatal(err)
		}
		raw = append(raw, line...)
		if l, ok := strings.CutPrefix(string(line), "Content-Length: "); ok {
			length, _ = strconv.Atoi(strings.TrimSpace(l))
		}
		if string(line) == "\r\n" {
			break
		}
	}
	if length < 0 {
		b.Fatalf("an answer without Content-Length: %q", raw)
	}
	body := make([]byte, length)
	if _, err := io.ReadFull(br, body); err != nil {
		b.Fatal(err)
	}
	return append(raw, body...)
}
