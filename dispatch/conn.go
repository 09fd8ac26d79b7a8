// Package dispatch multiplexes many MCP client sessions onto one shared child
// process: it mints upstream ids, keeps the pending calls, routes the child's
// messages, owns the child's initialize handshake and reference-counts
// resource subscriptions. It knows nothing of HTTP.
package dispatch

import (
	"context"
	"fmt"
)

// Conn is one running child process as the dispatcher sees it: a stream of
// newline-delimited JSON messages in each direction. The supervisor's Process
// satisfies it.
type Conn interface {
	// ReadMessage returns the next line from the child's stdout without its
	// newline. The slice is valid only until the next call. A line longer than
	// the configured maximum yields a *LineTooLongError and the reader goes on
	// with the next line. Any other error means stdout is closed.
	ReadMessage() ([]byte, error)
	// WriteMessage writes msg and a newline to the child's stdin. Safe for
	// concurrent use; it gives up with an error instead of blocking forever.
	WriteMessage(msg []byte) error
	// Stop ends the child: close stdin, wait, SIGTERM, wait, SIGKILL to its
	// process group. It returns when the child has exited or ctx ends.
	Stop(ctx context.Context) error
	// Exited is closed when the child process has exited.
	Exited() <-chan struct{}
	// ExitStatus describes how the child ended ("exit status 1", "signal:
	// killed"); empty while it runs.
	ExitStatus() string
	// PID is the child's process id.
	PID() int
}

// Launcher starts a fresh child for a destination.
type Launcher func(ctx context.Context) (Conn, error)

// LineTooLongError reports a line from the child that exceeded the maximum
// message size and was discarded.
type LineTooLongError struct {
	// Len is the number of bytes discarded.
	Len int
	// Prefix holds the line's first bytes, enough to read its id.
	Prefix []byte
	// Max is the configured maximum.
	Max int
}

func (e *LineTooLongError) Error() string {
	return fmt.Sprintf("child wrote a %d-byte line, over the %d-byte maximum message size; it was discarded", e.Len, e.Max)
}
