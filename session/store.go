package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Store keeps what a 2025 session is across a restart of the bridge, by
// destination: a new bridge on the same state directory takes its
// sessions back (restore), so their clients go on without initializing
// again. Only what a session is goes there, never what it carries (its
// event log, streams and calls end with the old bridge). The endpoint
// writes a session when it is created, removes it when it ends for good
// (DELETE, expiry, eviction, a reload that changed its destination), and
// saves every session's last use when it shuts down.
type Store interface {
	// Save writes recs of destination dest (adding or replacing each).
	Save(dest string, recs []StoredSession) error
	// Delete removes session id of dest (nothing when it is not there).
	Delete(dest, id string) error
	// Load reads every session of dest.
	Load(dest string) ([]StoredSession, error)
}

// StoredSession is what a session is, as a Store keeps it.
type StoredSession struct {
	ID string `json:"id"`
	// Owner is the principal that created it (PrincipalKey: a keyed hash
	// of a token; zero without auth).
	Owner Principal `json:"owner"`
	// OwnerKey names the principal key Owner was made with
	// (PrincipalKey.ID; set by BoltStore.Save): empty in a file from before
	// principals were keyed.
	OwnerKey string `json:"owner_key,omitempty"`
	// Version is the protocol version negotiated at initialize.
	Version string `json:"version"`
	// InitParams are the client's initialize params: its capabilities and
	// clientInfo, as the dispatcher needs them.
	InitParams json.RawMessage `json:"init_params"`
	LastUsed   time.Time       `json:"last_used"`
	// Created is when its initialize came (zero in files written before
	// it was kept: Restore then takes LastUsed, the latest it can be).
	Created time.Time `json:"created,omitempty"`
	// UserKey and UserName are the user whose own child served it, on a
	// destination with a child per user ('isolation: user'; empty on
	// another): Restore gives it back to that user's endpoint.
	UserKey  string `json:"user_key,omitempty"`
	UserName string `json:"user_name,omitempty"`
}

// BoltStore is a Store in a bbolt file (the state directory's
// sessions.db): one bucket per destination, a session's JSON under its id.
// The file is the bridge's alone while it runs (bbolt locks it).
type BoltStore struct {
	db *bolt.DB
	// ownerKey is the ID of the principal key owners are made with
	// (UsePrincipalKey, before the store is used; read-only after).
	ownerKey string
}

// ErrStoreInUse is OpenStore's error when another process holds the file.
var ErrStoreInUse = errors.New("another bridge holds the sessions file")

// OpenStore opens (creating, mode 0600) the sessions file at path.
func OpenStore(path string) (*BoltStore, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if errors.Is(err, bolt.ErrTimeout) {
		return nil, fmt.Errorf("%w: %s", ErrStoreInUse, path)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot open the sessions file %s: %w", path, err)
	}
	return &BoltStore{db: db}, nil
}

// Close closes the file.
func (st *BoltStore) Close() error { return st.db.Close() }

// Save implements Store.
func (st *BoltStore) Save(dest string, recs []StoredSession) error {
	return st.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte(dest))
		if err != nil {
			return err
		}
		for _, r := range recs {
			r.OwnerKey = st.ownerKey
			v, err := json.Marshal(r)
			if err != nil {
				return err
			}
			if err := b.Put([]byte(r.ID), v); err != nil {
				return err
			}
		}
		return nil
	})
}

// Delete implements Store.
func (st *BoltStore) Delete(dest, id string) error {
	return st.db.Update(func(tx *bolt.Tx) error {
		if b := tx.Bucket([]byte(dest)); b != nil {
			return b.Delete([]byte(id))
		}
		return nil
	})
}

// Load implements Store. A record that does not read (a file from another
// version) is skipped.
func (st *BoltStore) Load(dest string) ([]StoredSession, error) {
	var out []StoredSession
	err := st.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte(dest))
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			var r StoredSession
			if json.Unmarshal(v, &r) == nil && r.ID == string(k) && validSessionID(r.ID) {
				out = append(out, r)
			}
			return nil
		})
	})
	return out, err
}

// UsePrincipalKey tells the store the ID of the key the bridge makes
// principals with (PrincipalKey.ID): Save records it with each session,
// and the sessions whose owner was made otherwise — in a file from before
// principals were keyed (their owners are unsalted SHA-256 hashes of
// tokens, which issue 34 took out of the file), or with a key since
// removed — are deleted, as no request could match their owner now: their
// clients get 404 and initialize again, as MCP clients do. Sessions
// without an owner (auth off) stay. It returns how many it deleted. Call
// it once, before the store is used.
func (st *BoltStore) UsePrincipalKey(id string) (deleted int, err error) {
	st.ownerKey = id
	err = st.db.Update(func(tx *bolt.Tx) error {
		return tx.ForEach(func(_ []byte, b *bolt.Bucket) error {
			var stale [][]byte
			err := b.ForEach(func(k, v []byte) error {
				var r StoredSession
				if json.Unmarshal(v, &r) == nil && r.Owner != (Principal{}) && r.OwnerKey != id {
					stale = append(stale, append([]byte(nil), k...)) // k is the page's, and the deletes change pages
				}
				return nil
			})
			for _, k := range stale {
				if err == nil {
					err = b.Delete(k)
				}
			}
			deleted += len(stale)
			return err
		})
	})
	if err != nil {
		deleted = 0
	}
	return deleted, err
}
