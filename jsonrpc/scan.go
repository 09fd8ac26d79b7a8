package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
)

// String decodes a JSON string value, without allocating for the
// common method names.
func String(val []byte) string {
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

// EachMember calls fn with the key and raw value of each top-level member of
// obj, in order, until fn returns false. Values are slices of obj whose
// capacity ends with them. Anything that is not a well-formed object ends
// the walk early.
func EachMember(obj []byte, fn func(key string, val []byte) bool) {
	EachMemberAt(obj, func(key string, start, end int) bool { return fn(key, obj[start:end:end]) })
}

// EachMemberAt is EachMember with the value given as obj[start:end].
func EachMemberAt(obj []byte, fn func(key string, start, end int) bool) {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return
	}
	i++
	for {
		i = skipSpace(obj, i)
		if i < len(obj) && obj[i] == ',' {
			i = skipSpace(obj, i+1)
		}
		if i >= len(obj) || obj[i] != '"' {
			return // '}' or malformed
		}
		kEnd := skipString(obj, i)
		if kEnd > len(obj) {
			return // an unterminated string
		}
		key := String(obj[i:kEnd])
		i = skipSpace(obj, kEnd)
		if i >= len(obj) || obj[i] != ':' {
			return
		}
		i = skipSpace(obj, i+1)
		if i >= len(obj) {
			return
		}
		vStart := i
		i = skipValue(obj, i)
		if i == vStart || i > len(obj) || !fn(key, vStart, i) {
			return
		}
	}
}

// EachElement calls fn with each element of the JSON array arr. Elements are
// slices of arr.
func EachElement(arr []byte, fn func(elem []byte)) {
	i := skipSpace(arr, 0)
	if i >= len(arr) || arr[i] != '[' {
		return
	}
	i++
	for {
		i = skipSpace(arr, i)
		if i < len(arr) && arr[i] == ',' {
			i = skipSpace(arr, i+1)
		}
		if i >= len(arr) || arr[i] == ']' {
			return
		}
		start := i
		i = skipValue(arr, i)
		if i == start || i > len(arr) {
			return // malformed
		}
		fn(arr[start:i:i])
	}
}

// Member returns the raw value of obj's member key (the last one, as
// decoders keep, when it appears twice); nil when obj is not an object or
// has no such member.
func Member(obj []byte, key string) json.RawMessage {
	var val json.RawMessage
	EachMember(obj, func(k string, v []byte) bool {
		if k == key {
			val = v
		}
		return true
	})
	return val
}

// Replace returns obj, a JSON object, with the value of every member named
// key replaced by value, byte for byte everywhere else: key order, spacing,
// escapes and numbers stay as they were. A member that is absent is added
// at the end. The result is a new slice; obj is not modified.
func Replace(obj []byte, key string, value []byte) ([]byte, error) {
	if i := skipSpace(obj, 0); i >= len(obj) || obj[i] != '{' || !json.Valid(obj) {
		return nil, errNotObject
	}
	out := make([]byte, 0, len(obj)+len(value))
	prev, found := 0, false
	EachMemberAt(obj, func(k string, start, end int) bool {
		if k == key {
			out = append(append(out, obj[prev:start]...), value...)
			prev, found = end, true
		}
		return true
	})
	if found {
		return append(out, obj[prev:]...), nil
	}
	// Add it before the closing brace.
	end := len(obj) - 1
	for end > 0 && obj[end] != '}' {
		end--
	}
	body := bytes.TrimSpace(obj[1:end])
	out = append(out, obj[:end]...)
	if len(body) > 0 {
		out = append(out, ',')
	}
	out = AppendString(out, key)
	out = append(append(out, ':'), value...)
	return append(out, obj[end:]...), nil
}

var errNotObject = errors.New("not a JSON object")

// Delete returns obj, a JSON object, without the members drop selects. The
// kept members are copied byte for byte (key, spacing inside, value); the
// separators between them become single commas. When nothing is dropped obj
// itself is returned.
func Delete(obj []byte, drop func(key string) bool) ([]byte, error) {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' || !json.Valid(obj) {
		return nil, errNotObject
	}
	type span struct{ start, end int }
	var kept []span
	dropped := false
	i++
	for {
		i = skipSpace(obj, i)
		if i < len(obj) && obj[i] == ',' {
			i = skipSpace(obj, i+1)
		}
		if i >= len(obj) || obj[i] != '"' {
			break
		}
		kStart := i
		kEnd := skipString(obj, i)
		key := String(obj[kStart:kEnd])
		i = skipSpace(obj, kEnd)
		i = skipSpace(obj, i+1) // the colon
		vEnd := skipValue(obj, i)
		if drop(key) {
			dropped = true
		} else {
			kept = append(kept, span{kStart, vEnd})
		}
		i = vEnd
	}
	if !dropped {
		return obj, nil
	}
	out := make([]byte, 0, len(obj))
	out = append(out, '{')
	for n, s := range kept {
		if n > 0 {
			out = append(out, ',')
		}
		out = append(out, obj[s.start:s.end]...)
	}
	return append(out, '}'), nil
}
