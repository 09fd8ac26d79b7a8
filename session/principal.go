package session

import (
	"context"
	"encoding/hex"
	"net/http"
)

// Principal identifies who a request is from, as the bridge's auth layer
// established it (the hash of a bearer token); zero when auth is off. A
// session is bound to the principal that created it: another principal
// using its id is told it does not exist (404).
type Principal [32]byte

// Short names p for the operator (the console, /healthz?verbose): the
// first four bytes of its hash, or "anonymous" for the zero principal. It
// reveals nothing of the token.
func (p Principal) Short() string {
	if p == (Principal{}) {
		return "anonymous"
	}
	return "u:" + hex.EncodeToString(p[:4])
}

type principalKey struct{}

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom is the principal r carries (zero for none).
func PrincipalFrom(r *http.Request) Principal {
	p, _ := r.Context().Value(principalKey{}).(Principal)
	return p
}
