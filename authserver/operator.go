package authserver

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"time"
)

// OperatorLocked reports how long r's address must wait before it may try
// the operator's passphrase again (0: it may now). Another operator page
// (the bridge's console) asks it before checking any credential, so that
// guesses there are held by the approval page's lockout.
func (srv *Server) OperatorLocked(r *http.Request) time.Duration {
	return srv.lockout.locked(clientAddr(r))
}

// OperatorPassphrase checks a passphrase typed on another operator page
// (the console's sign-in) in constant time. It never trusts the browser
// (the approval page's cookie stays the approval page's).
func (srv *Server) OperatorPassphrase(given string) bool {
	h := sha256.Sum256([]byte(given))
	return subtle.ConstantTimeCompare(h[:], srv.passHash[:]) == 1
}

// OperatorFailed charges a wrong credential typed on another operator
// page to r's address and the whole server, as a wrong passphrase on the
// approval page is; OperatorSucceeded forgets the address's count.
func (srv *Server) OperatorFailed(r *http.Request) {
	addr := clientAddr(r)
	srv.lockout.failed(addr)
	srv.log.Warn("wrong operator credential on the console's sign-in", "remote", addr)
}

// OperatorSucceeded: see OperatorFailed.
func (srv *Server) OperatorSucceeded(r *http.Request) { srv.lockout.succeeded(clientAddr(r)) }
