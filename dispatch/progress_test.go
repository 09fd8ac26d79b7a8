package dispatch

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/stelae-bridge/stelae-bridge/jsonrpc"
)

func mustValidJSON(t *testing.T, b []byte) {
	t.Helper()
	if !json.Valid(b) {
		t.Fatalf("invalid JSON: %s", b)
	}
}

func TestRewriteProgressToken(t *testing.T) {
	tests := []struct {
		name      string
		params    string
		wantToken string // the client's token, byte-exact; "" when none
	}{
		{"string token", `{"name":"t","_meta":{"progressToken":"abc-123"},"arguments":{}}`, `"abc-123"`},
		{"number token", `{"_meta":{"progressToken":17}}`, `17`},
		{"20-digit number token", `{"_meta":{"progressToken":12345678901234567890}}`, `12345678901234567890`},
		{"float-looking token", `{"_meta":{"progressToken":1.0e2}}`, `1.0e2`},
		{"escaped string token", `{"_meta":{"progressToken":"\u00e9\"x"}}`, `"\u00e9\"x"`},
		{"other meta kept", `{"_meta":{"other":{"k":[1,2]},"progressToken":"t"},"x":1}`, `"t"`},
		{"whitespace", `{ "_meta" : { "progressToken" : "t" } }`, `"t"`},
	}
	upID := []byte("9000")
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			newParams, token := rewriteProgressToken(json.RawMessage(tc.params), upID)
			if string(token) != tc.wantToken {
				t.Errorf("client token = %s; want %s (byte-exact)", token, tc.wantToken)
			}
			mustValidJSON(t, newParams)
			meta := jsonrpc.Member(newParams, "_meta")
			if got := jsonrpc.Member(meta, "progressToken"); string(got) != "9000" {
				t.Errorf("new progressToken = %s; want 9000 (params %s)", got, newParams)
			}
			// Every other member survives with the same value.
			var before, after map[string]any
			if err := json.Unmarshal([]byte(tc.params), &before); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(newParams, &after); err != nil {
				t.Fatal(err)
			}
			before["_meta"].(map[string]any)["progressToken"] = float64(9000)
			if !reflect.DeepEqual(before, after) {
				t.Errorf("params changed beyond the token:\nbefore %v\nafter  %v", before, after)
			}
		})
	}
	// Without a token, params come back untouched.
	for _, p := range []string{
		``,
		`{}`,
		`{"_meta":{}}`,
		`{"_meta":{"other":1}}`,
		`{"progressToken":"top-level-is-not-meta"}`,
		`{"_meta":"not an object"}`,
		`[1,2]`,
		`not json`,
	} {
		newParams, token := rewriteProgressToken(json.RawMessage(p), upID)
		if token != nil {
			t.Errorf("rewriteProgressToken(%s) found token %s", p, token)
		}
		if string(newParams) != p {
			t.Errorf("rewriteProgressToken(%s) changed params to %s", p, newParams)
		}
	}
}
