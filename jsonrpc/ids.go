package jsonrpc

// Uint reads a bridge-minted upstream id: a plain decimal number.
func Uint(b []byte) (uint64, bool) {
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

// UintIDFromPrefix finds a numeric top-level "id" in the first bytes of a line
// that was too long to parse. Only members that end within prefix are seen.
func UintIDFromPrefix(prefix []byte) (uint64, bool) {
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
			return Uint(b[i:vEnd])
		}
		i = vEnd
	}
}
