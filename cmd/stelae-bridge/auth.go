package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/stelae-bridge/stelae-bridge/authserver"
	"github.com/stelae-bridge/stelae-bridge/config"
	"github.com/stelae-bridge/stelae-bridge/supervisor"
)

// This file is 'stelae-bridge auth clients|revoke|unlock|invite|users|
// disable|enable|remove' and the admin socket a
// running bridge answers them on: the database is the bridge's while it
// runs, so the commands ask the bridge; when none runs they open the
// database themselves.

// adminSocket is the running bridge's admin socket, in the state directory
// (0700), itself 0600.
const adminSocket = "admin.sock"

// usesBuiltin reports whether any 'auth:' block selects the built-in
// server.
func usesBuiltin(cfg *config.Config) bool {
	if cfg.Auth.Builtin() {
		return true
	}
	for _, d := range cfg.Destinations {
		if d.Auth.Builtin() {
			return true
		}
	}
	return false
}

// builtinClients are the pre-registered clients of every 'issuer: builtin'
// block.
func builtinClients(cfg *config.Config) []authserver.Client {
	var out []authserver.Client
	seen := map[string]bool{}
	blocks := []*config.Auth{cfg.Auth}
	for _, d := range cfg.Destinations {
		blocks = append(blocks, d.Auth)
	}
	for _, a := range blocks {
		if !a.Builtin() {
			continue
		}
		for _, c := range a.Clients {
			if !seen[c.ID] {
				seen[c.ID] = true
				out = append(out, authserver.Client{ID: c.ID, Name: c.Name, RedirectURIs: c.RedirectURIs})
			}
		}
	}
	return out
}

// serveAdmin answers the auth commands on a unix socket at path until the
// returned stop is called.
func serveAdmin(as *authserver.Server, path string, log hclog.Logger) (func(), error) {
	_ = os.Remove(path) // left by a bridge that was killed
	ln, err := listenPrivate(path)
	if err != nil {
		return nil, fmt.Errorf("cannot open the admin socket %s: %w", path, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /clients", func(w http.ResponseWriter, r *http.Request) {
		cs, err := as.Store().Clients()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		_ = json.NewEncoder(w).Encode(cs)
	})
	mux.HandleFunc("POST /revoke", func(w http.ResponseWriter, r *http.Request) {
		if err := as.RevokeClient(r.URL.Query().Get("client")); err != nil {
			http.Error(w, err.Error(), http.StatusNotFound)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /unlock", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]string{"code": as.Unlock()})
	})
	mux.HandleFunc("GET /users", func(w http.ResponseWriter, r *http.Request) {
		us, err := as.Users()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		_ = json.NewEncoder(w).Encode(us)
	})
	mux.HandleFunc("POST /invite", func(w http.ResponseWriter, r *http.Request) {
		code, u, existed, err := as.InviteUser(r.URL.Query().Get("name"))
		if err != nil {
			http.Error(w, err.Error(), userErrorStatus(err))
			return
		}
		_ = json.NewEncoder(w).Encode(inviteAnswer{Code: code, User: u, Existed: existed})
	})
	for action, f := range map[string]func(string) (authserver.User, error){"disable": as.DisableUser, "enable": as.EnableUser, "remove": as.RemoveUser} {
		mux.HandleFunc("POST /"+action, func(w http.ResponseWriter, r *http.Request) {
			u, err := f(r.URL.Query().Get("name"))
			if err != nil {
				http.Error(w, err.Error(), userErrorStatus(err))
				return
			}
			_ = json.NewEncoder(w).Encode(u)
		})
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("admin socket", "error", err)
		}
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
		_ = os.Remove(path)
	}, nil
}

// inviteAnswer is the admin socket's answer to an invite: the code of the
// link (over the 0600 socket only), the user, and whether they existed.
type inviteAnswer struct {
	Code    string          `json:"code"`
	User    authserver.User `json:"user"`
	Existed bool            `json:"existed"`
}

// userErrorStatus is the admin socket's status for a user command's error.
func userErrorStatus(err error) int {
	switch {
	case errors.Is(err, authserver.ErrUnknownUser):
		return http.StatusNotFound
	case errors.Is(err, authserver.ErrBadName):
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}

// authUsage is the auth commands' usage.
const authUsage = `Usage: stelae-bridge auth clients            list the clients of the built-in authorization server and their last use
       stelae-bridge auth revoke CLIENT_ID   end a client's access at once
       stelae-bridge auth unlock             clear the approval page's lockout and print a one-time unlock code
       stelae-bridge auth invite NAME        invite a person (or let a user set a new secret): prints a one-time link, valid 7 days
       stelae-bridge auth users              list the users: name, subject, created, last sign-in, state
       stelae-bridge auth disable NAME       refuse a user's tokens at once and their sign-ins until enabled
       stelae-bridge auth enable NAME        let a disabled user sign in again (their old tokens stay refused)
       stelae-bridge auth remove NAME        remove a user: their tokens are refused at once, their subject never comes back

Flags:
`

// runAuth is 'stelae-bridge auth clients|revoke|unlock|invite|users|
// disable|enable|remove'.
func runAuth(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("stelae-bridge auth", flag.ContinueOnError)
	fs.SetOutput(stderr)
	stateDir := fs.String("state-dir", getenv("STELAE_STATE_DIR"), "the bridge's state directory (as the bridge's -state-dir)")
	publicURL := fs.String("public-url", getenv("STELAE_PUBLIC_URL"), "the bridge's public URL (as the bridge's -public-url), which 'auth invite' prints its link under")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), authUsage)
		fs.PrintDefaults()
	}
	// Flags may come anywhere, as -help prints them (auth revoke
	// CLIENT_ID -state-dir DIR).
	pos, code, done := parseSubcommand(fs, args, stdout, stderr)
	if done {
		return code
	}
	if len(pos) == 0 {
		fmt.Fprintln(stderr, "stelae-bridge auth: which command? want clients, revoke CLIENT_ID, unlock, invite NAME, users, disable NAME, enable NAME or remove NAME")
		fs.Usage()
		return 2
	}
	cmd, pos := pos[0], pos[1:]
	want := map[string]int{"clients": 0, "revoke": 1, "unlock": 0, "invite": 1, "users": 0, "disable": 1, "enable": 1, "remove": 1}
	switch n, known := want[cmd]; {
	case !known:
		fmt.Fprintf(stderr, "stelae-bridge auth: unknown command %q: want clients, revoke CLIENT_ID, unlock, invite NAME, users, disable NAME, enable NAME or remove NAME\n", cmd)
		fs.Usage()
		return 2
	case len(pos) != n && n == 0:
		fmt.Fprintf(stderr, "stelae-bridge auth %s: takes no arguments, got %q\n", cmd, pos)
		return 2
	case len(pos) != n && cmd == "revoke":
		fmt.Fprintf(stderr, "stelae-bridge auth %s: takes one CLIENT_ID (see 'stelae-bridge auth clients'), got %d arguments %q\n", cmd, len(pos), pos)
		return 2
	case len(pos) != n:
		fmt.Fprintf(stderr, "stelae-bridge auth %s: takes one NAME (see 'stelae-bridge auth users'), got %d arguments %q\n", cmd, len(pos), pos)
		return 2
	case n == 1 && cmd != "revoke" && authserver.CheckName(pos[0]) != nil:
		fmt.Fprintf(stderr, "stelae-bridge auth %s: %q: %v\n", cmd, pos[0], authserver.ErrBadName)
		return 2
	}
	if *stateDir == "" {
		dir, err := supervisor.DefaultStateDir(getenv)
		if err != nil {
			fmt.Fprintln(stderr, "stelae-bridge auth:", err)
			return 1
		}
		*stateDir = dir
	}
	a := adminClient{dir: *stateDir}
	switch cmd {
	case "clients":
		cs, err := a.clients(ctx)
		if err != nil {
			fmt.Fprintln(stderr, "stelae-bridge auth:", err)
			return 1
		}
		printClients(stdout, cs)
		return 0
	case "revoke":
		if err := a.revoke(ctx, pos[0]); err != nil {
			fmt.Fprintln(stderr, "stelae-bridge auth:", err)
			return 1
		}
		fmt.Fprintf(stdout, "revoked %s: its refresh tokens no longer work and its access tokens are refused from now on\n", pos[0])
		return 0
	case "unlock":
		code, err := a.unlock(ctx)
		if err != nil {
			fmt.Fprintln(stderr, "stelae-bridge auth:", err)
			return 1
		}
		fmt.Fprintf(stdout, "the approval page's lockout is cleared. Unlock code (one use, 10 minutes): %s\nEnter it on the page with the passphrase; that browser is then trusted and not held by others' wrong guesses.\n", code)
	case "invite":
		ans, err := a.invite(ctx, pos[0])
		if err != nil {
			fmt.Fprintln(stderr, "stelae-bridge auth:", err)
			return 1
		}
		printInvite(stdout, ans, *publicURL)
	case "users":
		us, err := a.users(ctx)
		if err != nil {
			fmt.Fprintln(stderr, "stelae-bridge auth:", err)
			return 1
		}
		printUsers(stdout, us)
	case "disable", "enable", "remove":
		u, err := a.userAction(ctx, cmd, pos[0])
		if err != nil {
			fmt.Fprintln(stderr, "stelae-bridge auth:", err)
			return 1
		}
		switch cmd {
		case "disable":
			fmt.Fprintf(stdout, "disabled %s (subject %s): their tokens are refused from now on and they cannot sign in until 'stelae-bridge auth enable %s'\n", u.Name, u.Subject, u.Name)
		case "enable":
			fmt.Fprintf(stdout, "enabled %s (subject %s): they can sign in again; their tokens from before stay refused\n", u.Name, u.Subject)
		case "remove":
			fmt.Fprintf(stdout, "removed %s (subject %s): their tokens are refused from now on; inviting the name again makes another user\n", u.Name, u.Subject)
		}
	}
	return 0
}

// parseInterspersed parses args with fs, flags before, between or after
// the positional arguments, which it returns; after "--" every argument is
// positional.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}

// adminClient reaches the state of the built-in server: through a running
// bridge's socket, else in the database directly.
type adminClient struct{ dir string }

func (a adminClient) http() *http.Client {
	sock := filepath.Join(a.dir, adminSocket)
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
}

// viaBridge reports whether a bridge answers on the socket.
func (a adminClient) viaBridge() bool {
	c, err := net.DialTimeout("unix", filepath.Join(a.dir, adminSocket), time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

func (a adminClient) store() (*authserver.Store, error) {
	path := filepath.Join(a.dir, "oauth.db")
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("no built-in authorization server state in %s (is -state-dir right? has the bridge run with 'auth: {issuer: builtin}'?)", a.dir)
	}
	return authserver.OpenStore(path)
}

func (a adminClient) clients(ctx context.Context) ([]authserver.Client, error) {
	if a.viaBridge() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://bridge/clients", nil)
		resp, err := a.http().Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		var cs []authserver.Client
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			return nil, errors.New(strings.TrimSpace(string(b)))
		}
		return cs, json.NewDecoder(resp.Body).Decode(&cs)
	}
	st, err := a.store()
	if err != nil {
		return nil, err
	}
	defer st.Close()
	return st.Clients()
}

func (a adminClient) revoke(ctx context.Context, id string) error {
	if a.viaBridge() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://bridge/revoke?client="+url.QueryEscape(id), nil)
		resp, err := a.http().Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			b, _ := io.ReadAll(resp.Body)
			return errors.New(strings.TrimSpace(string(b)))
		}
		return nil
	}
	st, err := a.store()
	if err != nil {
		return err
	}
	defer st.Close()
	return st.RevokeClient(id)
}

// unlock asks the running bridge for an unlock code; the lockout lives in
// its memory, so without a running bridge there is nothing to unlock.
func (a adminClient) unlock(ctx context.Context) (string, error) {
	if !a.viaBridge() {
		return "", fmt.Errorf("no bridge answers on %s: the lockout lives in a running bridge's memory (a bridge that starts has none)", filepath.Join(a.dir, adminSocket))
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://bridge/unlock", nil)
	resp, err := a.http().Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var out struct{ Code string }
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return "", errors.New(strings.TrimSpace(string(b)))
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.Code == "" {
		return "", fmt.Errorf("the bridge's answer to unlock could not be read: %v", err)
	}
	return out.Code, nil
}

// invite asks the running bridge for an invite, else writes it in the
// database (the link works once a bridge runs).
func (a adminClient) invite(ctx context.Context, name string) (inviteAnswer, error) {
	var ans inviteAnswer
	if a.viaBridge() {
		return ans, a.call(ctx, http.MethodPost, "/invite?name="+url.QueryEscape(name), &ans)
	}
	st, err := a.store()
	if err != nil {
		return ans, err
	}
	defer st.Close()
	ans.Code, ans.User, ans.Existed, err = st.Invite(name, time.Now())
	return ans, err
}

func (a adminClient) users(ctx context.Context) ([]authserver.User, error) {
	if a.viaBridge() {
		var us []authserver.User
		return us, a.call(ctx, http.MethodGet, "/users", &us)
	}
	st, err := a.store()
	if err != nil {
		return nil, err
	}
	defer st.Close()
	return st.Users()
}

// userAction is disable, enable or remove: through the running bridge,
// which refuses the user's tokens at once and stops what is theirs, else
// in the database.
func (a adminClient) userAction(ctx context.Context, action, name string) (authserver.User, error) {
	var u authserver.User
	if a.viaBridge() {
		return u, a.call(ctx, http.MethodPost, "/"+action+"?name="+url.QueryEscape(name), &u)
	}
	st, err := a.store()
	if err != nil {
		return u, err
	}
	defer st.Close()
	switch action {
	case "disable":
		return st.DisableUser(name)
	case "enable":
		return st.EnableUser(name)
	}
	return st.RemoveUser(name)
}

// call makes one request on the admin socket and decodes its JSON answer
// into out; an error status is returned with the bridge's message.
func (a adminClient) call(ctx context.Context, method, path string, out any) error {
	req, _ := http.NewRequestWithContext(ctx, method, "http://bridge"+path, nil)
	resp, err := a.http().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return errors.New(strings.TrimSpace(string(b)))
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("the bridge's answer could not be read: %w", err)
	}
	return nil
}

// printInvite prints an invite's link: under the public URL when it is
// known, else its path and how to complete it.
func printInvite(w io.Writer, ans inviteAnswer, publicURL string) {
	link := authserver.PathInvite + "?code=" + url.QueryEscape(ans.Code)
	if ans.Existed {
		fmt.Fprintf(w, "%s (subject %s) exists: with this link they set a new secret (their current one works until then; earlier links no longer do).\n", ans.User.Name, ans.User.Subject)
	} else {
		fmt.Fprintf(w, "invited %s (subject %s).\n", ans.User.Name, ans.User.Subject)
	}
	fmt.Fprintln(w, "Send them this link; it works once, for 7 days, and only while a bridge runs:")
	if publicURL != "" {
		fmt.Fprintf(w, "  %s%s\n", strings.TrimSuffix(publicURL, "/"), link)
		return
	}
	fmt.Fprintf(w, "  %s\n(prefix it with the bridge's public URL, e.g. https://mcp.example.com%s; -public-url or STELAE_PUBLIC_URL prints it whole)\n", link, link)
}

func printUsers(w io.Writer, us []authserver.User) {
	if len(us) == 0 {
		fmt.Fprintln(w, "no users yet (invite one: stelae-bridge auth invite NAME)")
		return
	}
	sort.Slice(us, func(i, j int) bool { return us[i].Created.Before(us[j].Created) })
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSUBJECT\tCREATED\tLAST SIGN-IN\tSTATE")
	for _, u := range us {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", u.Name, u.Subject, when(u.Created), when(u.LastSignIn), u.State())
	}
	tw.Flush()
}

// when is a time as the listings show it.
func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04")
}

func printClients(w io.Writer, cs []authserver.Client) {
	if len(cs) == 0 {
		fmt.Fprintln(w, "no clients yet")
		return
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].Created.Before(cs[j].Created) })
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CLIENT ID\tNAME\tSOURCE\tAPPROVED\tLAST USED\tSTATE")
	for _, c := range cs {
		state := "active"
		switch {
		case c.Revoked:
			state = "revoked"
		case c.Approved.IsZero():
			state = "not approved"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", c.ID, c.Name, c.Source, when(c.Approved), when(c.LastUsed), state)
	}
	tw.Flush()
}

// parseSubcommand parses a subcommand's flags, which may come anywhere
// among its arguments: -help goes to stdout (exit 0), an error to stderr
// (exit 2). done: the caller returns code.
func parseSubcommand(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (pos []string, code int, done bool) {
	var parsed bytes.Buffer
	fs.SetOutput(&parsed)
	pos, err := parseInterspersed(fs, args)
	fs.SetOutput(stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		_, _ = stdout.Write(parsed.Bytes())
		return nil, 0, true
	case err != nil:
		_, _ = stderr.Write(parsed.Bytes())
		return nil, 2, true
	}
	return pos, 0, false
}
