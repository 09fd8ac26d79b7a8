package authserver

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// This file is the built-in server's users: people the operator invited
// ('stelae-bridge auth invite NAME'), each with their own secret, who sign
// in on the approval page as themselves and whose tokens carry their own
// subject. The operator's passphrase stays the admin's: its tokens carry
// OperatorSubject. A server with no users works as before them.
//
// A user is stored by their name folded to lower case (names are unique
// whatever their case) with a subject made at the invite — "u_" and 128
// random bits in hex, never reused: a user removed and invited again is
// another subject. Names never change, so neither does a subject.

// OperatorSubject is the subject of the tokens the operator's passphrase
// approves.
const OperatorSubject = "operator"

const (
	// inviteFor is how long an invite link works.
	inviteFor = 7 * 24 * time.Hour
	// maxUsers bounds the users kept (invited ones included).
	maxUsers = 10000
	// maxNameLen bounds a user's name.
	maxNameLen = 64
)

var (
	bucketUsers   = []byte("users")
	bucketInvites = []byte("invites")
)

// User is a user of the built-in server, as the operator sees it.
type User struct {
	Name    string    `json:"name"`
	Subject string    `json:"subject"`
	Created time.Time `json:"created"`
	// LastSignIn is the last sign-in on the approval page (zero: never).
	LastSignIn time.Time `json:"last_sign_in,omitzero"`
	// Invited: the user has not set a secret yet (their invite is
	// pending, or expired).
	Invited  bool `json:"invited,omitempty"`
	Disabled bool `json:"disabled,omitempty"`
}

// State is how the operator's lists name u's state: active, invited,
// disabled, or invited, disabled.
func (u User) State() string {
	switch {
	case u.Invited && u.Disabled:
		return "invited, disabled"
	case u.Invited:
		return "invited"
	case u.Disabled:
		return "disabled"
	}
	return "active"
}

// userRecord is a user as stored, under their folded name.
type userRecord struct {
	Name       string      `json:"name"`
	Subject    string      `json:"subject"`
	Created    time.Time   `json:"created"`
	LastSignIn time.Time   `json:"last_sign_in,omitzero"`
	Disabled   bool        `json:"disabled,omitempty"`
	Secret     *secretHash `json:"secret,omitempty"`
}

func (u *userRecord) public() User {
	return User{Name: u.Name, Subject: u.Subject, Created: u.Created, LastSignIn: u.LastSignIn, Invited: u.Secret == nil, Disabled: u.Disabled}
}

// active reports whether the user may sign in and their tokens work.
func (u *userRecord) active() bool { return u.Secret != nil && !u.Disabled }

// inviteRecord is an invite as stored, by its code's hash.
type inviteRecord struct {
	// User is the invited user's key (folded name); Subject theirs at
	// the invite (a user removed and invited again is another).
	User    string    `json:"user"`
	Subject string    `json:"subject"`
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires"`
	// Used is when the code set the secret (zero: not yet).
	Used time.Time `json:"used,omitzero"`
}

// Errors of user management.
var (
	ErrUnknownUser = errors.New("no such user")
	ErrBadName     = fmt.Errorf("a user's name is 1 to %d letters, digits, '.', '_' or '-', and not %q", maxNameLen, OperatorSubject)
)

// CheckName says what is wrong with a user's name (nil: fine).
func CheckName(name string) error {
	if name == "" || len(name) > maxNameLen || strings.EqualFold(name, OperatorSubject) {
		return ErrBadName
	}
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '-':
		default:
			return ErrBadName
		}
	}
	return nil
}

// userKey is where a user is stored: their name folded (names are ASCII).
func userKey(name string) []byte { return []byte(strings.ToLower(name)) }

func newSubject() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return "u_" + hex.EncodeToString(b)
}

// getUser reads the user named name (false when absent).
func getUser(tx *bolt.Tx, name string) (*userRecord, bool, error) {
	var u userRecord
	ok, err := get(tx, bucketUsers, userKey(name), &u)
	if err != nil || !ok {
		return nil, false, err
	}
	return &u, true, nil
}

func unknownUser(name string) error {
	return fmt.Errorf("%w %q (see 'stelae-bridge auth users')", ErrUnknownUser, name)
}

// Users lists the users, invited ones included.
func (s *Store) Users() ([]User, error) {
	var out []User
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketUsers).ForEach(func(_, v []byte) error {
			var u userRecord
			if err := json.Unmarshal(v, &u); err != nil {
				return err
			}
			out = append(out, u.public())
			return nil
		})
	})
	return out, err
}

// Invite makes a one-time code with which the person named name sets their
// secret, valid inviteFor from now. A new name becomes a user (invited,
// with their subject); an existing user keeps theirs and sets a new secret
// with the code (their old one works until then). Any earlier invite of
// that user stops working. existed: the user was there before.
func (s *Store) Invite(name string, now time.Time) (code string, u User, existed bool, err error) {
	if err := CheckName(name); err != nil {
		return "", User{}, false, err
	}
	code = newID("", 32)
	err = s.db.Update(func(tx *bolt.Tx) error {
		rec, ok, err := getUser(tx, name)
		if err != nil {
			return err
		}
		existed = ok
		if !ok {
			if n := tx.Bucket(bucketUsers).Stats().KeyN; n >= maxUsers {
				return fmt.Errorf("the bridge holds its maximum of %d users; remove some with 'stelae-bridge auth remove NAME'", maxUsers)
			}
			rec = &userRecord{Name: name, Subject: newSubject(), Created: now.UTC()}
			if err := put(tx, bucketUsers, userKey(name), rec); err != nil {
				return err
			}
		}
		if err := deleteInvites(tx, now, func(inv *inviteRecord) bool { return inv.User == string(userKey(name)) }); err != nil {
			return err
		}
		u = rec.public()
		return put(tx, bucketInvites, hashKey(code), inviteRecord{User: string(userKey(name)), Subject: rec.Subject, Created: now.UTC(), Expires: now.Add(inviteFor).UTC()})
	})
	if err != nil {
		return "", User{}, false, err
	}
	return code, u, existed, nil
}

// deleteInvites deletes the invites that match, and every invite expired
// for longer than inviteFor (kept that long to say it expired).
func deleteInvites(tx *bolt.Tx, now time.Time, match func(*inviteRecord) bool) error {
	b := tx.Bucket(bucketInvites)
	var gone [][]byte
	err := b.ForEach(func(k, v []byte) error {
		var inv inviteRecord
		if json.Unmarshal(v, &inv) != nil || match(&inv) || now.Sub(inv.Expires) > inviteFor {
			gone = append(gone, append([]byte(nil), k...))
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, k := range gone {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// userChange is what disabling or removing a user changed: the user as
// they were, and the refresh-token families revoked.
type userChange struct {
	user     userRecord
	families []string
}

// DisableUser disables a user: they cannot sign in, and their refresh
// tokens stop working (a running server also refuses their access
// tokens at once: use Server.DisableUser there).
func (s *Store) DisableUser(name string) (User, error) {
	ch, err := s.disableUser(name, true)
	return ch.user.public(), err
}

// EnableUser enables a disabled user again (their tokens from before stay
// revoked: they sign in again).
func (s *Store) EnableUser(name string) (User, error) {
	ch, err := s.disableUser(name, false)
	return ch.user.public(), err
}

// RemoveUser removes a user, their pending invites and trusted browsers,
// and revokes their refresh tokens. Their subject is never given again.
func (s *Store) RemoveUser(name string) (User, error) {
	ch, err := s.removeUser(name)
	return ch.user.public(), err
}

func (s *Store) disableUser(name string, disabled bool) (userChange, error) {
	var ch userChange
	err := s.db.Update(func(tx *bolt.Tx) error {
		u, ok, err := getUser(tx, name)
		if err != nil {
			return err
		}
		if !ok {
			return unknownUser(name)
		}
		u.Disabled = disabled
		ch.user = *u
		if err := put(tx, bucketUsers, userKey(name), u); err != nil {
			return err
		}
		if !disabled {
			return nil
		}
		ch.families, err = revokeFamiliesOfSubject(tx, u.Subject)
		return err
	})
	return ch, err
}

func (s *Store) removeUser(name string) (userChange, error) {
	var ch userChange
	err := s.db.Update(func(tx *bolt.Tx) error {
		u, ok, err := getUser(tx, name)
		if err != nil {
			return err
		}
		if !ok {
			return unknownUser(name)
		}
		ch.user = *u
		if err := tx.Bucket(bucketUsers).Delete(userKey(name)); err != nil {
			return err
		}
		if err := deleteInvites(tx, time.Now(), func(inv *inviteRecord) bool { return inv.Subject == u.Subject }); err != nil {
			return err
		}
		if err := forgetBrowsersOf(tx, u.Subject); err != nil {
			return err
		}
		ch.families, err = revokeFamiliesOfSubject(tx, u.Subject)
		return err
	})
	return ch, err
}

// revokeFamiliesOfSubject marks every refresh-token family of subject
// revoked and returns their ids.
func revokeFamiliesOfSubject(tx *bolt.Tx, subject string) ([]string, error) {
	b := tx.Bucket(bucketFamilies)
	var ids []string
	var fams []family
	err := b.ForEach(func(k, v []byte) error {
		var f family
		if json.Unmarshal(v, &f) == nil && f.Subject == subject && !f.Revoked {
			ids = append(ids, string(k))
			fams = append(fams, f)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i, id := range ids {
		fams[i].Revoked = true
		if err := put(tx, bucketFamilies, []byte(id), fams[i]); err != nil {
			return nil, err
		}
	}
	return ids, nil
}

// users is the server's view of its users, for the checks of every
// request (is this subject's user active?) and the display names.
type users struct {
	// mu guards bySubject and gone.
	mu        sync.RWMutex
	bySubject map[string]userEntry
	gone      []func(subject string)
}

type userEntry struct {
	name string
	// active: the user set a secret and is not disabled; secret: they
	// set one (disabled or not).
	active, secret bool
}

func (us *users) set(u *userRecord) {
	us.mu.Lock()
	defer us.mu.Unlock()
	if us.bySubject == nil {
		us.bySubject = map[string]userEntry{}
	}
	us.bySubject[u.Subject] = userEntry{name: u.Name, active: u.active(), secret: u.Secret != nil}
}

// refuse marks subject's user inactive (known, not active).
func (us *users) refuse(subject string) {
	us.mu.Lock()
	defer us.mu.Unlock()
	if e, ok := us.bySubject[subject]; ok {
		e.active = false
		us.bySubject[subject] = e
	}
}

func (us *users) remove(subject string) {
	us.mu.Lock()
	defer us.mu.Unlock()
	delete(us.bySubject, subject)
}

func (us *users) get(subject string) (userEntry, bool) {
	us.mu.RLock()
	defer us.mu.RUnlock()
	e, ok := us.bySubject[subject]
	return e, ok
}

// any reports whether some user has set a secret (the approval page then
// asks for a name).
func (us *users) any() bool {
	us.mu.RLock()
	defer us.mu.RUnlock()
	for _, e := range us.bySubject {
		if e.secret {
			return true
		}
	}
	return false
}

// subjectActive reports whether tokens of subject may be honoured: the
// operator's, or an active user's.
func (srv *Server) subjectActive(subject string) bool {
	if subject == OperatorSubject {
		return true
	}
	e, ok := srv.users.get(subject)
	return ok && e.active
}

// loadUsers reads the users into srv.users (at Open).
func (srv *Server) loadUsers() error {
	return srv.store.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketUsers).ForEach(func(_, v []byte) error {
			var u userRecord
			if err := json.Unmarshal(v, &u); err != nil {
				return err
			}
			srv.users.set(&u)
			return nil
		})
	})
}

// Users lists the server's users (invited ones included).
func (srv *Server) Users() ([]User, error) { return srv.store.Users() }

// UserName is the name of the user whose subject this is (true), also
// when disabled; "operator" for OperatorSubject; false for a subject the
// server does not know (a removed user's).
func (srv *Server) UserName(subject string) (string, bool) {
	if subject == OperatorSubject {
		return OperatorSubject, true
	}
	e, ok := srv.users.get(subject)
	return e.name, ok
}

// OnUserGone registers f, called with a user's subject after the user was
// disabled or removed (their tokens are refused by then): the bridge
// stops that user's children with it. f runs on the goroutine that
// disabled or removed the user, after the change is stored, once per
// registration in the order registered; it should not block for long.
func (srv *Server) OnUserGone(f func(subject string)) {
	srv.users.mu.Lock()
	defer srv.users.mu.Unlock()
	srv.users.gone = append(srv.users.gone, f)
}

func (srv *Server) userGone(subject string) {
	srv.users.mu.RLock()
	fs := append([]func(string){}, srv.users.gone...)
	srv.users.mu.RUnlock()
	for _, f := range fs {
		f(subject)
	}
}

// syncUser sets srv.users' entry of name (subject: theirs as known) from
// the database: whichever change was stored last, its state is the one
// kept, whatever order the changes' goroutines get here in.
func (srv *Server) syncUser(name, subject string) {
	var u *userRecord
	err := srv.store.db.View(func(tx *bolt.Tx) error {
		var err error
		u, _, err = getUser(tx, name)
		return err
	})
	if err != nil {
		srv.log.Error("could not read a user; their tokens are refused until the bridge restarts", "user", name, "error", err)
		srv.users.refuse(subject)
		return
	}
	if u == nil || u.Subject != subject {
		srv.users.remove(subject)
	}
	if u != nil {
		srv.users.set(u)
	}
}

// InviteUser invites name (Store.Invite) and returns the code of their
// link (PathInvite?code=…), which is never stored or logged.
func (srv *Server) InviteUser(name string) (code string, u User, existed bool, err error) {
	code, u, existed, err = srv.store.Invite(name, srv.now())
	if err != nil {
		return "", User{}, false, err
	}
	srv.syncUser(name, u.Subject)
	srv.log.Info("user invited", "user", u.Name, "subject", u.Subject, "existing_user", existed, "valid_for", inviteFor)
	return code, u, existed, nil
}

// DisableUser disables a user: their access and refresh tokens are refused
// at once, they cannot sign in, and OnUserGone's functions are called.
func (srv *Server) DisableUser(name string) (User, error) {
	return srv.userGoneBy(name, "disabled", func() (userChange, error) { return srv.store.disableUser(name, true) })
}

// RemoveUser removes a user (Store.RemoveUser): their tokens are refused
// at once, and OnUserGone's functions are called.
func (srv *Server) RemoveUser(name string) (User, error) {
	return srv.userGoneBy(name, "removed", func() (userChange, error) { return srv.store.removeUser(name) })
}

// userGoneBy disables or removes name with change: the user's tokens are
// refused from before it is stored.
func (srv *Server) userGoneBy(name, what string, change func() (userChange, error)) (User, error) {
	var before *userRecord
	_ = srv.store.db.View(func(tx *bolt.Tx) error {
		before, _, _ = getUser(tx, name)
		return nil
	})
	if before != nil {
		srv.users.refuse(before.Subject)
	}
	ch, err := change()
	if before != nil && (err != nil || before.Subject != ch.user.Subject) {
		srv.syncUser(name, before.Subject)
	}
	if err != nil {
		return User{}, err
	}
	for _, id := range ch.families {
		srv.familyRevoked(id)
	}
	srv.syncUser(name, ch.user.Subject)
	srv.credSignIns.dropSubject(ch.user.Subject)
	srv.log.Info("user "+what+"; their tokens are refused", "user", ch.user.Name, "subject", ch.user.Subject, "grants_revoked", len(ch.families))
	srv.userGone(ch.user.Subject)
	return ch.user.public(), nil
}

// EnableUser enables a disabled user; their tokens from before stay
// refused.
func (srv *Server) EnableUser(name string) (User, error) {
	ch, err := srv.store.disableUser(name, false)
	if err != nil {
		return User{}, err
	}
	srv.syncUser(name, ch.user.Subject)
	srv.log.Info("user enabled", "user", ch.user.Name, "subject", ch.user.Subject)
	return ch.user.public(), nil
}
