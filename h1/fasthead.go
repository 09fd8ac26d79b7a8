package h1

import (
	"bytes"
	"net/http"
	"strings"
)

// This file reads the head of the one request the fast path serves itself
// (server.go): a POST over HTTP/1.1 whose body has a Content-Length. It
// accepts only a strict subset of HTTP/1.1 that net/http reads the same
// way (FuzzFastHead holds it to http.ReadRequest); anything else — another
// method or version, a query, a percent-escape, chunked bodies, Expect,
// Upgrade, Connection other than keep-alive, obs-fold, bytes outside
// visible ASCII, a repeated Host or Content-Length — is not refused here
// but handed to net/http with the bytes read so far, which then serves the
// connection as it always has.

// fastHead is a request head the fast path serves.
type fastHead struct {
	path          string
	host          string
	header        http.Header
	contentLength int64
}

// maxFastBody is the largest Content-Length the fast path takes. A body is
// served here only when it arrived with its head in the connection's read
// buffer (connBufSize, 4 KiB: server.go), so head and body fit in it
// together: maxFastBody is what the shortest head the parser takes
// (shortestFastHead) leaves of the buffer. Behind an MCP client's head of
// 300 to 600 bytes, the largest body served here is 3.5 to 3.7 KiB. A
// longer body, like one that has not all arrived with its head, goes with
// the bytes read to net/http, which serves it under the body limits.
const maxFastBody = connBufSize - len(shortestFastHead)

// shortestFastHead is the shortest head that parseFastHead takes, for a
// body of maxFastBody bytes (TestServerBodyLimit holds the two together).
const shortestFastHead = "POST / HTTP/1.1\r\nHost:a\r\nContent-Length:4048\r\n\r\n"

// parseFastHead parses head, a request head up to and including its final
// CRLF CRLF, into *h, with a header map made for it, whose single values
// are appended to vals (the request's own array: see fastRequest). ok is
// false when the request is not one for the fast path. (The head is
// filled in place rather than returned: a returned fastHead and its copy
// were 100 bytes of serve's frame, which every request's stack holds; see
// session.post on stacks.)
func parseFastHead(head []byte, h *fastHead, vals []string) (ok bool) {
	*h = fastHead{}
	const prefix, suffix = "POST /", " HTTP/1.1"
	if len(head) < len(prefix)+len(suffix)+4 || string(head[:len(prefix)]) != prefix {
		return false
	}
	// One string holds the whole head: the header map's names and values
	// are slices of it.
	s := string(head[:len(head)-2])
	eol := strings.IndexByte(s, '\r')
	if eol < 0 || s[eol+1] != '\n' || !strings.HasSuffix(s[:eol], suffix) {
		return false
	}
	h.path = s[len(prefix)-1 : eol-len(suffix)]
	if !fastPath(h.path) {
		return false
	}
	// A map of up to 8 entries is one small group (two allocations); past
	// 8 a hint of the size saves one growth. Its lines but the request
	// line, Host and the blank line are at most its entries.
	h.header = make(http.Header, max(bytes.Count(head, []byte("\n"))-3, 0))
	hosts, lengths := 0, 0
	for pos := eol + 2; pos < len(s); {
		eol := strings.IndexByte(s[pos:], '\r')
		if eol <= 0 || s[pos+eol+1] != '\n' {
			return false
		}
		line := s[pos : pos+eol]
		pos += eol + 2
		colon := strings.IndexByte(line, ':')
		if colon <= 0 || !tokenString(line[:colon]) {
			return false
		}
		value := trimOWS(line[colon+1:])
		if !fieldValue(value) {
			return false
		}
		key := canonicalKey(line[:colon])
		switch key {
		case "Host":
			hosts++
			if !hostValue(value) {
				return false
			}
			h.host = value
			continue // net/http keeps Host out of the header map
		case "Content-Length":
			lengths++
			n, ok := contentLength(value)
			if !ok {
				return false
			}
			h.contentLength = n
		case "Transfer-Encoding", "Expect", "Upgrade", "Trailer", "Te":
			return false
		case "Connection":
			if !strings.EqualFold(value, "keep-alive") {
				return false
			}
		}
		if prev, dup := h.header[key]; dup {
			h.header[key] = append(prev, value)
			continue
		}
		vals = append(vals, value)
		h.header[key] = vals[len(vals)-1 : len(vals) : len(vals)]
	}
	return hosts == 1 && lengths == 1
}

// commonKeys are the header names MCP clients send, canonical: a name
// found here costs no allocation whatever its case.
var commonKeys = []string{"Host", "Accept", "Origin", "Connection", "User-Agent", "Content-Type",
	"Authorization", "Content-Length", "Mcp-Session-Id", "Accept-Encoding", "Accept-Language",
	"Mcp-Method", "Mcp-Name", "Mcp-Protocol-Version", "Last-Event-Id", "Sec-Fetch-Mode",
	"Sec-Fetch-Site", "Sec-Fetch-Dest", "Referer", "Cookie", "Baggage", "Traceparent", "Tracestate"}

// canonicalKey is http.CanonicalHeaderKey(name) (name is a token).
func canonicalKey(name string) string {
	for _, k := range commonKeys {
		if len(k) == len(name) && strings.EqualFold(k, name) {
			return k
		}
	}
	return http.CanonicalHeaderKey(name)
}

// trimOWS trims spaces and tabs at both ends of s.
func trimOWS(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

// fastPath reports whether p is a plain absolute path: letters, digits and
// - . _ ~ /, no query, no escapes, no dot segments.
func fastPath(p string) bool {
	if len(p) == 0 || len(p) > 1024 || p[0] != '/' || strings.Contains(p, "/.") {
		return false
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' || c == '/') {
			return false
		}
	}
	return true
}

// tokenString reports whether s is an RFC 9110 token.
func tokenString(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return len(s) > 0
}

// fieldValue reports whether s is a field value of visible ASCII, spaces
// and tabs only.
func fieldValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < 0x20 && c != '\t') || c > 0x7e {
			return false
		}
	}
	return true
}

// hostValue reports whether s is a plain host[:port]: a name, an IPv4
// address or a bracketed IPv6 address.
func hostValue(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == ':' || c == '[' || c == ']' || c == '_') {
			return false
		}
	}
	return len(s) > 0
}

// contentLength parses a Content-Length of at most maxFastBody.
func contentLength(s string) (int64, bool) {
	if len(s) == 0 || len(s) > 8 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int64(s[i]-'0')
	}
	return n, n <= int64(maxFastBody)
}
