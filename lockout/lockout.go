package lockout

import (
	"container/list"
	"net/netip"
	"sync"
	"time"
)

const (
	// MaxWait is the longest a try waits.
	MaxWait = 15 * time.Minute
	// Forget is how long after its last failure a count is forgotten.
	Forget = time.Hour
	// DefaultMax is how many keys a Lockout keeps when Max is 0.
	DefaultMax = 10000
)

// failures counts one guesser's wrong tries.
type failures struct {
	n           int
	until, last time.Time
}

func (f *failures) wait(now time.Time) time.Duration {
	if now.Before(f.until) {
		return f.until.Sub(now)
	}
	return 0
}

func (f *failures) fail(now time.Time, free int) {
	if now.Sub(f.last) > Forget {
		f.n, f.until = 0, time.Time{}
	}
	f.last = now
	f.n++
	if f.n > free {
		f.until = now.Add(min(2*time.Second<<min(f.n-free-1, 10), MaxWait))
	}
}

// Lockout counts wrong tries. Set its fields before first use; the zero
// value holds each key past no free try and keeps no whole count.
type Lockout struct {
	// Free is how many wrong tries in a row one key makes before each
	// waits; FreeAll the same for everyone together (0: no whole count).
	Free, FreeAll int
	// Max bounds the keys kept (DefaultMax when 0).
	Max int
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	// mu guards all, order and byKey.
	mu  sync.Mutex
	all failures
	// order is byKey's LRU, most recently failing first, of *entry.
	order list.List
	byKey map[string]*list.Element
}

type entry struct {
	key string
	f   failures
}

func (l *Lockout) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

// AddrKey is the guesser an address (with or without a port) stands for:
// an IPv4 address, or an IPv6 address's /64 (one host usually has all of
// it). What is not an address is its own key.
func AddrKey(addr string) string {
	if ap, err := netip.ParseAddrPort(addr); err == nil {
		addr = ap.Addr().String()
	}
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return addr
	}
	a = a.WithZone("").Unmap()
	if a.Is6() {
		return netip.PrefixFrom(a, 64).Masked().String()
	}
	return a.String()
}

// Locked returns how long a try by key must wait (0: it may try now).
func (l *Lockout) Locked(key string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	d := time.Duration(0)
	if l.FreeAll > 0 {
		d = l.all.wait(now)
	}
	if e, ok := l.byKey[key]; ok {
		d = max(d, e.Value.(*entry).f.wait(now))
	}
	return d
}

// Failed charges a wrong try to key and to the whole count.
func (l *Lockout) Failed(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if l.FreeAll > 0 {
		l.all.fail(now, l.FreeAll)
	}
	if l.byKey == nil {
		l.byKey = map[string]*list.Element{}
	}
	e, ok := l.byKey[key]
	if ok {
		l.order.MoveToFront(e)
	} else {
		e = l.order.PushFront(&entry{key: key})
		l.byKey[key] = e
		limit := l.Max
		if limit <= 0 {
			limit = DefaultMax
		}
		for l.order.Len() > limit {
			last := l.order.Back()
			l.order.Remove(last)
			delete(l.byKey, last.Value.(*entry).key)
		}
	}
	e.Value.(*entry).f.fail(now, l.Free)
}

// Succeeded forgets key's failures (the whole count stays until it is
// forgotten: one success says nothing about the others).
func (l *Lockout) Succeeded(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.byKey[key]; ok {
		l.order.Remove(e)
		delete(l.byKey, key)
	}
}

// Reset clears every count.
func (l *Lockout) Reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all = failures{}
	l.order.Init()
	l.byKey = nil
}

// Keys is how many keys are kept.
func (l *Lockout) Keys() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.order.Len()
}

// Kept reports whether key's count is kept.
func (l *Lockout) Kept(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.byKey[key]
	return ok
}
