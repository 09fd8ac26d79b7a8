package redact

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
)

// Mask replaces a secret.
const Mask = "[REDACTED]"

// Default caps, in bytes.
const (
	// MaxBody is the longest body logged.
	MaxBody = 64 << 10
	// MaxField is the longest short field logged (a method, an id).
	MaxField = 256
	// MaxLine is the longest child stderr line logged.
	MaxLine = 4 << 10
)

// Cap returns s cut to at most max bytes (on a UTF-8 boundary), with a
// marker saying how long it was.
func Cap(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && cut < len(s) && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…(truncated, " + strconv.Itoa(len(s)) + " bytes)"
}

// JSON returns body, a JSON text, with the secrets in it redacted and
// capped at max bytes; a body that is not JSON is replaced whole.
func JSON(body []byte, max int) string {
	if len(body) == 0 {
		return ""
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		// Not JSON: nothing says where its secrets are.
		return "<non-JSON body redacted, " + strconv.Itoa(len(body)) + " bytes>"
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(value(v)); err != nil {
		return "<body redacted>"
	}
	return Cap(strings.TrimSuffix(out.String(), "\n"), max)
}

// value redacts v in place (objects and arrays) and returns it.
func value(v any) any {
	switch t := v.(type) {
	case map[string]any:
		headerValueSecret := false
		for _, k := range []string{"name", "key", "header"} {
			if n, ok := t[k].(string); ok && SecretKey(n) {
				headerValueSecret = true
			}
		}
		for k, val := range t {
			if SecretKey(k) || (headerValueSecret && isValueKey(k)) || countNotNumber(k, val) {
				t[k] = Mask
				continue
			}
			t[k] = value(val)
		}
		return t
	case []any:
		for i := range t {
			t[i] = value(t[i])
		}
		return t
	case string:
		return str(t)
	}
	return v
}

// str redacts a string value: JSON inside it (a tool's text answer often is
// JSON) as JSON, anything else as text.
func str(s string) string {
	if t := strings.TrimSpace(s); len(t) > 1 && (t[0] == '{' || t[0] == '[') && json.Valid([]byte(t)) {
		dec := json.NewDecoder(strings.NewReader(t))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) == nil {
			var out bytes.Buffer
			enc := json.NewEncoder(&out)
			enc.SetEscapeHTML(false)
			if enc.Encode(value(v)) == nil {
				return strings.TrimSuffix(out.String(), "\n")
			}
		}
	}
	return Text(s)
}

// countKeys are the normalized keys of notSecret that name counts of
// tokens: holding anything but a number (a string, a list of strings)
// they hold tokens of another kind.
var countKeys = map[string]bool{
	"maxtokens": true, "totaltokens": true, "inputtokens": true, "outputtokens": true, "prompttokens": true,
	"completiontokens": true, "cachedtokens": true, "tokens": true, "tokencount": true,
}

// countNotNumber reports whether k names a count of tokens and val is not
// a number (nor null).
func countNotNumber(k string, val any) bool {
	switch val.(type) {
	case json.Number, nil:
		return false
	}
	return countKeys[normalize(k)]
}

func isValueKey(k string) bool {
	k = strings.ToLower(k)
	return k == "value" || k == "values" || k == "val"
}

// normalize lower-cases a key and drops the separators _ - . and space.
func normalize(k string) string {
	var b strings.Builder
	b.Grow(len(k))
	for _, r := range strings.ToLower(k) {
		switch r {
		case '_', '-', '.', ' ':
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// notSecret are normalized keys that look like credentials but are not:
// MCP's progress token, and token counts.
var notSecret = map[string]bool{
	"progresstoken": true, "maxtokens": true, "totaltokens": true, "inputtokens": true, "outputtokens": true,
	"prompttokens": true, "completiontokens": true, "cachedtokens": true, "tokens": true,
	"tokencount": true, "tokenizer": true, "tokentype": true, "keyid": true, "kid": true, "publickey": true,
}

// secretWords: a normalized key holding one of them is a credential.
var secretWords = []string{
	"password", "passwd", "passphrase", "secret", "token", "apikey", "accesskey", "privatekey", "secretkey",
	"sshkey", "signingkey", "encryptionkey", "masterkey", "credential", "authorization", "cookie", "sessionid",
	"signature", "githubpat", "gitlabpat", "bearer", "jwt", "clientsecret", "connectionstring", "dsn",
}

// secretExact are short normalized keys that are credentials only as whole
// names (or, for those of lastWords, as their ending).
// requestState (a 2026-07-28 call's continuation) and taskId (a task's
// handle) let whoever holds them go on with another's work.
var secretExact = map[string]bool{"pwd": true, "pass": true, "pin": true, "otp": true, "totp": true, "pat": true, "auth": true, "sid": true,
	"requeststate": true, "taskid": true, "key": true, "creds": true}

// lastWords are the words that make a name a credential's when they end it
// as a word of their own (after a separator or as a camel-case hump):
// db_pass, basicAuth, x-api-key, licenseKey — not monkey, oauth, bypass.
var lastWords = []string{"key", "pass", "auth", "creds", "pin", "otp"}

// notSecretKeys are the words before a final "key" that make it a name of
// something else: a database's, a cache's, a keyboard's, a public key.
var notSecretKeys = map[string]bool{
	"primary": true, "foreign": true, "public": true, "sort": true, "partition": true, "hash": true, "range": true,
	"cache": true, "routing": true, "idempotency": true, "object": true, "hot": true, "shortcut": true, "lookup": true,
	"dedup": true, "dedupe": true, "group": true, "composite": true, "unique": true, "row": true, "map": true,
	"translation": true, "i18n": true, "message": true, "label": true, "shard": true, "sharding": true, "index": true,
}

// SecretKey reports whether an object member named k holds a credential.
// The match ignores case and the separators _ - . and space, so
// GITHUB_PAT, github-pat and GitHubPat are one name. key, apiKey,
// x-api-key, licenseKey, accessKey, privateKey, db_pass and basicAuth are
// secrets; keywords, keys, monkey, keyboard, primaryKey, publicKey, oauth
// and bypass are not.
func SecretKey(k string) bool {
	n := normalize(k)
	if n == "" || notSecret[n] {
		return false
	}
	if secretExact[n] {
		return true
	}
	for _, w := range secretWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	// A credential's word as the last word of a name: user_pin, userPin,
	// sms-otp, smsOTP, db_pass, basicAuth, x-api-key (not spin, mapping,
	// shipping, bypass, oauth, monkey, primaryKey).
	for _, w := range lastWords {
		if lastWord(k, w) {
			return w != "key" || !notSecretKeys[lastWordBefore(k[:len(k)-len(w)])]
		}
	}
	return false
}

// lastWordBefore is the last word of k (lower case), k being what comes
// before a final word: "sort" of "cache.sort_", "primary" of "rowPrimary".
func lastWordBefore(k string) string {
	k = strings.TrimRight(k, "_-. ")
	i := len(k)
	for i > 0 {
		c := k[i-1]
		if c == '_' || c == '-' || c == '.' || c == ' ' {
			break
		}
		i--
		if c >= 'A' && c <= 'Z' && (i == 0 || !(k[i-1] >= 'A' && k[i-1] <= 'Z')) {
			break // the start of a camel-case hump
		}
	}
	return strings.ToLower(k[i:])
}

// lastWord reports whether k ends with word (any case) as a word of its
// own: after a separator, or as a camel-case hump.
func lastWord(k, word string) bool {
	if len(k) <= len(word) || !strings.EqualFold(k[len(k)-len(word):], word) {
		return false
	}
	before, first := k[len(k)-len(word)-1], k[len(k)-len(word)]
	switch {
	case before == '_' || before == '-' || before == '.' || before == ' ':
		return true
	case first >= 'A' && first <= 'Z' && !(before >= 'A' && before <= 'Z'):
		return true // userPin, smsOTP
	}
	return false
}

// shape is a kind of secret found in any text: its pattern has one group,
// the part that is kept; the rest of a match is replaced with Mask. A shape
// is tried only when the text holds one of its cues (lower case), which
// keeps ordinary lines cheap.
type shape struct {
	re   *regexp.Regexp
	cues []string
}

var shapes = []shape{
	// PEM private keys, whole blocks.
	{regexp.MustCompile(`(-----BEGIN [A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----)[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----`), []string{"-----begin"}},
	// JWTs.
	{regexp.MustCompile(`()eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*`), []string{"eyj"}},
	// Authorization values in text: Bearer/Basic credentials (long enough
	// not to be an English word).
	{regexp.MustCompile(`(?i)(\b(?:bearer|basic)\s+)[A-Za-z0-9._~+/=-]{16,}`), []string{"bearer", "basic"}},
	// Header lines of secret headers.
	{regexp.MustCompile(`(?i)(\b(?:proxy-authorization|authorization|set-cookie|cookie|x-api-key|api-key|x-auth-token|private-token)\s*:\s*)[^\r\n"]+`), []string{"authorization", "cookie", "api-key", "auth-token", "private-token"}},
	// The password of URL userinfo (scheme://user:password@host).
	{regexp.MustCompile(`(?i)(\b[a-z][a-z0-9+.-]*://[^/\s:@"]*:)[^@\s/"]+@`), []string{"://"}},
	// Token-like query parameters.
	{regexp.MustCompile(`(?i)([?&;](?:access_token|refresh_token|id_token|token|auth|key|api_key|apikey|sig|signature|password|passwd|pwd|secret|client_secret|code|x-amz-signature|x-amz-credential|x-goog-signature)=)[^&\s#"]+`), []string{"="}},
	// Well-known token prefixes.
	{regexp.MustCompile(`()\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|sk-(?:ant-|proj-)?[A-Za-z0-9_-]{16,}|[sr]k_(?:live|test)_[A-Za-z0-9]{10,}|xox[abprs]-[A-Za-z0-9-]{10,}|(?:AKIA|ASIA)[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{35}|glpat-[A-Za-z0-9_-]{20,}|npm_[A-Za-z0-9]{36}|hf_[A-Za-z0-9]{30,})\b`),
		[]string{"gh", "sk-", "k_live_", "k_test_", "xox", "akia", "asia", "aiza", "glpat-", "npm_", "hf_"}},
}

// Text returns s with every secret shaped like a known credential replaced
// by Mask, and the value of every assignment to a credential's name
// (assignments).
func Text(s string) string {
	var lower string
	for _, sh := range shapes {
		if lower == "" {
			lower = strings.ToLower(s)
		}
		for _, cue := range sh.cues {
			if strings.Contains(lower, cue) {
				if out := sh.re.ReplaceAllString(s, "${1}"+Mask); out != s {
					s, lower = out, ""
				}
				break
			}
		}
	}
	return assignments(s)
}

// maxName is the longest NAME of an assignment looked at.
const maxName = 128

// assignments returns s with the value of every NAME=value and NAME: value
// replaced by Mask where NAME names a credential (secretName):
// GITHUB_TOKEN=ghp_…, export DB_PASSWORD='…', "api_key": "…", key: ….
// NAME may be quoted ("password": …, escaped too: \"password\":…) and
// have blanks around the = or :. The value is masked up to a blank, a
// quote or the end — or, when it opens with a quote, up to that quote
// closing or the line's end; in a URL's query (?token=…) it ends at & and #
// too. It runs in time linear in len(s): each = or : is found once, a
// NAME is read back at most maxName bytes and never into a value already
// masked, and the scan goes on after a masked value.
func assignments(s string) string {
	var b strings.Builder
	last := 0 // s[:last] is in b
	for i := 0; i < len(s); {
		j := strings.IndexAny(s[i:], "=:")
		if j < 0 {
			break
		}
		sep := i + j
		i = sep + 1
		// Back from sep: blanks, a closing quote (perhaps escaped), NAME.
		k := sep
		for k > last && (s[k-1] == ' ' || s[k-1] == '\t') {
			k--
		}
		if k > last && (s[k-1] == '"' || s[k-1] == '\'') {
			k--
			if k > last && s[k-1] == '\\' {
				k--
			}
		}
		end := k
		for k > last && end-k <= maxName && nameByte(s[k-1]) {
			k--
		}
		if k == end || end-k > maxName || (k > 0 && nameByte(s[k-1])) || !secretName(s[k:end], s[sep] == ':') {
			continue
		}
		query := k > 0 && (s[k-1] == '?' || s[k-1] == '&' || s[k-1] == ';')
		// The value, after blanks: quoted (perhaps with escaped quotes), or
		// up to a blank or a quote.
		v := sep + 1
		for v < len(s) && (s[v] == ' ' || s[v] == '\t') {
			v++
		}
		var quote byte
		escaped := false
		switch {
		case v < len(s) && (s[v] == '"' || s[v] == '\''):
			quote = s[v]
			v++
		case v+1 < len(s) && s[v] == '\\' && (s[v+1] == '"' || s[v+1] == '\''):
			quote, escaped = s[v+1], true
			v += 2
		}
		e := v
	value:
		for ; e < len(s); e++ {
			c := s[e]
			switch {
			case c == '\n' || c == '\r':
				break value
			case quote != 0 && escaped:
				if c == '\\' && e+1 < len(s) && s[e+1] == quote {
					break value
				}
			case quote != 0:
				if c == quote {
					break value
				}
			case c == ' ' || c == '\t' || c == '"' || c == '\'' || c == '`',
				c == '\\' && e+1 < len(s) && (s[e+1] == '"' || s[e+1] == '\''),
				query && (c == '&' || c == '#'):
				break value
			}
		}
		if e > v {
			b.WriteString(s[last:v])
			b.WriteString(Mask)
			last = e
			i = max(i, e)
		}
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// nameByte reports whether c may be in the NAME of an assignment.
func nameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.'
}

// secretName reports whether the NAME of an assignment in text names a
// credential: as a member's name does (SecretKey: GITHUB_TOKEN,
// AWS_SECRET_ACCESS_KEY, db_password, api-key, key), or with pass, pwd,
// auth, creds or key (after no word naming something else, as sort or
// primary do) as one of its words: PASS_FILE, AUTH_HEADER, KEY_MATERIAL.
// Words are split at _ - . and camel-case humps, so author, keyboard,
// passage, monkey and bypass are not. "PASS:" is a test runner's verdict,
// not a password.
func secretName(name string, colon bool) bool {
	if colon && name == "PASS" {
		return false
	}
	if SecretKey(name) {
		return true
	}
	if notSecret[normalize(name)] {
		return false
	}
	prev := ""
	for w := range nameWords(name) {
		switch w {
		case "pass", "pwd", "auth", "creds":
			return true
		case "key":
			if !notSecretKeys[prev] {
				return true
			}
		}
		prev = w
	}
	return false
}

// nameWords yields the words of name, lower-cased: split at _ - . and
// where a camel-case hump starts (apiKey: api, key; APIKey: api, key).
func nameWords(name string) func(yield func(string) bool) {
	return func(yield func(string) bool) {
		start := 0
		for i := 0; i <= len(name); i++ {
			cut := i == len(name) || name[i] == '_' || name[i] == '-' || name[i] == '.'
			hump := false
			if !cut && i > start && isUpper(name[i]) {
				// lower→Upper (apiKey), or Upper→Upper+lower (APIKey).
				hump = !isUpper(name[i-1]) || i+1 < len(name) && name[i+1] >= 'a' && name[i+1] <= 'z'
			}
			if (cut || hump) && i > start {
				if !yield(strings.ToLower(name[start:i])) {
					return
				}
				start = i
			}
			if cut {
				start = i + 1
			}
		}
	}
}

func isUpper(c byte) bool { return c >= 'A' && c <= 'Z' }

// Line returns a child's stderr line redacted and capped.
func Line(s string) string { return Cap(Text(s), MaxLine) }

// Lines redacts a stream of lines (a child's stderr): each line as Line
// does, and the lines of a PEM private key block, which no single line
// shows whole, are dropped from its BEGIN line to its END line.
type Lines struct {
	inKey bool // between a private key's BEGIN and END lines
}

var pemBegin = regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----`)
var pemEnd = regexp.MustCompile(`-----END [A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----`)

// Next returns line as it may be logged, and false when it must not be
// logged at all.
func (l *Lines) Next(line string) (string, bool) {
	if l.inKey {
		if pemEnd.MatchString(line) {
			l.inKey = false
		}
		return "", false
	}
	if loc := pemBegin.FindStringIndex(line); loc != nil && !pemEnd.MatchString(line[loc[1]:]) {
		l.inKey = true
		return Cap(Text(line[:loc[1]])+Mask, MaxLine), true
	}
	return Line(line), true
}
