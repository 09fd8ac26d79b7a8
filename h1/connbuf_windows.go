package h1

// rawReads: on Windows a socket is not read with a plain read: every read
// goes through the connection, with a buffer held while it waits
// (connBuf).
const rawReads = false

// readFD is never called on Windows (rawReads).
func (b *connBuf) readFD(uintptr) bool { panic("connBuf.readFD on Windows") }
