package session

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stelae-bridge/stelae-bridge/dispatch"
)

func TestParamHeadersMismatch(t *testing.T) {
	params := []dispatch.ParamHeader{
		{Header: "Mcp-Param-Region", Path: []string{"region"}, Type: "string"},
		{Header: "Mcp-Param-Shard", Path: []string{"db", "shard"}, Type: "integer"},
		{Header: "Mcp-Param-Dry", Path: []string{"dry"}, Type: "boolean"},
	}
	for _, tc := range []struct {
		args    string
		headers map[string]string
		want    string // "" or a word of the error
	}{
		{`{}`, nil, ""},
		{`{"region":"us-west1","db":{"shard":7},"dry":true}`, map[string]string{"Region": "us-west1", "Shard": "7", "Dry": "true"}, ""},
		{`{"region":"Hello, 世界"}`, map[string]string{"Region": "=?base64?SGVsbG8sIOS4lueVjA==?="}, ""},
		{`{"region":"=?base64?x"}`, map[string]string{"Region": "=?base64?x"}, ""}, // no suffix: literal
		{`{"region":"us"}`, nil, "missing"},
		{`{}`, map[string]string{"Region": "us"}, "no region"},
		{`{"region":"us"}`, map[string]string{"Region": "eu"}, "differs"},
		{`{"region":"Hello"}`, map[string]string{"Region": "=?base64?SGVsbG8?="}, "not a valid value"},
		{`{"region":"Hello"}`, map[string]string{"Region": "=?base64?SGVs!!!bG8=?="}, "not a valid value"},
		{`{"region":"héllo"}`, map[string]string{"Region": "héllo"}, "not a valid value"},
		{`{"region":7}`, map[string]string{"Region": "7"}, "must be a string"},
		{`{"db":{"shard":1.5}}`, map[string]string{"Shard": "1.5"}, "must be an integer"},
		{`{"dry":false}`, map[string]string{"Dry": "true"}, "differs"},
		// The value the header is checked against is what every decoder
		// reads (issue 34): a Go server reads "Region", the last.
		{`{"region":"us","Region":"eu"}`, map[string]string{"Region": "us"}, `not "Region"`},
		{`{"region":"eu","region":"us"}`, map[string]string{"Region": "us"}, "given twice"},
		{`{"db":{"shard":7,"SHARD":8}}`, map[string]string{"Shard": "7"}, `not "SHARD"`},
		{`{"db":"x"}`, nil, ""},
	} {
		h := http.Header{}
		for k, v := range tc.headers {
			h.Set("Mcp-Param-"+k, v)
		}
		got := paramHeadersMismatch(h, params, json.RawMessage(tc.args))
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("args %s headers %v: %q; want %q", tc.args, tc.headers, got, tc.want)
		}
	}
}
