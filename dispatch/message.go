package dispatch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Message is one JSON-RPC 2.0 message with its members kept as raw JSON, so
// ids, params and results travel byte for byte. Messages from Parse alias the
// bytes they were parsed from.
type Message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

// Kind classifies a message.
type Kind int

// The kinds of JSON-RPC message.
const (
	KindInvalid Kind = iota
	KindRequest
	KindNotification
	KindResponse
)

// ErrBatch is returned by Parse for a JSON array.
var ErrBatch = errors.New("JSON-RPC batching is not supported; send one message per request")

// Parse decodes one JSON-RPC message into a new Message whose members alias
// b. A line that is not a JSON object is an error; a JSON array yields
// ErrBatch.
func Parse(b []byte) (*Message, error) {
	m := new(Message)
	if err := ParseInto(b, m); err != nil {
		return nil, err
	}
	return m, nil
}

// ParseInto is Parse into a caller-owned Message. It does not copy: ID,
// Params, Result and Error are slices of b, valid as long as b is.
func ParseInto(b []byte, m *Message) error {
	*m = Message{}
	i := skipSpace(b, 0)
	if i < len(b) && b[i] == '[' {
		return ErrBatch
	}
	if !json.Valid(b) {
		// Let encoding/json describe the syntax error.
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		return errors.New("invalid JSON")
	}
	if i >= len(b) || b[i] != '{' {
		return errors.New("a JSON-RPC message must be a JSON object")
	}
	// b is valid JSON: walk the top-level members only. Each member the
	// bridge reads may appear once, in lower case: a decoder that matches
	// names without regard to case, or keeps another of duplicates, must
	// not read a different message than the bridge does.
	var seen uint8
	i++
	for {
		i = skipSpace(b, i)
		if b[i] == '}' {
			return nil
		}
		if b[i] == ',' {
			i = skipSpace(b, i+1)
		}
		kEnd := skipString(b, i)
		key := b[i+1 : kEnd-1]
		i = skipSpace(b, kEnd)
		i = skipSpace(b, i+1) // the colon
		vStart := i
		i = skipValue(b, i)
		val := b[vStart:i]
		if bytes.IndexByte(key, '\\') >= 0 {
			var k string
			_ = json.Unmarshal(b[kEnd-len(key)-2:kEnd], &k)
			key = []byte(k)
		}
		if bit := memberBit(key); bit != 0 {
			if seen&bit != 0 {
				return fmt.Errorf("member %q appears twice; send each of jsonrpc, id, method, params, result and error at most once", key)
			}
			seen |= bit
		} else if k := string(key); len(k) <= 24 && (strings.EqualFold(k, "jsonrpc") || strings.EqualFold(k, "id") || strings.EqualFold(k, "method") ||
			strings.EqualFold(k, "params") || strings.EqualFold(k, "result") || strings.EqualFold(k, "error")) {
			return fmt.Errorf("member %q: JSON-RPC member names are lower case (jsonrpc, id, method, params, result, error)", k)
		}
		switch string(key) {
		case "jsonrpc":
			m.JSONRPC = internString(val)
		case "id":
			m.ID = val
		case "method":
			if val[0] != '"' {
				return errors.New(`"method" must be a string`)
			}
			m.Method = internString(val)
		case "params":
			m.Params = val
		case "result":
			m.Result = val
		case "error":
			m.Error = val
		}
	}
}

// memberBit is the bit of a JSON-RPC member name in ParseInto's seen set; 0
// for other names.
func memberBit(key []byte) uint8 {
	switch string(key) {
	case "jsonrpc":
		return 1
	case "id":
		return 2
	case "method":
		return 4
	case "params":
		return 8
	case "result":
		return 16
	case "error":
		return 32
	}
	return 0
}

// internString decodes a JSON string value, without allocating for the
// common method names.
func internString(val []byte) string {
	if len(val) < 2 || val[0] != '"' {
		return ""
	}
	raw := val[1 : len(val)-1]
	if bytes.IndexByte(raw, '\\') >= 0 {
		var s string
		_ = json.Unmarshal(val, &s)
		return s
	}
	switch string(raw) {
	case "2.0":
		return "2.0"
	case "tools/call":
		return "tools/call"
	case "tools/list":
		return "tools/list"
	case "initialize":
		return "initialize"
	case "ping":
		return "ping"
	case "notifications/initialized":
		return "notifications/initialized"
	case "notifications/progress":
		return "notifications/progress"
	case "notifications/cancelled":
		return "notifications/cancelled"
	case "resources/read":
		return "resources/read"
	case "resources/list":
		return "resources/list"
	case "prompts/get":
		return "prompts/get"
	case "prompts/list":
		return "prompts/list"
	}
	return string(raw)
}

func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// skipString returns the index after the JSON string starting at b[i]. b must
// be valid JSON.
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return i
}

// skipValue returns the index after the JSON value starting at b[i]. b must
// be valid JSON.
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = skipString(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return i
	}
	for ; i < len(b); i++ {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return i
		}
	}
	return i
}

// HasID reports whether the message carries a non-null id.
func (m *Message) HasID() bool {
	return len(m.ID) > 0 && string(m.ID) != "null"
}

// Kind tells request, notification, response or invalid.
func (m *Message) Kind() Kind {
	switch {
	case m.Method != "" && m.HasID():
		if !validID(m.ID) {
			return KindInvalid
		}
		return KindRequest
	case m.Method != "" && len(m.ID) == 0:
		return KindNotification
	case m.Method == "" && (validID(m.ID) || string(m.ID) == "null") && (len(m.Result) > 0 || len(m.Error) > 0):
		return KindResponse
	}
	return KindInvalid
}

// validID accepts the id forms JSON-RPC allows: a string or a number.
func validID(id json.RawMessage) bool {
	if len(id) == 0 {
		return false
	}
	c := id[0]
	return c == '"' || c == '-' || (c >= '0' && c <= '9')
}

// appendResponse writes a response with the given id and the child's result
// or error.
func appendResponse(dst []byte, id json.RawMessage, result, rpcErr json.RawMessage) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = append(dst, id...)
	if len(rpcErr) > 0 {
		dst = append(dst, `,"error":`...)
		dst = append(dst, rpcErr...)
	} else {
		dst = append(dst, `,"result":`...)
		if len(result) == 0 {
			result = json.RawMessage("null")
		}
		dst = append(dst, result...)
	}
	return append(dst, '}')
}

// appendRequest writes a request (id set) or notification (id nil).
func appendRequest(dst []byte, id []byte, method string, params json.RawMessage) []byte {
	dst = append(dst, `{"jsonrpc":"2.0",`...)
	if id != nil {
		dst = append(dst, `"id":`...)
		dst = append(dst, id...)
		dst = append(dst, ',')
	}
	dst = append(dst, `"method":`...)
	dst = appendString(dst, method)
	if len(params) > 0 {
		dst = append(dst, `,"params":`...)
		dst = append(dst, params...)
	}
	return append(dst, '}')
}

// ErrorResponse builds a JSON-RPC error response.
func ErrorResponse(id json.RawMessage, code int, message string) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b := append([]byte(`{"jsonrpc":"2.0","id":`), id...)
	b = append(b, `,"error":{"code":`...)
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, `,"message":`...)
	b = appendString(b, message)
	return append(b, `}}`...)
}

// appendString appends s as a JSON string.
func appendString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			enc, _ := json.Marshal(s)
			return append(dst, enc...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// parseUint reads a bridge-minted upstream id: a plain decimal number.
func parseUint(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	return n, true
}

// idFromPrefix finds a numeric top-level "id" in the first bytes of a line
// that was too long to parse. Only members that end within prefix are seen.
func idFromPrefix(prefix []byte) (uint64, bool) {
	b := prefix
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return 0, false
	}
	i++
	for {
		i = skipSpace(b, i)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
		}
		if i >= len(b) || b[i] != '"' {
			return 0, false
		}
		kEnd := skipString(b, i)
		if kEnd > len(b) || kEnd-1 <= i || b[kEnd-1] != '"' {
			return 0, false
		}
		key := b[i+1 : kEnd-1]
		i = skipSpace(b, kEnd)
		if i >= len(b) || b[i] != ':' {
			return 0, false
		}
		i = skipSpace(b, i+1)
		if i >= len(b) {
			return 0, false
		}
		vEnd := skipValue(b, i)
		if vEnd >= len(b) {
			return 0, false // the value runs past the prefix
		}
		if string(key) == "id" {
			return parseUint(b[i:vEnd])
		}
		i = vEnd
	}
}

// replaceMember returns obj (a JSON object) with member key set to value.
func replaceMember(obj json.RawMessage, key string, value json.RawMessage) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(obj, &m); err != nil {
		return nil, err
	}
	m[key] = value
	return json.Marshal(m)
}

// member reads one member of a JSON object; nil when absent.
func member(obj json.RawMessage, key string) json.RawMessage {
	if len(obj) == 0 {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(obj, &m) != nil {
		return nil
	}
	return m[key]
}
