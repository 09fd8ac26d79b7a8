package httpx

import (
	"net/http"
	"testing"
)

// TestBearer: the one parse of a bearer token, for the auth layer and the
// console alike.
func TestBearer(t *testing.T) {
	for _, tc := range []struct {
		header, token string
		ok            bool
	}{
		{"Bearer abc", "abc", true},
		{"bearer abc", "abc", true},
		{"BEARER  abc  ", "abc", true},
		{"Bearer", "", false},
		{"Bearer ", "", false},
		{"Basic abc", "", false},
		{"abc", "", false},
		{"", "", false},
	} {
		r, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1/", nil)
		if tc.header != "" {
			r.Header.Set("Authorization", tc.header)
		}
		if token, ok := Bearer(r); token != tc.token || ok != tc.ok {
			t.Errorf("Bearer(%q) = %q, %v; want %q, %v", tc.header, token, ok, tc.token, tc.ok)
		}
	}
}

// TestOneOf: a token matches only one of the list whole.
func TestOneOf(t *testing.T) {
	tokens := []string{"first-token", "second-token"}
	for token, want := range map[string]bool{"first-token": true, "second-token": true, "first-toke": false, "first-tokenx": false, "": false, "SECOND-TOKEN": false} {
		if got := OneOf(tokens, token); got != want {
			t.Errorf("OneOf(%q) = %v; want %v", token, got, want)
		}
	}
	if OneOf(nil, "") {
		t.Error("OneOf(nil, \"\") = true")
	}
}
