package supervisor

import (
	"context"
	"errors"
	"fmt"
)

// Child is one running child process as its users see it: a stream of
// newline-delimited JSON messages in each direction, and its lifetime. The
// Process type satisfies it; tests use in-memory ones.
type Child interface {
	// ReadMessage returns the next line from the child's stdout without its
	// newline. The slice is valid only until the next call. A line longer than
	// the configured maximum yields a *LineTooLongError and the reader goes on
	// with the next line. Any other error means stdout is closed.
	ReadMessage() ([]byte, error)
	// WriteMessage writes msg and a newline to the child's stdin. Safe for
	// concurrent use; it gives up with an error instead of blocking forever.
	// It keeps no reference to msg once it returns.
	WriteMessage(msg []byte) error
	// Enqueue queues msg and a newline for the child's stdin and returns
	// without waiting for the child to read it (it reports only an earlier
	// write's failure). For the goroutine that reads the child's stdout:
	// it must never wait on stdin, for a child that writes its stdout
	// while its stdin is full waits for that reader. It keeps no reference
	// to msg once it returns.
	Enqueue(msg []byte) error
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
type Launcher func(ctx context.Context) (Child, error)

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

// Errors of a destination that cannot serve; its callers map them to what
// they answer (the HTTP endpoint: 503, 504).
var (
	// ErrUnavailable: the child is not running and could not be (re)started.
	ErrUnavailable = errors.New("destination unavailable")
	// ErrTimeout: the caller's timeout passed while it waited.
	ErrTimeout = errors.New("the child did not answer in time")
	// ErrCanceled: the caller went away.
	ErrCanceled = errors.New("the call was cancelled")
	// ErrNotStarted: nothing has asked for the child yet.
	ErrNotStarted = errors.New("the destination has not been initialized; send initialize first")
	// ErrStarting: the child is still starting (its start goes on).
	ErrStarting = errors.New("the destination is still starting")
	// ErrRestarting: the child crashed and has been restarting for longer
	// than Options.RestartPatience; callers are told at once.
	ErrRestarting = errors.New("the destination is restarting after a crash")
	// ErrPermanent marks an error of Ready that a restart would only repeat
	// (a child that refuses the handshake): the destination is marked
	// failed at once instead of restarting.
	ErrPermanent = errors.New("the child refused to start")
)

// unavailable is an ErrUnavailable whose text is msg alone, so that the
// message a client reads says each thing once.
type unavailable string

func (e unavailable) Error() string        { return string(e) }
func (e unavailable) Is(target error) bool { return target == ErrUnavailable }
