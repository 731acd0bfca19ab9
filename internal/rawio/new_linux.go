//go:build linux

package rawio

import "net"

// New returns a Conn that reads and writes tc's socket with raw system
// calls. tc stays usable for everything else (Close, deadlines); read and
// write it only through the Conn from now on.
func New(tc *net.TCPConn) (*Conn, error) {
	rc, err := tc.SyscallConn()
	if err != nil {
		return nil, err
	}
	c := &Conn{Conn: tc, rc: rc}
	c.readF, c.writeF = c.read, c.write
	return c, nil
}
