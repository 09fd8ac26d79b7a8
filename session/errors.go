package session

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/google/uuid"

	"github.com/stelae-bridge/stelae-bridge/dispatch"
	"github.com/stelae-bridge/stelae-bridge/jsonrpc"
)

// jsonContentType is the Content-Type header's value for JSON answers,
// assigned to the header map as it is (net/http does the same with its own
// defaults): Header.Set would allocate the slice for every answer. Nothing
// may modify it.
var jsonContentType = []string{"application/json"}

// JSON-RPC error codes used in transport error bodies.
const (
	codeParse           = jsonrpc.CodeParseError
	codeInvalidRequest  = jsonrpc.CodeInvalidRequest
	codeInvalidParams   = jsonrpc.CodeInvalidParams
	codeServer          = jsonrpc.CodeServerError
	codeSessionNotFound = jsonrpc.CodeSessionNotFound
)

// statusFor maps a dispatch error to its HTTP status and message.
func statusFor(dest string, err error) (int, string) {
	switch {
	case errors.Is(err, dispatch.ErrTimeout):
		return http.StatusGatewayTimeout, fmt.Sprintf("destination %q did not answer within the request timeout; the request was cancelled at the server (raise -request-timeout for slow tools)", dest)
	case errors.Is(err, dispatch.ErrTooLarge):
		return http.StatusBadGateway, fmt.Sprintf("destination %q answered with a message over the maximum message size; it was discarded (raise -max-message-size)", dest)
	case errors.Is(err, dispatch.ErrChildExited), errors.Is(err, dispatch.ErrUnavailable), errors.Is(err, dispatch.ErrStarting), errors.Is(err, dispatch.ErrRestarting):
		return http.StatusServiceUnavailable, dispatch.PublicReason(err)
	case errors.Is(err, dispatch.ErrCanceled):
		return http.StatusNotFound, "the session ended while the request was in flight (" + err.Error() + "); send initialize to start a new session"
	case errors.Is(err, dispatch.ErrNotInitialized):
		return http.StatusBadRequest, err.Error()
	}
	return http.StatusBadGateway, fmt.Sprintf("destination %q: %s", dest, dispatch.PublicReason(err))
}

// validSessionID accepts the canonical UUID form the bridge hands out.
func validSessionID(id string) bool {
	if len(id) != 36 {
		return false
	}
	_, err := uuid.Parse(id)
	return err == nil
}
