package session

import (
	"strings"
	"testing"
)

func TestAppendEvent(t *testing.T) {
	msg := []byte(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info"}}`)
	got := appendEvent(nil, event{kind: 'g', stream: 3, seq: 7, data: msg})
	want := "event: message\nid: g3-7\ndata: " + string(msg) + "\n\n"
	if string(got) != want {
		t.Errorf("appendEvent = %q; want %q", got, want)
	}
	// Appends: several events in one buffer, ids as decimal.
	buf := appendEvent(nil, event{kind: 'p', stream: 1, seq: 1, data: []byte(`{"a":1}`)})
	buf = appendEvent(buf, event{kind: 'p', stream: 1, seq: 18446744073709551615, data: []byte(`{"b":2}`)})
	want = "event: message\nid: p1-1\ndata: {\"a\":1}\n\n" +
		"event: message\nid: p1-18446744073709551615\ndata: {\"b\":2}\n\n"
	if string(buf) != want {
		t.Errorf("two events = %q; want %q", buf, want)
	}
	// dst is preserved.
	got = appendEvent([]byte(": keepalive\n\n"), event{kind: 'g', stream: 1, data: []byte(`{}`)})
	if !strings.HasPrefix(string(got), ": keepalive\n\nevent: message\nid: g1-0\ndata: {}\n\n") {
		t.Errorf("appendEvent overwrote dst: %q", got)
	}
	// A priming event: an id, retry and empty data.
	got = appendEvent(nil, event{kind: 'p', stream: 2, seq: 5})
	if want := "id: p2-5\nretry: 1000\ndata: \n\n"; string(got) != want {
		t.Errorf("priming event = %q; want %q", got, want)
	}
}

func TestEventIDRoundTrip(t *testing.T) {
	for _, ev := range []event{{kind: 'g', stream: 1, seq: 1}, {kind: 'p', stream: 12, seq: 9999999999}} {
		kind, stream, seq, ok := parseEventID(string(ev.appendID(nil)))
		if !ok || kind != ev.kind || stream != ev.stream || seq != ev.seq {
			t.Errorf("parseEventID(%s) = %c %d %d %v", ev.appendID(nil), kind, stream, seq, ok)
		}
	}
	for _, bad := range []string{"", "7", "x1-2", "g1", "g-2", "g1-", "g1-x", "p18446744073709551616-1"} {
		if _, _, _, ok := parseEventID(bad); ok {
			t.Errorf("parseEventID(%q) accepted", bad)
		}
	}
}

func TestValidSessionID(t *testing.T) {
	tests := []struct {
		id   string
		want bool
	}{
		{"0f8fad5b-d9cb-469f-a165-70867728950e", true},
		{"0F8FAD5B-D9CB-469F-A165-70867728950E", true},
		{"00000000-0000-0000-0000-000000000000", true},
		{"", false},
		{"abc", false},
		{"0f8fad5bd9cb469fa16570867728950e", false},              // no dashes
		{"{0f8fad5b-d9cb-469f-a165-70867728950e}", false},        // braces
		{"urn:uuid:0f8fad5b-d9cb-469f-a165-70867728950e", false}, // urn form
		{"0f8fad5b-d9cb-469f-a165-70867728950", false},           // short
		{"0f8fad5b-d9cb-469f-a165-70867728950e0", false},         // long
		{"0f8fad5b-d9cb-469f-a165-70867728950g", false},          // non-hex
		{"0f8fad5b_d9cb_469f_a165_70867728950e", false},          // wrong separators
		{"0f8fad5b-d9cb-469f-a165-7086772895\u00e9", false},      // non-ASCII, 36 bytes
		{" 0f8fad5b-d9cb-469f-a165-70867728950", false},          // leading space
		{"0f8fad5b-d9cb-469f-a165-70867728950e\n", false},        // trailing newline
		{"../../../../../../../../../../etc/pa", false},          // 36 bytes of path
	}
	for _, tc := range tests {
		if got := validSessionID(tc.id); got != tc.want {
			t.Errorf("validSessionID(%q) = %v; want %v", tc.id, got, tc.want)
		}
	}
}
