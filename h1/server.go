package h1

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Server serves HTTP/1.1 on a listener with a fast path for the bridge's
// hot request. It reads every connection's requests itself, and serves
// here only a POST whose head parses strictly (fasthead.go: HTTP/1.1, CRLF
// lines, a plain path with no query or escapes, one Host, one
// Content-Length, no Transfer-Encoding, Expect, Upgrade or Trailer,
// Connection absent or keep-alive) and whose body arrived with its head,
// the two within the connection's 4 KiB read buffer (maxFastBody). At the
// first request that is anything else (a GET stream, a large or slow body,
// a query, chunked, HTTP/1.0, TLS…) it hands the connection, with the
// bytes it has read, to a net/http server, which serves it exactly as it
// would have from the start. So every protection net/http and the bridge
// have for slow, large and odd requests stays where it was, and the fast
// path only drops net/http's per-request costs: its header parsing, its
// response buffers and flush, its deadlines, and its background read per
// request. A plain TCP connection net/http has answered and that has
// waited a second for its next request, with nothing of it read, comes
// back to the fast path (replayConn): an idle connection holds no net/http buffers (their
// 8 KiB, and a 4 KiB copy, each idle connection kept after a head too large
// for the fast path), and its next request is served as from the start.
//
// What a handler gets on the fast path, as from net/http:
//   - a request of its own: its header map, values, URL and body are made
//     for it and never reused, so what a handler keeps of them past its
//     return keeps its request's values; r.Body reads fail once the
//     handler returned (http.ErrBodyReadAfterClose), as after Close;
//   - a context that carries http.ServerContextKey (the net/http server
//     the fast path hands off to: the same on both paths) and
//     http.LocalAddrContextKey, cancelled when the handler returns;
//   - a ResponseWriter that answers as net/http's does, as a client reads
//     it (fastresponse.go; FuzzFastResponse holds it to net/http): the
//     header map as of WriteHeader, Date and a sniffed Content-Type added,
//     a declared Content-Length enforced (a Write past it fails with
//     http.ErrContentLength and is not sent; an answer shorter or longer
//     than declared closes the connection after it, never leaves it out of
//     sync), 1xx answers, Flush (chunked after it, unless a length was
//     declared) and SetWriteDeadline, also through http.ResponseController;
//   - a ResponseWriter of its own: once the handler returned, Write,
//     Flush and SetWriteDeadline fail (errAfterReturn) and reach nothing,
//     and WriteHeader does nothing, so a goroutine that kept it cannot
//     touch the connection's next answer, which behind a proxy's
//     keep-alive may be another user's. (Changing its header map after the
//     return is still a data race, as under net/http.)
//   - a panic closes the connection (logged, unless http.ErrAbortHandler).
//
// What it does not offer (the bridge's handlers need none of it on a POST;
// its GET streams, which hijack, always go to net/http):
//   - Hijack, CloseNotify, and read deadlines or full duplex
//     (SetReadDeadline and EnableFullDuplex do nothing: the body is in
//     memory already);
//   - Transfer-Encoding or Trailer headers set by the handler, and
//     trailers: it frames the body itself (an unflushed answer of up to
//     64 KiB goes out with a Content-Length where net/http chunks one past
//     2 KiB);
//   - noticing the client's going from the first moment: only a request
//     that has run one to two ticks of watchAfter is watched (one sweeper
//     goroutine watches those, with no timer per request), where net/http
//     reads in the background from the start;
//   - std's hooks (ConnState, ConnContext, BaseContext) and Request.TLS
//     (TLS connections go to net/http); its header and idle timeouts the
//     fast path keeps itself, with the same values.
//
// It holds at most a number of connections (-max-connections; connlimit.go),
// and half of them from one source address, counting every connection
// from its accept to its close wherever it is served (the fast path,
// net/http, a hijacked stream, TLS): at a limit, the connection idle
// longest (of the same address, at the address's share) is closed to make
// room for the new one, and when none is idle the new one gets 503 with
// Retry-After at once.
type Server struct {
	handler http.Handler
	std     *http.Server
	hand    *handoff
	log     hclog.Logger
	// limit counts the open connections (set before Serve).
	limit *ConnLimit

	headerTimeout, idleTimeout time.Duration
	// backAfter is how long a connection net/http answered may wait for
	// its next request before it comes back to the fast path (replayConn).
	backAfter time.Duration

	closing atomic.Bool
	// stopped: StopAccepting closed the listener; the connections open
	// are served on.
	stopped atomic.Bool
	// The sweeper (sweep) ticks while fast-path requests run and starts
	// the watch of those that run past watchAfter; sweeping: it is
	// ticking (a request that finds it idle wakes it).
	sweeping  atomic.Bool
	sweepWake chan struct{}
	stop      chan struct{} // closed by Shutdown or Close
	stopOnce  sync.Once
	sweepDone chan struct{}
	// mu guards ln, conns, refusing.
	mu    sync.Mutex
	ln    net.Listener
	conns map[*fastConn]struct{}
	// refusing are the refused connections lingering after their 503
	// (refuse), at most maxRefusing.
	refusing map[net.Conn]struct{}
	// imu guards stdIdle: the connections net/http waits on for a next
	// request (its ConnState hook keeps it); and tlsSlots: the slots of
	// TLS connections, which net/http serves from their accept.
	imu      sync.Mutex
	stdIdle  map[net.Conn]struct{}
	tlsSlots map[net.Conn]*connSlot
	// conns' goroutines, the refused connections' lingers, and Serve's
	// hand-off to std.
	wg sync.WaitGroup
}

// deadlineSlack is how far a connection's read deadline may lag.
const deadlineSlack = time.Second

// watchAfter is the sweeper's tick: a fast-path request that runs through a
// whole tick has its connection watched for the client's going (which
// cancels the request's context).
const watchAfter = 100 * time.Millisecond

// SetLimit makes l the server's connection limit (before Serve; by
// default one of DefaultMaxConnections): the bridge keeps it, for its
// metrics.
func (s *Server) SetLimit(l *ConnLimit) { s.limit = l }

// NewServer returns a Server for h; log gets what net/http would print.
func NewServer(h http.Handler, log hclog.Logger) *Server {
	s := &Server{handler: h, log: log, headerTimeout: 10 * time.Second, idleTimeout: 2 * time.Minute, backAfter: time.Second, conns: map[*fastConn]struct{}{}, stdIdle: map[net.Conn]struct{}{},
		limit: NewConnLimit(DefaultMaxConnections()), refusing: map[net.Conn]struct{}{}, tlsSlots: map[net.Conn]*connSlot{},
		sweepWake: make(chan struct{}, 1), stop: make(chan struct{}), sweepDone: make(chan struct{})}
	s.std = &http.Server{
		Handler:           http.HandlerFunc(s.serveStd),
		ConnState:         s.stdConnState,
		ConnContext:       stdConnContext,
		ReadHeaderTimeout: s.headerTimeout,
		// Headers are small in MCP; a JWT or two fits many times over.
		MaxHeaderBytes: 64 << 10,
		IdleTimeout:    s.idleTimeout,
		// No WriteTimeout: it would cut SSE streams; writes carry their own
		// deadlines.
		ErrorLog: log.StandardLogger(&hclog.StandardLoggerOptions{ForceLevel: hclog.Debug}),
	}
	return s
}

// Serve accepts connections on ln until Shutdown or Close; it returns
// http.ErrServerClosed then, or the listener's error.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closing.Load() {
		s.mu.Unlock()
		return http.ErrServerClosed
	}
	s.ln = ln
	s.hand = &handoff{addr: ln.Addr(), conns: make(chan net.Conn), done: make(chan struct{})}
	s.mu.Unlock()
	s.limit.warnFDs(s.log)
	stdDone := make(chan struct{})
	go func() {
		defer close(stdDone)
		_ = s.std.Serve(s.hand)
	}()
	go s.sweep()
	defer func() {
		// Shutdown or Close closes hand, which ends std.Serve, and stop,
		// which ends the sweeper.
		<-stdDone
		s.stopSweeper()
		<-s.sweepDone
	}()
	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.closing.Load() || s.stopped.Load() {
				return http.ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
				// Out of file descriptors, as net/http does: wait and retry.
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				s.log.Warn("accept failed; retrying", "error", err, "delay", delay)
				time.Sleep(delay)
				continue
			}
			s.hand.close()
			return err
		}
		delay = 0
		a := s.limit.admit(nc)
		s.limit.logAdmitted(s.log, a, nc.RemoteAddr())
		if a.slot == nil {
			s.refuse(nc, a.limit)
			continue
		}
		if _, isTLS := nc.(*tls.Conn); isTLS {
			// net/http does the handshake and fills in Request.TLS; its
			// ConnState hook releases the slot. It is never idle for the
			// limit.
			a.slot.state.Store(connActive)
			s.imu.Lock()
			s.tlsSlots[nc] = a.slot
			s.imu.Unlock()
			s.hand.give(nc)
			continue
		}
		s.start(&fastConn{s: s, nc: nc, slot: a.slot})
	}
}

// start serves c on the fast path, on a goroutine of its own (s.wg's),
// unless the server is closing: then it closes c.
func (s *Server) start(c *fastConn) {
	s.mu.Lock()
	if s.closing.Load() {
		s.mu.Unlock()
		c.nc.Close()
		s.limit.release(c.slot)
		return
	}
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	go c.serve()
}

// serveStd is net/http's handler: the Server's, after a note of the
// request's method on a connection the fast path handed over (see
// replayConn).
func (s *Server) serveStd(w http.ResponseWriter, r *http.Request) {
	if rc, ok := r.Context().Value(replayKey{}).(*replayConn); ok {
		rc.lastPost.Store(r.Method == http.MethodPost)
	}
	s.handler.ServeHTTP(w, r)
}

// replayKey is the context key of a handed-over connection's replayConn
// in net/http's requests.
type replayKey struct{}

func stdConnContext(ctx context.Context, nc net.Conn) context.Context {
	if rc, ok := nc.(*replayConn); ok {
		return context.WithValue(ctx, replayKey{}, rc)
	}
	return ctx
}

// stdConnState tells a handed-over connection whether net/http waits for
// its next request (see replayConn), and keeps stdIdle.
func (s *Server) stdConnState(nc net.Conn, st http.ConnState) {
	var tlsSlot *connSlot
	s.imu.Lock()
	if st == http.StateIdle {
		s.stdIdle[nc] = struct{}{}
	} else {
		delete(s.stdIdle, nc)
	}
	if st == http.StateClosed || st == http.StateHijacked {
		// A hijacked TLS connection is no longer counted: its handler
		// closes the tls.Conn, which nothing here sees.
		tlsSlot = s.tlsSlots[nc]
		delete(s.tlsSlots, nc)
	}
	s.imu.Unlock()
	if tlsSlot != nil {
		s.limit.release(tlsSlot)
	}
	if rc, ok := nc.(*replayConn); ok {
		if st == http.StateIdle {
			rc.wait.Store(waitIdle)
		} else {
			rc.wait.Store(waitNone)
		}
	}
}

// StopAccepting closes the listener and goes on serving the connections
// open: for a hand-over, where the listening socket outlives this process
// (systemd socket activation) and the process that serves next accepts
// what comes from then on. Shutdown follows.
func (s *Server) StopAccepting() {
	s.stopped.Store(true)
	s.mu.Lock()
	if s.ln != nil {
		s.ln.Close()
	}
	s.mu.Unlock()
}

// IdleConns counts the open connections waiting for a next request (or,
// just accepted, for their first), on the fast path and net/http's.
func (s *Server) IdleConns() int {
	n := 0
	s.mu.Lock()
	for c := range s.conns {
		if c.slot.state.Load() == connIdle {
			n++
		}
	}
	s.mu.Unlock()
	s.imu.Lock()
	n += len(s.stdIdle)
	s.imu.Unlock()
	return n
}

// Shutdown stops accepting, closes idle connections, and waits for the
// requests in flight (net/http's and the fast path's) until ctx ends; then
// it closes what is left and returns ctx's error.
func (s *Server) Shutdown(ctx context.Context) error {
	s.closing.Store(true)
	defer s.stopSweeper()
	s.mu.Lock()
	if s.ln != nil {
		s.ln.Close()
	}
	s.mu.Unlock()
	stdErr := make(chan error, 1)
	go func() { stdErr <- s.std.Shutdown(ctx) }()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		s.closeIdle()
		select {
		case <-done:
			return <-stdErr
		case <-t.C:
		case <-ctx.Done():
			s.Close()
			return ctx.Err()
		}
	}
}

// Close closes the listener and every connection at once, and waits for
// the fast path's goroutines.
func (s *Server) Close() error {
	s.closing.Store(true)
	defer s.stopSweeper()
	s.mu.Lock()
	if s.ln != nil {
		s.ln.Close()
	}
	for c := range s.conns {
		c.nc.Close()
	}
	for nc := range s.refusing {
		nc.Close()
	}
	s.mu.Unlock()
	err := s.std.Close()
	s.wg.Wait()
	return err
}

func (s *Server) stopSweeper() { s.stopOnce.Do(func() { close(s.stop) }) }

// wakeSweeper makes the sweeper tick, unless it does.
func (s *Server) wakeSweeper() {
	if !s.sweeping.Load() && s.sweeping.CompareAndSwap(false, true) {
		select {
		case s.sweepWake <- struct{}{}:
		default:
		}
	}
}

// sweep ticks every watchAfter while fast-path requests run, and starts the
// watch of each that has run for a whole tick; it idles, with no timer,
// when none runs. It ends when stop closes.
func (s *Server) sweep() {
	defer close(s.sweepDone)
	t := time.NewTimer(watchAfter)
	t.Stop()
	for {
		select {
		case <-s.sweepWake:
		case <-s.stop:
			return
		}
		for running := true; running; {
			t.Reset(watchAfter)
			select {
			case <-t.C:
			case <-s.stop:
				t.Stop()
				return
			}
			if running = s.scan(); !running {
				s.sweeping.Store(false)
				// A request that began just now saw the sweeper ticking
				// and did not wake it: look once more.
				running = s.scan() && s.sweeping.CompareAndSwap(false, true)
			}
		}
	}
}

// scan starts the watch of every request it saw on the last scan too, and
// reports whether any request is being served.
func (s *Server) scan() (busy bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		if !c.busy.Load() {
			c.seen = 0
			continue
		}
		busy = true
		seq := c.seq.Load()
		if seq == c.seen && seq != c.swept {
			c.swept = seq
			go c.watchConn()
		}
		c.seen = seq
	}
	return busy
}

// CloseIdle closes every connection waiting for a request (the fast
// path's and net/http's) and keeps none open after its next answer: a
// hand-over's end, so that no request comes on them once the bridge
// answers only 503 (a proxy then sends it on a new connection, to the
// next bridge).
func (s *Server) CloseIdle() {
	s.std.SetKeepAlivesEnabled(false)
	s.closeIdle()
}

// closeIdle closes the fast connections waiting for a request.
func (s *Server) closeIdle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		if c.slot.state.CompareAndSwap(connIdle, connClosed) {
			c.nc.Close()
		}
	}
}

// forget ends c's serving goroutine's time: c is no fast connection.
func (s *Server) forget(c *fastConn) {
	s.untrack(c)
	s.wg.Done()
}

// untrack takes c out of the fast connections (again: a no-op).
func (s *Server) untrack(c *fastConn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// Connection states (connSlot.state).
const (
	connIdle   int32 = iota // waiting for a request, nothing of it read
	connActive              // reading or serving one, or net/http's
	connClosed              // closed while idle: by Shutdown, or for room
)

// fastConn is one connection served by the fast path.
type fastConn struct {
	s  *Server
	nc net.Conn
	// slot is the connection's place under the limit; its state says
	// whether it is idle.
	slot *connSlot
	// resumed: the connection comes back from net/http, which answered its
	// last request (a POST when afterPost).
	resumed, afterPost bool
	cr                 connReader
	br                 connBuf

	remote string
	// ctx is the connection's requests' base context: it carries the
	// values net/http's carry (ServerContextKey: the net/http server the
	// fast path hands off to; LocalAddrContextKey).
	ctx context.Context
	// readDeadline is the connection's read deadline as last set by the
	// serving goroutine (zero: unknown).
	readDeadline time.Time
	// base is the template of the next request, copied by WithContext
	// and cleared: the handler's request is the copy.
	base http.Request

	// wmu guards inRequest, watching, aborted, cancel and the connReader's
	// pending byte while a watch may run.
	wmu       sync.Mutex
	inRequest bool
	watching  bool
	watched   bool // the request in flight has been watched
	aborted   bool
	cancel    context.CancelFunc
	watchDone chan struct{}

	// seq counts the connection's requests and busy is set while one is
	// served: the sweeper watches a request it finds busy with the same
	// seq on two ticks running. seen (the seq of the last tick) and swept
	// (the last request it started a watch for) are the sweeper's own.
	seq         atomic.Uint64
	busy        atomic.Bool
	seen, swept uint64
}

// serve reads and serves the connection's requests until it closes or is
// handed to net/http.
func (c *fastConn) serve() {
	handed := false
	defer func() {
		c.br.Discard(c.br.Buffered())
		if !handed {
			c.nc.Close()
			c.s.limit.release(c.slot)
		}
		c.s.forget(c)
	}()
	c.cr.nc = c.nc
	c.br.init(&c.cr)
	c.remote = c.nc.RemoteAddr().String()
	c.ctx = context.WithValue(context.WithValue(context.Background(), http.ServerContextKey, c.s.std), http.LocalAddrContextKey, c.nc.LocalAddr())
	// The first wait is the header timeout's (the idle timeout's for a
	// connection net/http has served); empty lines are skipped after a POST.
	first := !c.resumed
	afterPost := c.afterPost
	for {
		// Wait for a request: the header timeout for the first, the idle
		// timeout between requests (net/http's).
		wait := c.s.idleTimeout
		if first {
			wait = c.s.headerTimeout
		}
		first = false
		// A deadline is moved only when it would move by more than
		// deadlineSlack: each move is a timer update in the runtime.
		now := time.Now()
		if d := now.Add(wait); d.Sub(c.readDeadline) > deadlineSlack {
			_ = c.nc.SetReadDeadline(d)
			c.readDeadline = d
		}
		// Idle (Shutdown and the limit may close it) unless bytes of the
		// next request are here already (pipelined): that one is in
		// flight.
		idle := c.br.Buffered() == 0 && !c.cr.hasPending
		if idle {
			c.slot.setIdle(c.s.limit, now)
			if c.s.closing.Load() && c.slot.state.CompareAndSwap(connIdle, connClosed) {
				return
			}
		}
		if _, err := c.br.Peek(1); err != nil {
			return
		}
		if idle && !c.slot.state.CompareAndSwap(connIdle, connActive) {
			return // closed by Shutdown, or to make room
		}
		if afterPost && !c.skipEmptyLines() {
			return
		}
		afterPost = true // every request served here is a POST
		head, ok := c.readHead()
		if !ok {
			return
		}
		var h fastHead
		var fr *fastRequest
		fast := head != nil
		if fast {
			// Everything of a request the handler can reach is made for
			// it: its header map (with its values in fr.vals) too.
			fr = new(fastRequest)
			fast = parseFastHead(head, &h, fr.vals[:0])
		}
		if fast && int64(c.br.Buffered()-len(head)) < h.contentLength {
			fast = false // the body is not all here: net/http reads it, with its limits
		}
		if !fast {
			// Not the fast path's any more before net/http has it: a
			// count of the fast connections (waitFast in the tests) must
			// not see one net/http may already be serving.
			c.s.untrack(c)
			c.handOff()
			handed = true
			return
		}
		c.br.Discard(len(head))
		if !c.serveRequest(&h, fr) {
			return
		}
	}
}

// maxEmptyLines is how many CR or LF bytes after a POST are skipped
// before the next request line, as net/http skips them (RFC 9112 §2.2: a
// client may send a CRLF after a POST body).
const maxEmptyLines = 4

// skipEmptyLines drops up to maxEmptyLines CR or LF bytes before the next
// request (every request the fast path served was a POST), as net/http
// does: it looks at the next four bytes, waiting (within the idle timeout)
// for them; false when the connection is to close.
func (c *fastConn) skipEmptyLines() bool {
	for range maxEmptyLines {
		b, err := c.br.Peek(1)
		if err != nil {
			return false
		}
		if b[0] != '\r' && b[0] != '\n' {
			return true
		}
		c.br.Discard(1)
		if c.br.Buffered() == 0 {
			// What follows comes within the header timeout, as the rest
			// of a head (net/http's deadline for these bytes).
			c.headDeadline()
		}
	}
	return true
}

// headDeadline moves the read deadline to the header timeout from now,
// unless it is sooner already.
func (c *fastConn) headDeadline() {
	if d := time.Now().Add(c.s.headerTimeout); c.readDeadline.IsZero() || d.Before(c.readDeadline) {
		c.readDeadline = d
		_ = c.nc.SetReadDeadline(d)
	}
}

// readHead returns the next request's head (up to its blank line) from
// the buffer, reading more within the header timeout when it is not all
// there; nil for a head longer than the buffer (it goes to net/http, which
// enforces MaxHeaderBytes); false when the connection is to close.
func (c *fastConn) readHead() ([]byte, bool) {
	deadlineSet := false
	for {
		buf := c.br.bytes()
		// net/http ends a head at its first empty line, CRLF or bare LF;
		// the fast path takes only CRLF.
		end, lf := bytes.Index(buf, []byte("\n\r\n")), bytes.Index(buf, []byte("\n\n"))
		switch {
		case lf >= 0 && (end < 0 || lf < end):
			return nil, true
		case end > 0 && buf[end-1] == '\r':
			return buf[:end+3], true
		case end >= 0:
			return nil, true
		}
		if len(buf) == connBufSize {
			return nil, true
		}
		if !deadlineSet {
			// The rest of the head within the header timeout (or sooner,
			// for a connection's first request, whose timeout runs from
			// its accept).
			c.headDeadline()
			deadlineSet = true
		}
		if _, err := c.br.Peek(len(buf) + 1); err != nil {
			// A head cut short by a timeout or the client's going: net/http
			// closes such a connection without an answer too.
			return nil, false
		}
	}
}

// handOff gives the connection, with what the buffer holds, to net/http,
// which owns it from then on.
func (c *fastConn) handOff() {
	buf := c.br.bytes()
	rc := &replayConn{Conn: c.nc, s: c.s, slot: c.slot, pending: append([]byte(nil), buf...)}
	if c.cr.hasPending {
		// A byte a watch read comes after what the buffer holds (the
		// buffer's next fill normally takes it before a head is parsed).
		rc.pending = append(rc.pending, c.cr.pending)
		c.cr.hasPending = false
	}
	_ = c.nc.SetReadDeadline(time.Time{})
	c.s.hand.give(rc)
}

// serveRequest serves the request whose head is h and whose body is the
// next h.contentLength buffered bytes; false when the connection must
// close after it.
func (c *fastConn) serveRequest(h *fastHead, fr *fastRequest) bool {
	ctx, cancel := context.WithCancel(c.ctx)
	r := c.request(ctx, h, fr)
	w := &fr.w

	c.wmu.Lock()
	c.inRequest, c.watched, c.cancel = true, false, cancel
	c.wmu.Unlock()
	c.seq.Add(1)
	c.busy.Store(true)
	c.s.wakeSweeper()

	keep := c.runHandler(w, r)
	// From here on the request is the connection's alone: a goroutine of
	// the handler that still holds w or r.Body gets errors.
	fr.mu.Lock()
	fr.done = true
	fr.mu.Unlock()

	c.busy.Store(false)
	c.wmu.Lock()
	c.inRequest = false
	watching, done := c.watching, c.watchDone
	if watching {
		c.aborted = true
		_ = c.nc.SetReadDeadline(aLongTimeAgo)
	}
	c.wmu.Unlock()
	if watching {
		<-done
		c.wmu.Lock()
		c.aborted = false
		c.wmu.Unlock()
		c.readDeadline = time.Time{} // the watch moved it
	}
	cancel()
	// What the handler left of the body is in the buffer (which it kept).
	if fr.body.n > 0 {
		c.br.Discard(int(fr.body.n))
		fr.body.n = 0
	}
	if !keep {
		w.release()
		return false // a panic
	}
	// A client whose watch read its end (EOF, or an error) still gets the
	// answer, as from net/http: an EOF may be a half-close (CloseWrite)
	// after the request, whose client waits for the answer. Nothing more
	// can come from it, but what it sent before its EOF (pipelined
	// requests, read with this one) is served first, as net/http serves
	// what its buffer holds; after an error (a reset) nobody reads.
	return w.finish() && !w.closeAfter && !c.s.closing.Load() && (!c.cr.gone.Load() || c.cr.eof.Load() && c.br.Buffered() > 0)
}

// request makes the handler's request for the head h, with its body, in
// fr. (Out of serveRequest, whose frame a request keeps until it is
// answered: the request is built here, not in a temporary of that frame.)
func (c *fastConn) request(ctx context.Context, h *fastHead, fr *fastRequest) *http.Request {
	fr.c = c
	fr.body.fr, fr.body.n = fr, h.contentLength
	fr.url.Path = h.path
	fr.w.fr, fr.w.header = fr, make(http.Header)
	c.base = http.Request{
		Method:        http.MethodPost,
		URL:           &fr.url,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h.header,
		Body:          &fr.body,
		ContentLength: h.contentLength,
		Host:          h.host,
		RemoteAddr:    c.remote,
		RequestURI:    h.path,
	}
	r := c.base.WithContext(ctx) // the handler's request is a copy of base
	c.base = http.Request{}      // which keeps nothing of it
	return r
}

// runHandler calls the handler; false when it panicked (the connection
// then closes, as net/http does).
func (c *fastConn) runHandler(w *fastResponse, r *http.Request) (ok bool) {
	defer func() {
		if p := recover(); p != nil {
			if p != http.ErrAbortHandler {
				c.s.log.Error("panic serving a request", "remote", c.remote, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			}
			ok = false
		}
	}()
	c.s.handler.ServeHTTP(w, r)
	return true
}

// aLongTimeAgo is a deadline that has passed: it ends a pending read.
var aLongTimeAgo = time.Unix(1, 0)

// watchConn runs (from the sweeper) when a request has run for watchAfter:
// it reads from the connection until the request ends (its end aborts the
// read) or the client goes (which cancels the request's context). A byte
// that arrives meanwhile (a pipelined request) is kept for the next
// request, and the watch ends, as net/http's background read does; a
// request is watched once.
func (c *fastConn) watchConn() {
	c.wmu.Lock()
	if !c.inRequest || c.watched || c.cr.hasPending {
		// The sweeper saw a request that has ended since, or one that is
		// watched already; or the client has sent more already.
		c.wmu.Unlock()
		return
	}
	c.watching, c.watched, c.watchDone = true, true, make(chan struct{})
	done := c.watchDone
	// Under the lock: an abort's deadline must come after this one.
	_ = c.nc.SetReadDeadline(time.Time{})
	c.wmu.Unlock()
	var b [1]byte
	n, err := c.nc.Read(b[:])
	c.wmu.Lock()
	if n == 1 {
		c.cr.pending, c.cr.hasPending = b[0], true
	} else if err != nil && !c.aborted {
		c.cr.eof.Store(err == io.EOF)
		c.cr.gone.Store(true)
		c.cancel()
	}
	c.watching = false
	c.wmu.Unlock()
	close(done)
}

// connReader reads the connection for the buffer, first a byte a watch
// read.
type connReader struct {
	nc         net.Conn
	pending    byte
	hasPending bool
	gone       atomic.Bool // a watch saw the client go
	eof        atomic.Bool // by its EOF (a half-close), set before gone
}

func (r *connReader) Read(p []byte) (int, error) {
	if r.hasPending && len(p) > 0 {
		p[0], r.hasPending = r.pending, false
		return 1, nil
	}
	return r.nc.Read(p)
}

// fastRequest is one fast-path request: what it allocates besides its
// http.Request, context and header maps. Everything of the request a
// handler can reach — its header's values, URL, body and ResponseWriter —
// is made for it and never reused, so a handler, or a goroutine it gave r
// or w to, that keeps any of it past ServeHTTP's return reaches nothing of
// the connection's next request (behind a proxy, maybe another user's).
type fastRequest struct {
	c *fastConn
	// mu guards done and the state of body and w: the handler's goroutines
	// use them under mu. When the handler returns, the connection's
	// goroutine sets done under mu; from then on it alone touches them (to
	// finish the answer, and skip what is left of the body), and every
	// other use fails: body reads return http.ErrBodyReadAfterClose, the
	// writer errAfterReturn (WriteHeader does nothing).
	mu   sync.Mutex
	done bool
	w    fastResponse
	body fastBody
	url  url.URL
	// vals backs the header map's single values: a head with more
	// header fields puts the rest in an array of their own.
	vals [12]string
}

// fastBody is a fast-path request's body: the next n bytes of the
// connection's buffer, all there already, read in the handler (under
// fr.mu). Once they are read the buffer goes back to the pool if it holds
// nothing more, so the request waits for its answer without one.
type fastBody struct {
	fr     *fastRequest
	n      int64
	closed bool // by the handler: reads fail, as net/http's
}

func (b *fastBody) Read(p []byte) (int, error) {
	fr := b.fr
	fr.mu.Lock()
	defer fr.mu.Unlock()
	if fr.done || b.closed {
		return 0, http.ErrBodyReadAfterClose
	}
	if b.n <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > b.n {
		p = p[:b.n]
	}
	n, err := fr.c.br.Read(p)
	b.n -= int64(n)
	if b.n == 0 && err == nil {
		err = io.EOF
	}
	return n, err
}

// Close makes later reads fail; the connection skips what is left once
// the handler returns.
func (b *fastBody) Close() error {
	b.fr.mu.Lock()
	b.closed = true
	b.fr.mu.Unlock()
	return nil
}

// replayConn is a connection handed to net/http: it reads first what the
// fast path had read. When net/http has answered a request and waits for
// the next one with nothing of it buffered, for a second (backAfter: a
// keep-alive client's next request, if it follows at once, net/http
// serves), the connection goes back to the fast path: that read gets
// io.EOF, on which net/http gives its buffers back to its pools and closes
// the connection, and that close serves the socket on the fast path again
// instead (Close). A hijacked connection (a
// GET stream) never goes idle: its handler's Close closes it.
//
// Which read that is follows net/http's keep-alive loop (Go 1.26's
// conn.serve): it reports the connection idle (ConnState), sets the idle
// read deadline, waits for the next request's first bytes (bufr.Peek(4)),
// then sets the header deadline and reads the request. A read between
// those two deadlines of a whole bufio buffer (stdBufSize) is the wait
// with nothing buffered; a shorter one, or none (four bytes buffered
// already), means bytes of the next request are in net/http's buffer: it
// serves it, and no read of that request is taken for the wait.
type replayConn struct {
	net.Conn
	s *Server
	// slot is the connection's place under the limit: idle while
	// readOrBack waits.
	slot *connSlot
	// wait is where net/http is in its wait for the next request: waitNone,
	// waitIdle (reported idle), waitPeek (the idle deadline set: its next
	// read is the wait's). Set by net/http's hook and its calls on the
	// connection, from its goroutine for the connection.
	wait atomic.Int32
	// lastPost: the last request net/http served was a POST (its handler).
	lastPost atomic.Bool
	// deadline is the read deadline net/http last set (its goroutine's).
	deadline time.Time
	// back: a read returned the EOF that sends the connection back, so
	// Close serves it on the fast path; closed: Close ran (net/http's
	// goroutine for the connection, or its Shutdown's, may close it).
	back, closed atomic.Bool
	// pending is what is left to replay, a copy of the fast path's buffer
	// (up to 4 KiB) owned by net/http's goroutine for the connection (its
	// reads). Once replayed it is dropped: an empty slice of it would keep
	// the whole copy for the connection's life (4 KiB for each idle
	// keep-alive connection whose first head was too large for the fast
	// path).
	pending []byte
}

func (c *replayConn) Read(p []byte) (int, error) {
	if len(c.pending) > 0 {
		n := copy(p, c.pending)
		c.pending = c.pending[n:]
		if len(c.pending) == 0 {
			c.pending = nil
		}
		return n, nil
	}
	if c.wait.Swap(waitNone) == waitPeek && len(p) == stdBufSize && !c.s.closing.Load() {
		return c.readOrBack(p)
	}
	return c.Conn.Read(p)
}

// readOrBack is net/http's wait for the next request, with nothing of it
// buffered: a keep-alive client's next request often follows at once (a
// client of GETs, of large POSTs), and net/http serves it; a connection
// that waits for s.backAfter comes back to the fast path (io.EOF). The
// connection is idle for the limit while it waits: one closed for room
// meanwhile gets net.ErrClosed, whatever the read brought.
func (c *replayConn) readOrBack(p []byte) (int, error) {
	now := time.Now()
	c.slot.setIdle(c.s.limit, now)
	n, back, err := c.waitRead(p, now)
	if !c.slot.state.CompareAndSwap(connIdle, connActive) {
		return 0, net.ErrClosed
	}
	if back {
		c.back.Store(true)
		return 0, io.EOF
	}
	return n, err
}

// waitRead is readOrBack's read; back: it waited s.backAfter for nothing.
func (c *replayConn) waitRead(p []byte, now time.Time) (n int, back bool, err error) {
	idleDeadline := c.deadline
	if d := now.Add(c.s.backAfter); idleDeadline.IsZero() || d.Before(idleDeadline) {
		_ = c.Conn.SetReadDeadline(d)
		n, err := c.Conn.Read(p)
		if n == 0 && errors.Is(err, os.ErrDeadlineExceeded) && !c.s.closing.Load() {
			return 0, true, nil
		}
		_ = c.Conn.SetReadDeadline(idleDeadline)
		if n > 0 || err != nil {
			return n, false, err
		}
	}
	n, err = c.Conn.Read(p)
	return n, false, err
}

// Where net/http is in its wait for the next request (replayConn.wait).
const (
	waitNone int32 = iota
	waitIdle
	waitPeek
)

// SetReadDeadline sets the connection's, and follows net/http's wait: the
// first after it reports the connection idle is the idle deadline (the
// wait's read comes next), the second the header deadline (the wait is
// over).
func (c *replayConn) SetReadDeadline(t time.Time) error {
	if c.wait.CompareAndSwap(waitIdle, waitPeek) {
		c.deadline = t
	} else {
		c.wait.Store(waitNone)
	}
	return c.Conn.SetReadDeadline(t)
}

// stdBufSize is the size of net/http's connection read buffer: a read of
// it all means the buffer holds nothing.
const stdBufSize = 4 << 10

// Close closes the connection, or, after the read that sends it back,
// serves it on the fast path again (unless the server is closing).
func (c *replayConn) Close() error {
	if !c.closed.CompareAndSwap(false, true) {
		return net.ErrClosed
	}
	if c.back.Load() {
		_ = c.Conn.SetReadDeadline(time.Time{})
		c.s.start(&fastConn{s: c.s, nc: c.Conn, slot: c.slot, resumed: true, afterPost: c.lastPost.Load()})
		return nil
	}
	err := c.Conn.Close()
	c.s.limit.release(c.slot)
	return err
}

// handoff is the listener net/http serves: it accepts the connections the
// fast path hands over.
type handoff struct {
	addr  net.Addr
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

// give hands nc to net/http, or closes it when net/http has stopped.
func (l *handoff) give(nc net.Conn) {
	select {
	case l.conns <- nc:
	case <-l.done:
		nc.Close()
	}
}

func (l *handoff) Accept() (net.Conn, error) {
	select {
	case nc := <-l.conns:
		return nc, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *handoff) close() { l.once.Do(func() { close(l.done) }) }

func (l *handoff) Close() error { l.close(); return nil }

func (l *handoff) Addr() net.Addr { return l.addr }
