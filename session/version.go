package session

import (
	"fmt"
	"github.com/stelae-bridge/stelae-bridge/httpx"
	"net/http"
	"strings"

	"github.com/stelae-bridge/stelae-bridge/dispatch"
)

// checkVersion validates MCP-Protocol-Version. It writes the error and
// returns its status, or 0 when the header is absent or supported.
func (ep *Endpoint) checkVersion(w http.ResponseWriter, r *http.Request, s *Session) int {
	v := httpx.Header(r.Header, httpx.HeaderProtocolVersion)
	if v == "" || dispatch.Supported(v) {
		return 0
	}
	w.Header().Set(httpx.HeaderSessionID, s.id)
	return httpx.WriteError(w, http.StatusBadRequest, codeServer, fmt.Sprintf("unsupported MCP-Protocol-Version %q; this bridge supports %s", v, strings.Join(dispatch.Versions(), ", ")))
}
