//go:build unix

package egress

import (
	"errors"
	"net"
	"syscall"

	"github.com/gatehouse-dev/gatehouse/internal/rawio"
)

// peekSupported: alive can tell a closed idle connection from a live one.
const peekSupported = true

// alive reports whether an idle connection is still open on the server's
// side: a peek at its socket that does not wait finds nothing to read (an
// idle HTTP/1.1 connection has nothing pending). An end of stream, an
// error, or bytes the server sent unasked all mean it must not be used.
func alive(c net.Conn) bool {
	if rc, ok := c.(*rawio.Conn); ok {
		return rc.Quiet()
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return true // not a socket of ours to peek at (a test's dialer): trust it
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	live := false
	var buf [1]byte
	err = rc.Read(func(fd uintptr) bool {
		_, _, rerr := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		live = (errors.Is(rerr, syscall.EAGAIN) || errors.Is(rerr, syscall.EWOULDBLOCK))
		return true // never wait for readiness
	})
	return err == nil && live
}
