package profile

import (
	"context"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// TestChildCountsWhatItDrops: a member that sends the profile more than
// its queue holds (no one reading) loses the rest, each counted in the
// report, and the child still stops.
func TestChildCountsWhatItDrops(t *testing.T) {
	r := &Report{}
	c := newChild(Options{Name: "p", Report: r, Logger: hclog.NewNullLogger()})
	s := &memberSession{c: c, m: &MemberDest{Name: "m"}}
	const extra = 10
	for range childQueue + extra {
		s.Deliver([]byte(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`))
	}
	if got := r.Dropped(); got != extra {
		t.Errorf("dropped %d; want %d", got, extra)
	}
	if err := c.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}
