//go:build !unix

package egress

import "net"

// peekSupported: without a peek at the socket a closed idle connection is
// found only when a request fails on it, so the Transport keeps these
// platforms' requests.
const peekSupported = false

func alive(net.Conn) bool { return false }
