//go:build linux

package rawio_test

import (
	"net"
	"testing"

	"github.com/gatehouse-dev/gatehouse/internal/rawio"
)

// BenchmarkPingPong sends 64 bytes and reads them back through an echo
// peer, over net.Conn's calls and over a Conn's: `go test -bench
// PingPong ./internal/rawio` (CPU per round trip is the figure; the echo
// goroutine's share is the same in both).
func BenchmarkPingPong(b *testing.B) {
	for _, raw := range []bool{false, true} {
		name := "net"
		if raw {
			name = "raw"
		}
		b.Run(name, func(b *testing.B) {
			ln, _ := net.Listen("tcp", "127.0.0.1:0")
			defer ln.Close()
			done := make(chan struct{})
			go func() {
				defer close(done)
				c, err := ln.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				buf := make([]byte, 64)
				for {
					n, err := c.Read(buf)
					if err != nil {
						return
					}
					c.Write(buf[:n])
				}
			}()
			d, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			var c net.Conn = d
			if raw {
				rc, err := rawio.New(d.(*net.TCPConn))
				if err != nil {
					b.Fatal(err)
				}
				c = rc
			}
			buf := make([]byte, 64)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				c.Write(buf)
				for got := 0; got < len(buf); {
					n, err := c.Read(buf[got:])
					if err != nil {
						b.Fatal(err)
					}
					got += n
				}
			}
			b.StopTimer()
			c.Close()
			<-done
		})
	}
}
