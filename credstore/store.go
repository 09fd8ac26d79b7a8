package credstore

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The file: a bucket "meta" (the file's format) and a bucket "dests"
// holding one bucket per destination, in which each user's record (JSON:
// record) is stored under the user key.
var (
	bucketMeta  = []byte("meta")
	bucketDests = []byte("dests")
	keyFormat   = []byte("format")
)

// fileFormat is the file format this package writes.
const fileFormat = "credstore 1"

// DefaultLockTimeout is how long Open waits for a file another process
// holds before it says so.
const DefaultLockTimeout = 2 * time.Second

// Options tune Open.
type Options struct {
	// LockTimeout bounds the wait for a file another process holds
	// (0: DefaultLockTimeout).
	LockTimeout time.Duration
}

// Store is the credentials file, open. Safe for concurrent use.
type Store struct {
	db   *bolt.DB
	path string
	key  Key
	// now is the clock of Set (time.Now; tests set it before use).
	now func() time.Time
}

// Entry is what a listing shows of a user's credentials on a destination:
// never a value.
type Entry struct {
	// User is the user key the record is stored under; Display the name
	// given with it.
	User    string
	Display string
	// Names are the variables set, sorted.
	Names []string
	// Set is when they were first set; Updated when last replaced.
	Set     time.Time
	Updated time.Time
	// Err is why Env would refuse the record as far as its plaintext
	// tells — ErrOtherKey, ErrMisplaced or ErrDamaged, wrapped — or nil. A
	// listing does not open sealed values: a damaged ciphertext shows at
	// Env only.
	Err error
}

// Open opens the credentials file at path (in the state directory;
// created 0600, and its directory 0700, when absent) with key, waiting at
// most opts.LockTimeout for a file another bridge holds.
func Open(path string, key Key, opts Options) (*Store, error) {
	if key.m == nil {
		return nil, errors.New("cannot open the credentials store: no key (read one with credstore.LoadKey)")
	}
	timeout := opts.LockTimeout
	if timeout <= 0 {
		timeout = DefaultLockTimeout
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("cannot create the directory of the credentials store %s: %w (set -state-dir to a writable directory)", path, err)
	}
	if st, err := os.Stat(path); err == nil && openToOthers(st) {
		return nil, fmt.Errorf("the credentials store %s is open to other users (mode %#o): run chmod 600 %s (its values are sealed, but the users and variable names are not)",
			path, st.Mode().Perm(), path)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("cannot read the credentials store %s: %w", path, err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: timeout})
	if errors.Is(err, bolt.ErrTimeout) {
		return nil, fmt.Errorf("%w: %s is locked after %v (each bridge needs its own -state-dir)", ErrInUse, path, timeout)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot open the credentials store %s: %w (set -state-dir to a writable directory; a damaged file can be moved away, and users then enter their credentials again)", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		switch f := meta.Get(keyFormat); {
		case f == nil:
			if err := meta.Put(keyFormat, []byte(fileFormat)); err != nil {
				return err
			}
		case string(f) != fileFormat:
			return fmt.Errorf("it is of format %q, not %q: it was written by another version of the bridge (run that one, or move the file away and users enter their credentials again)", f, fileFormat)
		}
		_, err = tx.CreateBucketIfNotExists(bucketDests)
		return err
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("cannot open the credentials store %s: %w", path, err)
	}
	return &Store{db: db, path: path, key: key, now: time.Now}, nil
}

// Close closes the file.
func (s *Store) Close() error { return s.db.Close() }

// String and GoString name the store by its file.
func (s *Store) String() string   { return fmt.Sprintf("credstore.Store(%s)", s.path) }
func (s *Store) GoString() string { return s.String() }

// Set replaces the credentials of user on dest with vars (NAME → value;
// see ValidName, MaxValueBytes, MaxVars), display being the user's name in
// listings. The values are sealed before the file is touched. Callers
// Check vars against the destination's Specs first: Set does not know
// which names a destination declares.
func (s *Store) Set(dest, user, display string, vars map[string]string) error {
	if err := checkRecordKey(dest, user); err != nil {
		return err
	}
	if err := checkDisplay(display); err != nil {
		return err
	}
	if err := checkVars(vars); err != nil {
		return err
	}
	now := s.now().UTC()
	rec := &record{Format: recordFormat, Dest: dest, User: user, Display: display, Set: now, Updated: now}
	for name := range vars {
		rec.Names = append(rec.Names, name)
	}
	slices.Sort(rec.Names)
	seal(s.key, rec, vars)
	err := s.update(func(tx *bolt.Tx) error {
		b, err := tx.Bucket(bucketDests).CreateBucketIfNotExists([]byte(dest))
		if err != nil {
			return err
		}
		if old := b.Get([]byte(user)); old != nil {
			var o record
			if json.Unmarshal(old, &o) == nil && !o.Set.IsZero() && o.Set.Before(now) {
				rec.Set = o.Set
			}
		}
		v, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		return b.Put([]byte(user), v)
	})
	if err != nil {
		return fmt.Errorf("cannot store the credentials of user %q on destination %q in %s: %w", user, dest, s.path, err)
	}
	return nil
}

// Delete removes the credentials of user on dest (nothing when there are
// none).
func (s *Store) Delete(dest, user string) error {
	err := s.update(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketDests).Bucket([]byte(dest)); b != nil {
			return b.Delete([]byte(user))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("cannot delete the credentials of user %q on destination %q in %s: %w", user, dest, s.path, err)
	}
	return nil
}

// DeleteUser removes the credentials of user on every destination (a user
// removed), returning how many records it removed.
func (s *Store) DeleteUser(user string) (int, error) {
	n := 0
	err := s.update(func(tx *bolt.Tx) error {
		n = 0
		dests := tx.Bucket(bucketDests)
		var names [][]byte
		err := dests.ForEach(func(k, v []byte) error {
			if v == nil { // a destination's bucket
				names = append(names, slices.Clone(k))
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, d := range names {
			b := dests.Bucket(d)
			if b.Get([]byte(user)) == nil {
				continue
			}
			if err := b.Delete([]byte(user)); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("cannot delete the credentials of user %q in %s: %w", user, s.path, err)
	}
	return n, nil
}

// List shows every user's credentials on dest (by user key), never a
// value.
func (s *Store) List(dest string) ([]Entry, error) {
	var out []Entry
	err := s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketDests).Bucket([]byte(dest))
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			if v != nil {
				out = append(out, s.entry(dest, string(k), v))
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("cannot list the credentials on destination %q in %s: %w", dest, s.path, err)
	}
	return out, nil
}

// Lookup shows the credentials of user on dest, never a value; false when
// there are none.
func (s *Store) Lookup(dest, user string) (Entry, bool, error) {
	var e Entry
	found := false
	err := s.view(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketDests).Bucket([]byte(dest)); b != nil {
			if v := b.Get([]byte(user)); v != nil {
				e, found = s.entry(dest, user, v), true
			}
		}
		return nil
	})
	if err != nil {
		return Entry{}, false, fmt.Errorf("cannot read the credentials of user %q on destination %q in %s: %w", user, dest, s.path, err)
	}
	return e, found, nil
}

// entry is the Entry of the stored record v of (dest, user).
func (s *Store) entry(dest, user string, v []byte) Entry {
	rec, err := unmarshalRecord(dest, user, v)
	if err != nil {
		return Entry{User: user, Err: err}
	}
	e := Entry{User: user, Display: rec.Display, Names: rec.Names, Set: rec.Set, Updated: rec.Updated}
	switch {
	case rec.Dest != dest || rec.User != user:
		e.Err = recordError(dest, user, rec.Display, ErrMisplaced, "delete it and ask the user to enter them again")
	case rec.KeyID != s.key.m.id:
		e.Err = recordError(dest, user, rec.Display, ErrOtherKey, "")
	}
	return e
}

// Env is the environment of user's child on dest: its credentials as
// NAME=value strings, sorted by name; false when the user has none there.
//
// For spawn only: it is the one way values leave the store. Its result
// goes into a child's environment and nowhere else — never a log, an
// error, a response or the child's argv. An error names the record and
// what to do, never a value.
func (s *Store) Env(dest, user string) ([]string, bool, error) {
	var env []string
	found := false
	err := s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketDests).Bucket([]byte(dest))
		if b == nil {
			return nil
		}
		v := b.Get([]byte(user))
		if v == nil {
			return nil
		}
		rec, err := unmarshalRecord(dest, user, v)
		if err != nil {
			return err
		}
		env, err = open(s.key, dest, user, rec)
		found = err == nil
		return err
	})
	if err != nil {
		return nil, false, err
	}
	return env, found, nil
}

// update and view run fn in a transaction, saying ErrClosed for a closed
// store.
func (s *Store) update(fn func(*bolt.Tx) error) error { return closedErr(s.db.Update(fn)) }
func (s *Store) view(fn func(*bolt.Tx) error) error   { return closedErr(s.db.View(fn)) }

func closedErr(err error) error {
	if errors.Is(err, bolt.ErrDatabaseNotOpen) {
		return ErrClosed
	}
	return err
}
