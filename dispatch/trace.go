package dispatch

import (
	"encoding/json"

	"github.com/stelae-bridge/stelae-bridge/jsonrpc"
)

// withTraceMeta returns params with trace (the _meta members of the call's
// trace context, Options.TraceMeta) at the start of its _meta — unless the
// client gave a traceparent of its own, which is kept: the child then
// continues the client's trace. (The screen refused a traceparent given
// twice or in another spelling.) Only when tracing is on.
func withTraceMeta(params json.RawMessage, trace []byte) json.RawMessage {
	if trace == nil {
		return params
	}
	if i := skipSpace(params); i >= len(params) || params[i] != '{' {
		out := make([]byte, 0, len(trace)+12)
		return append(append(append(out, `{"_meta":{`...), trace...), `}}`...)
	}
	meta := jsonrpc.Member(params, "_meta")
	var newMeta []byte
	switch {
	case meta == nil || meta[skipSpace(meta)] != '{':
		newMeta = append(append([]byte(`{`), trace...), '}')
	case jsonrpc.Member(meta, "traceparent") != nil:
		return params
	default:
		i := skipSpace(meta) + 1
		newMeta = append(append([]byte(`{`), trace...), meta[i:]...)
		if j := skipSpace(meta[i:]); i+j < len(meta) && meta[i+j] != '}' {
			newMeta = append(append(append([]byte(`{`), trace...), ','), meta[i:]...)
		}
	}
	out, err := jsonrpc.Replace(params, "_meta", newMeta)
	if err != nil {
		return params
	}
	return out
}
