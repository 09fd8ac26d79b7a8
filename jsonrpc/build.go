package jsonrpc

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// AppendResponse writes a response with the given id and the child's result
// or error.
func AppendResponse(dst []byte, id json.RawMessage, result, rpcErr json.RawMessage) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = append(dst, id...)
	if len(rpcErr) > 0 {
		dst = append(dst, `,"error":`...)
		dst = append(dst, rpcErr...)
	} else {
		dst = append(dst, `,"result":`...)
		if len(result) == 0 {
			result = json.RawMessage("null")
		}
		dst = append(dst, result...)
	}
	return append(dst, '}')
}

// AppendRequest writes a request (id set) or notification (id nil).
func AppendRequest(dst []byte, id []byte, method string, params json.RawMessage) []byte {
	dst = append(dst, `{"jsonrpc":"2.0",`...)
	if id != nil {
		dst = append(dst, `"id":`...)
		dst = append(dst, id...)
		dst = append(dst, ',')
	}
	dst = append(dst, `"method":`...)
	dst = AppendString(dst, method)
	if len(params) > 0 {
		dst = append(dst, `,"params":`...)
		dst = append(dst, params...)
	}
	return append(dst, '}')
}

// ErrorResponse builds a JSON-RPC error response.
func ErrorResponse(id json.RawMessage, code int, message string) []byte {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	b := append([]byte(`{"jsonrpc":"2.0","id":`), id...)
	b = append(b, `,"error":{"code":`...)
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, `,"message":`...)
	b = AppendString(b, message)
	return append(b, `}}`...)
}

// AppendString appends s as a JSON string.
func AppendString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			enc, _ := json.Marshal(s)
			return append(dst, enc...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}
