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
// be valid JSON. Like validString it is linear: the next quote is searched
// for again only once an escape has passed it.
func skipString(b []byte, i int) int {
	i++
	q := i - 1 // the next '"' at or after i, once q >= i
	for i < len(b) {
		// The next quote ends the string unless an escape comes first.
		if q < i {
			n := bytes.IndexByte(b[i:], '"')
			if n < 0 {
				return len(b)
			}
			q = i + n
		}
		if b[i] == '\\' {
			i += 2 // an escape right after another: no search
			continue
		}
		k := bytes.IndexByte(b[i:q], '\\')
		if k < 0 {
			return q + 1
		}
		i += k + 2 // past the escape and the byte it escapes
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
	EachMemberRaw(obj, func(rawKey []byte, start, end int) bool { return fn(String(rawKey), start, end) })
}

// EachMemberRaw is EachMemberAt with the key as written (quoted, escapes
// and all), so that a walk that only compares keys (KeyIs) allocates
// nothing.
func EachMemberRaw(obj []byte, fn func(rawKey []byte, start, end int) bool) {
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
		rawKey := obj[i:kEnd]
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
		if i == vStart || i > len(obj) || !fn(rawKey, vStart, i) {
			return
		}
	}
}

// KeyIs reports whether rawKey, a quoted JSON string, is key; it allocates
// only when rawKey has escapes.
func KeyIs(rawKey []byte, key string) bool {
	if len(rawKey) < 2 {
		return false
	}
	raw := rawKey[1 : len(rawKey)-1]
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw) == key
	}
	return String(rawKey) == key
}

// KeyHasPrefix reports whether rawKey, a quoted JSON string, starts with
// prefix.
func KeyHasPrefix(rawKey []byte, prefix string) bool {
	if len(rawKey) < 2 {
		return false
	}
	raw := rawKey[1 : len(rawKey)-1]
	if bytes.IndexByte(raw, '\\') < 0 {
		return len(raw) >= len(prefix) && string(raw[:len(prefix)]) == prefix
	}
	k := String(rawKey)
	return len(k) >= len(prefix) && k[:len(prefix)] == prefix
}

// Rewrite returns obj, a JSON object the caller has already validated,
// with each member's value as fn decides: fn gets the member's raw key and
// value and returns the value to write — val itself to keep it, other
// bytes (valid JSON) to replace it, nil to drop the member. Kept keys and
// values are copied byte for byte; the separators become single commas.
// When fn keeps every member as it is, obj itself is returned and nothing
// is allocated. It does not validate obj: use Replace or Delete for bytes
// that have not been.
func Rewrite(obj []byte, fn func(rawKey, val []byte) []byte) []byte {
	type piece struct {
		kStart, kEnd int
		val          []byte
	}
	var stack [24]piece
	pieces := stack[:0]
	changed := false
	EachMemberRaw(obj, func(rawKey []byte, start, end int) bool {
		val := obj[start:end:end]
		nv := fn(rawKey, val)
		if nv == nil || len(nv) != len(val) || (len(nv) > 0 && &nv[0] != &val[0]) {
			changed = true
		}
		if nv != nil {
			// rawKey is obj[kStart:kEnd], so its capacity tells where.
			kStart := cap(obj) - cap(rawKey)
			pieces = append(pieces, piece{kStart, kStart + len(rawKey), nv})
		}
		return true
	})
	if !changed {
		return obj
	}
	n := 2
	for _, p := range pieces {
		n += p.kEnd - p.kStart + 2 + len(p.val)
	}
	out := make([]byte, 0, n)
	out = append(out, '{')
	for i, p := range pieces {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(append(append(out, obj[p.kStart:p.kEnd]...), ':'), p.val...)
	}
	return append(out, '}')
}

// MemberSpan returns where the value of obj's member key is (the last one,
// as decoders keep): obj[start:end]; ok is false when there is none.
func MemberSpan(obj []byte, key string) (start, end int, ok bool) {
	EachMemberRaw(obj, func(rawKey []byte, s, e int) bool {
		if KeyIs(rawKey, key) {
			start, end, ok = s, e, true
		}
		return true
	})
	return start, end, ok
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
	start, end, ok := MemberSpan(obj, key)
	if !ok {
		return nil
	}
	return obj[start:end:end]
}

// Replace returns obj, a JSON object, with the value of every member named
// key replaced by value, byte for byte everywhere else: key order, spacing,
// escapes and numbers stay as they were. A member that is absent is added
// at the end. The result is a new slice; obj is not modified.
func Replace(obj []byte, key string, value []byte) ([]byte, error) {
	open := skipSpace(obj, 0)
	if open >= len(obj) || obj[open] != '{' || !Valid(obj) {
		return nil, errNotObject
	}
	out := make([]byte, 0, len(obj)+len(value))
	prev, found := 0, false
	EachMemberRaw(obj, func(k []byte, start, end int) bool {
		if KeyIs(k, key) {
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
	body := bytes.TrimSpace(obj[open+1 : end])
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
	if i >= len(obj) || obj[i] != '{' || !Valid(obj) {
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
