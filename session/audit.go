package session

import redactpkg "github.com/stelae-bridge/stelae-bridge/redact"

// redact returns a request or response body as the audit log may show it:
// secrets redacted (see package redact), capped at redact.MaxBody.
func redact(body []byte) []byte {
	if len(body) == 0 {
		return nil
	}
	return []byte(redactpkg.JSON(body, redactpkg.MaxBody))
}

// field caps a value from the network before it goes into a log line.
func field(v string) string { return redactpkg.Cap(v, redactpkg.MaxField) }

// isSecretKey reports whether an object member named k is never logged.
func isSecretKey(k string) bool { return redactpkg.SecretKey(k) }
