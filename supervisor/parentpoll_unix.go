//go:build unix

package supervisor

import (
	"os"
	"time"
)

// watchParentByPolling closes died once the process's parent is no longer
// ppid (it exited: the process was reparented), looking twice a second: the
// fallback of a platform's own parent watch when that cannot be set up.
func watchParentByPolling(ppid int, died chan<- struct{}) {
	go func() {
		for os.Getppid() == ppid {
			time.Sleep(500 * time.Millisecond)
		}
		close(died)
	}()
}
