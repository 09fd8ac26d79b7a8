package session

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string // compared as JSON values
	}{
		{
			name: "plain request untouched",
			in:   `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`,
			want: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`,
		},
		{
			name: "secret keys, any case",
			in: `{"token":"t","Password":"p","client_secret":"s","Authorization":"Bearer x","API_KEY":"k",
				"accessToken":"a","x-api-key":"h","apiKey":"k2","Cookie":"c","credentials":{"user":"u"},"private_key":"pk","passwd":"pw","keep":"me"}`,
			want: `{"token":"[REDACTED]","Password":"[REDACTED]","client_secret":"[REDACTED]","Authorization":"[REDACTED]","API_KEY":"[REDACTED]",
				"accessToken":"[REDACTED]","x-api-key":"[REDACTED]","apiKey":"[REDACTED]","Cookie":"[REDACTED]","credentials":"[REDACTED]","private_key":"[REDACTED]","passwd":"[REDACTED]","keep":"me"}`,
		},
		{
			name: "nested in objects and arrays",
			in:   `{"params":{"arguments":{"config":{"db":{"password":"hunter2","host":"h"}},"list":[{"api_key":"k1"},{"name":"n"},[{"secret":"deep"}]]}}}`,
			want: `{"params":{"arguments":{"config":{"db":{"password":"[REDACTED]","host":"h"}},"list":[{"api_key":"[REDACTED]"},{"name":"n"},[{"secret":"[REDACTED]"}]]}}}`,
		},
		{
			name: "non-string secret values",
			in:   `{"token":12345,"secret":{"a":"b"},"password":["x","y"],"authorization":null,"apiKey":true}`,
			want: `{"token":"[REDACTED]","secret":"[REDACTED]","password":"[REDACTED]","authorization":"[REDACTED]","apiKey":"[REDACTED]"}`,
		},
		{
			name: "progressToken kept",
			in:   `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"_meta":{"progressToken":"abc"},"arguments":{"token":"t"}}}`,
			want: `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"_meta":{"progressToken":"abc"},"arguments":{"token":"[REDACTED]"}}}`,
		},
		{
			name: "progressToken kept in notifications, any case",
			in:   `{"method":"notifications/progress","params":{"progressToken":7,"ProgressToken":8,"progress":1}}`,
			want: `{"method":"notifications/progress","params":{"progressToken":7,"ProgressToken":8,"progress":1}}`,
		},
		{
			name: "values that look secret are kept when the key is not",
			in:   `{"text":"my password is hunter2","note":"token"}`,
			want: `{"text":"my password is hunter2","note":"token"}`,
		},
		{
			name: "top-level array",
			in:   `[{"secret":"s"},1,"x"]`,
			want: `["[REDACTED]"]`,
		},
		{
			name: "scalar body",
			in:   `"just a string"`,
			want: `"just a string"`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := redact([]byte(tc.in))
			var gotV, wantV any
			if err := json.Unmarshal(got, &gotV); err != nil {
				t.Fatalf("redact output is not JSON: %s (%v)", got, err)
			}
			if tc.name == "top-level array" {
				// Arrays are walked too.
				arr, ok := gotV.([]any)
				if !ok || len(arr) != 3 || !reflect.DeepEqual(arr[0], map[string]any{"secret": "[REDACTED]"}) {
					t.Errorf("redact(%s) = %s", tc.in, got)
				}
				return
			}
			if err := json.Unmarshal([]byte(tc.want), &wantV); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(gotV, wantV) {
				t.Errorf("redact(%s)\n got %s\nwant %s", tc.in, got, tc.want)
			}
		})
	}
}

func TestRedactNoSecretLeaks(t *testing.T) {
	body := `{"params":{"arguments":{"GITHUB_TOKEN":"ghp_supersecretvalue","nested":[{"Authorization":"Bearer supersecretvalue2"}]}}}`
	got := string(redact([]byte(body)))
	for _, s := range []string{"ghp_supersecretvalue", "supersecretvalue2"} {
		if strings.Contains(got, s) {
			t.Errorf("redacted body still contains %q: %s", s, got)
		}
	}
}

func TestRedactNonJSON(t *testing.T) {
	for _, in := range []string{
		`password=hunter2&user=bob`,
		`{"password":"hunter2"`, // truncated JSON
		"\xff\xfe binary hunter2",
	} {
		got := redact([]byte(in))
		if len(got) == 0 {
			t.Errorf("redact(%q) is empty; want a placeholder", in)
		}
		if strings.Contains(string(got), "hunter2") {
			t.Errorf("redact(%q) = %q echoes the body", in, got)
		}
	}
	if got := redact(nil); len(got) != 0 {
		t.Errorf("redact(nil) = %q; want empty", got)
	}
}

func TestIsSecretKey(t *testing.T) {
	for k, want := range map[string]bool{
		"token": true, "TOKEN": true, "refresh_token": true, "X-Auth-Token": true,
		"password": true, "secret": true, "Authorization": true, "api_key": true, "Api_Key": true,
		"progressToken": false, "progresstoken": false, "PROGRESSTOKEN": false,
		"name": false, "uri": false, "arguments": false, "id": false, "": false,
	} {
		if got := isSecretKey(k); got != want {
			t.Errorf("isSecretKey(%q) = %v; want %v", k, got, want)
		}
	}
}

// TestAuditPlantedSecrets: secrets planted in requests and tool results,
// in every shape the issue 34 campaign used, are all redacted from what
// -audit-log-bodies logs (it logged 2 of its 19: GITHUB_TOKEN=… in a
// result's text, and a member named "key"), and the body stays JSON.
func TestAuditPlantedSecrets(t *testing.T) {
	call := func(args string) string {
		return `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"run","arguments":` + args + `}}`
	}
	result := func(text string) string {
		b, _ := json.Marshal(text)
		return `{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":` + string(b) + `}],"isError":false}}`
	}
	for _, p := range []struct{ name, body, secret string }{
		{"env assignment in a result", result("GITHUB_TOKEN=ghp_abc"), "ghp_abc"},
		{"member named key", call(`{"key":"s3cr3t"}`), "s3cr3t"},
		{"bearer token in text", result("curl -H 'Authorization: Bearer plantedbearer0123456789' https://api"), "plantedbearer0123456789"},
		{"Authorization header in text", result("GET / HTTP/1.1\r\nAuthorization: Basic cGxhbnRlZDpiYXNpYw==\r\n"), "cGxhbnRlZDpiYXNpYw=="},
		{"JWT in text", result("token eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJwbGFudGVkIn0.cGxhbnRlZHNpZw"), "cGxhbnRlZHNpZw"},
		{"GitHub token by prefix", result("use ghp_PLANTEDplantedPLANTED0123456789 now"), "ghp_PLANTEDplantedPLANTED0123456789"},
		{"OpenAI key by prefix", result("OPENAI=sk-proj-PlantedPlantedPlanted01"), "PlantedPlantedPlanted01"},
		{"Slack token by prefix", result("slack xoxb-1234567890-PlantedSlack"), "PlantedSlack"},
		{"GitLab token by prefix", result("glpat-PlantedGitLab0123456789"), "PlantedGitLab0123456789"},
		{"AWS access key id", result("AKIAPLANTEDPLANTED12"), "AKIAPLANTEDPLANTED12"},
		{".env file in a result", result("HOST=db\nDB_PASSWORD=plantedpw\nSTRIPE_SECRET_KEY=plantedstripe\n"), "plantedpw"},
		{"YAML in a result", result("auth:\n  token: plantedyaml\n"), "plantedyaml"},
		{"password member", call(`{"user":"bob","password":"plantedpass"}`), "plantedpass"},
		{"apiKey member", call(`{"apiKey":"plantedapikey"}`), "plantedapikey"},
		{"x-api-key in headers", call(`{"headers":{"x-api-key":"plantedheader"}}`), "plantedheader"},
		{"client_secret member", call(`{"client_secret":"plantedclient"}`), "plantedclient"},
		{"password in a URL", call(`{"dsn":"postgres://app:plantedurlpw@db/app"}`), "plantedurlpw"},
		{"token in a query", result("open https://x.example/cb?access_token=plantedquery&x=1"), "plantedquery"},
		{"PEM private key", result("-----BEGIN PRIVATE KEY-----\nplantedpem\n-----END PRIVATE KEY-----"), "plantedpem"},
		{"JSON text in a result", result(`{"db":{"password":"plantedjsontext"}}`), "plantedjsontext"},
		{"cookie header in text", result("Cookie: session=plantedcookie"), "plantedcookie"},
	} {
		t.Run(p.name, func(t *testing.T) {
			if !json.Valid([]byte(p.body)) {
				t.Fatalf("the test's body is not JSON: %s", p.body)
			}
			got := redact([]byte(p.body))
			if strings.Contains(string(got), p.secret) {
				t.Errorf("the audit log shows %q: %s", p.secret, got)
			}
			if !json.Valid(got) || !strings.Contains(string(got), "[REDACTED]") {
				t.Errorf("not JSON with a mask: %s", got)
			}
		})
	}
}
