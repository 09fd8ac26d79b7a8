package httpx

import "testing"

func TestAcceptsSSE(t *testing.T) {
	tests := []struct {
		accept string
		want   bool
	}{
		{"", false},
		{"text/event-stream", true},
		{"TEXT/EVENT-STREAM", true},
		{"Text/Event-Stream", true},
		{"application/json, text/event-stream", true},
		{"text/event-stream, application/json", true},
		{"application/json,text/event-stream", true},
		{"  text/event-stream  ", true},
		{"text/event-stream; charset=utf-8", true},
		{"text/event-stream;q=0.9, application/json;q=1", true},
		{"*/*", true},
		{"*/*;q=0.1", true},
		{"text/*", true},
		{"application/json", false},
		{"text/html", false},
		{"text/plain, application/json", false},
		{"text/event-streams", false},
		{"event-stream", false},
		{"application/text/event-stream", false},
		{",", false},
		{";", false},
	}
	for _, tc := range tests {
		if got := AcceptsSSE(tc.accept); got != tc.want {
			t.Errorf("AcceptsSSE(%q) = %v; want %v", tc.accept, got, tc.want)
		}
	}
}

// TestAccepts: the Accept matching of a POST's answer forms.
func TestAccepts(t *testing.T) {
	for _, tc := range []struct {
		accept, full string
		want         bool
	}{
		{"application/json, text/event-stream", "text/event-stream", true},
		{"application/json, text/event-stream", "application/json", true},
		{"application/json", "text/event-stream", false},
		{"*/*", "text/event-stream", true},
		{"text/*", "text/event-stream", true},
		{"TEXT/*", "text/event-stream", true},
		{"text/html", "text/event-stream", false},
		{"Application/JSON; charset=utf-8", "application/json", true},
		{"application/json;q=0, text/event-stream", "application/json", false},
		{"application/json; q=0.5", "application/json", true},
		{"application/json ; Q=0", "application/json", false},
		{"image/*, text/event-stream;q=0", "text/event-stream", false},
		{"", "application/json", false},
		{",,", "application/json", false},
		{"application/jsonx", "application/json", false},
		{"tex/*", "text/event-stream", false},
	} {
		if got := Accepts(tc.accept, tc.full); got != tc.want {
			t.Errorf("Accepts(%q, %q) = %v; want %v", tc.accept, tc.full, got, tc.want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { Accepts("application/json, text/event-stream;q=1", "text/event-stream") }); n != 0 {
		t.Errorf("accepts allocates %v times", n)
	}
}
