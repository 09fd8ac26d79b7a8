package dispatch

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"unicode/utf8"
)

// Message is one JSON-RPC 2.0 message with its members kept as raw JSON, so
// ids, params and results travel byte for byte.
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

// Parse decodes one JSON-RPC message. A line that is not a JSON object is an
// error; a JSON array yields ErrBatch.
func Parse(b []byte) (*Message, error) {
	m := new(Message)
	if err := ParseInto(b, m); err != nil {
		return nil, err
	}
	return m, nil
}

// ParseInto is Parse into a caller-owned Message.
func ParseInto(b []byte, m *Message) error {
	if i := firstNonSpace(b); i >= 0 && b[i] == '[' {
		return ErrBatch
	}
	*m = Message{}
	return json.Unmarshal(b, m)
}

func firstNonSpace(b []byte) int {
	for i, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n':
		default:
			return i
		}
	}
	return -1
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
	case m.Method == "" && len(m.ID) > 0 && (len(m.Result) > 0 || len(m.Error) > 0):
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
// that was too long to parse.
func idFromPrefix(prefix []byte) (uint64, bool) {
	i := bytes.Index(prefix, []byte(`"id"`))
	if i < 0 {
		return 0, false
	}
	rest := bytes.TrimLeft(prefix[i+4:], " \t")
	if len(rest) == 0 || rest[0] != ':' {
		return 0, false
	}
	rest = bytes.TrimLeft(rest[1:], " \t")
	end := 0
	for end < len(rest) && rest[end] >= '0' && rest[end] <= '9' {
		end++
	}
	return parseUint(rest[:end])
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
