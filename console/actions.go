package console

import (
	"encoding/json"
	"errors"
	"net/http"
)

// admitPost admits a POST of the page's: an admitted viewer, a
// same-origin request, the page's CSRF token; false when it has answered
// the request with why not.
func (c *Console) admitPost(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		writeError(w, http.StatusMethodNotAllowed, "the console's actions are POSTed")
		return false
	}
	v := c.admit(w, r, false)
	if v == nil || !c.sameOrigin(w, r) {
		return false
	}
	if !v.csrfOK(r.Header.Get(csrfHeader)) {
		writeError(w, http.StatusForbidden, "this request did not come from the console's page (CSRF check failed); reload the console")
		return false
	}
	return true
}

// ErrNotFound is what a Backend's action wraps when what it names does
// not exist (404); ErrInvalid (people.go) a malformed request (400); any
// other error is a 409.
var ErrNotFound = errors.New("not found")

// serveAction takes one of the operator's actions: end a session, restart
// a child, revoke a client, stop a user's child, delete their
// credentials, and invite, disable, enable or remove a person (people.go).
// Each needs an admitted viewer, a same-origin
// request and the page's CSRF token (X-CSRF-Token), and a small JSON body.
func (c *Console) serveAction(w http.ResponseWriter, r *http.Request, action string) {
	if !c.admitPost(w, r) {
		return
	}
	var in struct {
		Destination string `json:"destination"`
		Session     string `json:"session"`
		ClientID    string `json:"client_id"`
		User        string `json:"user"`
		// Name, Subject and Again are a person's (people.go).
		Name    string `json:"name"`
		Subject string `json:"subject"`
		Again   bool   `json:"again"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4<<10)).Decode(&in); err != nil {
		writeError(w, http.StatusBadRequest, "the action's body must be a small JSON object: "+err.Error())
		return
	}
	var err error
	var done string
	var answer map[string]any
	b := c.opts.Backend
	switch action {
	case "sessions/end":
		err, done = b.EndSession(in.Destination, in.Session), "session "+in.Session+" of "+in.Destination+" ended; its next request gets 404"
	case "users/stop":
		err, done = b.StopUser(in.Destination, in.User), "the child of user "+in.User+" of "+in.Destination+" is stopping; their next call starts it again"
	case "credentials/delete":
		err, done = b.DeleteCredentials(in.Destination, in.User), "the credentials user "+in.User+" entered for "+in.Destination+" are deleted, and their child stopped"
	case "restart":
		done, err = b.Restart(in.Destination)
	case "clients/revoke":
		err, done = b.RevokeClient(in.ClientID), "client "+in.ClientID+" revoked; its tokens are refused from now on"
	case "people/invite", "people/disable", "people/enable", "people/remove":
		answer, err = c.peopleAction(action, in.Name, in.Subject, in.Again)
	}
	if err != nil {
		writeError(w, actionStatus(err), err.Error())
		return
	}
	// The log names what was acted on, never an answer (an invite's is
	// its one-time link).
	args := []any{"action", action}
	for _, f := range [...]struct{ k, v string }{{"destination", in.Destination}, {"session", in.Session}, {"client_id", in.ClientID},
		{"user", in.User}, {"name", in.Name}, {"subject", in.Subject}} {
		if f.v != "" {
			args = append(args, f.k, f.v)
		}
	}
	c.log.Info("operator action", args...)
	c.mu.Lock()
	c.snap = nil // the next state shows the action's effect
	c.mu.Unlock()
	if answer == nil {
		answer = map[string]any{"ok": true, "message": done}
	}
	writeJSON(w, http.StatusOK, answer)
}
