package bridge

import (
	"errors"
	"testing"

	"github.com/stelae-bridge/stelae-bridge/config"
)

// TestSetTokensRefuses: a bridge started with static tokens never goes
// without (that would open what they protect), nor does one started
// without gain them (its auth layer was set up at the start); a refused
// set changes nothing.
func TestSetTokensRefuses(t *testing.T) {
	cfg := &config.Config{Names: []string{"a"}, Destinations: map[string]*config.Destination{"a": {Name: "a", Command: "true"}}}
	for _, tc := range []struct {
		start, next []string
	}{{[]string{"tok-1"}, nil}, {nil, []string{"tok-1"}}} {
		b, err := New(cfg, Options{AuthTokens: tc.start})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.SetTokens(tc.next, nil); !errors.Is(err, ErrTokensRefused) {
			t.Errorf("from %v to %v: %v; want refused", tc.start, tc.next, err)
		}
		if _, ok := b.staticToken("tok-1", true); ok != (len(tc.start) > 0) {
			t.Errorf("from %v to %v: tok-1 let in %v after the refusal", tc.start, tc.next, ok)
		}
		_ = b.Shutdown(t.Context())
	}
}
