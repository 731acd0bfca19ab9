package rawio

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"
)

// Conn is a TCP connection whose Read and Write make raw system calls on
// its socket. Every other method is the *net.TCPConn's it was made from.
type Conn struct {
	net.Conn // the *net.TCPConn: Close, addresses, deadlines
	fd       rawFD
}

// NetConn returns the *net.TCPConn c reads and writes (as *tls.Conn's
// NetConn gives the connection under it).
func (c *Conn) NetConn() net.Conn { return c.Conn }

// Read reads from the socket as net.Conn's Read does.
func (c *Conn) Read(p []byte) (int, error) {
	n, err := c.fd.readIO(p)
	if err != nil && err != io.EOF {
		err = c.opError("read", err)
	}
	return n, err
}

// Quiet reports, without waiting, whether the socket has nothing to read
// and its peer has not closed it: what a connection kept idle between
// requests should find before it carries the next one. Bytes waiting, an
// end of stream or an error all answer false.
func (c *Conn) Quiet() bool { return c.fd.quietNow() }

// Write writes all of p to the socket as net.Conn's Write does.
func (c *Conn) Write(p []byte) (int, error) {
	n, err := c.fd.writeIO(p)
	if err != nil {
		err = c.opError("write", err)
	}
	return n, err
}

// opError wraps err as the net package wraps a connection's errors: a
// *net.OpError with op, the network and both addresses, around an
// *os.SyscallError for a system call's errno. An error of the RawConn (a
// deadline, a closed connection) is already one, named for the raw call:
// its cause is kept under op.
func (c *Conn) opError(op string, err error) error {
	if errno, ok := err.(syscall.Errno); ok {
		err = os.NewSyscallError(op, errno)
	} else if oe, ok := err.(*net.OpError); ok {
		err = oe.Err
	}
	return &net.OpError{Op: op, Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}

// File is one end of a pipe (an *os.File the runtime's poller waits on,
// as os.Pipe's ends are) whose Read and Write make raw system calls.
type File struct {
	f  *os.File
	fd rawFD
}

// Read reads from the pipe as *os.File's Read does: io.EOF once the other
// end is closed and everything was read, an *os.PathError otherwise
// (os.ErrClosed once the file is closed, os.ErrDeadlineExceeded past a
// deadline).
func (f *File) Read(p []byte) (int, error) {
	n, err := f.fd.readIO(p)
	if err != nil && err != io.EOF {
		err = f.pathError("read", err)
	}
	return n, err
}

// Write writes all of p to the pipe as *os.File's Write does.
func (f *File) Write(p []byte) (int, error) {
	n, err := f.fd.writeIO(p)
	if err != nil {
		err = f.pathError("write", err)
	}
	return n, err
}

// Close closes the file.
func (f *File) Close() error { return f.f.Close() }

// pathError wraps err as *os.File wraps its errors. The RawConn's own
// errors (not a syscall.Errno) are a deadline passed or the file closed,
// while waiting or before.
func (f *File) pathError(op string, err error) error {
	if _, sys := err.(syscall.Errno); !sys && !errors.Is(err, os.ErrDeadlineExceeded) {
		err = os.ErrClosed
	}
	return &os.PathError{Op: op, Path: f.f.Name(), Err: err}
}
