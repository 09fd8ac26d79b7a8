package main

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// This file speaks systemd's service notification protocol (sd_notify(3))
// for a unit of Type=notify-reload (or notify): READY=1 once the bridge
// listens and has started its children, RELOADING=1 (with MONOTONIC_USEC)
// and READY=1 around a reload, STOPPING=1 when the drain begins, and
// WATCHDOG=1 every half WATCHDOG_USEC while it serves. Each is one
// datagram to the unix socket NOTIFY_SOCKET names ('@' for the abstract
// namespace). Without NOTIFY_SOCKET the notifier is nil and does nothing.
// The protocol is a line per datagram: written here rather than taken
// from a library.

// notifyVars are the variables systemd gives a notify service: none of
// them is a child's (a child that wrote to the socket would speak for the
// bridge).
var notifyVars = []string{"NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"}

// notifier sends the bridge's notifications.
type notifier struct {
	log hclog.Logger
	// mu guards conn: one datagram at a time, from any goroutine.
	mu   sync.Mutex
	conn *net.UnixConn
}

// newNotifier connects to NOTIFY_SOCKET; nil without one.
func newNotifier(getenv func(string) string, log hclog.Logger) (*notifier, error) {
	path := getenv("NOTIFY_SOCKET")
	if path == "" {
		return nil, nil
	}
	if strings.HasPrefix(path, "@") {
		path = "\x00" + path[1:]
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return nil, fmt.Errorf("NOTIFY_SOCKET=%s: cannot reach systemd's notification socket: %w", getenv("NOTIFY_SOCKET"), err)
	}
	return &notifier{log: log, conn: conn}, nil
}

// send sends one notification (lines of NAME=value).
func (n *notifier) send(state string) {
	if n == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, err := n.conn.Write([]byte(state)); err != nil {
		n.log.Warn("cannot notify systemd", "state", strings.SplitN(state, "\n", 2)[0], "error", err)
	}
}

// ready, reloading, stopping: the service's states.
func (n *notifier) ready()    { n.send("READY=1\nSTATUS=serving") }
func (n *notifier) stopping() { n.send("STOPPING=1\nSTATUS=draining the calls in flight") }
func (n *notifier) reloading() {
	n.send("RELOADING=1\nSTATUS=reloading the destinations file\nMONOTONIC_USEC=" + strconv.FormatInt(monotonicUsec(), 10))
}

// serve runs while the bridge serves: it sends WATCHDOG=1 every half of
// WATCHDOG_USEC when systemd asked for it (WATCHDOG_PID unset or this
// process), STOPPING=1 when stop ends (the signal that starts the
// drain), and keeps the watchdog fed through the drain until served
// closes (Serve returned). The caller waits for it.
func (n *notifier) serve(stop <-chan struct{}, served <-chan struct{}, getenv func(string) string) {
	if n == nil {
		return
	}
	var tick <-chan time.Time
	usec, err := strconv.ParseInt(getenv("WATCHDOG_USEC"), 10, 64)
	if pid := getenv("WATCHDOG_PID"); err == nil && usec > 0 && (pid == "" || pid == strconv.Itoa(os.Getpid())) {
		t := time.NewTicker(time.Duration(usec) * time.Microsecond / 2)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-stop:
			n.stopping()
			stop = nil
		case <-served:
			return
		case <-tick:
			n.send("WATCHDOG=1")
		}
	}
}

// close closes the socket.
func (n *notifier) close() {
	if n != nil {
		n.conn.Close()
	}
}
