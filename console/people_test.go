package console

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// inviteCode stands for an invite's one-time code: what must appear in the
// invite's answer and nowhere else.
const inviteCode = "INVITE-CODE-b7d41e0c9a"

// The people part of fakeBackend: alice (active) and bob (invited); the
// actions are recorded.
func (f *fakeBackend) People() ([]Person, bool, error) {
	return []Person{
		{Name: "alice", Subject: "u_a", Key: "b:u_a", Created: "2026-01-02T03:04:05Z", LastSignIn: "2026-01-03T00:00:00Z", State: "active"},
		{Name: "bob", Subject: "u_b", Key: "b:u_b", Created: "2026-01-02T03:04:06Z", State: "invited"},
	}, true, nil
}
func (f *fakeBackend) Invite(name, subject string, again bool) (Invitation, error) {
	switch {
	case name == "Bad Name!":
		return Invitation{}, fmt.Errorf("%w: %q cannot be a user's name", ErrInvalid, name)
	case name == "alice" && !again:
		return Invitation{}, errors.New("alice is already a user (subject u_a): use New link on their row")
	case name == "ghost":
		return Invitation{}, fmt.Errorf("%w: no user is named %q", ErrNotFound, name)
	}
	_ = f.record(fmt.Sprintf("invite %s %s %v", name, subject, again))
	return Invitation{Message: "Invited " + name + ".", Link: "/oauth/invite?code=" + inviteCode, Note: "Prefix it with the bridge's public URL."}, nil
}
func (f *fakeBackend) DisableUser(name, subject string) (string, error) {
	return name + " is disabled", f.record("disable " + name + " " + subject)
}
func (f *fakeBackend) EnableUser(name, subject string) (string, error) {
	return name + " is enabled", f.record("enable " + name + " " + subject)
}
func (f *fakeBackend) RemoveUser(name, subject string) (string, error) {
	if subject != "u_a" && subject != "u_b" {
		return "", fmt.Errorf("the user named %s is now another person; nothing was done", name)
	}
	return name + " is removed", f.record("remove " + name + " " + subject)
}

// offBackend is a bridge without the built-in server.
type offBackend struct{ fakeBackend }

func (*offBackend) People() ([]Person, bool, error) { return []Person{}, false, nil }

// TestPeopleActionsNeedCSRFAndSameOrigin: the people actions are the
// console's actions — an admitted viewer, the page's CSRF token, its own
// origin — and each acts on the one user it names.
func TestPeopleActionsNeedCSRFAndSameOrigin(t *testing.T) {
	fb := &fakeBackend{}
	c := New(Options{Backend: fb, AuthOn: true, Tokens: []string{"operator-token"}, Passphrase: &fakePassphrase{}})
	ck, csrf := signIn(t, c, "the passphrase")
	paths := map[string]string{
		"/console/api/people/invite":  `{"name":"carol"}`,
		"/console/api/people/disable": `{"name":"alice","subject":"u_a"}`,
		"/console/api/people/enable":  `{"name":"alice","subject":"u_a"}`,
		"/console/api/people/remove":  `{"name":"bob","subject":"u_b"}`,
	}
	for path, body := range paths {
		for _, tc := range []struct {
			name string
			hdr  []string
			want int
		}{
			{"no cookie", []string{"X-CSRF-Token", csrf}, 401},
			{"a wrong bearer token", []string{"Authorization", "Bearer not-the-operator-token"}, 401},
			{"no CSRF token", []string{"Cookie", ck.String()}, 403},
			{"a wrong CSRF token", []string{"Cookie", ck.String(), "X-CSRF-Token", strings.Repeat("0", 64)}, 403},
			{"another origin", []string{"Cookie", ck.String(), "X-CSRF-Token", csrf, "Origin", "https://evil.example"}, 403},
			{"another site", []string{"Cookie", ck.String(), "X-CSRF-Token", csrf, "Sec-Fetch-Site", "cross-site"}, 403},
		} {
			w := serve(c, req("POST", path, local, body, append([]string{"Content-Type", "application/json"}, tc.hdr...)...))
			if w.Code != tc.want {
				t.Errorf("%s, %s: %d, want %d: %s", path, tc.name, w.Code, tc.want, w.Body)
			}
			if strings.Contains(w.Body.String(), inviteCode) {
				t.Errorf("%s, %s: a refused request got an invite's link", path, tc.name)
			}
		}
		if w := serve(c, req("GET", path, local, "", "Cookie", ck.String())); w.Code != 405 {
			t.Errorf("GET %s: %d, want 405", path, w.Code)
		}
	}
	if got := fb.done(); len(got) != 0 {
		t.Fatalf("refused actions were taken: %v", got)
	}
	ok := func(path, body string) map[string]any {
		t.Helper()
		w := serve(c, req("POST", path, local, body, "Content-Type", "application/json", "Cookie", ck.String(), "X-CSRF-Token", csrf,
			"Origin", "http://127.0.0.1:9090", "Sec-Fetch-Site", "same-origin"))
		var out map[string]any
		if w.Code != 200 || json.Unmarshal(w.Body.Bytes(), &out) != nil {
			t.Fatalf("%s %s: %d %s", path, body, w.Code, w.Body)
		}
		return out
	}
	inv := ok("/console/api/people/invite", `{"name":"carol"}`)
	if inv["link"] != "/oauth/invite?code="+inviteCode || inv["note"] == "" || inv["message"] != "Invited carol." {
		t.Errorf("the invite's answer: %v", inv)
	}
	ok("/console/api/people/invite", `{"name":"bob","subject":"u_b","again":true}`)
	ok("/console/api/people/disable", `{"name":"alice","subject":"u_a"}`)
	ok("/console/api/people/enable", `{"name":"alice","subject":"u_a"}`)
	if out := ok("/console/api/people/remove", `{"name":"bob","subject":"u_b"}`); out["message"] != "bob is removed" || out["link"] != nil {
		t.Errorf("remove's answer: %v", out)
	}
	want := "invite carol  false|invite bob u_b true|disable alice u_a|enable alice u_a|remove bob u_b"
	if got := strings.Join(fb.done(), "|"); got != want {
		t.Errorf("actions taken: %s\nwant           %s", got, want)
	}
	// A script with an operator token needs no CSRF token (no browser
	// sends that header by itself).
	w := serve(c, req("POST", "/console/api/people/disable", local, `{"name":"bob","subject":"u_b"}`, "Authorization", "Bearer operator-token"))
	if w.Code != 200 {
		t.Errorf("a script's disable: %d %s", w.Code, w.Body)
	}
}

// TestPeopleActionErrors: the backend's errors reach the operator as they
// are, with the status of their kind: a name no user may have 400, an
// unknown user 404, a name already a user's (or now another person's) 409
// — and nothing is done.
func TestPeopleActionErrors(t *testing.T) {
	fb := &fakeBackend{}
	c := New(Options{Backend: fb, AuthOn: true, Tokens: []string{"operator-token"}})
	for _, tc := range []struct {
		path, body string
		status     int
		says       string
	}{
		{"invite", `{"name":"Bad Name!"}`, 400, `cannot be a user's name`},
		{"invite", `{"name":"alice"}`, 409, "alice is already a user (subject u_a): use New link on their row"},
		{"invite", `{"name":"ghost","subject":"u_g","again":true}`, 404, `no user is named \"ghost\"`},
		{"remove", `{"name":"alice","subject":"u_old"}`, 409, "is now another person; nothing was done"},
		{"invite", `{"name":`, 400, "small JSON object"},
	} {
		w := serve(c, req("POST", "/console/api/people/"+tc.path, local, tc.body, "Authorization", "Bearer operator-token"))
		if w.Code != tc.status || !strings.Contains(w.Body.String(), tc.says) {
			t.Errorf("%s %s: %d %s; want %d saying %q", tc.path, tc.body, w.Code, w.Body, tc.status, tc.says)
		}
	}
	if got := fb.done(); len(got) != 0 {
		t.Errorf("refused actions were taken: %v", got)
	}
}

// TestPeopleInState: the state lists the built-in server's users when it
// runs (and says it does not otherwise); the page has their panel.
func TestPeopleInState(t *testing.T) {
	state := func(b Backend) State {
		t.Helper()
		c := New(Options{Backend: b, AuthOn: true, Tokens: []string{"operator-token"}})
		w := serve(c, req("GET", "/console/api/state", local, "", "Authorization", "Bearer operator-token"))
		var st State
		if w.Code != 200 || json.Unmarshal(w.Body.Bytes(), &st) != nil {
			t.Fatalf("state: %d %s", w.Code, w.Body)
		}
		return st
	}
	st := state(&fakeBackend{})
	if !st.PeopleEnabled || len(st.People) != 2 || st.People[0].Name != "alice" || st.People[0].State != "active" || st.People[1].State != "invited" || st.People[0].Key != "b:u_a" {
		t.Errorf("people: %v %+v", st.PeopleEnabled, st.People)
	}
	if st := state(&offBackend{}); st.PeopleEnabled || st.People == nil || len(st.People) != 0 {
		t.Errorf("without the built-in server: %v %+v", st.PeopleEnabled, st.People)
	}
	c := New(Options{Backend: &fakeBackend{}, AuthOn: true, Tokens: []string{"operator-token"}})
	page := serve(c, req("GET", "/console", local, "", "Authorization", "Bearer operator-token")).Body.String()
	for _, id := range []string{`id="people"`, `id="invite-form"`, `id="invite-name"`, `id="invite-link"`, `id="people-body"`} {
		if !strings.Contains(page, id) {
			t.Errorf("the page has no %s", id)
		}
	}
}

// TestInviteLinkOnlyInItsAnswer: an invite's one-time link is in the
// answer to the operator who asked, and nowhere else the console shows or
// writes: not the state, the event stream, the log tail, the page, nor the
// console's log.
func TestInviteLinkOnlyInItsAnswer(t *testing.T) {
	var logs bytes.Buffer
	fb := &fakeBackend{}
	c := New(Options{Backend: fb, AuthOn: true, Tokens: []string{"operator-token"}, Every: 40 * time.Millisecond,
		Logger: hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Trace})})
	srv := httptest.NewServer(c)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/console/events", nil)
	r.Header.Set("Authorization", "Bearer operator-token")
	resp, err := http.DefaultClient.Do(r)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("events: %v %v", err, resp)
	}
	defer resp.Body.Close()
	w := serve(c, req("POST", "/console/api/people/invite", local, `{"name":"carol"}`, "Authorization", "Bearer operator-token"))
	if w.Code != 200 || !strings.Contains(w.Body.String(), inviteCode) {
		t.Fatalf("the invite's answer has no link: %d %s", w.Code, w.Body)
	}
	// The stream's events after the invite (each state is made anew once
	// the action cleared the last): three states, with people in them.
	var stream strings.Builder
	states := 0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for states < 3 && sc.Scan() {
		line := sc.Text()
		stream.WriteString(line + "\n")
		if strings.HasPrefix(line, "event: state") {
			states++
		}
	}
	if states < 3 || !strings.Contains(stream.String(), `"subject":"u_b"`) {
		t.Fatalf("the stream's states (%d): %v\n%.500s", states, sc.Err(), stream.String())
	}
	seen := map[string]string{
		"the event stream":  stream.String(),
		"the state":         serve(c, req("GET", "/console/api/state", local, "", "Authorization", "Bearer operator-token")).Body.String(),
		"the log tail":      serve(c, req("GET", "/console/api/log", local, "", "Authorization", "Bearer operator-token")).Body.String(),
		"the page":          serve(c, req("GET", "/console", local, "", "Authorization", "Bearer operator-token")).Body.String(),
		"the console's log": logs.String(),
	}
	for where, s := range seen {
		if strings.Contains(s, inviteCode) {
			t.Errorf("%s holds the invite's code", where)
		}
	}
	if !strings.Contains(logs.String(), "operator action") || !strings.Contains(logs.String(), "name=carol") {
		t.Errorf("the console's log does not record the invite: %s", logs.String())
	}
}
