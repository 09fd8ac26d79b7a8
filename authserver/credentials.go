package authserver

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/stelae-bridge/stelae-bridge/credstore"
)

// This file is the credentials page (PathCredentials/{destination}): where
// a user of the built-in server enters the credentials a destination asks
// each user for ('credentials:' on an 'isolation: user' destination), and
// comes back later to replace or delete them. The server knows nothing of
// destinations or of the encrypted store: the bridge serves both through
// Credentials (SetCredentials).
//
// The user signs in on the page with their name and secret (the operator
// with the passphrase), under the approval page's lockout and counts
// (usersignin.go, lockout.go). Their trusted-browser cookie only
// pre-fills their name: it proves this browser signed in once within 30
// days, not that the person at it now is the user, and what is set here
// is what acts as them (a value planted by someone else at a shared
// browser would send the user's work to that someone's account). A
// sign-in lasts credSignInFor, in memory, behind an HttpOnly, SameSite
// Strict cookie for this page's path; the forms it shows carry a CSRF
// token of that sign-in, and the sign-in form a token of its own (a
// forged sign-in as someone else would make a user type their token into
// another's account). Every POST must also come from the page's own
// origin (Origin, Sec-Fetch-Site) and be at most maxCredBody.
//
// The page shows the declared variables — name, description, whether set
// and when — and never a value, nor anything of one: the server never
// reads one back (Credentials has no way to), and its fields are empty
// password inputs. An empty field leaves its variable as it is. Values
// are checked (credstore.Check: declared names only, the pattern, no NUL,
// the size) before they go to the bridge, and problems name the variable,
// never the value.
//
// Right after an approval for such a destination, a user (or the
// operator) who has not entered the required ones comes here first
// (askCredentials): the approval's sign-in is this page's, and the code
// goes to the client once they are saved, or when the user goes on
// without them.

// PathCredentials is the credentials page's path; a destination's page is
// under it (PathCredentials + "/" + destination).
const PathCredentials = "/oauth/credentials"

const (
	// credSignInCookie carries a sign-in of the page.
	credSignInCookie = "stelae_credentials"
	// credSignInFor is a sign-in's life.
	credSignInFor = 15 * time.Minute
	// maxCredSignIns bounds the sign-ins kept; maxCredSignInsEach one
	// person's.
	maxCredSignIns     = 1000
	maxCredSignInsEach = 8
	// maxCredBody bounds a POST's body.
	maxCredBody = 64 << 10
)

// CredentialSpec is one variable a destination asks each user for (the
// pattern matches the whole value, as credstore.Check reads it).
type CredentialSpec = credstore.Spec

// CredentialNames is what the page shows of a user's credentials for a
// destination: never a value.
type CredentialNames struct {
	// Stored are the variables the user entered (sorted), Updated when
	// they last did.
	Stored  []string
	Updated time.Time
	// Provisioned are the variables the operator provisioned for the
	// user (what the user enters is used over them).
	Provisioned []string
}

// Credentials is the bridge as the credentials page sees it. Subjects are
// the tokens' (a user's "u_…", or OperatorSubject).
type Credentials interface {
	// Declared is destination dest's declared variables; false when it
	// asks its users for none here (not user-isolated, not behind this
	// server, or no such destination).
	Declared(dest string) ([]CredentialSpec, bool)
	// Names are what subject has set for dest.
	Names(dest, subject string) (CredentialNames, error)
	// Set stores the variables subject typed (display: their name) over
	// those they set before, and stops their child so that their next
	// call starts one with them. It refuses values that do not do with
	// CredentialProblems.
	Set(dest, subject, display string, vars map[string]string) error
	// Delete removes what subject set for dest and stops their child.
	Delete(dest, subject string) error
}

// CredentialProblems are the variables Set refused, each named with why;
// never a value.
type CredentialProblems []credstore.Problem

func (p CredentialProblems) Error() string {
	out := make([]string, len(p))
	for i, pr := range p {
		out[i] = pr.String()
	}
	return strings.Join(out, "; ")
}

// credentialsBox holds the Credentials SetCredentials registered.
type credentialsBox struct{ c Credentials }

// SetCredentials registers the bridge's side of the credentials page; the
// bridge calls it once, before it serves. Without it the page answers 404.
func (srv *Server) SetCredentials(c Credentials) { srv.creds.Store(&credentialsBox{c}) }

func (srv *Server) credentials() Credentials {
	if b := srv.creds.Load(); b != nil {
		return b.c
	}
	return nil
}

// credSignIn is one sign-in of the page.
type credSignIn struct {
	subject, name, csrf string
	expires             time.Time
	// notice is what the next page says once (after a redirect).
	notice string
	// cont is the approval that waits for this page (nil: none).
	cont *continuation
}

// continuation is an approval held until its user has seen the
// credentials page: the authorization request (checked again when it goes
// on) and whom the grant is for.
type continuation struct {
	dest, query string
	g           grantee
}

// credSignIns are the page's sign-ins by their cookie's hash.
type credSignIns struct {
	// mu guards byHash and the sign-ins in it.
	mu     sync.Mutex
	byHash map[string]*credSignIn
}

// add keeps s and returns its cookie's value. Past maxCredSignInsEach of
// one person, or maxCredSignIns in all, the ended ones go first, then the
// oldest (whose browser signs in again).
func (ss *credSignIns) add(s *credSignIn, now time.Time) string {
	value := newID("", 32)
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.byHash == nil {
		ss.byHash = map[string]*credSignIn{}
	}
	mine := 0
	for k, o := range ss.byHash {
		switch {
		case !now.Before(o.expires):
			delete(ss.byHash, k)
		case o.subject == s.subject:
			mine++
		}
	}
	// evict drops the oldest sign-in that match accepts.
	evict := func(match func(*credSignIn) bool) {
		oldest := ""
		for k, o := range ss.byHash {
			if match(o) && (oldest == "" || o.expires.Before(ss.byHash[oldest].expires)) {
				oldest = k
			}
		}
		delete(ss.byHash, oldest)
	}
	for ; mine >= maxCredSignInsEach; mine-- {
		evict(func(o *credSignIn) bool { return o.subject == s.subject })
	}
	for len(ss.byHash) >= maxCredSignIns {
		evict(func(*credSignIn) bool { return true })
	}
	ss.byHash[string(hashKey(value))] = s
	return value
}

// get is the request's sign-in (a copy) and its key; nil when it has none
// that is live.
func (ss *credSignIns) get(r *http.Request, now time.Time) (*credSignIn, string) {
	for _, c := range r.CookiesNamed(credSignInCookie) {
		if c.Value == "" || len(c.Value) > 100 {
			continue
		}
		k := string(hashKey(c.Value))
		ss.mu.Lock()
		s := ss.byHash[k]
		var cp credSignIn
		if s != nil {
			cp = *s
		}
		ss.mu.Unlock()
		if s != nil && now.Before(cp.expires) {
			return &cp, k
		}
	}
	return nil, ""
}

// update changes the sign-in of key with f (nothing when it is gone).
func (ss *credSignIns) update(key string, f func(*credSignIn)) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if s := ss.byHash[key]; s != nil {
		f(s)
	}
}

func (ss *credSignIns) drop(key string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	delete(ss.byHash, key)
}

// dropSubject ends every sign-in of subject (a user disabled or removed).
func (ss *credSignIns) dropSubject(subject string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for k, s := range ss.byHash {
		if s.subject == subject {
			delete(ss.byHash, k)
		}
	}
}

// signInCookie sets (value) or clears ("") the sign-in cookie.
func signInCookie(w http.ResponseWriter, r *http.Request, value string) {
	c := &http.Cookie{Name: credSignInCookie, Value: value, Path: PathCredentials, HttpOnly: true,
		Secure: strings.HasPrefix(baseOf(r.Context()), "https://"), SameSite: http.SameSiteStrictMode, MaxAge: int(credSignInFor.Seconds())}
	if value == "" {
		c.MaxAge = -1
	}
	http.SetCookie(w, c)
}

// credentialsPage serves GET (the sign-in, or the variables) and POST (a
// sign-in, or a change) of PathCredentials/{destination}.
func (srv *Server) credentialsPage(w http.ResponseWriter, r *http.Request) {
	pageHeaders(w)
	dest, _ := strings.CutPrefix(strings.TrimSuffix(r.URL.Path, "/"), PathCredentials+"/")
	c := srv.credentials()
	var specs []CredentialSpec
	ok := c != nil && dest != "" && len(dest) <= 255 && !strings.Contains(dest, "/")
	if ok {
		specs, ok = c.Declared(dest)
	}
	if !ok {
		srv.credPage(w, http.StatusNotFound, credPageData{Error: "No destination of this bridge asks its users for credentials under this name. Use the link the bridge gave you (in your MCP client's message), or ask the bridge's operator."})
		return
	}
	d := credPageData{Dest: dest, Action: PathCredentials + "/" + url.PathEscape(dest), Users: srv.users.any()}
	switch r.Method {
	case http.MethodGet:
		s, key := srv.signedIn(r)
		if s == nil {
			srv.signInPage(w, r, http.StatusOK, d, "")
			return
		}
		srv.take(key, &d)
		srv.variablesPage(w, http.StatusOK, c, specs, s, d)
	case http.MethodPost:
		srv.credentialsPost(w, r, c, specs, d)
	default:
		w.Header().Set("Allow", "GET, POST")
		srv.credPage(w, http.StatusMethodNotAllowed, credPageData{Error: "Use GET."})
	}
}

// signedIn is the request's live sign-in of an active user (or the
// operator), with its key; nil when there is none.
func (srv *Server) signedIn(r *http.Request) (*credSignIn, string) {
	s, key := srv.credSignIns.get(r, srv.now())
	if s != nil && !srv.subjectActive(s.subject) {
		srv.credSignIns.drop(key)
		return nil, ""
	}
	return s, key
}

// take moves the sign-in's notice into d (it is shown once).
func (srv *Server) take(key string, d *credPageData) {
	srv.credSignIns.update(key, func(s *credSignIn) { d.Notice, s.notice = s.notice, "" })
}

// signInPage shows the sign-in form with a new CSRF cookie; the name is
// pre-filled from the user's trusted-browser cookie, never the secret.
func (srv *Server) signInPage(w http.ResponseWriter, r *http.Request, status int, d credPageData, problem string) {
	d.SignIn, d.Problem = true, problem
	d.CSRF = newID("", 24)
	http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: d.CSRF, Path: PathCredentials, HttpOnly: true, Secure: strings.HasPrefix(baseOf(r.Context()), "https://"), SameSite: http.SameSiteStrictMode, MaxAge: 3600})
	if d.Name == "" {
		if subject := srv.browserSubject(r); subject != "" {
			d.Name, _ = srv.UserName(subject)
		}
	}
	srv.credPage(w, status, d)
}

// variablesPage shows s's variables of d.Dest and the form to change them.
func (srv *Server) variablesPage(w http.ResponseWriter, status int, c Credentials, specs []CredentialSpec, s *credSignIn, d credPageData) {
	names, err := c.Names(d.Dest, s.subject)
	if err != nil {
		srv.log.Warn("a user's stored credentials cannot be read", "destination", d.Dest, "user", s.name, "error", err)
		d.Problems = append(d.Problems, "What you entered before cannot be used now (the bridge's log says why): enter your credentials again.")
	}
	d.Name, d.CSRF = s.name, s.csrf
	if s.cont != nil && s.cont.dest == d.Dest {
		d.Continue = true
	}
	for _, sp := range specs {
		v := credVar{Name: sp.Name, Field: "v_" + sp.Name, Description: sp.Description, Required: sp.Required,
			Stored: slices.Contains(names.Stored, sp.Name), Provisioned: slices.Contains(names.Provisioned, sp.Name)}
		if v.Stored && !names.Updated.IsZero() {
			v.When = names.Updated.UTC().Format("2006-01-02 15:04 UTC")
		}
		d.Vars = append(d.Vars, v)
		d.AnyStored = d.AnyStored || v.Stored
	}
	srv.credPage(w, status, d)
}

// sameOrigin says why a POST did not come from the page's own origin ("":
// it did): a Sec-Fetch-Site, when sent, must be same-origin; an Origin,
// when sent, the bridge's (its public URL's, or the request's Host, which
// the bridge's guard checks).
func sameOrigin(r *http.Request) string {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return "This form was sent from another site (" + site + "). Open the page from the link the bridge gave you."
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		u, err := url.Parse(origin)
		base, _ := url.Parse(baseOf(r.Context()))
		own := err == nil && u.Host != "" && (strings.EqualFold(u.Host, r.Host) || base != nil && strings.EqualFold(u.Scheme+"://"+u.Host, base.Scheme+"://"+base.Host))
		if !own {
			return "This form was sent from another origin. Open the page from the link the bridge gave you."
		}
	}
	return ""
}

// credentialsPost handles the page's forms: a sign-in, or (signed in) set,
// delete, continue and sign out.
func (srv *Server) credentialsPost(w http.ResponseWriter, r *http.Request, c Credentials, specs []CredentialSpec, d credPageData) {
	r.Body = http.MaxBytesReader(w, r.Body, maxCredBody)
	if err := r.ParseForm(); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			srv.credPage(w, http.StatusRequestEntityTooLarge, credPageData{Error: fmt.Sprintf("The form is larger than %d KiB; nothing was changed. Go back and send shorter values.", maxCredBody>>10)})
			return
		}
		srv.credPage(w, http.StatusBadRequest, credPageData{Error: "The form could not be read; nothing was changed."})
		return
	}
	if why := sameOrigin(r); why != "" {
		srv.log.Warn("a credentials form from another origin was refused", "destination", d.Dest, "origin", r.Header.Get("Origin"), "sec_fetch_site", r.Header.Get("Sec-Fetch-Site"), "remote", clientAddr(r))
		srv.credPage(w, http.StatusForbidden, credPageData{Error: why})
		return
	}
	f := r.PostForm
	if f.Get("action") == "signin" {
		srv.credentialsSignIn(w, r, d)
		return
	}
	s, key := srv.signedIn(r)
	if s == nil {
		srv.signInPage(w, r, http.StatusUnauthorized, d, "Sign in first (a sign-in lasts 15 minutes); nothing was changed.")
		return
	}
	if subtle.ConstantTimeCompare([]byte(s.csrf), []byte(f.Get("csrf"))) != 1 {
		srv.credPage(w, http.StatusForbidden, credPageData{Error: "This form did not come from your sign-in on the bridge's own page (CSRF check failed); nothing was changed. Open the page again."})
		return
	}
	switch f.Get("action") {
	case "set":
		srv.setCredentials(w, r, c, specs, s, key, d)
	case "delete":
		if err := c.Delete(d.Dest, s.subject); err != nil {
			srv.log.Error("could not delete a user's credentials", "destination", d.Dest, "user", s.name, "error", err)
			d.Problems = []string{"The bridge could not delete your credentials; see its log, or ask the bridge's operator."}
			srv.variablesPage(w, http.StatusInternalServerError, c, specs, s, d)
			return
		}
		srv.log.Info("a user deleted their credentials", "destination", d.Dest, "user", s.name, "subject", s.subject)
		srv.credSignIns.update(key, func(s *credSignIn) {
			s.notice = "Your credentials for " + d.Dest + " were deleted. Its server no longer runs for you with them: enter new ones to use it again."
		})
		http.Redirect(w, r, d.Action, http.StatusSeeOther)
	case "continue":
		srv.continueApproval(w, r, s, key, d)
	case "signout":
		srv.credSignIns.drop(key)
		signInCookie(w, r, "")
		http.Redirect(w, r, d.Action, http.StatusSeeOther)
	default:
		srv.credPage(w, http.StatusBadRequest, credPageData{Error: "The form asked for nothing the page does; nothing was changed."})
	}
}

// credentialsSignIn signs a user in with name and secret (the operator with
// the passphrase, no name) under the approval page's lockout, then shows
// the variables (by a redirect).
func (srv *Server) credentialsSignIn(w http.ResponseWriter, r *http.Request, d credPageData) {
	f := r.PostForm
	cookie, err := r.Cookie(csrfCookie)
	if form := f.Get("csrf"); err != nil || form == "" || subtle.ConstantTimeCompare([]byte(cookie.Value), []byte(form)) != 1 {
		srv.credPage(w, http.StatusForbidden, credPageData{Error: "This form did not come from the bridge's own page (CSRF check failed). Open the page again."})
		return
	}
	secure := strings.HasPrefix(baseOf(r.Context()), "https://")
	name := strings.TrimSpace(f.Get("name"))
	s := &credSignIn{csrf: newID("", 24), expires: srv.now().Add(credSignInFor)}
	if name != "" && !strings.EqualFold(name, OperatorSubject) {
		ut := srv.tryUser(w, r, name, f.Get("secret"), secure, "credentials")
		if problem, status := ut.problem(w); problem != "" {
			if CheckName(name) == nil {
				d.Name = name // a name, never the secret
			}
			srv.signInPage(w, r, status, d, problem)
			return
		}
		s.subject = ut.g.Subject
		s.name, _ = srv.UserName(s.subject)
	} else {
		t := srv.tryPassphrase(w, r, f.Get("secret"), "", secure, "credentials")
		if t.wait > 0 {
			w.Header().Set("Retry-After", fmt.Sprint(int(t.wait.Seconds())+1))
			srv.signInPage(w, r, http.StatusTooManyRequests, d, fmt.Sprintf("Too many wrong passphrases. Try again in %s.", t.wait.Round(time.Second)))
			return
		}
		if !t.ok {
			srv.signInPage(w, r, http.StatusUnauthorized, d, "Wrong name or secret.")
			return
		}
		s.subject, s.name = OperatorSubject, OperatorSubject
		srv.log.Info("the operator signed in", "page", "credentials")
	}
	signInCookie(w, r, srv.credSignIns.add(s, srv.now()))
	http.Redirect(w, r, d.Action, http.StatusSeeOther)
}

// setCredentials checks what the user typed and hands it to the bridge.
func (srv *Server) setCredentials(w http.ResponseWriter, r *http.Request, c Credentials, specs []CredentialSpec, s *credSignIn, key string, d credPageData) {
	typed := map[string]string{}
	for field, vs := range r.PostForm {
		name, ok := strings.CutPrefix(field, "v_")
		if !ok {
			continue
		}
		for _, v := range vs {
			if v != "" {
				typed[name] = v // a variable sent twice: the last (a form sends each once)
			}
		}
	}
	problems, err := checkTyped(typed, specs)
	if err != nil {
		srv.log.Error("a destination's declared credentials cannot be checked", "destination", d.Dest, "error", err)
		d.Problems = []string{"The bridge cannot check credentials for " + d.Dest + " (its log says why); ask the bridge's operator. Nothing was changed."}
		srv.variablesPage(w, http.StatusInternalServerError, c, specs, s, d)
		return
	}
	if len(typed) == 0 && len(problems) == 0 {
		d.Problems = []string{"Nothing was changed: type a value in a variable's field to set or replace it."}
		srv.variablesPage(w, http.StatusBadRequest, c, specs, s, d)
		return
	}
	// A required variable must be given, now or before (or by the
	// operator).
	names, _ := c.Names(d.Dest, s.subject)
	for _, sp := range specs {
		if sp.Required && typed[sp.Name] == "" && !slices.Contains(names.Stored, sp.Name) && !slices.Contains(names.Provisioned, sp.Name) {
			problems = append(problems, credstore.Problem{Name: sp.Name, Reason: credstore.Missing, Description: sp.Description})
		}
	}
	if len(problems) == 0 {
		err = c.Set(d.Dest, s.subject, s.name, typed)
		var refused CredentialProblems
		switch {
		case errors.As(err, &refused):
			problems = refused
		case err != nil:
			srv.log.Error("could not store a user's credentials", "destination", d.Dest, "user", s.name, "error", err)
			d.Problems = []string{"The bridge could not store your credentials; see its log, or ask the bridge's operator. Nothing was changed."}
			srv.variablesPage(w, http.StatusInternalServerError, c, specs, s, d)
			return
		}
	}
	if len(problems) > 0 {
		for _, p := range problems {
			d.Problems = append(d.Problems, p.String())
		}
		d.Problems = append(d.Problems, "Nothing was changed: correct these and send the form again (every field is empty again; the bridge never shows a value back).")
		srv.variablesPage(w, http.StatusBadRequest, c, specs, s, d)
		return
	}
	set := make([]string, 0, len(typed))
	for name := range typed {
		set = append(set, name)
	}
	slices.Sort(set)
	srv.log.Info("a user set their credentials", "destination", d.Dest, "user", s.name, "subject", s.subject, "variables", set)
	if s.cont != nil && s.cont.dest == d.Dest {
		srv.continueApproval(w, r, s, key, d)
		return
	}
	srv.credSignIns.update(key, func(s *credSignIn) {
		s.notice = "Saved: " + strings.Join(set, ", ") + ". Your next call to " + d.Dest + " starts its server for you with them (a session you had there ended; your client starts a new one)."
	})
	http.Redirect(w, r, d.Action, http.StatusSeeOther)
}

// checkTyped is what is wrong with what a user typed (some variables; the
// others stay as they are): undeclared names, patterns, NUL, size.
func checkTyped(typed map[string]string, specs []CredentialSpec) ([]credstore.Problem, error) {
	some := slices.Clone(specs)
	for i := range some {
		some[i].Required = false
	}
	return credstore.Check(typed, some)
}

// askCredentials sends the browser of an approval to the credentials page
// first (true) when the destination asks each user for credentials that
// g has not entered (nor the operator provisioned for them): the
// approval's sign-in is the page's, and the code goes to the client from
// there (continueApproval).
func (srv *Server) askCredentials(w http.ResponseWriter, r *http.Request, ar *authRequest, g grantee) bool {
	c := srv.credentials()
	if c == nil {
		return false
	}
	specs, ok := c.Declared(ar.destination)
	if !ok {
		return false
	}
	subject := g.subject()
	names, err := c.Names(ar.destination, subject)
	missing := err != nil
	for _, sp := range specs {
		missing = missing || sp.Required && !slices.Contains(names.Stored, sp.Name) && !slices.Contains(names.Provisioned, sp.Name)
	}
	if !missing {
		return false
	}
	name, _ := srv.UserName(subject)
	s := &credSignIn{subject: subject, name: name, csrf: newID("", 24), expires: srv.now().Add(credSignInFor),
		cont: &continuation{dest: ar.destination, query: r.PostForm.Get("query"), g: g}}
	signInCookie(w, r, srv.credSignIns.add(s, srv.now()))
	srv.log.Info("approved; the user enters their credentials before the client gets its code", "client_id", ar.client.ID, "destination", ar.destination, "user", name, "subject", subject)
	http.Redirect(w, r, PathCredentials+"/"+url.PathEscape(ar.destination), http.StatusSeeOther)
	return true
}

// continueApproval sends the browser back to the client of the approval
// that waited for this page, with its code: the request is checked again
// (its client may have been revoked since).
func (srv *Server) continueApproval(w http.ResponseWriter, r *http.Request, s *credSignIn, key string, d credPageData) {
	if s.cont == nil || s.cont.dest != d.Dest {
		http.Redirect(w, r, d.Action, http.StatusSeeOther)
		return
	}
	srv.credSignIns.update(key, func(s *credSignIn) { s.cont = nil })
	q, err := url.ParseQuery(s.cont.query)
	if err != nil {
		srv.credPage(w, http.StatusBadRequest, credPageData{Error: "The approval that waited for this page was lost; start again from the client."})
		return
	}
	ar, pe, code := srv.parseAuthRequest(r, q)
	switch {
	case pe != nil:
		srv.credPage(w, pe.status, credPageData{Error: pe.msg})
	case code != "":
		srv.authError(w, r, ar, code)
	default:
		srv.grantCode(w, r, ar, s.cont.g)
	}
}

// browserSubject is the subject of the request's user trusted-browser
// cookie ("" when none is valid).
func (srv *Server) browserSubject(r *http.Request) string {
	for _, c := range r.CookiesNamed(userCookie) {
		if c.Value == "" || len(c.Value) > 100 {
			continue
		}
		var rec browserRecord
		var ok bool
		_ = srv.store.db.View(func(tx *bolt.Tx) error {
			if v := tx.Bucket(bucketBrowsers).Get(hashKey(c.Value)); v != nil {
				rec, ok = readBrowser(v)
			}
			return nil
		})
		if ok && rec.Subject != "" && srv.now().Before(rec.Expires) {
			return rec.Subject
		}
	}
	return ""
}

// credVar is one declared variable as the page shows it.
type credVar struct {
	Name, Field, Description string
	Required                 bool
	// Stored: the user entered it (When); Provisioned: the operator did.
	Stored, Provisioned bool
	When                string
}

// credPageData fills the credentials page.
type credPageData struct {
	Error         string
	Dest, Action  string
	CSRF, Problem string
	Notice        string
	Problems      []string
	SignIn, Users bool
	Name          string
	Vars          []credVar
	AnyStored     bool
	Continue      bool
}

func (srv *Server) credPage(w http.ResponseWriter, status int, d credPageData) {
	srv.render(w, status, credPageTemplate, "credentials page", d)
}

var credPageTemplate = template.Must(template.New("credentials").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>stelae-bridge: your credentials</title>
<style>
body{font:16px/1.5 system-ui,sans-serif;max-width:34rem;margin:3rem auto;padding:0 1rem;color:#111}
h1{font-size:1.4rem}code{overflow-wrap:anywhere}
label{display:block;margin-top:1rem;font-weight:600}input[type=password],input[type=text]{box-sizing:border-box;width:100%;font-size:1rem;padding:.4rem}
button{font-size:1rem;padding:.5rem 1.2rem;margin:1rem .5rem 0 0}.problem{color:#a00;font-weight:600}.notice{color:#060;font-weight:600}
.state{margin:.2rem 0 .3rem;color:#444}.danger{border-top:1px solid #ccc;margin-top:2rem}
</style>
</head>
<body>
<main>
{{if .Error}}
<h1>This page cannot be used</h1>
<p class="problem" id="problem" role="alert">{{.Error}}</p>
{{else if .SignIn}}
<h1>Your credentials for {{.Dest}}</h1>
<p>The server behind <strong id="destination">{{.Dest}}</strong> runs for each user with that user's own credentials. Sign in as yourself to see, set or delete yours.</p>
{{if .Problem}}<p class="problem" id="problem" role="alert">{{.Problem}}</p>{{end}}
<form method="post" action="{{.Action}}">
<input type="hidden" name="csrf" value="{{.CSRF}}">
<input type="hidden" name="action" value="signin">
{{if .Users}}<label for="name">Your name</label>
<p>The name the operator invited you as. The bridge's operator leaves it empty and types the bridge passphrase.</p>
<input type="text" id="name" name="name" value="{{.Name}}" autocomplete="username" autocapitalize="none" spellcheck="false" maxlength="64" autofocus>
<label for="secret">Your secret (or the bridge passphrase)</label>
<input type="password" id="secret" name="secret" autocomplete="current-password">
{{else}}<label for="secret">Bridge passphrase</label>
<input type="password" id="secret" name="secret" autocomplete="current-password" autofocus>
{{end}}<button type="submit" id="signin">Sign in</button>
</form>
{{else}}
<h1>Your credentials for {{.Dest}}</h1>
<p>Signed in as <strong id="name">{{.Name}}</strong>. The bridge keeps what you enter here encrypted and puts it in the environment of your own server for <strong id="destination">{{.Dest}}</strong> only. It never shows a value back: a field left empty keeps what it has.</p>
{{if .Notice}}<p class="notice" id="notice" role="status">{{.Notice}}</p>{{end}}
{{if .Problems}}<div class="problem" id="problems" role="alert">{{range .Problems}}<p>{{.}}</p>{{end}}</div>{{end}}
{{if .Continue}}<p id="continue-note">Then you go back to the client you just approved.</p>{{end}}
<form method="post" action="{{.Action}}" autocomplete="off">
<input type="hidden" name="csrf" value="{{.CSRF}}">
{{range .Vars}}<label for="{{.Field}}"><code>{{.Name}}</code>{{if not .Required}} (optional){{end}}</label>
{{if .Description}}<p class="state">{{.Description}}</p>{{end}}
<p class="state" id="state-{{.Name}}">{{if .Stored}}Set{{if .When}} ({{.When}}){{end}}: a value typed here replaces it.{{else if .Provisioned}}Provisioned for you by the operator: a value typed here is used instead.{{else}}Not set.{{end}}</p>
<input type="password" id="{{.Field}}" name="{{.Field}}" autocomplete="off" spellcheck="false">
{{end}}<button type="submit" name="action" value="set" id="save">Save</button>
{{if .Continue}}<button type="submit" name="action" value="continue" id="skip">Go back to the client without them</button>{{end}}
</form>
{{if .AnyStored}}<form method="post" action="{{.Action}}" class="danger">
<input type="hidden" name="csrf" value="{{.CSRF}}">
<p>Deleting your credentials for {{.Dest}} stops its server for you until you enter new ones.</p>
<button type="submit" name="action" value="delete" id="delete">Delete my credentials for this destination</button>
</form>{{end}}
<form method="post" action="{{.Action}}">
<input type="hidden" name="csrf" value="{{.CSRF}}">
<button type="submit" name="action" value="signout" id="signout">Sign out</button>
</form>
{{end}}
</main>
</body>
</html>
`))
