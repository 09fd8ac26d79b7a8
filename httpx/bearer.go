package httpx

import (
	"crypto/subtle"
	"net/http"
	"strings"
)

// Bearer is r's bearer token (Authorization: Bearer TOKEN, the scheme in
// any case); ok false when there is none.
func Bearer(r *http.Request) (token string, ok bool) {
	scheme, token, _ := strings.Cut(Header(r.Header, "Authorization"), " ")
	token = strings.TrimSpace(token)
	if !strings.EqualFold(scheme, "Bearer") || token == "" {
		return "", false
	}
	return token, true
}

// OneOf reports whether token is one of tokens, compared in constant time
// with every one (the time says nothing of which, or how much of one,
// matched).
func OneOf(tokens []string, token string) bool {
	ok := 0
	for _, t := range tokens {
		ok |= subtle.ConstantTimeCompare([]byte(t), []byte(token))
	}
	return ok == 1
}
