package rawio

import (
	"io"
	"net"
	"os"
	"sync"
	"syscall"
)

// Conn is a TCP connection whose Read and Write make raw system calls on
// its socket. Every other method is the *net.TCPConn's it was made from.
type Conn struct {
	net.Conn // the *net.TCPConn: Close, addresses, deadlines
	rc       syscall.RawConn

	rmu   sync.Mutex // the read state below, one Read (or Quiet) at a time
	rbuf  []byte
	rn    int
	rerr  syscall.Errno
	peek  bool // Quiet's peek rather than a read
	quiet bool
	readF func(fd uintptr) bool

	wmu    sync.Mutex // the write state below
	wbuf   []byte
	wn     int
	werr   syscall.Errno
	writeF func(fd uintptr) bool
}

// NetConn returns the *net.TCPConn c reads and writes (as *tls.Conn's
// NetConn gives the connection under it).
func (c *Conn) NetConn() net.Conn { return c.Conn }

// Read reads from the socket as net.Conn's Read does.
func (c *Conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	c.rmu.Lock()
	defer c.rmu.Unlock()
	c.rbuf, c.rn, c.rerr, c.peek = p, 0, 0, false
	err := c.rc.Read(c.readF)
	n, errno := c.rn, c.rerr
	c.rbuf = nil
	if err != nil {
		return 0, c.opError("read", err)
	}
	if errno != 0 {
		return 0, c.opError("read", os.NewSyscallError("read", errno))
	}
	if n == 0 {
		return 0, io.EOF
	}
	return n, nil
}

// Quiet reports, without waiting, whether the socket has nothing to read
// and its peer has not closed it: what a connection kept idle between
// requests should find before it carries the next one. Bytes waiting, an
// end of stream or an error all answer false.
func (c *Conn) Quiet() bool {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	c.peek, c.quiet = true, false
	err := c.rc.Read(c.readF)
	return err == nil && c.quiet
}

// read is c.readF: one read (or peek) that never waits; false asks the
// poller to wait for the socket to be readable and call it again.
func (c *Conn) read(fd uintptr) bool {
	if c.peek {
		c.quiet = peek(fd) == syscall.EAGAIN
		return true
	}
	for {
		n, errno := read(fd, c.rbuf)
		switch errno {
		case 0:
			c.rn = n
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		default:
			c.rerr = errno
		}
		return true
	}
}

// Write writes all of p to the socket as net.Conn's Write does.
func (c *Conn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.wbuf, c.wn, c.werr = p, 0, 0
	err := c.rc.Write(c.writeF)
	n, errno := c.wn, c.werr
	c.wbuf = nil
	if err != nil {
		return n, c.opError("write", err)
	}
	if errno != 0 {
		return n, c.opError("write", os.NewSyscallError("write", errno))
	}
	return n, nil
}

// write is c.writeF: it writes what it can without waiting; false asks
// the poller to wait for the socket to be writable and call it again.
func (c *Conn) write(fd uintptr) bool {
	for c.wn < len(c.wbuf) {
		n, errno := write(fd, c.wbuf[c.wn:])
		switch errno {
		case 0:
			c.wn += n
		case syscall.EINTR:
		case syscall.EAGAIN:
			return false
		default:
			c.werr = errno
			return true
		}
	}
	return true
}

// opError wraps err as the net package wraps a connection's errors: a
// *net.OpError with op, the network and both addresses. An error of the
// RawConn (a deadline, a closed connection) is already one, named for
// the raw call: its cause is kept under op.
func (c *Conn) opError(op string, err error) error {
	if oe, ok := err.(*net.OpError); ok {
		err = oe.Err
	}
	return &net.OpError{Op: op, Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
}
