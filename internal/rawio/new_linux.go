//go:build linux

package rawio

import (
	"errors"
	"net"
	"os"
	"syscall"
)

// New returns a Conn that reads and writes tc's socket with raw system
// calls. tc stays usable for everything else (Close, deadlines); read and
// write it only through the Conn from now on.
func New(tc *net.TCPConn) (*Conn, error) {
	rc, err := tc.SyscallConn()
	if err != nil {
		return nil, err
	}
	c := &Conn{Conn: tc}
	c.fd.init(rc)
	return c, nil
}

// NewFile returns a File that reads and writes f with raw system calls.
// f must be non-blocking (an end of os.Pipe, which the runtime polls);
// any other file answers errors.ErrUnsupported, since a raw call on it
// could block its thread unseen. Read and write f only through the File
// from now on; closing either closes both.
func NewFile(f *os.File) (*File, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	nonblock := false
	if err := rc.Control(func(fd uintptr) {
		fl, _, e := syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0)
		nonblock = e == 0 && fl&syscall.O_NONBLOCK != 0
	}); err != nil {
		return nil, err
	}
	if !nonblock {
		return nil, errors.ErrUnsupported
	}
	rf := &File{f: f}
	rf.fd.init(rc)
	return rf, nil
}
