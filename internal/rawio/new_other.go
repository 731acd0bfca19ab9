//go:build !linux

package rawio

import (
	"errors"
	"net"
	"syscall"
)

// New answers errors.ErrUnsupported off Linux: use tc as it is.
func New(tc *net.TCPConn) (*Conn, error) { return nil, errors.ErrUnsupported }

// Never called: New makes no Conn here.
func read(fd uintptr, p []byte) (int, syscall.Errno)  { return 0, syscall.EINVAL }
func write(fd uintptr, p []byte) (int, syscall.Errno) { return 0, syscall.EINVAL }
func peek(fd uintptr) syscall.Errno                   { return syscall.EINVAL }
