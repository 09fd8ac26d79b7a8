package session

import (
	"errors"

	"fmt"
	"github.com/stelae-bridge/stelae-bridge/recycle"
	"io"
	"net/http"
	"os"
	"runtime"
	"sync/atomic"
	"time"
)

// This file reads POST bodies without letting slow or large ones take the
// bridge's memory or connections: a body must arrive within BodyTimeout, no
// gap between its bytes may exceed BodyIdleTimeout, and after a grace period
// it must keep up a minimum rate. Buffers grow with the bytes that arrived
// (at most five times what arrived), never from an announced Content-Length
// alone (it makes the first buffer of a small body smaller, and the last
// step of a large one exact), and every byte of buffer that
// bodies hold is taken from one budget shared by all destinations
// (MaxBodyMemory); a body that would exceed it is answered 503 with
// Retry-After.

// budget counts what the bridge holds at most max of: the bytes of body
// buffers, open streams.
type budget struct {
	max  int64
	used atomic.Int64
}

// take reserves n; false (nothing reserved) when that would exceed max.
func (b *budget) take(n int64) bool {
	if b.used.Add(n) > b.max {
		b.used.Add(-n)
		return false
	}
	return true
}

func (b *budget) give(n int64) { b.used.Add(-n) }

// dropped counts the body buffers dropped since the last collection (a
// buffer outgrown, or given up once its body is done), so the Go heap
// stays within the body budget: the budget counts the buffers in use, and
// what they leave behind is garbage until the collector runs. Under a churn
// of large bodies (each one grown to megabytes, refused, and the next
// grown) the runtime's pacer lets that garbage reach the live heap's size
// again (GOGC=100): with a 24 MiB budget the heap in use reached 60–69 MiB.
// Once the dropped bytes reach an eighth of the budget, a collection runs.
type dropped struct {
	threshold int64
	bytes     atomic.Int64
	// collecting: a collection runs (its goroutine, owned by this
	// counter, ends when runtime.GC returns).
	collecting atomic.Bool
}

// drop counts a buffer of n bytes dropped, and starts a collection when
// they reach the threshold and none runs.
func (d *dropped) drop(n int) {
	if n == 0 || d.bytes.Add(int64(n)) < d.threshold || !d.collecting.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer d.collecting.Store(false)
		// What is dropped from now on counts towards the next one.
		d.bytes.Store(0)
		runtime.GC()
	}()
}

// bodyBuf is a POST body's buffer and the budget it holds. Owner: the
// pooled post that holds it (post.go), from readBody until endPost. The
// message parsed from it (post.m) and whatever the POST hands on without
// copying (a call's client id and progress token, dispatch.Call) alias it:
// what outlives the POST copies first (Call.Keep, when a call is parked
// for input or becomes a task). releaseBody poisons it under -race, so a
// reference kept past endPost reads garbage (TestMRTRKeepsItsRequest).
type bodyBuf struct {
	b        []byte
	reserved int64
}

// keepBody is the largest body buffer a pooled POST keeps for the next.
const keepBody = 256 << 10

// bodyError is a body that could not be read, with the status it gets.
type bodyError struct {
	status int
	msg    string
}

func (e *bodyError) Error() string { return e.msg }

// minBodyRate is the average rate, in bytes per second, a body must keep up
// once bodyRateGrace has passed.
const (
	minBodyRate   = 1 << 10
	bodyRateGrace = 5 * time.Second
	firstBodyRead = 4 << 10
	// announcedReach: a full buffer grows straight to the announced length
	// when that takes at most this many times what has arrived.
	announcedReach = 4
)

// readBody reads r's body, whose request began at start, into bb (a
// buffer from an earlier POST, or none) charged to the budget. The caller
// releases the buffer (releaseBody) when the message it holds is no longer
// used, whether or not the read succeeded.
func (ep *Endpoint) readBody(w http.ResponseWriter, r *http.Request, bb *bodyBuf, start time.Time) (err error) {
	limit := ep.opts.MaxBodyBytes
	if r.ContentLength > limit {
		return &bodyError{http.StatusRequestEntityTooLarge, fmt.Sprintf("request body of %d bytes is over the %d-byte limit (raise -max-body-size)", r.ContentLength, limit)}
	}
	bb.b = bb.b[:0]
	if c := int64(cap(bb.b)); c > 0 && !ep.limits.bodies.take(c) {
		ep.limits.dropped.drop(cap(bb.b))
		bb.b = nil // too big to hold right now: start small
	} else {
		bb.reserved = c
	}
	rc := http.NewResponseController(w)
	deadline := start.Add(ep.opts.BodyTimeout)
	now := start // the clock is read again only for a body that takes more than one read
	defer func() {
		// A body read in full frees the connection for the next request.
		// Otherwise net/http would try to drain what is left of it before
		// answering; an expired deadline makes that fail at once and the
		// connection close after the answer.
		if err == nil {
			_ = rc.SetReadDeadline(time.Time{})
		} else {
			_ = rc.SetReadDeadline(time.Now())
		}
	}()
	for {
		if len(bb.b) == cap(bb.b) {
			grow := max(int64(cap(bb.b)), firstBodyRead)
			// When the announced end is near, a buffer just larger than
			// the body (net/http reports EOF with its last bytes), not the
			// next doubling: a small body gets it at once (hundreds of
			// calls in flight each hold one), a large one once a fifth of
			// it has arrived, which saves the doubling's overshoot (a
			// 1 MiB body grew to 2 MiB).
			if n := r.ContentLength; n >= 0 {
				need := n + 1 - int64(cap(bb.b))
				small := cap(bb.b) == 0 && n < firstBodyRead
				near := cap(bb.b) > 0 && need <= announcedReach*grow
				if need > 0 && (small || near) {
					grow = need
				}
			}
			grow = min(grow, limit+1-int64(cap(bb.b)))
			if grow <= 0 {
				return &bodyError{http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over the %d-byte limit (raise -max-body-size)", limit)}
			}
			if !ep.limits.bodies.take(grow) {
				return &bodyError{http.StatusServiceUnavailable, "the bridge is receiving too many large request bodies at once; retry shortly"}
			}
			nb := make([]byte, len(bb.b), int64(cap(bb.b))+grow)
			copy(nb, bb.b)
			ep.limits.dropped.drop(cap(bb.b))
			bb.b = nb
			bb.reserved += grow
		}
		next := now.Add(ep.opts.BodyIdleTimeout)
		if next.After(deadline) {
			next = deadline
		}
		_ = rc.SetReadDeadline(next)
		n, err := r.Body.Read(bb.b[len(bb.b):cap(bb.b)])
		bb.b = bb.b[:len(bb.b)+n]
		if int64(len(bb.b)) > limit {
			return &bodyError{http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over the %d-byte limit (raise -max-body-size)", limit)}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		now = time.Now()
		elapsed := now.Sub(start)
		if err == nil && elapsed > bodyRateGrace && float64(len(bb.b)) < minBodyRate*elapsed.Seconds() {
			err = errTooSlow
		}
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, errTooSlow) {
				return &bodyError{http.StatusRequestTimeout, fmt.Sprintf("the request body did not arrive in time (%d bytes after %s; a body must arrive within %s, with no pause over %s and at least %d bytes/s)",
					len(bb.b), elapsed.Round(time.Millisecond), ep.opts.BodyTimeout, ep.opts.BodyIdleTimeout, minBodyRate)}
			}
			return &bodyError{http.StatusBadRequest, "could not read the request body: " + err.Error()}
		}
	}
}

var errTooSlow = errors.New("request body too slow")

// releaseBody gives back a body buffer's budget, and the buffer itself
// when it is larger than a pooled POST keeps.
func (ep *Endpoint) releaseBody(bb *bodyBuf) {
	ep.limits.bodies.give(bb.reserved)
	bb.reserved = 0
	recycle.Poison(bb.b)
	if cap(bb.b) > keepBody {
		ep.limits.dropped.drop(cap(bb.b))
		bb.b = nil
	}
}
