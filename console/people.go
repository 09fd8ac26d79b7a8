package console

import (
	"errors"
	"net/http"
)

// The built-in authorization server's users ("people" on the page, apart
// from the users of a user-isolated destination, whose children the
// "Users' children" panel shows): the operator lists them and invites,
// disables, enables and removes them, one at a time, as 'stelae-bridge
// auth invite|users|disable|enable|remove' do.
//
// An invite's one-time link is in the answer to the operator who asked
// for it, and nowhere else: not in the state, the event stream, the log
// tail or any log line.

// ErrInvalid is what a Backend's action wraps when what it was asked is
// malformed (400): a name no user may have, a missing subject.
var ErrInvalid = errors.New("invalid")

// Refusal is an action's error of kind (ErrNotFound, ErrInvalid) that
// says msg alone (a wrapped kind would prefix its own words).
func Refusal(kind error, msg string) error { return refusal{kind, msg} }

type refusal struct {
	kind error
	msg  string
}

func (r refusal) Error() string { return r.msg }
func (r refusal) Unwrap() error { return r.kind }

// PeopleBackend is the part of Backend that manages the built-in server's
// users. Each action names one user by name and subject (the subject as
// the state lists it): a name that now belongs to another person (the one
// named was removed and the name invited again) is refused, not acted on.
type PeopleBackend interface {
	// People lists the built-in server's users, invited ones included;
	// enabled is false when it is not running.
	People() (people []Person, enabled bool, err error)
	// Invite invites name as a new person (again false: a name that is
	// already a user's is refused), or gives the user name of subject a
	// new link with which they set a new secret (again true). The
	// Invitation's Link is shown to the operator who asked, once.
	Invite(name, subject string, again bool) (Invitation, error)
	// DisableUser, EnableUser and RemoveUser act on the user name of
	// subject, and say what they did.
	DisableUser(name, subject string) (string, error)
	EnableUser(name, subject string) (string, error)
	RemoveUser(name, subject string) (string, error)
}

// Person is a user of the built-in authorization server.
type Person struct {
	Name    string `json:"name"`
	Subject string `json:"subject"`
	// Key is their user's key on user-isolated destinations (as
	// User.Key), for the page to find their children.
	Key        string `json:"key"`
	Created    string `json:"created"`
	LastSignIn string `json:"last_sign_in"`
	// State is "invited" (no secret set yet), "active", "disabled" or
	// "invited, disabled".
	State string `json:"state"`
}

// Invitation is an invite's answer: what was done, the one-time link (a
// full URL under the bridge's public URL, else its path), and Note, how to
// complete a path.
type Invitation struct {
	Message string
	Link    string
	Note    string
}

// peopleAction runs one of the people actions for serveAction: the
// answer's message, and for an invite its link and note.
func (c *Console) peopleAction(action string, name, subject string, again bool) (answer map[string]any, err error) {
	c.people.Lock()
	defer c.people.Unlock()
	b := c.opts.Backend
	var msg string
	switch action {
	case "people/invite":
		var inv Invitation
		if inv, err = b.Invite(name, subject, again); err != nil {
			return nil, err
		}
		answer = map[string]any{"ok": true, "message": inv.Message, "link": inv.Link}
		if inv.Note != "" {
			answer["note"] = inv.Note
		}
		return answer, nil
	case "people/disable":
		msg, err = b.DisableUser(name, subject)
	case "people/enable":
		msg, err = b.EnableUser(name, subject)
	case "people/remove":
		msg, err = b.RemoveUser(name, subject)
	default:
		return nil, errors.New("no such action: " + action)
	}
	if err != nil {
		return nil, err
	}
	return map[string]any{"ok": true, "message": msg}, nil
}

// actionStatus is the status of an action's error.
func actionStatus(err error) int {
	switch {
	case errors.Is(err, ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, ErrInvalid):
		return http.StatusBadRequest
	}
	return http.StatusConflict
}
