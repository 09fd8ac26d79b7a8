package credstore

import "errors"

// The errors of the store, for errors.Is. Each error returned wraps one of
// them with what happened to which record and what to do; none holds a
// value.
var (
	// ErrInvalid: what was asked to be stored is not storable (a name, a
	// value's size or bytes, the number of variables, an empty key).
	ErrInvalid = errors.New("credentials not stored")
	// ErrOtherKey: the record was sealed under another key than the
	// store's (its key ID differs).
	ErrOtherKey = errors.New("the credentials were stored under another key: restore the key file or ask users to enter them again")
	// ErrDamaged: the record does not open under the store's key although
	// it names it: its bytes were changed (damaged, altered, or moved in
	// the file together with their plaintext).
	ErrDamaged = errors.New("the stored credentials are damaged")
	// ErrMisplaced: the record was written for another destination or user
	// than the one it is stored under (moved in the file).
	ErrMisplaced = errors.New("the stored credentials belong to another destination or user")
	// ErrInUse: another process holds the store's file.
	ErrInUse = errors.New("another bridge holds the credentials store")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("the credentials store is closed")
)
