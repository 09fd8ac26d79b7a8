package jsonrpc

import (
	"bytes"
	"encoding/binary"
)

// Valid reports whether b is exactly one JSON value (RFC 8259), answering
// as encoding/json's Valid does — the same grammar, bytes ≥ 0x80 accepted in
// strings without a UTF-8 check, nesting up to 10,000 deep — but several
// times faster on long strings: a string's body is found with
// bytes.IndexByte rather than a state transition per byte. Every message
// from a client or a child is validated, so a 1 MiB argument was validated
// at encoding/json's pace twice a call. FuzzValid holds it to encoding/json.
func Valid(b []byte) bool {
	const maxDepth = 10000 // encoding/json's maxNestingDepth
	var stackBuf [32]byte
	stack := stackBuf[:0] // '{' or '[' of each open container
	i := skipSpace(b, 0)
	for {
		// A value starts at i.
		if i >= len(b) {
			return false
		}
		var ok bool
		switch c := b[i]; {
		case c == '{' || c == '[':
			if len(stack) >= maxDepth {
				return false
			}
			stack = append(stack, c)
			i = skipSpace(b, i+1)
			if i < len(b) && b[i] == c+2 { // '}' is '{'+2, ']' is '['+2
				stack = stack[:len(stack)-1]
				i++
				ok = true
				break
			}
			if c == '{' {
				if i, ok = validKey(b, i); !ok {
					return false
				}
			}
			continue // the first member's value
		case c == '"':
			i, ok = validString(b, i)
		case c == '-' || (c >= '0' && c <= '9'):
			i, ok = validNumber(b, i)
		case c == 't':
			i, ok = validLiteral(b, i, "true")
		case c == 'f':
			i, ok = validLiteral(b, i, "false")
		case c == 'n':
			i, ok = validLiteral(b, i, "null")
		}
		if !ok {
			return false
		}
		// After a value: close containers, or a separator and the next one.
		for {
			i = skipSpace(b, i)
			if len(stack) == 0 {
				return i == len(b)
			}
			if i >= len(b) {
				return false
			}
			top := stack[len(stack)-1]
			if b[i] == top+2 {
				stack = stack[:len(stack)-1]
				i++
				continue
			}
			if b[i] != ',' {
				return false
			}
			i = skipSpace(b, i+1)
			if top == '{' {
				if i, ok = validKey(b, i); !ok {
					return false
				}
			}
			break
		}
	}
}

// validKey checks a member's key and colon at b[i:], returning where its
// value starts.
func validKey(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return i, false
	}
	i, ok := validString(b, i)
	if !ok {
		return i, false
	}
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != ':' {
		return i, false
	}
	return skipSpace(b, i+1), true
}

// validString checks the string starting at b[i] ('"') and returns the
// index after it.
//
// It runs in time linear in the string's length however many escapes it
// holds: the next quote, once found, is searched for again only when an
// escape has passed it (\"), so no byte is searched twice. (It was
// searched for again after every escape: 640 KB of \n cost 8.5 s.)
func validString(b []byte, i int) (int, bool) {
	i++
	q := i - 1 // the next '"' at or after i, once q >= i
	for {
		if q < i {
			n := bytes.IndexByte(b[i:], '"')
			if n < 0 {
				return len(b), false
			}
			q = i + n
		}
		// b[i:q] runs up to the next quote: no control character in it,
		// and an escape ends the fast run (it may escape that quote).
		seg := b[i:q]
		esc := -1
		k := 0
		// Eight bytes at a time while none is a control character or a
		// backslash (SWAR: a byte below 0x20, or equal to '\\', sets its
		// high bit in the mask).
		for ; k+8 <= len(seg); k += 8 {
			x := binary.LittleEndian.Uint64(seg[k:])
			y := x ^ 0x5C5C5C5C5C5C5C5C // zero bytes where x has '\\'
			if ((x-0x2020202020202020)|(y-0x0101010101010101))&^x&0x8080808080808080 != 0 {
				break
			}
		}
		for ; k < len(seg); k++ {
			c := seg[k]
			if c < 0x20 {
				return i + k, false
			}
			if c == '\\' {
				esc = k
				break
			}
		}
		if esc < 0 {
			return q + 1, true
		}
		// The escape, and those that follow it at once (a text of many
		// lines is one after another), without looking for a fast run.
		for i += esc; i < q && b[i] == '\\'; {
			i++ // the escaped byte: at q at most, so within b
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if i+5 > len(b) {
					return i, false
				}
				for _, h := range b[i+1 : i+5] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return i, false
					}
				}
				i += 5
			default:
				return i, false
			}
		}
	}
}

// validNumber checks the number starting at b[i] and returns the index
// after it: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func validNumber(b []byte, i int) (int, bool) {
	digits := func(i int) (int, bool) {
		start := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i, i > start
	}
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i, _ = digits(i)
	default:
		return i, false
	}
	var ok bool
	if i < len(b) && b[i] == '.' {
		if i, ok = digits(i + 1); !ok {
			return i, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i, ok = digits(i); !ok {
			return i, false
		}
	}
	return i, true
}

// validLiteral checks that b[i:] starts with lit.
func validLiteral(b []byte, i int, lit string) (int, bool) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return i, false
	}
	return i + len(lit), true
}
