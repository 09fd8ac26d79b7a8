package console

import (
	"encoding/json"
	"net/http"
	"time"
)

// pageEntries is how many log entries the page keeps.
const pageEntries = 500

// serveEvents is the page's one stream: a "state" event at once and every
// Every, and "log" events with the access entries recorded since the last
// (the recent ones first), checked four times as often. It ends when the
// viewer leaves or its sign-in ends, a write fails or stalls, or the
// bridge stops.
func (c *Console) serveEvents(w http.ResponseWriter, r *http.Request, v *viewer) {
	c.mu.Lock()
	if c.streams >= maxStreams {
		c.mu.Unlock()
		w.Header().Set("Retry-After", "10")
		writeError(w, http.StatusServiceUnavailable, "too many console streams are open; close some console tabs")
		return
	}
	c.streams++
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.streams--
		c.mu.Unlock()
	}()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	rc := http.NewResponseController(w)
	send := func(event string, data []byte) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(10 * time.Second))
		buf := make([]byte, 0, len(data)+32)
		buf = append(append(append(append(buf, "event: "...), event...), "\ndata: "...), data...)
		buf = append(buf, "\n\n"...)
		if _, err := w.Write(buf); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	var seq uint64
	sendLog := func() bool {
		// The page keeps pageEntries: more would be copied, encoded,
		// sent and dropped (under load, the newest are what it shows).
		entries, last := c.opts.Tail.since(seq, pageEntries)
		seq = last
		if len(entries) == 0 {
			return true
		}
		data, err := json.Marshal(entries)
		return err == nil && send("log", data)
	}
	if !send("state", c.state()) || !sendLog() {
		return
	}
	logEvery := time.NewTicker(c.opts.Every / 4)
	defer logEvery.Stop()
	stateEvery := time.NewTicker(c.opts.Every)
	defer stateEvery.Stop()
	for {
		select {
		case <-logEvery.C:
			if !sendLog() {
				return
			}
		case <-stateEvery.C:
			// A stream lasts as long as its sign-in: signed out, or
			// expired, it ends (the page then shows the sign-in).
			if v.login != nil && !c.signedIn(v.login) {
				return
			}
			if !send("state", c.state()) {
				return
			}
		case <-r.Context().Done():
			return
		case <-c.opts.Done:
			return
		}
	}
}
