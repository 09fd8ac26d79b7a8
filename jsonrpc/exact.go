package jsonrpc

import (
	"bytes"
	"fmt"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// This file reads the members the bridge routes or filters on (a tool's
// "name", a resource's "uri", "_meta.progressToken", …) so that the child
// reads the same value, whatever its decoder: Go's encoding/json matches
// member names without regard to case (Unicode simple folding: "URI",
// "\u212Aey" for "key", "ſ" for "s") and keeps the last of duplicates;
// encoding/json/v2 with case-insensitive matching also ignores '_' and
// '-'; JavaScript and Python decoders are case-sensitive and keep the
// last; others keep the first. The bridge reads a member only when all of
// them read that one: one member named exactly key (as decoded: "\u0075ri"
// is "uri") and no other whose name any of them could take for key.

// MemberError is why ExactMember would not read a member; its message
// says what was found and what to send instead.
type MemberError struct {
	// Key is the member asked for.
	Key string
	msg string
}

func (e *MemberError) Error() string { return e.msg }

// ExactMember returns the raw value of obj's member key when every decoder
// reads that value as key: obj is a JSON object, exactly one of its members
// is named key (compared after unescaping, as decoders do), and no other
// member's name folds to key — letter case in Unicode simple folding (as
// strings.EqualFold and encoding/json), full case folding into ASCII
// letters ("ß" is "ss", "ﬁ" is "fi"), the Turkish dotted and dotless i,
// and '_' and '-' ignored (as encoding/json/v2 matches without case). It
// returns nil and no error when no member's name folds to key, and a
// *MemberError when obj is not an object or key is given twice (whatever
// the values) or in another form. obj must be valid JSON (a parsed
// message, or a value within one). It runs in time linear in len(obj).
func ExactMember(obj []byte, key string) ([]byte, error) {
	var val [1][]byte
	err := ExactMembers(obj, []string{key}, val[:])
	return val[0], err
}

// ExactMembers is ExactMember for several keys in one walk over obj:
// vals[i] gets keys[i]'s value (nil when absent). The keys must not fold
// to one another. The error is the first member found wrong.
func ExactMembers(obj []byte, keys []string, vals [][]byte) error {
	clear(vals[:len(keys)])
	i := spaceAfter(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return &MemberError{keys[0], fmt.Sprintf("expected a JSON object with %q", keys[0])}
	}
	var err error
	end := i + 1
	EachMemberRaw(obj, func(rawKey []byte, start, stop int) bool {
		end = stop
		if len(rawKey) < 2 {
			end = 0 // malformed: the check below refuses it
			return false
		}
		raw := rawKey[1 : len(rawKey)-1]
		if bytes.IndexByte(raw, '\\') >= 0 {
			raw = []byte(String(rawKey)) // the name as decoders read it
		}
		for k, key := range keys {
			switch {
			case string(raw) == key:
				if vals[k] != nil {
					err = &MemberError{key, fmt.Sprintf("%q must be one member named exactly %q: it is given twice", key, key)}
					return false
				}
				vals[k] = obj[start:stop:stop]
			case foldsTo(raw, key):
				err = &MemberError{key, fmt.Sprintf("%q must be one member named exactly %q, not %s", key, key, quoteName(raw))}
				return false
			}
		}
		return true
	})
	if err != nil {
		clear(vals[:len(keys)])
		return err
	}
	// The walk stops early at anything malformed: it must have reached
	// the object's end.
	if j := spaceAfter(obj, end); j >= len(obj) || obj[j] != '}' {
		clear(vals[:len(keys)])
		return &MemberError{keys[0], fmt.Sprintf("expected a well-formed JSON object with %q", keys[0])}
	}
	return nil
}

// quoteName quotes a member's name for an error message, at most 60 bytes
// of it.
func quoteName(name []byte) string {
	if len(name) > 60 {
		return strconv.QuoteToASCII(string(name[:60])) + "…"
	}
	return strconv.QuoteToASCII(string(name))
}

func spaceAfter(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// foldsTo reports whether a lenient decoder could take the member name
// for key: their folded forms (nameFolder) are the same.
func foldsTo(name []byte, key string) bool {
	// ASCII first, at once; nameFolder from the first other byte on.
	i, j := 0, 0
	for {
		for i < len(name) && (name[i] == '_' || name[i] == '-') {
			i++
		}
		for j < len(key) && (key[j] == '_' || key[j] == '-') {
			j++
		}
		if i == len(name) || j == len(key) {
			return i == len(name) && j == len(key)
		}
		a, b := name[i], key[j]
		if a >= utf8.RuneSelf || b >= utf8.RuneSelf {
			return foldsToRunes(name[i:], key[j:])
		}
		if 'a' <= a && a <= 'z' {
			a -= 'a' - 'A'
		}
		if 'a' <= b && b <= 'z' {
			b -= 'a' - 'A'
		}
		if a != b {
			return false
		}
		i, j = i+1, j+1
	}
}

// foldsToRunes is foldsTo rune by rune.
func foldsToRunes(name []byte, key string) bool {
	a, b := nameFolder{s: name}, nameFolder{s: []byte(key)}
	for {
		ra, okA := a.next()
		rb, okB := b.next()
		if !okA || !okB {
			return okA == okB
		}
		if ra != rb {
			return false
		}
	}
}

// nameFolder yields a name's runes as the most lenient decoders compare them:
// '_' and '-' dropped, each rune the smallest of its simple-folding orbit
// (ASCII letters upper case), the full foldings into ASCII letters
// expanded.
type nameFolder struct {
	s       []byte
	i       int
	pending string // the rest of an expansion
}

// foldExpansions are the full case foldings (Unicode CaseFolding.txt, status
// F) that yield only ASCII letters, and the Turkish i's (Java's
// toLowerCase in a Turkish locale makes "İ" "i"), folded as nameFolder
// yields them.
var foldExpansions = map[rune]string{
	'ß': "SS", 'ẞ': "SS",
	'ﬀ': "FF", 'ﬁ': "FI", 'ﬂ': "FL", 'ﬃ': "FFI", 'ﬄ': "FFL", 'ﬅ': "ST", 'ﬆ': "ST",
	'İ': "I", 'ı': "I",
}

func (f *nameFolder) next() (rune, bool) {
	for {
		if f.pending != "" {
			c := f.pending[0]
			f.pending = f.pending[1:]
			return rune(c), true
		}
		if f.i >= len(f.s) {
			return 0, false
		}
		if c := f.s[f.i]; c < utf8.RuneSelf {
			f.i++
			switch {
			case c == '_' || c == '-':
				continue
			case 'a' <= c && c <= 'z':
				c -= 'a' - 'A'
			}
			return rune(c), true
		}
		r, n := utf8.DecodeRune(f.s[f.i:])
		f.i += n
		if exp, ok := foldExpansions[r]; ok {
			f.pending = exp[1:]
			return rune(exp[0]), true
		}
		return foldOrbit(r), true
	}
}

// foldOrbit is the smallest rune of r's simple-folding orbit, as
// encoding/json folds names.
func foldOrbit(r rune) rune {
	for n := 0; n < 8; n++ { // orbits have at most four runes
		r2 := unicode.SimpleFold(r)
		if r2 <= r {
			return r2
		}
		r = r2
	}
	return r
}
