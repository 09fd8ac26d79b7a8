package authserver

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"errors"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/argon2"
)

// This file is how a user's secret is kept: argon2id (RFC 9106), salted,
// its parameters stored with the hash so that changing them later still
// checks the secrets set before.

// The argon2id parameters of new secrets: the OWASP Password Storage Cheat
// Sheet's argon2id configuration (19 MiB, 2 passes, 1 lane), about 40 ms
// on one core. A sign-in is tried only past the lockout, and at most
// kdfConcurrent run at once, so guessers cannot make the bridge hold more
// than kdfConcurrent × 19 MiB.
const (
	kdfName    = "argon2id"
	kdfMemory  = 19 * 1024 // KiB
	kdfTime    = 2
	kdfThreads = 1
	kdfSaltLen = 16
	kdfKeyLen  = 32
	// kdfConcurrent bounds the secrets hashed at once; kdfWait how long a
	// sign-in waits for its turn before the page says to try again.
	kdfConcurrent = 2
	kdfWait       = 10 * time.Second
	// Secrets are 12 characters at least and 1,024 bytes at most (what
	// the KDF hashes is bounded).
	minSecretChars = 12
	maxSecretBytes = 1024
)

// secretHash is a stored secret: the KDF, its parameters, salt and hash.
type secretHash struct {
	KDF     string `json:"kdf"`
	Memory  uint32 `json:"m"`
	Time    uint32 `json:"t"`
	Threads uint8  `json:"p"`
	Salt    []byte `json:"salt"`
	Hash    []byte `json:"hash"`
}

// kdfSlots holds a slot per secret being hashed; kdfAsks counts the
// hashings asked for (what the tests see of the lockout's order).
var (
	kdfSlots = make(chan struct{}, kdfConcurrent)
	kdfAsks  atomic.Int64
)

var errKDFBusy = errors.New("too many sign-ins at once; try again in a few seconds")

// withKDFSlot runs f once a slot is free (errKDFBusy after kdfWait, or
// ctx's error).
func withKDFSlot(ctx context.Context, f func()) error {
	kdfAsks.Add(1)
	t := time.NewTimer(kdfWait)
	defer t.Stop()
	select {
	case kdfSlots <- struct{}{}:
	case <-t.C:
		return errKDFBusy
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-kdfSlots }()
	f()
	return nil
}

// hashSecret hashes a new secret with the current parameters.
func hashSecret(ctx context.Context, secret string) (*secretHash, error) {
	salt := make([]byte, kdfSaltLen)
	if _, err := rand.Read(salt); err != nil {
		return nil, err
	}
	h := &secretHash{KDF: kdfName, Memory: kdfMemory, Time: kdfTime, Threads: kdfThreads, Salt: salt}
	err := withKDFSlot(ctx, func() { h.Hash = argon2.IDKey([]byte(secret), salt, h.Time, h.Memory, h.Threads, kdfKeyLen) })
	return h, err
}

// dummySecret stands in for a user who does not exist, so that a wrong
// name costs the same time as a wrong secret.
var dummySecret = secretHash{KDF: kdfName, Memory: kdfMemory, Time: kdfTime, Threads: kdfThreads, Salt: make([]byte, kdfSaltLen), Hash: make([]byte, kdfKeyLen)}

// check reports whether secret is the one h was made from (compared in
// constant time). A hash with parameters it does not know is never
// matched.
func (h *secretHash) check(ctx context.Context, secret string) (bool, error) {
	if h == nil || h.KDF != kdfName || h.Memory == 0 || h.Memory > 1<<20 || h.Time == 0 || h.Time > 16 || h.Threads == 0 || len(h.Hash) != kdfKeyLen {
		h = &dummySecret
	}
	var got []byte
	if err := withKDFSlot(ctx, func() { got = argon2.IDKey([]byte(secret), h.Salt, h.Time, h.Memory, h.Threads, kdfKeyLen) }); err != nil {
		return false, err
	}
	return h != &dummySecret && subtle.ConstantTimeCompare(got, h.Hash) == 1, nil
}
