package authserver

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4/jwt"
	bolt "go.etcd.io/bbolt"

	"github.com/stelae-bridge/stelae-bridge/oauth"
)

// This file is the token endpoint (authorization_code with PKCE,
// refresh_token with rotation and reuse detection), revocation (RFC 7009),
// and the Verifier the bridge's resource side uses for the tokens issued
// here.

// refreshRecord is a refresh token as stored (by its hash).
type refreshRecord struct {
	Family   string    `json:"family"`
	ClientID string    `json:"client_id"`
	Resource string    `json:"resource"`
	Scope    string    `json:"scope"`
	Expires  time.Time `json:"expires"`
	Used     bool      `json:"used,omitempty"`
	grantee
}

// family is one chain of refresh tokens from one approval.
type family struct {
	ClientID string `json:"client_id"`
	Revoked  bool   `json:"revoked,omitempty"`
	grantee
}

// grantee is who approved a grant, whom its tokens speak for: a user
// (their subject, and their key: folded name), or the operator (both
// empty, as in what bridges before users stored).
type grantee struct {
	Subject string `json:"subject,omitempty"`
	User    string `json:"user,omitempty"`
}

// subject is the tokens' sub.
func (g grantee) subject() string {
	if g.Subject == "" {
		return OperatorSubject
	}
	return g.Subject
}

// check returns errUserGone when g is a user who is no longer active (or
// another person under the name).
func (g grantee) check(tx *bolt.Tx) error {
	if g.Subject == "" {
		return nil
	}
	u, ok, err := getUser(tx, g.User)
	if err != nil {
		return err
	}
	if !ok || u.Subject != g.Subject || !u.active() {
		return errUserGone
	}
	return nil
}

var errUserGone = errors.New("the user who approved this grant was disabled or removed")

var errInvalidGrant = errors.New("invalid_grant")

func (srv *Server) token(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		oauthError(w, http.StatusMethodNotAllowed, "invalid_request", "POST a form")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", "the body is not a form")
		return
	}
	f := r.PostForm
	clientID := f.Get("client_id")
	if clientID == "" {
		if id, _, ok := r.BasicAuth(); ok {
			clientID = id
		}
	}
	c, err := srv.lookupClient(r, clientID)
	if errors.Is(err, errCIMDBusy) {
		w.Header().Set("Retry-After", "60")
		oauthError(w, http.StatusServiceUnavailable, "temporarily_unavailable", err.Error())
		return
	}
	if err != nil {
		// claude.ai registers again on invalid_client.
		oauthError(w, http.StatusUnauthorized, "invalid_client", "unknown or revoked client; register again")
		return
	}
	switch f.Get("grant_type") {
	case "authorization_code":
		srv.exchangeCode(w, r, c)
	case "refresh_token":
		srv.refresh(w, r, c)
	default:
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type", "grant_type must be authorization_code or refresh_token")
	}
}

// exchangeCode redeems a code: once, before it expires, by its client, with
// its redirect URI, PKCE verifier and resource.
func (srv *Server) exchangeCode(w http.ResponseWriter, r *http.Request, c *Client) {
	f := r.PostForm
	var pc pendingCode
	var ok bool
	err := srv.store.db.Update(func(tx *bolt.Tx) error {
		key := hashKey(f.Get("code"))
		var err error
		if ok, err = get(tx, bucketCodes, key, &pc); err != nil || !ok {
			return err
		}
		return tx.Bucket(bucketCodes).Delete(key) // single use, whatever follows
	})
	if err != nil {
		oauthError(w, http.StatusInternalServerError, "server_error", "could not read the code")
		return
	}
	verifier := f.Get("code_verifier")
	sum := sha256.Sum256([]byte(verifier))
	switch {
	case !ok:
		oauthError(w, http.StatusBadRequest, "invalid_grant", "unknown or already used authorization code")
	case time.Now().After(pc.Expires):
		oauthError(w, http.StatusBadRequest, "invalid_grant", "the authorization code expired")
	case pc.ClientID != c.ID:
		oauthError(w, http.StatusBadRequest, "invalid_grant", "the authorization code was issued to another client")
	case f.Get("redirect_uri") != "" && f.Get("redirect_uri") != pc.RedirectURI:
		oauthError(w, http.StatusBadRequest, "invalid_grant", "redirect_uri differs from the authorization request's")
	case len(verifier) < 43 || len(verifier) > 128 || subtle.ConstantTimeCompare([]byte(base64.RawURLEncoding.EncodeToString(sum[:])), []byte(pc.Challenge)) != 1:
		oauthError(w, http.StatusBadRequest, "invalid_grant", "the PKCE code_verifier does not match the code_challenge")
	case f.Get("resource") != "" && f.Get("resource") != pc.Resource:
		oauthError(w, http.StatusBadRequest, "invalid_target", "resource differs from the authorization request's")
	default:
		srv.issue(w, r, c, newID("fam_", 12), pc.Resource, pc.Scope, pc.grantee)
	}
}

// refresh rotates a refresh token. A token used twice means it was stolen
// (or the client lost an answer): the whole family is revoked.
func (srv *Server) refresh(w http.ResponseWriter, r *http.Request, c *Client) {
	f := r.PostForm
	var rec refreshRecord
	reused := false
	err := srv.store.db.Update(func(tx *bolt.Tx) error {
		key := hashKey(f.Get("refresh_token"))
		ok, err := get(tx, bucketRefresh, key, &rec)
		if err != nil {
			return err
		}
		if !ok {
			return errInvalidGrant
		}
		var fam family
		if _, err := get(tx, bucketFamilies, []byte(rec.Family), &fam); err != nil {
			return err
		}
		switch {
		case rec.Used:
			reused = true
			fam.Revoked = true
			return put(tx, bucketFamilies, []byte(rec.Family), fam)
		case fam.Revoked, rec.ClientID != c.ID, time.Now().After(rec.Expires):
			return errInvalidGrant
		}
		if err := rec.grantee.check(tx); err != nil {
			return err
		}
		rec.Used = true
		return put(tx, bucketRefresh, key, rec)
	})
	if reused {
		srv.familyRevoked(rec.Family)
	}
	switch {
	case reused:
		srv.log.Warn("a refresh token was used twice; its family is revoked", "client_id", c.ID)
		oauthError(w, http.StatusBadRequest, "invalid_grant", "this refresh token was already used; every token of its grant is revoked (sign in again)")
	case errors.Is(err, errInvalidGrant):
		oauthError(w, http.StatusBadRequest, "invalid_grant", "unknown, expired, revoked or foreign refresh token")
	case errors.Is(err, errUserGone):
		oauthError(w, http.StatusBadRequest, "invalid_grant", "the user who approved this grant was disabled or removed by the operator")
	case err != nil:
		oauthError(w, http.StatusInternalServerError, "server_error", "could not read the refresh token")
	case f.Get("resource") != "" && f.Get("resource") != rec.Resource:
		oauthError(w, http.StatusBadRequest, "invalid_target", "resource differs from the grant's")
	default:
		srv.issue(w, r, c, rec.Family, rec.Resource, rec.Scope, rec.grantee)
	}
}

// issue answers with a new access token and refresh token of family.
// The grant's user must still be active when the refresh token is stored
// (in the same transaction as the check); a user disabled after that has
// the family revoked with theirs.
func (srv *Server) issue(w http.ResponseWriter, r *http.Request, c *Client, fam, resource, scope string, g grantee) {
	now := time.Now()
	signer, err := srv.keys.signer()
	if err != nil {
		oauthError(w, http.StatusInternalServerError, "server_error", "could not sign")
		return
	}
	claims := map[string]any{"iss": baseOf(r.Context()), "sub": g.subject(), "aud": resource, "client_id": c.ID, "scope": scope,
		"iat": now.Unix(), "exp": now.Add(srv.opts.AccessTTL).Unix(), "jti": newID("", 12), "sid": fam}
	access, err := jwt.Signed(signer).Claims(claims).Serialize()
	if err != nil {
		oauthError(w, http.StatusInternalServerError, "server_error", "could not sign")
		return
	}
	refreshValue := newID("rt_", 32)
	err = srv.store.db.Update(func(tx *bolt.Tx) error {
		if err := g.check(tx); err != nil {
			return err
		}
		var fm family
		ok, err := get(tx, bucketFamilies, []byte(fam), &fm)
		if err != nil {
			return err
		}
		if !ok {
			if err := put(tx, bucketFamilies, []byte(fam), family{ClientID: c.ID, grantee: g}); err != nil {
				return err
			}
		}
		if err := put(tx, bucketRefresh, hashKey(refreshValue), refreshRecord{Family: fam, ClientID: c.ID, Resource: resource, Scope: scope, Expires: now.Add(srv.opts.RefreshTTL), grantee: g}); err != nil {
			return err
		}
		var stored Client
		if ok, err := get(tx, bucketClients, []byte(c.ID), &stored); err == nil && ok {
			stored.LastUsed = now.UTC()
			return put(tx, bucketClients, []byte(c.ID), &stored)
		}
		return nil
	})
	if errors.Is(err, errUserGone) {
		oauthError(w, http.StatusBadRequest, "invalid_grant", "the user who approved this grant was disabled or removed by the operator")
		return
	}
	if err != nil {
		oauthError(w, http.StatusInternalServerError, "server_error", "could not store the refresh token")
		return
	}
	if g.Subject != "" {
		srv.log.Info("tokens issued", "client_id", c.ID, "resource", resource, "subject", g.Subject)
	} else {
		srv.log.Info("tokens issued", "client_id", c.ID, "resource", resource)
	}
	writeJSON(w, http.StatusOK, map[string]any{"access_token": access, "token_type": "Bearer", "expires_in": int(srv.opts.AccessTTL.Seconds()), "refresh_token": refreshValue, "scope": scope})
}

// revoke is RFC 7009: a refresh token revokes its whole family; anything
// else is accepted and ignored (the answer is 200 either way).
func (srv *Server) revoke(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		oauthError(w, http.StatusMethodNotAllowed, "invalid_request", "POST a form")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if r.ParseForm() != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", "the body is not a form")
		return
	}
	var rec refreshRecord
	found := false
	err := srv.store.db.Update(func(tx *bolt.Tx) error {
		ok, err := get(tx, bucketRefresh, hashKey(r.PostForm.Get("token")), &rec)
		if err != nil || !ok {
			return err
		}
		found = true
		return put(tx, bucketFamilies, []byte(rec.Family), family{ClientID: rec.ClientID, Revoked: true, grantee: rec.grantee})
	})
	if err != nil {
		srv.log.Error("could not revoke a refresh token", "error", err)
		oauthError(w, http.StatusServiceUnavailable, "temporarily_unavailable", "the token could not be revoked now; try again")
		return
	}
	if found {
		srv.familyRevoked(rec.Family)
		srv.log.Info("a refresh token was revoked (RFC 7009); its family's tokens are refused", "client_id", rec.ClientID)
	}
	w.WriteHeader(http.StatusOK)
}

// revokedFamilies calls f with each revoked family's id.
func (s *Store) revokedFamilies(f func(id string)) error {
	return s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketFamilies).ForEach(func(k, v []byte) error {
			var fm family
			if json.Unmarshal(v, &fm) == nil && fm.Revoked {
				f(string(k))
			}
			return nil
		})
	})
}

// revokeFamiliesOf marks every family of client revoked; it returns the
// subjects of those it revoked, each once.
func revokeFamiliesOf(tx *bolt.Tx, clientID string) ([]string, error) {
	b := tx.Bucket(bucketFamilies)
	var keys [][]byte
	err := b.ForEach(func(k, v []byte) error {
		var f family
		if json.Unmarshal(v, &f) == nil && f.ClientID == clientID && !f.Revoked {
			keys = append(keys, append([]byte(nil), k...))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var subjects []string
	for _, k := range keys {
		var f family
		if _, err := get(tx, bucketFamilies, k, &f); err != nil {
			return nil, err
		}
		f.Revoked = true
		if err := put(tx, bucketFamilies, k, f); err != nil {
			return nil, err
		}
		if sub := f.subject(); !slices.Contains(subjects, sub) {
			subjects = append(subjects, sub)
		}
	}
	return subjects, nil
}

// Verifier is the server as the resource side sees it: tokens it issued,
// checked against its own keys, and refused at once when their client was
// revoked.
func (srv *Server) Verifier() oauth.Verifier { return verifier{srv} }

type verifier struct{ srv *Server }

// Issuer is a placeholder: the issuer is the bridge's base URL of each
// request (IssuerFor).
func (v verifier) Issuer() string { return "" }

// IssuerFor is the issuer for requests under base.
func (v verifier) IssuerFor(base string) string { return base }

// Verify checks raw against the server's keys, for the issuer base carried
// by ctx (WithBase). A token checked before is remembered (by its hash)
// until it expires, but a revoked client's tokens, a revoked family's and
// those of a user disabled or removed are refused at once.
func (v verifier) Verify(ctx context.Context, raw string) (*oauth.Claims, error) {
	base := baseOf(ctx)
	if base == "" {
		return nil, fmt.Errorf("%w: no issuer base in the request", oauth.ErrUnavailable)
	}
	now := time.Now()
	c := v.srv.verified.Get(raw, now)
	if c == nil || c.Issuer != base {
		var err error
		if c, err = oauth.VerifyJWT(raw, base, 0, v.srv.keys.keySet()); err != nil {
			return nil, err
		}
		if c.ClientID == "" || strings.TrimSpace(c.Subject) == "" {
			return nil, fmt.Errorf("%w: it names no client", oauth.ErrInvalidToken)
		}
		v.srv.verified.Put(raw, c, 0, now)
	}
	if v.srv.isRevoked(c.ClientID) {
		return nil, fmt.Errorf("%w: its client was revoked by the operator", oauth.ErrInvalidToken)
	}
	if !v.srv.subjectActive(c.Subject) {
		return nil, fmt.Errorf("%w: its user was disabled or removed by the operator", oauth.ErrInvalidToken)
	}
	if c.Session != "" && v.srv.isFamilyRevoked(c.Session) {
		return nil, fmt.Errorf("%w: its grant was revoked (its refresh token was reused or revoked); sign in again", oauth.ErrInvalidToken)
	}
	return c, nil
}
