package authserver

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// This file is RFC 7592's deletion of a registered client by the client
// itself: DELETE /oauth/register/{client_id} with the registration access
// token its registration returned (registration_client_uri,
// registration_access_token). A tool that registers only to check the
// server (stelae-bridge doctor) removes what it made; a client that
// leaves ends its own access. The token is 256 random bits, kept only as
// its SHA-256 and compared in constant time: it cannot be guessed, so no
// lockout holds it (a lockout never holds a credential that cannot be
// guessed).

// newRegistrationToken is a registration access token and its hash.
func newRegistrationToken() (string, []byte) {
	tok := newID("", 32)
	h := sha256.Sum256([]byte(tok))
	return tok, h[:]
}

// deregister handles DELETE /oauth/register/{client_id}.
func (srv *Server) deregister(w http.ResponseWriter, r *http.Request, id string) {
	if r.Method != http.MethodDelete {
		w.Header().Set("Allow", "DELETE")
		oauthError(w, http.StatusMethodNotAllowed, "invalid_request", "a registered client is deleted with DELETE and its registration access token (RFC 7592)")
		return
	}
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	c, err := srv.store.client(id)
	// An unknown client and a wrong token are told apart nowhere: both
	// are 401 (RFC 7592 §2.3), so the endpoint says nothing of which ids
	// exist.
	var want []byte
	if err == nil {
		want = c.RegTokenHash
	}
	got := sha256.Sum256([]byte(tok))
	if !ok || len(want) != sha256.Size || subtle.ConstantTimeCompare(got[:], want) != 1 {
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		oauthError(w, http.StatusUnauthorized, "invalid_token", "send the registration access token this client's registration returned (Authorization: Bearer …)")
		return
	}
	if c.Approved.IsZero() {
		// Never approved: nothing was issued; the registration goes.
		if err := srv.store.deleteClient(id); err != nil {
			srv.log.Error("could not delete a client", "client_id", id, "error", err)
			oauthError(w, http.StatusInternalServerError, "server_error", "could not delete the client")
			return
		}
		srv.log.Info("client deleted by itself (never approved)", "client_id", id)
	} else if err := srv.RevokeClient(id); err != nil {
		// Approved: its access ends as a revocation ends it, and the
		// operator still sees it ('auth clients': revoked).
		srv.log.Error("could not revoke a client that asked to be deleted", "client_id", id, "error", err)
		oauthError(w, http.StatusInternalServerError, "server_error", "could not delete the client")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// deleteClient removes a stored client.
func (s *Store) deleteClient(id string) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketClients)
		if b.Get([]byte(id)) == nil {
			return fmt.Errorf("%w %q", ErrUnknownClient, id)
		}
		return b.Delete([]byte(id))
	})
}
