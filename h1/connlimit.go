package h1

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/stelae-bridge/stelae-bridge/httpx"
)

// ConnLimit bounds a Server's open connections (-max-connections): max in
// all, and share (half of max, rounded up) from one source address, an
// IPv6 address counted by its /64. Every connection the listener accepted
// counts until its socket closes, wherever it is served: on the fast path,
// handed to net/http, hijacked by a GET stream, over TLS.
//
// A new connection that would pass a limit takes the place of the
// connection idle longest (waiting for its next request with nothing of it
// read: no request in flight, no stream), which is closed; when its
// address is at its share, only of one of that address's own, so one
// address never takes another's place. When none is idle, the new
// connection is refused: 503 with Retry-After, at once, on the accept
// loop (Server.refuse), so the loop never waits for room.
//
// A connection's slot says whether it is idle (connSlot.state): the fast
// path's serving goroutine sets it idle while it waits for a request with
// nothing buffered, and net/http's goroutine for a connection while it waits
// for the next request with nothing of it read (replayConn.readOrBack);
// closing it to make room takes it from idle to closed (a compare and
// swap, as Shutdown's closeIdle does), so a connection whose request has
// begun is never closed for room.
type ConnLimit struct {
	max, share int
	// epoch is the origin of the slots' idleSince (monotonic).
	epoch time.Time
	// mu guards all, addrs, every slot's released, and the sets' caches.
	mu    sync.Mutex
	all   slotSet
	addrs map[netip.Addr]*slotSet
	// open is len(all.slots), for the metrics without the lock.
	open atomic.Int64
	// evicted and refused count, by the limit reached, the connections
	// closed to make room and the new ones refused.
	evicted, refused [limitKinds]atomic.Uint64
	// pressed: the last new connection found a limit reached (the log
	// warns once when that begins, and at debug while it lasts).
	pressed atomic.Bool
}

// maxConnectionsCeiling is the highest default of -max-connections: an
// idle keep-alive connection costs the bridge 10–20 KiB of memory (10,000
// of them after a GET each: 172 MB RSS), so some 300 MiB at most; and it
// is above -max-streams' default (10,000 streams, each holding a
// connection), with room for the POSTs.
const maxConnectionsCeiling = 16384

// DefaultMaxConnections is -max-connections' default, derived once: half
// the process's file-descriptor limit, at most maxConnectionsCeiling (and
// that where the limit is unknown or unbounded: Windows). The cap is what
// keeps accept from failing for want of a descriptor: connections take at
// most half, and the other half is left to the children (three pipes
// each, more under the reaper), the state files, the listening socket, the
// refused connections' brief linger, and whatever the runtime opens.
var DefaultMaxConnections = sync.OnceValue(func() int {
	n, ok := fdLimit()
	if !ok || n/2 >= maxConnectionsCeiling {
		return maxConnectionsCeiling
	}
	return max(int(n/2), 1)
})

// warnFDs warns when the limit leaves too few file descriptors for the
// rest of the process: accept then fails before the limit is reached.
func (l *ConnLimit) warnFDs(log hclog.Logger) {
	n, ok := fdLimit()
	if ok && uint64(l.max+maxRefusing+fdReserve) > n {
		log.Warn("-max-connections leaves the process too few file descriptors: accepting may fail (and children fail to start) before the cap is reached; lower -max-connections or raise the limit (ulimit -n, systemd's LimitNOFILE=)",
			"max_connections", l.max, "fd_limit", n, "reserve", maxRefusing+fdReserve)
	}
}

// fdReserve is the least number of file descriptors warnFDs wants left
// besides the connections and the refusals' linger.
const fdReserve = 256

// limitKind is which limit a new connection reached.
type limitKind int

const (
	limitTotal   limitKind = iota // -max-connections
	limitAddress                  // its address's share of it
	limitKinds
)

// String is the metrics' label.
func (k limitKind) String() string {
	if k == limitAddress {
		return "per_address"
	}
	return "max_connections"
}

// Idle is how many of the connections counted wait idle for a request.
func (l *ConnLimit) Idle() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for sl := range l.all.slots {
		if sl.state.Load() == connIdle {
			n++
		}
	}
	return n
}

// Counts calls f with each limit's name (max_connections, per_address)
// and how many idle connections were closed to make room under it, and
// how many new ones it refused: the bridge's metrics read them.
func (l *ConnLimit) Counts(f func(limit string, evicted, refused uint64)) {
	for k := range limitKinds {
		f(limitKind(k).String(), l.evicted[k].Load(), l.refused[k].Load())
	}
}

// NewConnLimit returns the limit of n connections (at least 1).
func NewConnLimit(n int) *ConnLimit {
	n = max(n, 1)
	return &ConnLimit{max: n, share: (n + 1) / 2, epoch: time.Now(), all: slotSet{slots: map[*connSlot]struct{}{}}, addrs: map[netip.Addr]*slotSet{}}
}

// since is t as a slot's idleSince.
func (l *ConnLimit) since(t time.Time) int64 { return int64(t.Sub(l.epoch)) }

// connSlot is one accepted connection's place under the limit, for the
// socket's whole life (across its moves between the fast path and
// net/http).
type connSlot struct {
	nc  net.Conn // the socket as accepted: closed to make room
	key netip.Addr
	// state is connIdle (waiting for a request with nothing of it read;
	// the zero value: a connection is idle from its accept), connActive
	// (anything else: a request read or served, a stream, a connection
	// net/http serves), or connClosed (closed while idle, by Shutdown or
	// to make room). Only a compare and swap from connIdle closes it.
	state atomic.Int32
	// idleSince is when it last became idle (ConnLimit.since).
	idleSince atomic.Int64
	released  bool // no longer counted (guarded by ConnLimit.mu)
}

// setIdle marks the slot idle since now.
func (s *connSlot) setIdle(l *ConnLimit, now time.Time) {
	s.idleSince.Store(l.since(now))
	s.state.Store(connIdle)
}

// slotSet is a set of slots (all of them, or one address's), with the
// idle ones its last scan found oldest.
type slotSet struct {
	slots map[*connSlot]struct{}
	// oldest are, oldest first, up to idleCache of the slots idle at the
	// last scan, each with the idleSince it had then. One that is still
	// idle since then is still older than any other idle slot (a slot
	// that went idle since the scan went idle later), so the scan is
	// made once for up to idleCache closes, not once for each.
	oldest []idleSlot
}

type idleSlot struct {
	s     *connSlot
	since int64
}

// idleCache is how many of the oldest idle slots a scan keeps.
const idleCache = 32

// oldestIdle returns the slot of the set idle longest, or nil when none is
// idle (or none was at the last scan and scans is 0); l.mu held. It scans
// the set when the slots the last scan kept are gone, counting the scan
// in *scans.
func (set *slotSet) oldestIdle(scans *int) *connSlot {
	for {
		for len(set.oldest) > 0 {
			e := set.oldest[0]
			set.oldest = set.oldest[1:]
			if !e.s.released && e.s.state.Load() == connIdle && e.s.idleSince.Load() == e.since {
				return e.s
			}
		}
		if *scans == 0 {
			return nil
		}
		*scans--
		set.scan()
		if len(set.oldest) == 0 {
			return nil
		}
	}
}

// scan fills set.oldest with the oldest idle slots; l.mu held.
func (set *slotSet) scan() {
	set.oldest = set.oldest[:0:0]
	for s := range set.slots {
		if s.state.Load() != connIdle {
			continue
		}
		since := s.idleSince.Load()
		if len(set.oldest) == idleCache && since >= set.oldest[idleCache-1].since {
			continue
		}
		i := len(set.oldest)
		for i > 0 && set.oldest[i-1].since > since {
			i--
		}
		if len(set.oldest) < idleCache {
			set.oldest = append(set.oldest, idleSlot{})
		}
		copy(set.oldest[i+1:], set.oldest[i:])
		set.oldest[i] = idleSlot{s, since}
	}
}

// takeIdle closes, for room, the slot of set idle longest, and returns it
// (nil: none is idle); l.mu held. The socket is the caller's to close.
func (l *ConnLimit) takeIdle(set *slotSet) *connSlot {
	// A slot idle at the scan may have gone busy since: it is skipped. Two
	// scans at most bound the work of one accept (a scan reads every slot
	// of the set).
	scans := 2
	for {
		s := set.oldestIdle(&scans)
		if s == nil {
			return nil
		}
		if s.state.CompareAndSwap(connIdle, connClosed) {
			return s
		}
	}
}

// admitted is what admit did to make room for a connection.
type admitted struct {
	slot    *connSlot // nil: refused
	limit   limitKind // the limit reached, if one was
	reached bool
}

// admit counts nc, closing the connection idle longest when a limit is
// reached; a nil slot (and the limit) when none is idle: nc is to be
// refused.
func (l *ConnLimit) admit(nc net.Conn) admitted {
	s := &connSlot{nc: nc, key: addrKey(nc.RemoteAddr())}
	s.idleSince.Store(l.since(time.Now()))
	var a admitted
	var victim *connSlot
	l.mu.Lock()
	set := l.addrs[s.key]
	switch {
	case set != nil && len(set.slots) >= l.share:
		a.limit, a.reached = limitAddress, true
		victim = l.takeIdle(set)
	case len(l.all.slots) >= l.max:
		a.limit, a.reached = limitTotal, true
		victim = l.takeIdle(&l.all)
	}
	if a.reached && victim == nil {
		l.mu.Unlock()
		l.refused[a.limit].Add(1)
		return a
	}
	if victim != nil {
		l.unregister(victim)
		l.evicted[a.limit].Add(1)
	}
	if set == nil {
		set = &slotSet{slots: map[*connSlot]struct{}{}}
		l.addrs[s.key] = set
	}
	set.slots[s] = struct{}{}
	l.all.slots[s] = struct{}{}
	l.open.Add(1)
	l.mu.Unlock()
	if victim != nil {
		victim.nc.Close()
	}
	a.slot = s
	return a
}

// release stops counting s (its socket closed); again: a no-op.
func (l *ConnLimit) release(s *connSlot) {
	l.mu.Lock()
	if !s.released {
		l.unregister(s)
	}
	l.mu.Unlock()
}

// unregister stops counting s; l.mu held.
func (l *ConnLimit) unregister(s *connSlot) {
	s.released = true
	delete(l.all.slots, s)
	if set := l.addrs[s.key]; set != nil {
		delete(set.slots, s)
		if len(set.slots) == 0 {
			delete(l.addrs, s.key)
		}
	}
	l.open.Add(-1)
}

// Open is the number of connections counted.
func (l *ConnLimit) Open() int { return int(l.open.Load()) }

// addrKey is the source address a connection counts against: an IPv4
// address, or an IPv6 address's /64 (what one host usually holds); the
// zero Addr for a connection with no IP address (a Unix socket).
func addrKey(a net.Addr) netip.Addr {
	ta, ok := a.(*net.TCPAddr)
	if !ok {
		return netip.Addr{}
	}
	ip := ta.AddrPort().Addr().Unmap().WithZone("")
	if ip.Is4() {
		return ip
	}
	p, err := ip.Prefix(64)
	if err != nil {
		return netip.Addr{}
	}
	return p.Addr()
}

// refuseLinger is how long a refused connection is read (and what it
// sends discarded) after its 503, before it closes: closed with a
// request unread, the socket would answer a reset, which can reach the
// client before it read the 503 (net/http's rstAvoidanceDelay, for the
// same reason). refuseDrain bounds what is read; maxRefusing how many
// refused connections linger at once (past it one closes at once).
const (
	refuseLinger = 500 * time.Millisecond
	refuseDrain  = 64 << 10
	maxRefusing  = 64
)

// refuseAnswer is the 503 a refused connection gets for limit k.
func (l *ConnLimit) refuseAnswer(k limitKind) []byte {
	var msg string
	if k == limitAddress {
		msg = fmt.Sprintf("this client's address (an IPv6 address: its /64) holds its share of the bridge's connections, %d (half of -max-connections), and none of them is idle; retry when one of them has closed, or raise -max-connections", l.share)
	} else {
		msg = fmt.Sprintf("the bridge holds its maximum of %d open connections, and none of them is idle; retry later, or raise -max-connections", l.max)
	}
	body := httpx.ServerErrorBody(msg)
	return []byte("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nCache-Control: no-store\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\nDate: " + time.Now().UTC().Format(http.TimeFormat) + "\r\n\r\n" + string(body))
}

// logAdmitted says, once as a limit begins to be reached and then at debug,
// what making room for a connection did.
func (l *ConnLimit) logAdmitted(log hclog.Logger, a admitted, remote net.Addr) {
	if !a.reached {
		if l.pressed.Load() {
			l.pressed.Store(false)
		}
		return
	}
	what := "closed the connection idle longest to make room for a new one"
	if a.slot == nil {
		what = "refused a new connection (503): no connection is idle"
	}
	if l.pressed.CompareAndSwap(false, true) {
		log.Warn("the connection limit is reached: "+what+" (it is logged at debug while the limit is reached; see stelae_connections_evicted_total and stelae_connections_refused_total)",
			"limit", a.limit.String(), "max_connections", l.max, "per_address", l.share, "remote", remote.String())
		return
	}
	log.Debug("the connection limit is reached: "+what, "limit", a.limit.String(), "remote", remote.String())
}

// refuseWrite bounds the write of a refusal's 503 (a new socket's send
// buffer takes it without waiting: the bound is for the accept loop's
// sake only).
const refuseWrite = 50 * time.Millisecond

// refuse answers nc, refused for limit k, with a 503 on the accept loop,
// and closes it: after a linger on a goroutine of its own (s.wg's) that
// reads and discards what the client sends, up to refuseLinger and
// refuseDrain, so that the close sends no reset before the client read
// the answer; at once when maxRefusing linger already, or over TLS (whose
// answer would need a handshake).
func (s *Server) refuse(nc net.Conn, k limitKind) {
	if _, isTLS := nc.(*tls.Conn); isTLS {
		nc.Close()
		return
	}
	_ = nc.SetWriteDeadline(time.Now().Add(refuseWrite))
	if _, err := nc.Write(s.limit.refuseAnswer(k)); err != nil {
		nc.Close()
		return
	}
	s.mu.Lock()
	if s.closing.Load() || len(s.refusing) >= maxRefusing {
		s.mu.Unlock()
		nc.Close()
		return
	}
	s.refusing[nc] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	go s.linger(nc)
}

// linger ends a refused connection: its side closed for writing, what the
// client sends read until it closes its own, refuseLinger passes, or
// refuseDrain bytes came; then closed.
func (s *Server) linger(nc net.Conn) {
	defer s.wg.Done()
	if cw, ok := nc.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_ = nc.SetReadDeadline(time.Now().Add(refuseLinger))
	_, _ = io.CopyN(io.Discard, nc, refuseDrain)
	s.mu.Lock()
	delete(s.refusing, nc)
	s.mu.Unlock()
	nc.Close()
}
