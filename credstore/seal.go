package credstore

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// record is what the file keeps under a (destination, user): in plaintext
// only what a listing shows and what opening needs; the values sealed.
type record struct {
	// Format is recordFormat.
	Format int `json:"format"`
	// Dest and User are the key it was written under: a record found under
	// another key was moved (ErrMisplaced). The same pair is the AEAD's
	// additional data, so editing these to match does not open it either.
	Dest string `json:"dest"`
	User string `json:"user"`
	// Display is the user's name for listings.
	Display string `json:"display,omitempty"`
	// Names are the variables set, sorted (never their values).
	Names []string `json:"names"`
	// Set is when the user's credentials were first set here; Updated when
	// last replaced.
	Set     time.Time `json:"set"`
	Updated time.Time `json:"updated"`
	// KeyID is the ID of the key that sealed it (Key.ID).
	KeyID string `json:"key_id"`
	// Nonce is the AEAD's nonce, fresh from crypto/rand for each write.
	Nonce []byte `json:"nonce"`
	// Sealed is the AEAD's output over the encoded values (encodeVars).
	Sealed []byte `json:"sealed"`
}

// recordFormat is the record format this package writes and reads.
const recordFormat = 1

// additionalData binds a sealed record to its (destination, user): each
// length-prefixed after a label of the format.
func additionalData(dest, user string) []byte {
	ad := make([]byte, 0, 40+len(dest)+len(user))
	ad = append(ad, "stelae-bridge credstore record v1\x00"...)
	ad = binary.AppendUvarint(ad, uint64(len(dest)))
	ad = append(ad, dest...)
	ad = binary.AppendUvarint(ad, uint64(len(user)))
	ad = append(ad, user...)
	return ad
}

// encodeVars is the plaintext of a set: for each name in names (sorted),
// the name and its value, each length-prefixed — exact bytes, whatever
// they are (JSON would replace invalid UTF-8).
func encodeVars(names []string, vars map[string]string) []byte {
	size := 0
	for _, n := range names {
		size += 2*binary.MaxVarintLen32 + len(n) + len(vars[n])
	}
	b := make([]byte, 0, size)
	for _, n := range names {
		b = binary.AppendUvarint(b, uint64(len(n)))
		b = append(b, n...)
		b = binary.AppendUvarint(b, uint64(len(vars[n])))
		b = append(b, vars[n]...)
	}
	return b
}

// decodeEnv reads encodeVars's plaintext as NAME=value strings, checking
// that its names are want (the record's plaintext names) and each what
// Set accepts; false when it is not so.
func decodeEnv(b []byte, want []string) ([]string, bool) {
	env := make([]string, 0, len(want))
	for i := 0; len(b) > 0; i++ {
		name, rest, ok := field(b, MaxNameBytes)
		if !ok {
			return nil, false
		}
		value, rest, ok := field(rest, MaxValueBytes)
		if !ok || i >= len(want) || string(name) != want[i] || !ValidName(want[i]) || bytes.IndexByte(value, 0) >= 0 {
			return nil, false
		}
		env = append(env, want[i]+"="+string(value))
		b = rest
	}
	return env, len(env) == len(want)
}

// field reads one length-prefixed field of at most limit bytes.
func field(b []byte, limit int) (f, rest []byte, ok bool) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(limit) || n > uint64(len(b)-k) {
		return nil, nil, false
	}
	return b[k : k+int(n)], b[k+int(n):], true
}

// seal fills rec's KeyID, Nonce and Sealed with vars under key, for
// rec.Dest and rec.User; rec.Names must be vars' names, sorted.
func seal(key Key, rec *record, vars map[string]string) {
	plain := encodeVars(rec.Names, vars)
	defer clear(plain)
	nonce := make([]byte, key.m.aead.NonceSize())
	rand.Read(nonce) // never fails (crypto/rand, Go 1.24)
	rec.KeyID = key.m.id
	rec.Nonce = nonce
	rec.Sealed = key.m.aead.Seal(nil, nonce, plain, additionalData(rec.Dest, rec.User))
}

// open is the environment rec holds, stored under (dest, user), or why it
// cannot be opened (its error names the record, never a value).
func open(key Key, dest, user string, rec *record) ([]string, error) {
	if rec.Dest != dest || rec.User != user {
		return nil, recordError(dest, user, rec.Display, ErrMisplaced,
			"it was written for another and moved in the file; delete it and ask the user to enter them again")
	}
	if rec.KeyID != key.m.id {
		return nil, recordError(dest, user, rec.Display, ErrOtherKey, "")
	}
	if len(rec.Nonce) != key.m.aead.NonceSize() || !slices.IsSorted(rec.Names) {
		return nil, damaged(dest, user, rec.Display)
	}
	plain, err := key.m.aead.Open(nil, rec.Nonce, rec.Sealed, additionalData(dest, user))
	if err != nil {
		return nil, damaged(dest, user, rec.Display)
	}
	defer clear(plain)
	env, ok := decodeEnv(plain, rec.Names)
	if !ok {
		return nil, damaged(dest, user, rec.Display)
	}
	return env, nil
}

func damaged(dest, user, display string) error {
	return recordError(dest, user, display, ErrDamaged,
		"it does not open under the key that sealed it (damaged, altered, or moved in the file): delete it and ask the user to enter them again")
}

// recordError is err for the record of (dest, user) with what to do.
func recordError(dest, user, display string, err error, todo string) error {
	who := fmt.Sprintf("user %q", user)
	if display != "" {
		who = fmt.Sprintf("user %q (%s)", user, display)
	}
	if todo == "" {
		return fmt.Errorf("credentials of %s on destination %q: %w", who, dest, err)
	}
	return fmt.Errorf("credentials of %s on destination %q: %w: %s", who, dest, err, todo)
}

// unmarshalRecord reads a stored record; a record that does not read is
// damaged.
func unmarshalRecord(dest, user string, v []byte) (*record, error) {
	var rec record
	if err := json.Unmarshal(v, &rec); err != nil || rec.Format < recordFormat {
		return nil, recordError(dest, user, "", ErrDamaged,
			"its plaintext does not read as a record of this bridge: delete it and ask the user to enter them again")
	}
	if rec.Format > recordFormat {
		return nil, recordError(dest, user, rec.Display, ErrDamaged,
			fmt.Sprintf("it is of format %d, written by a newer bridge than this one (format %d): run that bridge, or delete it and ask the user to enter them again", rec.Format, recordFormat))
	}
	return &rec, nil
}
