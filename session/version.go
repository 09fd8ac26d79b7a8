package session

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/stelae-bridge/stelae-bridge/dispatch"
)

// checkVersion validates MCP-Protocol-Version. It writes the error and
// returns its status, or 0 when the header is absent or supported.
func (ep *Endpoint) checkVersion(w http.ResponseWriter, r *http.Request, s *Session) int {
	v := Header(r.Header, headerProtocolVersion)
	if v == "" || dispatch.Supported(v) {
		return 0
	}
	w.Header().Set(headerSessionID, s.id)
	return WriteError(w, http.StatusBadRequest, codeServer, fmt.Sprintf("unsupported MCP-Protocol-Version %q; this bridge supports %s", v, strings.Join(dispatch.Versions(), ", ")))
}
