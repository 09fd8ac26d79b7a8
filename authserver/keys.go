package authserver

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	bolt "go.etcd.io/bbolt"
)

// storedKey is a signing key as the store keeps it.
type storedKey struct {
	KID     string    `json:"kid"`
	PKCS8   string    `json:"pkcs8"` // base64 DER
	Created time.Time `json:"created"`
}

// keyRing is the server's signing keys: the current one signs, the previous
// one is still published so tokens it signed stay valid until they expire.
type keyRing struct {
	// mu guards current, previous and jwks.
	mu       sync.RWMutex
	current  *ecdsa.PrivateKey
	kid      string
	created  time.Time
	previous *storedKey
	jwks     *jose.JSONWebKeySet
}

var metaCurrentKey = []byte("current_key")

// loadKeys reads the key ring, making the first key (or a new one when the
// current is older than rotate).
func (s *Store) loadKeys(rotate time.Duration) (*keyRing, error) {
	ring := &keyRing{}
	err := s.db.Update(func(tx *bolt.Tx) error {
		var cur storedKey
		curKID := tx.Bucket(bucketMeta).Get(metaCurrentKey)
		found := false
		if curKID != nil {
			var err error
			if found, err = get(tx, bucketKeys, curKID, &cur); err != nil {
				return err
			}
		}
		if !found || time.Since(cur.Created) > rotate {
			next, err := newStoredKey()
			if err != nil {
				return err
			}
			if err := put(tx, bucketKeys, []byte(next.KID), next); err != nil {
				return err
			}
			if err := tx.Bucket(bucketMeta).Put(metaCurrentKey, []byte(next.KID)); err != nil {
				return err
			}
			if found {
				prev := cur
				ring.previous = &prev
				// Older keys than the previous one are dropped.
				_ = tx.Bucket(bucketMeta).Put([]byte("previous_key"), []byte(prev.KID))
			}
			cur = next
		} else if prevKID := tx.Bucket(bucketMeta).Get([]byte("previous_key")); prevKID != nil {
			var prev storedKey
			if ok, err := get(tx, bucketKeys, prevKID, &prev); err == nil && ok {
				ring.previous = &prev
			}
		}
		priv, err := parseKey(cur)
		if err != nil {
			return err
		}
		ring.current, ring.kid, ring.created = priv, cur.KID, cur.Created
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("signing keys: %w", err)
	}
	ring.jwks = &jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &ring.current.PublicKey, KeyID: ring.kid, Algorithm: string(jose.ES256), Use: "sig"}}}
	if ring.previous != nil {
		if p, err := parseKey(*ring.previous); err == nil {
			ring.jwks.Keys = append(ring.jwks.Keys, jose.JSONWebKey{Key: &p.PublicKey, KeyID: ring.previous.KID, Algorithm: string(jose.ES256), Use: "sig"})
		}
	}
	return ring, nil
}

func newStoredKey() (storedKey, error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return storedKey{}, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return storedKey{}, err
	}
	id := make([]byte, 12)
	if _, err := rand.Read(id); err != nil {
		return storedKey{}, err
	}
	return storedKey{KID: base64.RawURLEncoding.EncodeToString(id), PKCS8: base64.StdEncoding.EncodeToString(der), Created: time.Now().UTC()}, nil
}

func parseKey(k storedKey) (*ecdsa.PrivateKey, error) {
	der, err := base64.StdEncoding.DecodeString(k.PKCS8)
	if err != nil {
		return nil, err
	}
	key, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, err
	}
	ec, ok := key.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("key %s is not an ECDSA key", k.KID)
	}
	return ec, nil
}

// signer signs with the current key.
func (r *keyRing) signer() (jose.Signer, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: r.current, KeyID: r.kid}}, (&jose.SignerOptions{}).WithType("at+jwt"))
}

// keySet is the published keys.
func (r *keyRing) keySet() *jose.JSONWebKeySet {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.jwks
}
