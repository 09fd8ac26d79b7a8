package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
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
	if !Valid(b) {
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
			m.JSONRPC = String(val)
		case "id":
			m.ID = val
		case "method":
			if val[0] != '"' {
				return errors.New(`"method" must be a string`)
			}
			m.Method = String(val)
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
