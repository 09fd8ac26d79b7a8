// Package redact keeps secrets out of the bridge's logs. It owns one job:
// given what is about to be logged — a JSON-RPC body with -audit-log-bodies,
// a line a child wrote to stderr, a field from the network — return it with
// every secret replaced by [REDACTED] and its length capped.
//
// Secrets are found three ways:
//   - by key: object members whose name, lower-cased and with the
//     separators _ - . and space removed, says credential (password, pwd,
//     secret, token, api key, private key, passphrase, pin, otp, session
//     id, cookie, authorization, …), or is key, or ends in key, pass,
//     auth, creds, pin or otp as a word of its own (apiKey, x-api-key,
//     db_pass, basicAuth; not monkey, keywords, oauth, nor a key named
//     for something else: primaryKey, sortKey, publicKey); their whole
//     value goes, whatever its type. Header lists
//     ({"name":"Authorization","value":…}) count too.
//   - by shape, in every string anywhere (free text included): JWTs,
//     Bearer/Basic credentials, the password of URL userinfo, token-like
//     query parameters, PEM private keys, and the well-known prefixes of
//     GitHub, OpenAI/Anthropic, Stripe, Slack, AWS, Google, GitLab, npm and
//     Hugging Face tokens.
//   - by assignment, in every string: NAME=value and NAME: value (an env
//     file, a shell line, YAML, JSON inside text) where NAME is a
//     credential's, as a key's name is or with pass, pwd, auth, creds or
//     key as one of its words (GITHUB_TOKEN, DB_PASSWORD, AUTH_HEADER);
//     the value goes up to a blank, a quote or the end.
//
// Only the secret part is replaced, so the line stays useful. Every step
// runs in time linear in its input (TestRedactorLinear).
//
// It never panics and never fails: input that is not JSON is redacted as
// text. It imports nothing of the bridge.
package redact
