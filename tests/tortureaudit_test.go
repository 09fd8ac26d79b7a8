//go:build unix

package tests

// With -audit-log-bodies every call's log line carries its response's body, in every era, whether
// the answer was one JSON document or an SSE stream (found by TestTorture's trace phase).

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stelae-bridge/stelae-bridge/tests/fakemcp"
)

// TestTortureAuditsStreamedAnswers: with -audit-log-bodies every call's
// log line carries its response's body, whichever era it came in and
// whether its answer was one JSON document or the last event of an SSE
// stream (log lines before the answer make it a stream). The operator
// asked for the bodies: one silently left out is an audit with a hole,
// and a search of the log for what must not be there (TestTorture's
// user-isolated destination) proves less than it seems.
//
// Found by TestTorture's trace phase (issue 35): a sessionless 2025
// request's or a 2026-07-28 request's streamed answer was logged with
// response_body="" (session/stateless.go's requestAnswer.write did not
// record it, as session/postanswer.go's done does for a session's).
func TestTortureAuditsStreamedAnswers(t *testing.T) {
	d := &tortureDest{name: "audit", mode: fakemcp.ModeTortureShuffle}
	tt := startFocused(t, d, "-log-level", "info", "-audit-log-bodies")
	s := &tortureSession{user: "a", dest: d}
	tt.initialize(s, "2025-11-25")
	rng := rand.New(rand.NewPCG(15, 16))
	var calls []*tortureCall
	for _, era := range []string{eraSession, eraSessionless, eraModern} {
		for _, logs := range []int{0, 1} { // an answer as JSON, then as a stream
			var sess *tortureSession
			if era == eraSession {
				sess = s
			}
			c := tt.newCall(rng, d, era, sess, "")
			c.setArgs(rng, fakemcp.TortureArgs{Answer: 20, Logs: logs}, 10)
			c.token, c.cancel, c.jsonOnly = nil, "", false
			tt.run(c)
			calls = append(calls, c)
		}
	}
	for k, p := range tt.problems {
		t.Fatalf("%d %s problem(s): %s", p.n, k, strings.Join(p.first, "\n  "))
	}
	// Each call's line: the one whose request body has its tag.
	line := func(c *tortureCall) string {
		for _, l := range strings.Split(tt.p.logs.String(), "\n") {
			if req, _, ok := strings.Cut(l, "response_body="); ok && strings.Contains(req, `tag\":\"`+c.tag+`\"`) {
				return l
			}
		}
		return ""
	}
	waitFor(t, 20*time.Second, "every call's log line", func() bool {
		for _, c := range calls {
			if line(c) == "" {
				return false
			}
		}
		return true
	})
	for _, c := range calls {
		_, resp, _ := strings.Cut(line(c), "response_body=")
		if !strings.Contains(resp, `tag\":\"`+c.tag+`\"`) {
			t.Errorf("%s (%s, %d log lines before its answer): the audit logged response_body=%.200s", c.tag, c.era, c.args.Logs, resp)
		}
	}
}
