package authserver

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	bolt "go.etcd.io/bbolt"
)

// This file is the invite page (PathInvite?code=…): the person the
// operator invited sets their secret there, once. The code (32 random
// bytes, stored by its SHA-256) cannot be guessed, so no lockout holds it;
// the form is CSRF-protected as the approval page's, under the same
// headers, and never shows a secret back.

// inviteCSRFCookie is the invite form's CSRF cookie (sent to PathInvite
// only; the approval page's has its own path).
const inviteCSRFCookie = csrfCookie

// inviteState is what a code is worth now.
type inviteState int

const (
	inviteValid inviteState = iota
	inviteUnknown
	inviteUsed
	inviteExpired
)

// lookupInvite reads the invite of code and its user (when valid).
func lookupInvite(tx *bolt.Tx, code string, now time.Time) (*inviteRecord, *userRecord, inviteState, error) {
	if code == "" || len(code) > 100 {
		return nil, nil, inviteUnknown, nil
	}
	key := hashKey(code)
	k, v := tx.Bucket(bucketInvites).Cursor().Seek(key)
	// The stored key is the code's hash: compared in constant time.
	if k == nil || subtle.ConstantTimeCompare(k, key) != 1 {
		return nil, nil, inviteUnknown, nil
	}
	var inv inviteRecord
	if err := json.Unmarshal(v, &inv); err != nil {
		return nil, nil, inviteUnknown, err
	}
	switch {
	case !inv.Used.IsZero():
		return &inv, nil, inviteUsed, nil
	case !now.Before(inv.Expires):
		return &inv, nil, inviteExpired, nil
	}
	var u userRecord
	ok, err := get(tx, bucketUsers, []byte(inv.User), &u)
	if err != nil || !ok || u.Subject != inv.Subject {
		return &inv, nil, inviteUnknown, err
	}
	return &inv, &u, inviteValid, nil
}

// inviteProblem is what the page says of a code that does not work.
func inviteProblem(st inviteState, inv *inviteRecord) (int, string) {
	switch st {
	case inviteUsed:
		return http.StatusGone, fmt.Sprintf("This invite link was already used (%s UTC): a secret was set with it. If that was not you, tell the bridge's operator at once. To set a new secret, ask the operator for a new invite.", inv.Used.UTC().Format("2006-01-02 15:04"))
	case inviteExpired:
		return http.StatusGone, fmt.Sprintf("This invite link expired (%s UTC; an invite works for %d days). Ask the bridge's operator for a new invite.", inv.Expires.UTC().Format("2006-01-02 15:04"), int(inviteFor/(24*time.Hour)))
	}
	return http.StatusNotFound, "This invite link is not valid: it is mistyped or incomplete, or a newer invite replaced it, or the user was removed. Ask the bridge's operator for a new invite."
}

// invite serves GET (the form) and POST (the secret).
func (srv *Server) invite(w http.ResponseWriter, r *http.Request) {
	pageHeaders(w)
	switch r.Method {
	case http.MethodGet:
		code := r.URL.Query().Get("code")
		var inv *inviteRecord
		var u *userRecord
		var st inviteState
		err := srv.store.db.View(func(tx *bolt.Tx) error {
			var err error
			inv, u, st, err = lookupInvite(tx, code, srv.now())
			return err
		})
		if err != nil {
			srv.log.Error("could not read an invite", "error", err)
			srv.invitePage(w, http.StatusInternalServerError, invitePageData{Error: "The bridge could not read the invite; see its log."})
			return
		}
		if st != inviteValid {
			status, msg := inviteProblem(st, inv)
			srv.invitePage(w, status, invitePageData{Error: msg})
			return
		}
		token := newID("", 24)
		http.SetCookie(w, &http.Cookie{Name: inviteCSRFCookie, Value: token, Path: PathInvite, HttpOnly: true, Secure: strings.HasPrefix(baseOf(r.Context()), "https://"), SameSite: http.SameSiteStrictMode, MaxAge: 3600})
		srv.invitePage(w, http.StatusOK, invitePageData{Name: u.Name, Code: code, CSRF: token, Reset: u.Secret != nil})
	case http.MethodPost:
		srv.acceptInvite(w, r)
	default:
		w.Header().Set("Allow", "GET, POST")
		srv.invitePage(w, http.StatusMethodNotAllowed, invitePageData{Error: "Use GET."})
	}
}

// acceptInvite sets the invited user's secret: CSRF, the code, the secret
// typed twice, then (in one transaction) the code used and the secret
// stored.
func (srv *Server) acceptInvite(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		srv.invitePage(w, http.StatusBadRequest, invitePageData{Error: "The form could not be read."})
		return
	}
	f := r.PostForm
	code, form := f.Get("code"), f.Get("csrf")
	cookie, err := r.Cookie(inviteCSRFCookie)
	if err != nil || form == "" || subtle.ConstantTimeCompare([]byte(cookie.Value), []byte(form)) != 1 {
		srv.invitePage(w, http.StatusForbidden, invitePageData{Error: "This form did not come from the bridge's own page (CSRF check failed). Open the invite link again."})
		return
	}
	var inv *inviteRecord
	var u *userRecord
	var st inviteState
	err = srv.store.db.View(func(tx *bolt.Tx) error {
		var err error
		inv, u, st, err = lookupInvite(tx, code, srv.now())
		return err
	})
	if err == nil && st != inviteValid {
		status, msg := inviteProblem(st, inv)
		srv.invitePage(w, status, invitePageData{Error: msg})
		return
	}
	if err != nil {
		srv.log.Error("could not read an invite", "error", err)
		srv.invitePage(w, http.StatusInternalServerError, invitePageData{Error: "The bridge could not read the invite; see its log."})
		return
	}
	again := invitePageData{Name: u.Name, Code: code, CSRF: form, Reset: u.Secret != nil}
	secret, confirm := f.Get("secret"), f.Get("confirm")
	switch {
	case utf8.RuneCountInString(secret) < minSecretChars:
		again.Problem = fmt.Sprintf("Your secret must be at least %d characters long.", minSecretChars)
	case len(secret) > maxSecretBytes:
		again.Problem = fmt.Sprintf("Your secret may be at most %d bytes long.", maxSecretBytes)
	case subtle.ConstantTimeCompare([]byte(secret), []byte(confirm)) != 1:
		again.Problem = "The two secrets differ. Type the same secret twice."
	}
	if again.Problem != "" {
		srv.invitePage(w, http.StatusBadRequest, again)
		return
	}
	h, err := hashSecret(r.Context(), secret)
	if err != nil {
		w.Header().Set("Retry-After", "5")
		srv.invitePage(w, http.StatusServiceUnavailable, invitePageData{Error: "The bridge is busy; go back and try again in a few seconds."})
		return
	}
	now := srv.now()
	err = srv.store.db.Update(func(tx *bolt.Tx) error {
		inv, u, st, err = lookupInvite(tx, code, now) // again: used once, whoever came first
		if err != nil || st != inviteValid {
			return err
		}
		inv.Used = now.UTC()
		if err := put(tx, bucketInvites, hashKey(code), inv); err != nil {
			return err
		}
		u.Secret = h
		return put(tx, bucketUsers, []byte(inv.User), u)
	})
	if err == nil && st != inviteValid {
		status, msg := inviteProblem(st, inv)
		srv.invitePage(w, status, invitePageData{Error: msg})
		return
	}
	if err != nil {
		srv.log.Error("could not store a user's secret", "error", err)
		srv.invitePage(w, http.StatusInternalServerError, invitePageData{Error: "The bridge could not store your secret; see its log."})
		return
	}
	srv.syncUser(u.Name, u.Subject)
	srv.log.Info("invite used: the user set their secret", "user", u.Name, "subject", u.Subject, "new_secret_for_existing_user", again.Reset)
	srv.invitePage(w, http.StatusOK, invitePageData{Done: true, Name: u.Name, Disabled: u.Disabled})
}

// invitePageData fills the invite page.
type invitePageData struct {
	Error, Problem   string
	Name, Code, CSRF string
	// Reset: the user had a secret (this sets a new one).
	Reset bool
	// Done: the secret is set; Disabled: the user is disabled still.
	Done, Disabled bool
}

func (srv *Server) invitePage(w http.ResponseWriter, status int, d invitePageData) {
	srv.render(w, status, invitePageTemplate, "invite page", d)
}

var invitePageTemplate = template.Must(template.New("invite").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>stelae-bridge: set your secret</title>
<style>
body{font:16px/1.5 system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem;color:#111}
h1{font-size:1.4rem}code{overflow-wrap:anywhere}
label{display:block;margin-top:1rem;font-weight:600}input[type=password]{box-sizing:border-box;width:100%;font-size:1rem;padding:.4rem}
button{font-size:1rem;padding:.5rem 1.2rem;margin:1rem .5rem 0 0}.problem{color:#a00;font-weight:600}
</style>
</head>
<body>
<main>
{{if .Error}}
<h1>This invite cannot be used</h1>
<p class="problem" id="problem" role="alert">{{.Error}}</p>
{{else if .Done}}
<h1>Your secret is set</h1>
<p id="done">From now on, when an MCP client asks for access through this bridge, sign in on its approval page with your name <strong id="name">{{.Name}}</strong> and this secret.</p>
{{if .Disabled}}<p class="problem">The operator has disabled your account for now; ask them to enable it.</p>{{end}}
{{else}}
<h1>{{if .Reset}}Set a new secret{{else}}Welcome to the bridge{{end}}</h1>
<p>You were invited as <strong id="name">{{.Name}}</strong>. Choose a secret of at least 12 characters; you will type it, with your name, on the bridge's approval page. This link works once.</p>
{{if .Problem}}<p class="problem" id="problem" role="alert">{{.Problem}}</p>{{end}}
<form method="post" action="/oauth/invite">
<input type="hidden" name="code" value="{{.Code}}">
<input type="hidden" name="csrf" value="{{.CSRF}}">
<input type="text" name="username" value="{{.Name}}" autocomplete="username" hidden>
<label for="secret">Your secret</label>
<input type="password" id="secret" name="secret" autocomplete="new-password" minlength="12" required autofocus>
<label for="confirm">The same secret again</label>
<input type="password" id="confirm" name="confirm" autocomplete="new-password" minlength="12" required>
<button type="submit" id="set">Set my secret</button>
</form>
{{end}}
</main>
</body>
</html>
`))
