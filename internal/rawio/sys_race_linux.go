//go:build linux && race

package rawio

import (
	"errors"
	"syscall"
)

// Built with the race detector, the calls go through package syscall,
// which tells the detector what each reads and writes and orders I/O
// between goroutines as net.Conn's calls do.

func read(fd uintptr, p []byte) (int, syscall.Errno) {
	n, err := syscall.Read(int(fd), p)
	if err != nil {
		return 0, errno(err)
	}
	return n, 0
}

func write(fd uintptr, p []byte) (int, syscall.Errno) {
	n, err := syscall.Write(int(fd), p)
	if err != nil {
		return 0, errno(err)
	}
	return n, 0
}

func peek(fd uintptr) syscall.Errno {
	var b [1]byte
	n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	if err != nil {
		return errno(err)
	}
	if n == 0 {
		return 0
	}
	return syscall.EEXIST
}

func errno(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	return syscall.EIO
}
