package session

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/stelae-bridge/stelae-bridge/httpx"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/stelae-bridge/stelae-bridge/dispatch"
)

// A destination with a child per user ('isolation: user'): its endpoint
// routes each request to an endpoint of the request's user's own, made on
// their first request, whose one shared child serves that user's 2025
// sessions and 2026-07-28 requests alike (a user is stable across their
// requests, so both eras work, unlike 'isolation: session'). Everything an
// endpoint does — sessions, streams, MRTR, listen, tasks, limits — it does
// per user. A user's endpoint is let go (its child stopped) once it has
// been idle for UserCaps.Idle: no request being served, no session, no
// parked call, no task kept. The users with an endpoint, those being let
// go included (their children may still be stopping), are held to
// UserCaps.Max for the destination and to the bridge's UserBudget in all;
// at a cap a new user is refused (503 with Retry-After) — never another
// user's child stopped to make room — and endpoints are made at most at
// the spawn rate.

// UserCaps are a user-isolated destination's limits.
type UserCaps struct {
	// Max is how many users may have a child of the destination at once,
	// those being let go included.
	Max int
	// Idle is how long a user's endpoint stays with nothing to do before
	// it is let go (its child stopped).
	Idle time.Duration
	// Budget bounds the users' children of every destination together
	// (nil: none).
	Budget *UserBudget
}

// UserBudget bounds the children of every user-isolated destination
// together (-max-user-children), those being let go included.
type UserBudget struct {
	max int
	n   atomic.Int64
}

// NewUserBudget is a budget of max children.
func NewUserBudget(max int) *UserBudget { return &UserBudget{max: max} }

// take takes one place; false when none is left.
func (b *UserBudget) take() bool {
	if b == nil {
		return true
	}
	if b.n.Add(1) > int64(b.max) {
		b.n.Add(-1)
		return false
	}
	return true
}

// give gives a place back.
func (b *UserBudget) give() {
	if b != nil {
		b.n.Add(-1)
	}
}

// InUse is how many places are taken.
func (b *UserBudget) InUse() int { return int(b.n.Load()) }

// users are a user-isolated destination's endpoints, one per user.
type users struct {
	forUser func(User) *Endpoint
	caps    UserCaps
	spawns  *rate.Limiter
	// mu guards byKey, letting, closed, tools and toolsKnown.
	mu    sync.Mutex
	byKey map[string]*userEndpoint
	// tools is the last tool catalogue a user's child reported, for the
	// manifest while none runs.
	tools      []json.RawMessage
	toolsKnown bool
	// letting counts the endpoints being let go: their children may still
	// be stopping, so they hold their places.
	letting int
	closed  bool
	// lettingGo counts the goroutines letting endpoints go; close waits.
	lettingGo sync.WaitGroup
	stop      chan struct{}
	done      chan struct{}
}

// userEndpoint is one user's endpoint.
type userEndpoint struct {
	ep   *Endpoint
	user User
	// serving counts the requests being served; lastUsed is when the
	// last ended (unix nanoseconds).
	serving  atomic.Int64
	lastUsed atomic.Int64
}

// NewUserEndpoint serves a destination with a child per user: forUser makes
// a user's own endpoint (with its shared dispatcher) on their first
// request. It starts the janitor that lets idle users' endpoints go;
// Shutdown ends it.
func NewUserEndpoint(name string, forUser func(User) *Endpoint, caps UserCaps, m *Metrics, opts Options) *Endpoint {
	opts.setDefaults()
	ep := &Endpoint{name: name, opts: &opts, log: opts.Logger.With("destination", name), m: m, reg: newRegistry(opts.MaxSessions),
		shutdown: make(chan struct{}), janitorDone: make(chan struct{})}
	if m == nil {
		ep.m = NewMetrics(nil, name)
	}
	if caps.Max < 1 {
		caps.Max = 1
	}
	if caps.Idle <= 0 {
		caps.Idle = DefaultUserIdle
	}
	ep.users = &users{forUser: forUser, caps: caps, byKey: map[string]*userEndpoint{}, spawns: spawnRate(caps.Max),
		stop: make(chan struct{}), done: make(chan struct{})}
	close(ep.janitorDone) // the users' janitor is users.done
	go ep.users.janitor(ep)
	return ep
}

// DefaultUserIdle is how long a user's child stays with nothing to do.
const DefaultUserIdle = 5 * time.Minute

// serveUser serves r on its user's endpoint, made on their first request.
func (ep *Endpoint) serveUser(w http.ResponseWriter, r *http.Request) {
	u := UserFrom(r)
	if !u.Known() {
		httpx.WriteErrorFor(w, r, http.StatusForbidden, codeServer, fmt.Sprintf("destination %q gives each user a child of their own ('isolation: user') and this request has no user: send a credential the bridge knows (a bearer token of its tokens file, or an OAuth access token)", ep.name))
		return
	}
	ue, why := ep.users.acquire(ep, u)
	if ue == nil {
		w.Header().Set("Retry-After", "5")
		httpx.WriteErrorFor(w, r, http.StatusServiceUnavailable, codeServer, why)
		return
	}
	defer ep.users.release(ue)
	ue.ep.ServeHTTP(w, r)
}

// acquire is u's endpoint, made when u has none and the caps allow; nil
// and why not when they do not.
func (us *users) acquire(ep *Endpoint, u User) (*userEndpoint, string) {
	us.mu.Lock()
	defer us.mu.Unlock()
	if us.closed {
		return nil, "the bridge is shutting down; retry when it is back"
	}
	if ue := us.byKey[u.Key]; ue != nil {
		ue.serving.Add(1)
		return ue, ""
	}
	if n := len(us.byKey) + us.letting; n >= us.caps.Max {
		return nil, fmt.Sprintf("destination %q gives each user a child of their own and has its maximum of %d users' children (%d of them stopping); retry shortly, or raise the destination's 'max_users:'", ep.name, us.caps.Max, us.letting)
	}
	if !us.spawns.Allow() {
		return nil, fmt.Sprintf("destination %q is starting users' children faster than %.0f a second; retry shortly", ep.name, float64(us.spawns.Limit()))
	}
	if !us.caps.Budget.take() {
		return nil, fmt.Sprintf("the bridge has its maximum of %d users' children across its destinations; retry shortly, or raise -max-user-children", us.caps.Budget.max)
	}
	ue := us.makeLocked(ep, u)
	ue.serving.Add(1)
	return ue, ""
}

// makeLocked makes u's endpoint. us.mu must be held; the caps were
// checked.
func (us *users) makeLocked(ep *Endpoint, u User) *userEndpoint {
	ue := &userEndpoint{ep: us.forUser(u), user: u}
	ue.ep.user = u
	ue.lastUsed.Store(time.Now().UnixNano())
	us.byKey[u.Key] = ue
	ep.log.Info("a user's endpoint made", "user", u.String())
	return ue
}

// restore gives the sessions a Store kept back to their users' endpoints,
// made for them as far as the caps allow (the rest, and any record of no
// user, are removed: their clients initialize again). A user's child
// starts when a call comes.
func (us *users) restore(ep *Endpoint, recs []StoredSession) {
	byUser := map[string][]StoredSession{}
	names := map[string]string{}
	for _, r := range recs {
		if r.UserKey == "" {
			_ = ep.opts.Store.Delete(ep.name, r.ID)
			continue
		}
		byUser[r.UserKey] = append(byUser[r.UserKey], r)
		names[r.UserKey] = r.UserName
	}
	us.mu.Lock()
	defer us.mu.Unlock()
	for key, rs := range byUser {
		ue := us.byKey[key]
		if ue == nil {
			if len(us.byKey)+us.letting >= us.caps.Max || !us.caps.Budget.take() {
				for _, r := range rs {
					_ = ep.opts.Store.Delete(ep.name, r.ID)
				}
				continue
			}
			ue = us.makeLocked(ep, User{Key: key, Name: names[key]})
		}
		ue.ep.restoreRecords(rs)
	}
}

// release ends one request's hold on ue.
func (us *users) release(ue *userEndpoint) {
	ue.lastUsed.Store(time.Now().UnixNano())
	ue.serving.Add(-1)
}

// idle reports whether the user's endpoint has nothing to do: no request
// served, no session, no parked call, no task kept.
func (ue *userEndpoint) idle() bool {
	if ue.serving.Load() > 0 || ue.ep.calls.Load() > 0 || ue.ep.reg.count() > 0 {
		return false
	}
	m := &ue.ep.sl.mrtr
	m.mu.Lock()
	parked := m.n
	m.mu.Unlock()
	ts := &ue.ep.sl.tasks
	ts.mu.Lock()
	tasks := len(ts.live)
	ts.mu.Unlock()
	return parked == 0 && tasks == 0
}

// janitor lets idle users' endpoints go.
func (us *users) janitor(ep *Endpoint) {
	defer close(us.done)
	every := min(max(us.caps.Idle/4, 10*time.Millisecond), time.Minute)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-us.stop:
			return
		case <-t.C:
			now := time.Now().UnixNano()
			us.mu.Lock()
			for key, ue := range us.byKey {
				if now-ue.lastUsed.Load() >= int64(us.caps.Idle) && ue.idle() {
					delete(us.byKey, key)
					us.letGoLocked(ep, ue, errExpired)
				}
			}
			us.mu.Unlock()
		}
	}
}

// letGoLocked ends ue's endpoint and stops its child in the background;
// its place is held until the child is gone. us.mu must be held.
func (us *users) letGoLocked(ep *Endpoint, ue *userEndpoint, reason error) {
	us.letting++
	us.lettingGo.Add(1)
	ep.log.Info("a user's child is let go", "user", ue.user.String(), "why", reason)
	go func() {
		defer us.lettingGo.Done()
		ctx, cancel := context.WithTimeout(context.Background(), ep.opts.StopTimeout+5*time.Second)
		defer cancel()
		ue.ep.end(ctx, reason)
		if err := ue.ep.shared.Close(ctx); err != nil {
			ep.log.Error("a user's child did not stop in time", "user", ue.user.String(), "error", err)
		}
		us.mu.Lock()
		us.letting--
		us.mu.Unlock()
		us.caps.Budget.give()
	}()
}

// all is every user's endpoint now.
func (us *users) all() []*userEndpoint {
	us.mu.Lock()
	defer us.mu.Unlock()
	return slicesOf(us.byKey)
}

func slicesOf(m map[string]*userEndpoint) []*userEndpoint {
	out := make([]*userEndpoint, 0, len(m))
	for _, ue := range m {
		out = append(out, ue)
	}
	return out
}

// endAll lets every user's endpoint go with reason and waits (until ctx
// ends) for their children to be gone; no new user is admitted after.
func (us *users) endAll(ctx context.Context, ep *Endpoint, reason error) {
	us.mu.Lock()
	if !us.closed {
		us.closed = true
		close(us.stop)
	}
	for key, ue := range us.byKey {
		delete(us.byKey, key)
		us.letGoLocked(ep, ue, reason)
	}
	us.mu.Unlock()
	waitGroup(ctx, &us.lettingGo)
	select {
	case <-us.done:
	case <-ctx.Done():
	}
}

// EndUser lets user key's endpoint go at once — their sessions end (their
// next request gets 404), their child stops — for why (the operator's
// action, their credentials changed). It reports whether they had one.
func (ep *Endpoint) EndUser(key, why string) bool {
	reason := fmt.Errorf("%w: %s", dispatch.ErrCanceled, why)
	us := ep.users
	if us == nil {
		return false
	}
	us.mu.Lock()
	defer us.mu.Unlock()
	ue := us.byKey[key]
	if ue == nil {
		return false
	}
	delete(us.byKey, key)
	us.letGoLocked(ep, ue, reason)
	return true
}

// userStatus sums the users' children's states (running when any runs).
func (us *users) status() dispatch.Status {
	st := dispatch.Status{Refused: map[string]uint64{}}
	st.State = dispatch.StateIdle
	for _, ue := range us.all() {
		addChild(&st, ue.ep.shared.Status())
	}
	for _, r := range dispatch.RefusalReasons() {
		if _, ok := st.Refused[r]; !ok {
			st.Refused[r] = 0
		}
	}
	return st
}

// Users describes the users with a child of a user-isolated destination
// (nil for another): who, their child's state and pid, their sessions.
func (ep *Endpoint) Users() []UserInfo {
	if ep.users == nil {
		return nil
	}
	var out []UserInfo
	for _, ue := range ep.users.all() {
		st := ue.ep.shared.Status()
		out = append(out, UserInfo{User: ue.user, Key: ue.user.Key, Name: ue.user.String(), State: st.State, PID: st.PID, Sessions: ue.ep.reg.count()})
	}
	return out
}

// UserInfo is one user's child as the operator sees it.
type UserInfo struct {
	// User is who they are (Key, Name: User.String()).
	User      User
	Key, Name string
	State     string
	PID       int
	Sessions  int
}

// catalogue is a user's child's tool catalogue (all users' children run
// the same command), the last known one when none is known now.
func (us *users) catalogue() ([]json.RawMessage, bool) {
	for _, ue := range us.all() {
		if tools, known := ue.ep.shared.Tools(); known {
			us.mu.Lock()
			us.tools, us.toolsKnown = tools, true
			us.mu.Unlock()
			return tools, true
		}
	}
	us.mu.Lock()
	defer us.mu.Unlock()
	return us.tools, us.toolsKnown
}
