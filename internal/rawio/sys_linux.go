//go:build linux && !race

package rawio

import (
	"syscall"
	"unsafe"
)

// read, write and peek make one system call each on a non-blocking
// socket, which answers at once (EAGAIN when it would have to wait): raw,
// without telling the scheduler the thread may block.

func read(fd uintptr, p []byte) (int, syscall.Errno) {
	r, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(r), 0
}

func write(fd uintptr, p []byte) (int, syscall.Errno) {
	r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(r), 0
}

// peek answers EAGAIN when the socket has nothing to read and is open.
func peek(fd uintptr) syscall.Errno {
	var b [1]byte
	r, _, e := syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, uintptr(unsafe.Pointer(&b[0])), 1, syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
	if e != 0 {
		return e
	}
	if r == 0 {
		return 0 // end of stream
	}
	return syscall.EEXIST // bytes waiting: not quiet (any errno but EAGAIN)
}
