package authserver

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/stelae-bridge/stelae-bridge/lockout"
)

// Client is a client the server knows: registered (RFC 7591), identified by
// a metadata document (its id is the document's https URL), or declared in
// the configuration.
type Client struct {
	ID           string    `json:"client_id"`
	Name         string    `json:"client_name"`
	RedirectURIs []string  `json:"redirect_uris"`
	Source       string    `json:"source"` // "dcr", "cimd" or "config"
	Created      time.Time `json:"created"`
	// Approved is when the operator first approved it; zero before.
	Approved time.Time `json:"approved,omitzero"`
	LastUsed time.Time `json:"last_used,omitzero"`
	Revoked  bool      `json:"revoked,omitempty"`
	// RegTokenHash is the SHA-256 of its registration access token
	// (deregister.go); none for a client not registered by DCR.
	RegTokenHash []byte `json:"reg_token_hash,omitempty"`
}

// Client sources.
const (
	SourceDCR    = "dcr"
	SourceCIMD   = "cimd"
	SourceConfig = "config"
)

// ErrUnknownClient: no such client (or it was revoked).
var ErrUnknownClient = errors.New("unknown client")

// client reads a stored client.
func (s *Store) client(id string) (*Client, error) {
	var c Client
	var ok bool
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		ok, err = get(tx, bucketClients, []byte(id), &c)
		return err
	})
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, ErrUnknownClient
	}
	return &c, nil
}

// saveClient writes c.
func (s *Store) saveClient(c *Client) error {
	return s.db.Update(func(tx *bolt.Tx) error { return put(tx, bucketClients, []byte(c.ID), c) })
}

// Clients lists every stored client.
func (s *Store) Clients() ([]Client, error) {
	var out []Client
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketClients).ForEach(func(_, v []byte) error {
			var c Client
			if err := json.Unmarshal(v, &c); err != nil {
				return err
			}
			out = append(out, c)
			return nil
		})
	})
	return out, err
}

// unapprovedFor is how long a registration the operator never approved is
// kept.
const unapprovedFor = 24 * time.Hour

// expired reports whether c is a registration never approved and too old.
func (c *Client) expired(now time.Time) bool {
	return c.Source == SourceDCR && c.Approved.IsZero() && now.Sub(c.Created) > unapprovedFor
}

// registeredSlots drops the registrations that expired and counts those
// that hold a slot: registered by DCR, not revoked.
func (s *Store) registeredSlots() (int, error) {
	n := 0
	now := time.Now()
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketClients)
		var gone [][]byte
		err := b.ForEach(func(k, v []byte) error {
			var c Client
			if err := json.Unmarshal(v, &c); err != nil {
				return err
			}
			switch {
			case c.expired(now):
				gone = append(gone, append([]byte(nil), k...))
			case c.Source == SourceDCR && !c.Revoked:
				n++
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
	})
	return n, err
}

// RevokeClient ends a client's access: it is marked revoked (its access
// tokens are refused from now on, its refresh tokens stop working) and
// every refresh-token family of it is revoked.
func (s *Store) RevokeClient(id string) error {
	_, err := s.revokeClient(id)
	return err
}

// revokeClient is RevokeClient; it also returns the subjects the client's
// families (before this revocation, those not yet revoked) spoke for.
func (s *Store) revokeClient(id string) (subjects []string, err error) {
	err = s.db.Update(func(tx *bolt.Tx) error {
		var c Client
		ok, err := get(tx, bucketClients, []byte(id), &c)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w %q (see 'stelae-bridge auth clients')", ErrUnknownClient, id)
		}
		c.Revoked = true
		if err := put(tx, bucketClients, []byte(id), &c); err != nil {
			return err
		}
		subjects, err = revokeFamiliesOf(tx, id)
		return err
	})
	return subjects, err
}

// newID is a random identifier with a prefix.
func newID(prefix string, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return prefix + base64.RawURLEncoding.EncodeToString(b)
}

// registration is the client metadata a DCR request may carry (RFC 7591
// §2); only what the server uses is read.
type registration struct {
	RedirectURIs            []string `json:"redirect_uris"`
	ClientName              string   `json:"client_name"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	Scope                   string   `json:"scope"`
}

// checkRedirectURI says what is wrong with a redirect URI ("" when fine):
// https, or http on a loopback address (native apps, RFC 8252 §7.3), or a
// private-use scheme with a dot (RFC 8252 §7.1); no fragment.
func checkRedirectURI(s string) string {
	u, err := url.Parse(s)
	switch {
	case err != nil || !u.IsAbs():
		return "is not an absolute URI"
	case u.Fragment != "":
		return "may not have a fragment"
	case !validPort(u.Port()):
		return "has an invalid port (1 to 65535)"
	case u.Scheme == "https" && u.Host != "":
		return ""
	case u.Scheme == "http" && isLoopbackHost(u.Hostname()):
		return ""
	case u.Scheme == "http":
		return "must use https (http only on a loopback address)"
	case strings.Contains(u.Scheme, "."):
		return ""
	}
	return "must be https, loopback http, or a reverse-domain private-use scheme"
}

// register handles POST /oauth/register: public clients only.
func (srv *Server) register(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		oauthError(w, http.StatusMethodNotAllowed, "invalid_request", "POST the client metadata as JSON")
		return
	}
	if !srv.registrations.allow(lockout.AddrKey(clientAddr(r))) {
		w.Header().Set("Retry-After", "60")
		oauthError(w, http.StatusTooManyRequests, "invalid_request", fmt.Sprintf("too many registrations from this address (%d a minute); retry in a minute", srv.opts.RegistrationsPerMinute))
		return
	}
	var reg registration
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&reg); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_client_metadata", "the body is not client metadata JSON: "+err.Error())
		return
	}
	if len(reg.RedirectURIs) == 0 || len(reg.RedirectURIs) > 10 {
		oauthError(w, http.StatusBadRequest, "invalid_redirect_uri", "give between 1 and 10 redirect_uris")
		return
	}
	for _, u := range reg.RedirectURIs {
		if why := checkRedirectURI(u); why != "" || len(u) > 2000 {
			oauthError(w, http.StatusBadRequest, "invalid_redirect_uri", fmt.Sprintf("redirect URI %q %s", truncate(u, 200), why))
			return
		}
	}
	for _, g := range reg.GrantTypes {
		if g != "authorization_code" && g != "refresh_token" {
			oauthError(w, http.StatusBadRequest, "invalid_client_metadata", fmt.Sprintf("grant type %q is not supported (authorization_code, refresh_token)", truncate(g, 100)))
			return
		}
	}
	for _, t := range reg.ResponseTypes {
		if t != "code" {
			oauthError(w, http.StatusBadRequest, "invalid_client_metadata", fmt.Sprintf("response type %q is not supported (code)", truncate(t, 100)))
			return
		}
	}
	n, err := srv.store.registeredSlots()
	if err != nil {
		srv.log.Error("could not count the registered clients", "error", err)
		oauthError(w, http.StatusInternalServerError, "server_error", "could not read the registered clients")
		return
	}
	if n >= srv.opts.MaxClients {
		srv.log.Warn("registration refused: the registered clients are at their maximum", "max", srv.opts.MaxClients)
		oauthError(w, http.StatusServiceUnavailable, "invalid_request", fmt.Sprintf("this server holds its maximum of %d registered clients; the operator can free some with 'stelae-bridge auth revoke' (registrations never approved go after a day)", srv.opts.MaxClients))
		return
	}
	regToken, regHash := newRegistrationToken()
	c := &Client{ID: newID("dcr_", 16), Name: truncate(reg.ClientName, 200), RedirectURIs: reg.RedirectURIs, Source: SourceDCR, Created: time.Now().UTC(), RegTokenHash: regHash}
	if err := srv.store.saveClient(c); err != nil {
		oauthError(w, http.StatusInternalServerError, "server_error", "could not store the client")
		srv.log.Error("could not store a registered client", "error", err)
		return
	}
	srv.log.Info("client registered", "client_id", c.ID, "client_name", c.Name)
	writeJSON(w, http.StatusCreated, map[string]any{
		"client_id":                  c.ID,
		"client_id_issued_at":        c.Created.Unix(),
		"client_name":                c.Name,
		"redirect_uris":              c.RedirectURIs,
		"token_endpoint_auth_method": "none",
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
		// RFC 7592: how the client deletes itself.
		"registration_client_uri":   baseOf(r.Context()) + PathRegister + "/" + c.ID,
		"registration_access_token": regToken,
	})
}

// lookupClient finds a client by id: stored, declared, or (an https URL)
// by its metadata document.
func (srv *Server) lookupClient(r *http.Request, id string) (*Client, error) {
	if c := srv.configClient(id); c != nil {
		if srv.isRevoked(id) {
			return nil, fmt.Errorf("%w: client %q was revoked", ErrUnknownClient, id)
		}
		return c, nil
	}
	if strings.HasPrefix(id, "https://") {
		return srv.cimd.client(r.Context(), id, lockout.AddrKey(clientAddr(r)))
	}
	c, err := srv.store.client(id)
	if err != nil {
		return nil, err
	}
	if c.Revoked {
		return nil, fmt.Errorf("%w: client %q was revoked", ErrUnknownClient, id)
	}
	if c.expired(time.Now()) {
		return nil, fmt.Errorf("%w: client %q registered over a day ago and was never approved; register again", ErrUnknownClient, id)
	}
	return c, nil
}

// configClient is a client declared in the options.
func (srv *Server) configClient(id string) *Client {
	i := slices.IndexFunc(srv.opts.Clients, func(c Client) bool { return c.ID == id })
	if i < 0 {
		return nil
	}
	c := srv.opts.Clients[i]
	c.Source = SourceConfig
	return &c
}

// validPort reports whether p is absent or a port number 1 to 65535.
func validPort(p string) bool {
	if p == "" {
		return true
	}
	n, err := strconv.Atoi(p)
	return err == nil && n >= 1 && n <= 65535 && p[0] != '+' && p[0] != '-'
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
