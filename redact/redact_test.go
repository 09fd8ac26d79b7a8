package redact

import (
	"encoding/json"
	"strings"
	"testing"
)

// planted are the secret kinds the attack campaign found in clear in the
// audit log, and more: each is a JSON body and the secret it holds.
var planted = []struct {
	name, body, secret string
}{
	{"GITHUB_PAT key", `{"env":{"GITHUB_PAT":"plainpatvalue001"}}`, "plainpatvalue001"},
	{"privateKey key", `{"privateKey":"pkvalue002"}`, "pkvalue002"},
	{"ssh_key key", `{"ssh_key":"sshvalue003"}`, "sshvalue003"},
	{"passphrase key", `{"passphrase":"phrasevalue004"}`, "phrasevalue004"},
	{"pwd key", `{"pwd":"pwdvalue005"}`, "pwdvalue005"},
	{"pin key, a number", `{"pin":4711}`, "4711"},
	{"user_pin key", `{"user_pin":"8812"}`, "8812"},
	{"otp key", `{"otp":"otpvalue007"}`, "otpvalue007"},
	{"session_id key", `{"session_id":"sessvalue008"}`, "sessvalue008"},
	{"password in a database URL", `{"dsn_url":"postgres://app:dbpassvalue009@db.internal:5432/app"}`, "dbpassvalue009"},
	{"token in a URL query", `{"link":"https://api.example.com/v1/items?limit=5&access_token=qtokvalue010&x=1"}`, "qtokvalue010"},
	{"JWT in free text", `{"text":"use eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJldmFsdWUwMTE for the call"}`, "c2lnbmF0dXJldmFsdWUwMTE"},
	{"bearer value in free text", `{"text":"curl -H 'Authorization: Bearer freetextbearer012' https://x"}`, "freetextbearer012"},
	{"secrets in arrays", `{"list":[{"name":"a"},[{"api_key":"arrkeyvalue013"}],"x"]}`, "arrkeyvalue013"},
	{"header list of pairs", `{"headers":[{"name":"Authorization","value":"Basic aGVhZGVydmFsdWUwMTQ="},{"name":"Accept","value":"*/*"}]}`, "aGVhZGVydmFsdWUwMTQ="},
	{"header list of lines", `{"headers":["Accept: */*","X-Api-Key: headerlinevalue015"]}`, "headerlinevalue015"},
	{"cookie header", `{"Cookie":"sid=cookievalue016"}`, "cookievalue016"},
	{"GitHub token by its prefix", `{"note":"token ghp_abcdefghijklmnopqrstuvwxyz0123456789 leaked"}`, "ghp_abcdefghijklmnopqrstuvwxyz0123456789"},
	{"OpenAI-style key by its prefix", `{"note":"sk-proj-abcdefghij0123456789ABCD"}`, "abcdefghij0123456789ABCD"},
	{"AWS access key id", `{"note":"AKIAIOSFODNN7EXAMPLE"}`, "AKIAIOSFODNN7EXAMPLE"},
	{"Slack token", `{"note":"xoxb-123456789012-abcdefghijkl"}`, "xoxb-123456789012-abcdefghijkl"},
	{"PEM private key", `{"key_material":"x","text":"-----BEGIN RSA PRIVATE KEY-----\nMIIEpemvalue022\n-----END RSA PRIVATE KEY-----"}`, "MIIEpemvalue022"},
	{"client secret", `{"oauth":{"clientSecret":"csvalue023"}}`, "csvalue023"},
	{"x-api-key", `{"X-API-KEY":"xapivalue024"}`, "xapivalue024"},
	{"AWS secret access key", `{"awsSecretAccessKey":"awssecretvalue025"}`, "awssecretvalue025"},
	{"password assignment in text", `{"log":"connecting with password=assignvalue026 now"}`, "assignvalue026"},
	{"Google API key", `{"note":"AIzaSyA1234567890abcdefghijklmnopqrstuv"}`, "AIzaSyA1234567890abcdefghijklmnopqrstuv"},
	{"nested deep", `{"a":{"b":{"c":[{"d":{"refresh_token":"deepvalue028"}}]}}}`, "deepvalue028"},
	// Issue 21: an array under a key that names token counts, and the
	// 2026-07-28 continuation and task handles.
	{"strings under tokens", `{"tokens":["tokarrvalue029","tokarrvalue030"]}`, "tokarrvalue029"},
	{"a string under maxTokens", `{"maxTokens":"strtokvalue031"}`, "strtokvalue031"},
	{"requestState", `{"params":{"name":"ask","requestState":"c3RhdGV2YWx1ZTAzMg.bWFj"}}`, "c3RhdGV2YWx1ZTAzMg"},
	{"taskId", `{"params":{"taskId":"taskvalue033"}}`, "taskvalue033"},
	{"task id in a result", `{"result":{"task":{"taskId":"taskvalue034","status":"working"}}}`, "taskvalue034"},
	// Issue 34: the two the audit log still showed — an env assignment in a
	// tool's text, a member named key — and their kin.
	{"env assignment in a result's text", `{"result":{"content":[{"type":"text","text":"GITHUB_TOKEN=ghp_abc"}]}}`, "ghp_abc"},
	{"member named key", `{"key":"s3cr3t035"}`, "s3cr3t035"},
	{"env assignments in a .env file", `{"text":"HOST=db\nDB_PASSWORD=envpass036\nAWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI037"}`, "envpass036"},
	{"NAME: value in text", `{"text":"api_key: yamlkey038\nname: x"}`, "yamlkey038"},
	{"export with quotes", `{"text":"export SLACK_TOKEN='quoted token 039'"}`, "quoted token 039"},
	{"JSON in a log line", `{"log":"sent {\"password\": \"jsonpass040\"}"}`, "jsonpass040"},
	{"escaped JSON in a log line", `{"log":"body={\\\"client_secret\\\":\\\"escsecret041\\\"}"}`, "escsecret041"},
	{"apiKey member", `{"config":{"apiKey":"camelkey042"}}`, "camelkey042"},
	{"db_pass member", `{"db_pass":"dbpass043"}`, "dbpass043"},
	{"basicAuth member", `{"basicAuth":"user:basic044"}`, "user:basic044"},
	{"AUTH word in text", `{"text":"AUTH_HEADER=authhdr045 sent"}`, "authhdr045"},
	{"key: value in text", `{"text":"key: textkey046"}`, "textkey046"},
}

func TestJSONRedactsEveryPlantedSecret(t *testing.T) {
	for _, p := range planted {
		t.Run(p.name, func(t *testing.T) {
			got := JSON([]byte(p.body), MaxBody)
			if strings.Contains(got, p.secret) {
				t.Errorf("the secret survived: %s", got)
			}
			if !json.Valid([]byte(got)) {
				t.Errorf("not JSON any more: %s", got)
			}
			if !strings.Contains(got, Mask) {
				t.Errorf("nothing was masked: %s", got)
			}
		})
	}
}

func TestJSONKeepsWhatIsNotSecret(t *testing.T) {
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},"_meta":{"progressToken":7}}}`,
		`{"jsonrpc":"2.0","id":"x","result":{"content":[{"type":"text","text":"The bearer of this note is welcome. See https://example.com/docs?page=2#top"}]}}`,
		`{"params":{"maxTokens":100,"messages":[{"role":"user","content":{"type":"text","text":"a mapping of keys"}}]}}`,
		`{"primaryKey":"row-7","monkey":"banana","keyboard":"us","spin":1,"publicKey":"abc","tokens":12}`,
		`{"uri":"file:///srv/notes/a.txt","big":123456789012345678901234567890}`,
	} {
		got := JSON([]byte(body), MaxBody)
		var a, b any
		_ = json.Unmarshal([]byte(body), &a)
		_ = json.Unmarshal([]byte(got), &b)
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if string(ja) != string(jb) {
			t.Errorf("changed a body without secrets:\n in %s\nout %s", body, got)
		}
		if strings.Contains(body, "123456789012345678901234567890") && !strings.Contains(got, "123456789012345678901234567890") {
			t.Errorf("a big number lost digits: %s", got)
		}
	}
}

func TestJSONNotJSONAndCaps(t *testing.T) {
	for _, in := range []string{`password=hunter2&user=bob`, `{"password":"hunter2"`, "\xff\xfe hunter2"} {
		if got := JSON([]byte(in), MaxBody); strings.Contains(got, "hunter2") || got == "" {
			t.Errorf("JSON(%q) = %q", in, got)
		}
	}
	big := `{"text":"` + strings.Repeat("a", 200<<10) + `"}`
	if got := JSON([]byte(big), MaxBody); len(got) > MaxBody+64 || !strings.Contains(got, "truncated") {
		t.Errorf("a 200 KiB body logged as %d bytes", len(got))
	}
	if got := Cap(strings.Repeat("m", 1<<20), MaxField); len(got) > MaxField+64 {
		t.Errorf("a 1 MiB field capped to %d bytes", len(got))
	}
	if got := Cap("héllo", 2); got != "h…(truncated, 6 bytes)" {
		t.Errorf("Cap cut inside a rune: %q", got)
	}
}

func TestSecretKey(t *testing.T) {
	for k, want := range map[string]bool{
		"token": true, "TOKEN": true, "refresh_token": true, "X-Auth-Token": true, "accessTokens": true,
		"password": true, "Passwd": true, "pwd": true, "secret": true, "Authorization": true, "api_key": true, "Api-Key": true,
		"GITHUB_PAT": true, "github-pat": true, "GitHubPat": true, "pat": true, "privateKey": true, "ssh_key": true,
		"passphrase": true, "pin": true, "user_pin": true, "otp": true, "totp": true, "session_id": true, "sessionId": true,
		"Cookie": true, "set-cookie": true, "credentials": true, "signature": true, "client_secret": true,
		"progressToken": false, "progresstoken": false, "maxTokens": false, "name": false, "uri": false, "arguments": false,
		"id": false, "": false, "mapping": false, "shipping": false, "primaryKey": false, "monkey": false, "keyboard": false,
		"publicKey": false, "compat": false,
		// Issue 34: key and the names ending in it, pass or auth as a word
		// of their own; not the words that merely hold those letters.
		"key": true, "Key": true, "KEY": true, "apiKey": true, "x-api-key": true, "APIKey": true, "XApiKey": true,
		"licenseKey": true, "LICENSE_KEY": true, "encryption_key": true, "masterKey": true, "secretKey": true, "deploy.key": true,
		"db_pass": true, "DB_PASS": true, "mysqlPass": true, "basicAuth": true, "basic_auth": true, "proxy-auth": true, "creds": true,
		"aws_creds": true, "GITHUB_TOKEN": true, "sessionToken": true, "appSecret": true, "adminPassword": true,
		"keywords": false, "keyword": false, "keys": false, "MONKEY": false, "Monkey": false, "turkey": false,
		"hockey": false, "whiskey": false, "keyId": false, "key_id": false, "kid": false, "hotkey": false, "keypad": false,
		"foreignKey": false, "foreign_key": false, "sortKey": false, "partitionKey": false, "PRIMARY_KEY": false, "cacheKey": false,
		"idempotencyKey": false, "objectKey": false, "routingKey": false, "public_key": false, "passage": false, "bypass": false,
		"compass": false, "passenger": false, "author": false, "authors": false, "oauth": false, "OAuth": false, "authority": false,
		"tokenizer": false, "max_tokens": false, "tokens": false,
	} {
		if got := SecretKey(k); got != want {
			t.Errorf("SecretKey(%q) = %v; want %v", k, got, want)
		}
	}
}

// TestTextAssignments: the value of an assignment to a credential's name
// is masked, up to a blank, a quote or the end (or its closing quote), and
// nothing else of the text (issue 34: GITHUB_TOKEN=ghp_abc was logged).
func TestTextAssignments(t *testing.T) {
	for in, want := range map[string]string{
		"GITHUB_TOKEN=ghp_abc":                         "GITHUB_TOKEN=" + Mask,
		"env: GITHUB_TOKEN=ghp_abc HOME=/root":         "env: GITHUB_TOKEN=" + Mask + " HOME=/root",
		"DB_PASSWORD = hunter2\nDB_HOST = db":          "DB_PASSWORD = " + Mask + "\nDB_HOST = db",
		"export AWS_SECRET_ACCESS_KEY=wJalr/K7MDENG+b": "export AWS_SECRET_ACCESS_KEY=" + Mask,
		"MYSQL_PWD=pw;x,y":                             "MYSQL_PWD=" + Mask,
		"db_pass: s3cr3t":                              "db_pass: " + Mask,
		"Credential: abc def":                          "Credential: " + Mask + " def",
		"AUTH_HEADER=x1 AuthMode=basic":                "AUTH_HEADER=" + Mask + " AuthMode=" + Mask,
		"key: s3cr3t":                                  "key: " + Mask,
		"apiKey=abc&b=1":                               "apiKey=" + Mask,
		`token: "two words"`:                           `token: "` + Mask + `"`,
		`password='it''s'`:                             `password='` + Mask + `''s'`,
		`{"password": "hunter 2", "user": "bob"}`:      `{"password": "` + Mask + `", "user": "bob"}`,
		`{\"secret\":\"x y\"}`:                         `{\"secret\":\"` + Mask + `\"}`,
		"SECRET=\"a\nb\"":                              "SECRET=\"" + Mask + "\nb\"",
		"pass=":                                        "pass=", // nothing to mask
		"https://h/cb?code=abc&state=s#frag":           "https://h/cb?code=" + Mask + "&state=s#frag",
		"--password=hunter2 --user bob":                "--password=" + Mask + " --user bob",
		"TOKEN=PASSWORD: x":                            "TOKEN=" + Mask + " x", // a value is masked whole, separators and all
	} {
		if got := Text(in); got != want {
			t.Errorf("Text(%q)\n got %q\nwant %q", in, got, want)
		}
	}
}

// TestTextKeepsHarmless: text that names no credential survives whole —
// words that hold the letters of one, counts of tokens, test verdicts,
// times, URLs.
func TestTextKeepsHarmless(t *testing.T) {
	for _, s := range []string{
		"Note: remember the keyword",
		"keywords: go, json, mcp",
		"author: Jane Doe",
		"authors=3",
		"keyboard: us",
		"monkey=banana",
		"MONKEY: 1",
		"the passage: Exodus 3",
		"bypass=true",
		"compass: north",
		"oauth: enabled",
		"authority: https://login.example.com",
		"max_tokens: 100",
		"tokens=42",
		"progressToken: 7",
		"primaryKey: id",
		"sort_key=created_at",
		"keyId: k1",
		"--- PASS: TestSomething (0.01s)",
		"PASS",
		"at 12:30:45 the job ran",
		"see https://example.com:8443/docs?page=2#top",
		"a=1 b=2 c=3",
		"ratio: 3:2",
		"C:\\Users\\me",
		"",
		"The bearer of this note is welcome.",
	} {
		if got := Text(s); got != s {
			t.Errorf("Text(%q) = %q; nothing in it is a secret", s, got)
		}
	}
}

func TestLinesDropPrivateKeyBlocks(t *testing.T) {
	var l Lines
	in := []string{
		"loading key from /etc/app/key.pem",
		"-----BEGIN OPENSSH PRIVATE KEY-----",
		"b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW",
		"QyNTUxOQAAACBsecretkeymaterialxyz",
		"-----END OPENSSH PRIVATE KEY-----",
		"listening with token=abc123def456",
	}
	var out []string
	for _, line := range in {
		if s, ok := l.Next(line); ok {
			out = append(out, s)
		}
	}
	joined := strings.Join(out, "\n")
	for _, leak := range []string{"b3BlbnNzaC1rZXkt", "secretkeymaterialxyz", "abc123def456"} {
		if strings.Contains(joined, leak) {
			t.Errorf("stderr lines leak %q:\n%s", leak, joined)
		}
	}
	if !strings.Contains(joined, "loading key from /etc/app/key.pem") || !strings.Contains(joined, "listening with token=") {
		t.Errorf("innocent lines lost:\n%s", joined)
	}
}

func FuzzJSON(f *testing.F) {
	for _, p := range planted {
		f.Add([]byte(p.body))
	}
	f.Add([]byte(`{"a":[1,2,{"b":null}],"progressToken":"x"}`))
	f.Add([]byte(`"\ud800"`))
	f.Fuzz(func(t *testing.T, body []byte) {
		got := JSON(body, MaxBody)
		if json.Valid(body) && len(body) < MaxBody/2 && !strings.HasPrefix(got, "<") && !json.Valid([]byte(got)) {
			t.Fatalf("JSON(%q) = %q is not JSON", body, got)
		}
		// A planted secret stays redacted whatever surrounds it.
		for _, p := range planted[:5] {
			wrapped := append(append([]byte(`{"x":`), body...), []byte(`,"y":`+p.body+`}`)...)
			if json.Valid(wrapped) && strings.Contains(JSON(wrapped, 4*MaxBody), p.secret) && !strings.Contains(string(body), p.secret) {
				t.Fatalf("secret %q survived next to %q", p.secret, body)
			}
		}
	})
}

func FuzzText(f *testing.F) {
	for _, s := range []string{"Bearer abcdefghijklmnopqrstuvwx", "postgres://u:p@h/db", "-----BEGIN PRIVATE KEY-----", "a=b&token=c", "héllo", "",
		"GITHUB_TOKEN=ghp_abc HOME=/", `password: "a b"`, `{\"secret\":\"x\"}`, "key: v\nPASS: t", "?api_key=1#x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Text(s)
		if got2 := Text(got); got2 != got {
			t.Fatalf("Text is not stable: %q → %q → %q", s, got, got2)
		}
		if line := Line(s); len(line) > MaxLine+64 {
			t.Fatalf("Line(%d bytes) = %d bytes", len(s), len(line))
		}
	})
}

// BenchmarkJSON redacts a typical 2 KiB tools/call body.
func BenchmarkJSON(b *testing.B) {
	body := []byte(`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"search","arguments":{"query":"` + strings.Repeat("word ", 380) + `","limit":10},"_meta":{"progressToken":"p-1"}}}`)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		_ = JSON(body, MaxBody)
	}
}

// BenchmarkLine redacts a typical child stderr line.
func BenchmarkLine(b *testing.B) {
	line := "2026-11-24T12:00:00Z INFO server: handled tools/call search in 12ms (cache hit=true, results=10)"
	b.ReportAllocs()
	for b.Loop() {
		_ = Line(line)
	}
}
