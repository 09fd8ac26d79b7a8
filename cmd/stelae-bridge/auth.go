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

// This file is 'stelae-bridge auth clients|revoke|unlock' and the admin socket a
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

// runAuth is 'stelae-bridge auth clients' and 'stelae-bridge auth revoke
// CLIENT'.
func runAuth(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("stelae-bridge auth", flag.ContinueOnError)
	fs.SetOutput(stderr)
	stateDir := fs.String("state-dir", getenv("STELAE_STATE_DIR"), "the bridge's state directory (as the bridge's -state-dir)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: stelae-bridge auth clients            list the clients of the built-in authorization server and their last use\n       stelae-bridge auth revoke CLIENT_ID   end a client's access at once\n       stelae-bridge auth unlock             clear the approval page's passphrase lockout and print a one-time unlock code\n\nFlags:\n")
		fs.PrintDefaults()
	}
	// Flags may come anywhere, as -help prints them (auth revoke
	// CLIENT_ID -state-dir DIR); -help goes to stdout, errors to stderr.
	var parsed bytes.Buffer
	fs.SetOutput(&parsed)
	pos, err := parseInterspersed(fs, args)
	fs.SetOutput(stderr)
	if errors.Is(err, flag.ErrHelp) {
		_, _ = stdout.Write(parsed.Bytes())
		return 0
	}
	if err != nil {
		_, _ = stderr.Write(parsed.Bytes())
		return 2
	}
	if len(pos) == 0 {
		fmt.Fprintln(stderr, "stelae-bridge auth: which command? want clients, revoke CLIENT_ID or unlock")
		fs.Usage()
		return 2
	}
	cmd, pos := pos[0], pos[1:]
	want := map[string]int{"clients": 0, "revoke": 1, "unlock": 0}
	switch n, known := want[cmd]; {
	case !known:
		fmt.Fprintf(stderr, "stelae-bridge auth: unknown command %q: want clients, revoke CLIENT_ID or unlock\n", cmd)
		fs.Usage()
		return 2
	case len(pos) != n && n == 0:
		fmt.Fprintf(stderr, "stelae-bridge auth %s: takes no arguments, got %q\n", cmd, pos)
		return 2
	case len(pos) != n:
		fmt.Fprintf(stderr, "stelae-bridge auth %s: takes one CLIENT_ID (see 'stelae-bridge auth clients'), got %d arguments %q\n", cmd, len(pos), pos)
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

func printClients(w io.Writer, cs []authserver.Client) {
	if len(cs) == 0 {
		fmt.Fprintln(w, "no clients yet")
		return
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].Created.Before(cs[j].Created) })
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CLIENT ID\tNAME\tSOURCE\tAPPROVED\tLAST USED\tSTATE")
	when := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.Local().Format("2006-01-02 15:04")
	}
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
