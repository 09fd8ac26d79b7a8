package lockout

import (
	"fmt"
	"testing"
	"time"
)

// clock is a clock a test moves by hand.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) add(d time.Duration)     { c.t = c.t.Add(d) }
func newClock() *clock                   { return &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }
func locked(l *Lockout, key string) bool { return l.Locked(key) > 0 }

// TestBacksOff: past Free wrong tries a key waits, longer with each
// further try; another key does not wait longer than it; a success
// forgets the key's count.
func TestBacksOff(t *testing.T) {
	l := &Lockout{Free: 5}
	for i := range 5 {
		if d := l.Locked("a"); d != 0 {
			t.Fatalf("locked after %d failures", i)
		}
		l.Failed("a")
	}
	l.Failed("a")
	d1 := l.Locked("a")
	l.Failed("a")
	d2 := l.Locked("a")
	if d1 <= 0 || d2 <= d1 {
		t.Errorf("lockout %s then %s; want growing", d1, d2)
	}
	if d := l.Locked("b"); d != 0 {
		t.Errorf("a bystander waits %s", d)
	}
	l.Succeeded("a")
	if d := l.Locked("a"); d != 0 {
		t.Errorf("still locked after a success: %s", d)
	}
}

// TestWholeCountAndKeysDecay: the whole count holds everyone past
// FreeAll, and both it and a key's count are forgotten an hour after
// their last failure (a moved clock, no sleep); before that hour they
// hold.
func TestWholeCountAndKeysDecay(t *testing.T) {
	c := newClock()
	l := &Lockout{Free: 5, FreeAll: 10, Now: c.now}
	for i := range 11 {
		l.Failed(fmt.Sprintf("192.0.2.%d", i))
	}
	if !locked(l, "198.51.100.1") {
		t.Fatal("11 failures from 11 addresses: a new address does not wait")
	}
	for range 6 {
		l.Failed("203.0.113.1")
	}
	c.add(MaxWait + time.Second) // past any wait, within the hour
	l.Failed("192.0.2.99")       // the whole count is still at 12: it waits again
	if !locked(l, "198.51.100.1") {
		t.Error("within the hour the whole count was forgotten")
	}
	c.add(Forget + time.Second)
	if locked(l, "198.51.100.1") || locked(l, "203.0.113.1") {
		t.Fatal("an hour after the last failure, a count still holds")
	}
	// Forgotten, not merely expired: the next failure is the first again.
	l.Failed("203.0.113.1")
	l.Failed("192.0.2.1")
	if locked(l, "203.0.113.1") || locked(l, "198.51.100.1") {
		t.Error("after the hour, one failure locks: the counts were not forgotten")
	}
}

// TestIPv6GuessesShareTheirSlash64: addresses of one IPv6 /64 are one
// guesser; an IPv4-mapped address is its IPv4 address; ports are dropped.
func TestIPv6GuessesShareTheirSlash64(t *testing.T) {
	l := &Lockout{Free: 5}
	for i := range 6 {
		l.Failed(AddrKey(fmt.Sprintf("2001:db8:1:2::%x", i+1)))
	}
	if !locked(l, AddrKey("2001:db8:1:2:ffff::1")) {
		t.Error("6 failures from one /64: another address in it may guess at once")
	}
	if locked(l, AddrKey("2001:db8:1:3::1")) {
		t.Error("another /64 waits")
	}
	for in, want := range map[string]string{"[2001:db8::1]:443": "2001:db8::/64", "::ffff:192.0.2.1": "192.0.2.1", "192.0.2.1:80": "192.0.2.1", "fe80::1%eth0": "fe80::/64", "@": "@"} {
		if got := AddrKey(in); got != want {
			t.Errorf("AddrKey(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestKeysAreAnLRU: past Max the least recently failing key is dropped,
// one at a time; the others keep their counts.
func TestKeysAreAnLRU(t *testing.T) {
	l := &Lockout{Free: 5, Max: 3}
	for range 6 {
		l.Failed("192.0.2.1")
	}
	l.Failed("192.0.2.2")
	l.Failed("192.0.2.3")
	l.Failed("192.0.2.1") // most recent again
	l.Failed("192.0.2.4") // drops .2
	if l.Keys() != 3 || l.Kept("192.0.2.2") || !l.Kept("192.0.2.3") {
		t.Errorf("after a fourth key: %d kept, .2 kept %v, .3 kept %v", l.Keys(), l.Kept("192.0.2.2"), l.Kept("192.0.2.3"))
	}
	if !locked(l, "192.0.2.1") {
		t.Errorf("the guesser's lockout was dropped")
	}
}
