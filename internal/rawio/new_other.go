//go:build !linux

package rawio

import (
	"errors"
	"net"
	"os"
	"syscall"
)

// New answers errors.ErrUnsupported off Linux: use tc as it is.
func New(tc *net.TCPConn) (*Conn, error) { return nil, errors.ErrUnsupported }

// NewFile answers errors.ErrUnsupported off Linux: use f as it is.
func NewFile(f *os.File) (*File, error) { return nil, errors.ErrUnsupported }

// Never called: New and NewFile make nothing here.
func read(fd uintptr, p []byte) (int, syscall.Errno)  { return 0, syscall.EINVAL }
func write(fd uintptr, p []byte) (int, syscall.Errno) { return 0, syscall.EINVAL }
func peek(fd uintptr) syscall.Errno                   { return syscall.EINVAL }
