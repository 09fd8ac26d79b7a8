package oauth

import (
	"crypto/sha256"
	"sync"
	"time"
)

// A signature check costs tens of microseconds, more than the rest of a
// call through the bridge; a client sends the same token with every call.
// TokenCache keeps what a token was found to be, by the token's hash
// (never the token), until it expires or for cacheFor at most — so keys
// withdrawn by the issuer stop being honoured within that time.
const (
	cacheFor       = 5 * time.Minute
	cacheMaxTokens = 4096
)

// TokenCache maps token hashes to their claims. The zero value is ready.
// The hashes are SHA-256 without a key: they are only ever in this
// process's memory, beside the tokens themselves (in the requests that
// carry them) and the principal key, so a key would hide nothing from
// whoever can read them; nothing of them is written or shown.
type TokenCache struct {
	// mu guards m.
	mu sync.Mutex
	m  map[[32]byte]cachedClaims
}

type cachedClaims struct {
	c     *Claims
	until time.Time
}

// Get returns the claims of a token verified before and still good now.
func (vc *TokenCache) Get(raw string, now time.Time) *Claims {
	h := sha256.Sum256([]byte(raw))
	vc.mu.Lock()
	defer vc.mu.Unlock()
	e, ok := vc.m[h]
	if !ok {
		return nil
	}
	if !now.Before(e.until) {
		delete(vc.m, h)
		return nil
	}
	return e.c
}

// Put keeps c for raw until its expiry (plus skew) or cacheFor from now.
func (vc *TokenCache) Put(raw string, c *Claims, skew time.Duration, now time.Time) {
	until := c.Expiry.Add(skew)
	if limit := now.Add(cacheFor); limit.Before(until) {
		until = limit
	}
	h := sha256.Sum256([]byte(raw))
	vc.mu.Lock()
	defer vc.mu.Unlock()
	if vc.m == nil {
		vc.m = map[[32]byte]cachedClaims{}
	}
	if len(vc.m) >= cacheMaxTokens {
		for k, e := range vc.m {
			if !now.Before(e.until) {
				delete(vc.m, k)
			}
		}
		if len(vc.m) >= cacheMaxTokens {
			clear(vc.m) // many live tokens at once: start over
		}
	}
	vc.m[h] = cachedClaims{c: c, until: until}
}
