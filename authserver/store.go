package authserver

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
)

// This file is the authorization server's state: one bbolt file (0600,
// transactional, so a crash leaves either the old or the new state) holding
// signing keys, clients, authorization codes and refresh-token families,
// trusted browsers, users and their invites (users.go). Codes, refresh
// tokens, trusted-browser cookies and invite codes are stored by their
// SHA-256, never in clear; users' secrets by their argon2id hash
// (secret.go).

var (
	bucketKeys     = []byte("keys")
	bucketClients  = []byte("clients")
	bucketCodes    = []byte("codes")
	bucketRefresh  = []byte("refresh")
	bucketFamilies = []byte("families")
	bucketMeta     = []byte("meta")
)

// Store is the authorization server's database.
type Store struct {
	db *bolt.DB
}

// OpenStore opens (creating it 0600 if needed) the database at path.
func OpenStore(path string) (*Store, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("cannot create the state directory for %s: %w (set -state-dir to a writable directory)", path, err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 2 * time.Second})
	if err != nil {
		if errors.Is(err, bolt.ErrTimeout) {
			return nil, fmt.Errorf("cannot open %s: another bridge is using it (each bridge needs its own -state-dir)", path)
		}
		return nil, fmt.Errorf("cannot open %s: %w (set -state-dir to a writable directory)", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketKeys, bucketClients, bucketCodes, bucketRefresh, bucketFamilies, bucketMeta, bucketBrowsers, bucketUsers, bucketInvites} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("cannot initialize %s: %w", path, err)
	}
	return &Store{db: db}, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// hashKey is the stored name of a secret (a code, a refresh token).
func hashKey(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return []byte(hex.EncodeToString(h[:]))
}

func put(tx *bolt.Tx, bucket, key []byte, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return tx.Bucket(bucket).Put(key, data)
}

// get reads key of bucket into v; false when absent.
func get(tx *bolt.Tx, bucket, key []byte, v any) (bool, error) {
	data := tx.Bucket(bucket).Get(key)
	if data == nil {
		return false, nil
	}
	return true, json.Unmarshal(data, v)
}
