//go:build unix

package h1

import "syscall"

// rawReads: a readable socket is read with read(2) (connBuf.readFD).
const rawReads = true

// readFD is fillRaw's read of the socket: false (wait for the poller) when
// it has nothing to read yet.
func (b *connBuf) readFD(fd uintptr) bool {
	p := bufPool.Get().(*[]byte)
	var n int
	var err error
	for {
		n, err = syscall.Read(int(fd), *p)
		if err != syscall.EINTR {
			break
		}
	}
	if err == syscall.EAGAIN {
		putBuf(p)
		return false
	}
	if n > 0 {
		b.buf, b.r, b.w = p, 0, n
	} else {
		putBuf(p)
		n = 0
	}
	b.rn, b.rerr = n, err
	return true
}
