// Package lockout holds guesses of a secret a person types (the built-in
// authorization server's passphrase, the console's sign-in): it counts
// wrong tries per guesser (an address, an IPv6 address by its /64, or any
// key its caller names) and for everyone together, and says how long the
// next try must wait.
//
// Past Free wrong tries from one key, or FreeAll from everyone (when
// FreeAll > 0), each further try waits twice as long as the last (2 s …
// 15 min). Failures are forgotten an hour after the last (per key, and
// for the whole count alike). The keys are kept in an LRU of at most Max
// (the least recently failing go first, one at a time; nothing is cleared
// wholesale). The clock is Now (time.Now unless a test sets it).
//
// It never holds a credential that cannot be guessed: its callers check
// such a credential (a static operator token, a random per-run token)
// before they ask it anything, and never charge it. It is a leaf: it
// imports the standard library only, so that authserver and console,
// which must not import each other, share it.
package lockout
