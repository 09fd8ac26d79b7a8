package credstore

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
)

// KeySize is the length of a credentials key: 32 random bytes.
const KeySize = 32

// CredentialsDirEnv is the variable systemd sets to the directory of a
// service's credentials (LoadCredential=, LoadCredentialEncrypted=): the
// caller passes its value to LoadKey.
const CredentialsDirEnv = "CREDENTIALS_DIRECTORY"

// Key is the store's key, as LoadKey read it. It holds no bytes of the key
// itself, only what is derived from them (HKDF-SHA256): the AEAD that seals
// records and an ID each record keeps. It prints, marshals and logs as
// "credstore.Key(redacted)" whatever the verb; its fields sit behind a
// pointer, so a struct holding one prints an address, not them. The zero
// Key is no key: Open refuses it.
type Key struct {
	m *keyMaterial
}

// keyMaterial is what a Key derived; read-only once made.
type keyMaterial struct {
	// aead is AES-256-GCM under the derived sealing key (safe for
	// concurrent use: Seal and Open change nothing in it).
	aead cipher.AEAD
	// id names the key in records (16 hex digits, one-way).
	id string
	// source says where the key was read (a path, never bytes).
	source string
}

// The labels of what is derived from a key's bytes.
const (
	sealInfo = "stelae-bridge credstore seal v1"
	idInfo   = "stelae-bridge credstore key id v1"
)

const redactedKey = "credstore.Key(redacted)"

// String, GoString and Format print "credstore.Key(redacted)".
func (Key) String() string   { return redactedKey }
func (Key) GoString() string { return redactedKey }
func (Key) Format(f fmt.State, _ rune) {
	io.WriteString(f, redactedKey)
}

// MarshalJSON and MarshalText give "credstore.Key(redacted)"; LogValue
// (log/slog) too.
func (Key) MarshalJSON() ([]byte, error) { return json.Marshal(redactedKey) }
func (Key) MarshalText() ([]byte, error) { return []byte(redactedKey), nil }
func (Key) LogValue() slog.Value         { return slog.StringValue(redactedKey) }

// ID names the key without revealing it (16 hex digits derived one-way
// from its bytes): records keep it, so a record sealed under another key
// is told apart from a damaged one. Empty for the zero Key.
func (k Key) ID() string {
	if k.m == nil {
		return ""
	}
	return k.m.id
}

// Source says where the key was read: "key file PATH" or "systemd
// credential PATH" (the caller logs it at start, so an operator sees which
// one is in use). Empty for the zero Key.
func (k Key) Source() string {
	if k.m == nil {
		return ""
	}
	return k.m.source
}

// newKey derives a Key from raw (KeySize bytes), which it clears.
func newKey(raw []byte, source string) (Key, error) {
	defer clear(raw)
	if len(raw) != KeySize {
		return Key{}, fmt.Errorf("a credentials key is %d bytes, not %d", KeySize, len(raw))
	}
	sealKey, err := hkdf.Key(sha256.New, raw, nil, sealInfo, 32)
	if err != nil {
		return Key{}, err
	}
	defer clear(sealKey)
	id, err := hkdf.Key(sha256.New, raw, nil, idInfo, 8)
	if err != nil {
		return Key{}, err
	}
	block, err := aes.NewCipher(sealKey)
	if err != nil {
		return Key{}, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return Key{}, err
	}
	return Key{m: &keyMaterial{aead: aead, id: hex.EncodeToString(id), source: source}}, nil
}

// LoadKey reads the store's key. When credsDir (the caller's
// $CREDENTIALS_DIRECTORY, CredentialsDirEnv; "" for none) holds a file
// named as path's last element, that systemd credential is the key
// (LoadCredential=credentials.key:/etc/…); otherwise the key file at path,
// which is created on first use (32 bytes from crypto/rand, mode 0600,
// written whole or not at all: bridges starting together on one directory
// share one key). A key of the wrong size, all zero, or open to other users
// (any group or other permission bit, where modes say it) is refused with
// the fix; a key that is refused is never replaced — the records sealed
// under it would be lost. The key's bytes are cleared once derived.
func LoadKey(path, credsDir string) (Key, error) {
	if path == "" {
		return Key{}, errors.New("no credentials key file named: give the key file's path (in the state directory, or a systemd credential's name)")
	}
	if credsDir != "" {
		cred := filepath.Join(credsDir, filepath.Base(path))
		raw, err := readKey(cred, "systemd credential")
		if err == nil {
			return newKey(raw, "systemd credential "+cred)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return Key{}, err
		}
	}
	for range 2 { // read; else create, and read what is there
		raw, err := readKey(path, "key file")
		if err == nil {
			return newKey(raw, "key file "+path)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return Key{}, err
		}
		if err := createKey(path); err != nil && !errors.Is(err, fs.ErrExist) {
			return Key{}, fmt.Errorf("cannot create the credentials key %s: %w (its directory must be the bridge's own and writable: pass -state-dir)", path, err)
		}
	}
	return Key{}, fmt.Errorf("the credentials key %s was created but cannot be read", path)
}

// readKey reads the key at path (what: "key file" or "systemd
// credential"), checking the open file itself: a regular file, private,
// KeySize bytes, not all zero. An absent file is an error wrapping
// fs.ErrNotExist.
func readKey(path, what string) ([]byte, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read the credentials key (%s) %s: %w (it must be readable by the bridge's user)", what, path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("cannot read the credentials key (%s) %s: %w", what, path, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("the credentials key (%s) %s is not a regular file (%s): point it at a file of %d random bytes", what, path, st.Mode().Type(), KeySize)
	}
	if openToOthers(st) {
		return nil, fmt.Errorf("the credentials key (%s) %s is open to other users (mode %#o): run chmod 600 %s — and if others could read it, ask users to enter their credentials again (a reader of the key and the store can decrypt them)",
			what, path, st.Mode().Perm(), path)
	}
	raw := make([]byte, KeySize+1)
	n, err := io.ReadFull(f, raw)
	switch {
	case err == nil || n > KeySize:
		clear(raw)
		return nil, fmt.Errorf("the credentials key (%s) %s is longer than %d bytes: it is not a key this bridge made, or it is damaged — restore it from a backup; to start over, move it away (every stored credential then has to be entered again); to make one: head -c %d /dev/urandom > FILE",
			what, path, KeySize, KeySize)
	case n < KeySize:
		clear(raw)
		if !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("cannot read the credentials key (%s) %s: %w", what, path, err)
		}
		return nil, fmt.Errorf("the credentials key (%s) %s is %d bytes, not %d: it is damaged — restore it from a backup; to start over, move it away (every stored credential then has to be entered again); to make one: head -c %d /dev/urandom > FILE",
			what, path, n, KeySize, KeySize)
	}
	raw = raw[:KeySize]
	if allZero(raw) {
		return nil, fmt.Errorf("the credentials key (%s) %s is all zero bytes, not a random key: write %d random bytes to it (head -c %d /dev/urandom > FILE) before any credential is stored",
			what, path, KeySize, KeySize)
	}
	return raw, nil
}

func allZero(b []byte) bool {
	var or byte
	for _, c := range b {
		or |= c
	}
	return or == 0
}

// createKey writes a new key at path whole or not at all: into a
// temporary file (0600) of the same directory, then linked to path — which
// fails with fs.ErrExist, the temporary file removed, when another bridge
// made its key first (both then read that one).
func createKey(path string) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	key := make([]byte, KeySize)
	defer clear(key)
	rand.Read(key) // never fails (crypto/rand, Go 1.24)

	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+"-*") // mode 0600
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(key)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Link(tmp.Name(), path)
}
