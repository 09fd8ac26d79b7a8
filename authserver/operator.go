package authserver

import (
	"net/http"
	"time"
)

// OperatorSignIn checks the passphrase typed on another operator page (the
// bridge's console sign-in) exactly as the approval page checks its own:
// under the same lockout (per address and for the whole server), with the
// same ways in — a trusted browser's tries are counted on their own, and
// the one-time code of 'auth unlock' (unlock) lets the try through the
// lockout. A success trusts the browser (its cookie set on w, Secure when
// secure), as an approval does.
//
// ok: the passphrase was right. wait > 0: the try was held and nothing was
// checked. askUnlock: the page should offer the unlock-code field (the try
// was held by the lockout, or an unlock code came with a wrong
// passphrase).
func (srv *Server) OperatorSignIn(w http.ResponseWriter, r *http.Request, passphrase, unlock string, secure bool) (ok bool, wait time.Duration, askUnlock bool) {
	t := srv.tryPassphrase(w, r, passphrase, unlock, secure, "console")
	return t.ok, t.wait, (t.wait > 0 && !t.browser) || (!t.ok && t.unlocked)
}
