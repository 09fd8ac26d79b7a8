package session

// User is a person as the auth layer knows them — what 'isolation: user'
// gives a child of its own. Key is stable across their requests, sessions
// and (OAuth) clients and token refreshes, and reveals no credential: a
// named static token's name ("t:alice"), a keyed digest of an unnamed
// token, or of an OAuth issuer and subject (PrincipalKey.UserKey). Name is
// how the operator sees them (the token's name, the built-in server's user
// name, an issuer's subject). The zero User is nobody (auth off).
type User struct {
	Key  string
	Name string
}

// Known reports whether u is somebody.
func (u User) Known() bool { return u.Key != "" }

// String is the user's name for logs and messages.
func (u User) String() string {
	if u.Name != "" {
		return u.Name
	}
	return u.Key
}
