package session

import (
	"sync"
	"time"

	"github.com/stelae-bridge/stelae-bridge/dispatch"
)

// This file keeps a destination's child up between stateless requests
// (MCP 2026-07-28 requests and sessionless 2025 ones): each holds the child
// only while it runs, so without a holder in between every request would
// start a child and the next stop it. The keeper is one more session of the
// shared dispatcher, attached by the first stateless request and detached
// after keeperIdle without one.

// keeperIdle is how long the child is kept for stateless traffic.
const keeperIdle = 5 * time.Minute

type keeper struct {
	// mu guards attached, timer and closed.
	mu       sync.Mutex
	attached bool
	closed   bool
	timer    *time.Timer
	caller   statelessCaller
}

// touch keeps d's child for keeperIdle more.
func (k *keeper) touch(d *dispatch.Dispatcher) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return
	}
	if !k.attached {
		k.caller = statelessCaller{kind: "stateless-keeper", cancel: func(error) {}}
		d.AttachCaller(&k.caller, false)
		k.attached = true
	}
	if k.timer == nil {
		k.timer = time.AfterFunc(keeperIdle, func() { k.letGo(d) })
	} else {
		k.timer.Reset(keeperIdle)
	}
}

// letGo lets the child go.
func (k *keeper) letGo(d *dispatch.Dispatcher) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.attached {
		d.Detach(&k.caller, nil)
		k.attached = false
	}
}

// close lets the child go for good (the endpoint is shutting down).
func (k *keeper) close(d *dispatch.Dispatcher) {
	k.mu.Lock()
	k.closed = true
	if k.timer != nil {
		k.timer.Stop()
	}
	k.mu.Unlock()
	k.letGo(d)
}
