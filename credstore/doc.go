// Package credstore is the room where users' credentials live (issue 35):
// the NAME=value pairs a destination's `credentials:` block asks each user
// for, kept encrypted in a bbolt file of the state directory and handed out
// only as the environment of that user's own child.
//
// It owns:
//   - the key (key.go): 32 random bytes the operator controls — a key file
//     (created 0600 with crypto/rand on first use, refused when open to
//     other users or of the wrong size) or a systemd credential
//     (LoadCredential=, read from $CREDENTIALS_DIRECTORY); a Key never
//     prints, marshals or logs its bytes, and names itself by an ID (a
//     derived, one-way tag) that each record keeps;
//   - sealing (seal.go): a record's values under AES-256-GCM with a fresh
//     random nonce per write and the record's (destination, user) as
//     additional data, so a record moved to another key does not open;
//     beside the sealed values, in plaintext, only what a listing shows —
//     the variables' names, the display name, when it was set and updated;
//   - the file (store.go): one record per (destination, user); Set
//     replaces a user's set, Delete and DeleteUser remove, List and Lookup
//     show names and times, and Env — for spawn only — is the one way
//     values leave the store;
//   - what may be stored (validate.go): names [A-Z_][A-Z0-9_]*, values
//     without NUL up to 64 KiB, at most 32 per record; and what a
//     destination asks for (check.go: Check against Specs, with optional
//     Go RE2 patterns — linear in the value — naming the variable and never
//     echoing the value);
//   - its errors (errors.go): each says what happened to which record and
//     what to do, and none holds a value.
//
// It never logs, never returns a value except through Env, and knows
// neither the configuration nor the auth layer: a destination is a name, a
// user an opaque stable string the caller gives (the auth layer's user
// key) with a display name for listings. Set does not know which names a
// destination declares: callers Check what a user sent against the
// destination's Specs before they Set it (a user who could set any name
// could set LD_PRELOAD or NODE_OPTIONS for a child that runs as the
// bridge).
//
// What the encryption protects: the file at rest — a backup, a copy, a
// reader of the state directory without the key. It does not protect
// against the bridge's own OS user, who can read the key; keep the key
// out of backups of the state directory (a systemd credential, or a key
// file elsewhere) to make a stolen backup useless.
//
// A Store is safe for concurrent use: bbolt serializes writers and gives
// readers consistent views, and the AEAD is read-only after LoadKey. The
// package holds no mutex.
package credstore
