package session

import (
	"encoding/json"
	"strings"
)

// secretKeys are substrings of object keys whose values are never logged;
// keys ending in "token" (access_token, apiToken, …) are secret too.
var secretKeys = []string{"password", "passwd", "secret", "authorization", "api_key", "apikey", "api-key", "cookie", "credential", "private_key"}

// redact returns body with the values of secret-looking keys replaced. A body
// that is not JSON is replaced by a placeholder.
func redact(body []byte) []byte {
	if len(body) == 0 {
		return nil
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return []byte("<non-JSON body redacted>")
	}
	out, err := json.Marshal(redactValue(v))
	if err != nil {
		return []byte("<body redacted>")
	}
	return out
}

func redactValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, val := range t {
			if isSecretKey(k) {
				t[k] = "[REDACTED]"
				continue
			}
			t[k] = redactValue(val)
		}
	case []any:
		for i := range t {
			t[i] = redactValue(t[i])
		}
	}
	return v
}

func isSecretKey(k string) bool {
	k = strings.ToLower(k)
	if strings.HasSuffix(k, "token") {
		return k != "progresstoken"
	}
	for _, s := range secretKeys {
		if strings.Contains(k, s) {
			return true
		}
	}
	return false
}
