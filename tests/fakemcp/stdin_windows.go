package fakemcp

import (
	"unsafe"

	"golang.org/x/sys/windows"
)

var peekNamedPipe = windows.NewLazySystemDLL("kernel32.dll").NewProc("PeekNamedPipe")

// stdinWaiting is how many bytes wait in stdin's pipe (PeekNamedPipe).
func stdinWaiting() int {
	h, err := windows.GetStdHandle(windows.STD_INPUT_HANDLE)
	if err != nil {
		return 0
	}
	var avail uint32
	if r, _, _ := peekNamedPipe.Call(uintptr(h), 0, 0, 0, uintptr(unsafe.Pointer(&avail)), 0); r == 0 {
		return 0
	}
	return int(avail)
}

// shrinkStdin: a pipe's size is set by its creator on Windows.
func shrinkStdin() {}
