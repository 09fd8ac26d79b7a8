package bridge

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stelae-bridge/stelae-bridge/config"
)

// TestMisdirectedNeedsAuthFirst: with auth on, a request for what another
// instance of the fleet serves gets 401 before the 421 that names the
// owner (it named other instances' destinations to anyone); with a token
// it gets the 421; with auth off the 421 needs nothing.
func TestMisdirectedNeedsAuthFirst(t *testing.T) {
	file := "default: b\ndestinations:\n  a: {command: /nonexistent/never-started}\n  b: {command: /nonexistent/never-started}\ninstances:\n  one: {serves: [a]}\n  two: {serves: [b]}\n"
	for _, tc := range []struct {
		name   string
		tokens []string
		header []string
		want   int
	}{
		{"auth off", nil, nil, http.StatusMisdirectedRequest},
		{"no token", []string{"tok-1"}, nil, http.StatusUnauthorized},
		{"wrong token", []string{"tok-1"}, []string{"Authorization", "Bearer nope"}, http.StatusUnauthorized},
		{"token", []string{"tok-1"}, []string{"Authorization", "Bearer tok-1"}, http.StatusMisdirectedRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Parse("fleet.yaml", []byte(file), func(string) (string, bool) { return "", false }, ReservedNames...)
			if err != nil {
				t.Fatal(err)
			}
			if cfg, err = cfg.ForInstance("one"); err != nil {
				t.Fatal(err)
			}
			b, err := New(cfg, Options{AuthTokens: tc.tokens})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				_ = b.Shutdown(ctx)
			})
			for _, target := range []string{"/b/mcp", "/mcp"} {
				w := serve(b, http.MethodPost, target, tc.header...)
				if w.Code != tc.want {
					t.Errorf("POST %s: %d %s; want %d", target, w.Code, w.Body, tc.want)
				}
				if named := strings.Contains(w.Body.String(), "two") || w.Header().Get("Stelae-Owner") != ""; named != (tc.want == http.StatusMisdirectedRequest) {
					t.Errorf("POST %s: the owner named: %v (%d %v %s)", target, named, w.Code, w.Header(), w.Body)
				}
			}
		})
	}
}
