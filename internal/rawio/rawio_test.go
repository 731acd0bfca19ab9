//go:build linux

package rawio_test

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/rawio"
)

// pair returns a raw Conn and the plain *net.TCPConn at the other end of
// one loopback TCP connection; both are closed when the test ends.
func pair(t *testing.T) (*rawio.Conn, *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type res struct {
		c   net.Conn
		err error
	}
	ch := make(chan res, 1)
	go func() {
		c, err := ln.Accept()
		ch <- res{c, err}
	}()
	d, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	r := <-ch
	if r.err != nil {
		t.Fatal(r.err)
	}
	rc, err := rawio.New(d.(*net.TCPConn))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rc.Close(); r.c.Close() })
	return rc, r.c.(*net.TCPConn)
}

// TestRoundTrip moves 8 MiB each way at once, more than the sockets'
// buffers hold, so both sides wait on the poller (EAGAIN) many times.
func TestRoundTrip(t *testing.T) {
	rc, peer := pair(t)
	want := make([]byte, 8<<20)
	rand.Read(want)
	var wg sync.WaitGroup
	var gotByPeer []byte
	var peerErr error
	wg.Add(2)
	go func() { // peer: echo back what it reads, then read its own copy
		defer wg.Done()
		gotByPeer, peerErr = io.ReadAll(io.LimitReader(peer, int64(len(want))))
	}()
	go func() {
		defer wg.Done()
		if _, err := peer.Write(want); err != nil {
			t.Errorf("peer write: %v", err)
		}
	}()
	n, err := rc.Write(want)
	if err != nil || n != len(want) {
		t.Fatalf("Write = %d, %v; want %d, nil", n, err, len(want))
	}
	got, err := io.ReadAll(io.LimitReader(rc, int64(len(want))))
	if err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if peerErr != nil {
		t.Fatal(peerErr)
	}
	if !bytes.Equal(got, want) || !bytes.Equal(gotByPeer, want) {
		t.Fatalf("bytes differ: read %d, peer read %d of %d", len(got), len(gotByPeer), len(want))
	}
}

func TestReadEmptyAndEOF(t *testing.T) {
	rc, peer := pair(t)
	if n, err := rc.Read(nil); n != 0 || err != nil {
		t.Fatalf("Read(nil) = %d, %v; want 0, nil", n, err)
	}
	peer.Write([]byte("hi"))
	peer.Close()
	b := make([]byte, 8)
	n, err := io.ReadFull(rc, b[:2])
	if n != 2 || err != nil || string(b[:2]) != "hi" {
		t.Fatalf("ReadFull = %d %q, %v", n, b[:n], err)
	}
	if n, err := rc.Read(b); n != 0 || err != io.EOF {
		t.Fatalf("Read after the peer closed = %d, %v; want 0, io.EOF", n, err)
	}
}

func TestReadDeadline(t *testing.T) {
	rc, _ := pair(t)
	rc.SetReadDeadline(time.Now().Add(30 * time.Millisecond))
	start := time.Now()
	_, err := rc.Read(make([]byte, 8))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("err = %v; want os.ErrDeadlineExceeded", err)
	}
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("err %v is not a net.Error whose Timeout is true", err)
	}
	var oe *net.OpError
	if !errors.As(err, &oe) || oe.Op != "read" || oe.Net != "tcp" || oe.Addr == nil || oe.Source == nil {
		t.Fatalf("err = %#v; want a *net.OpError for read with both addresses", err)
	}
	if time.Since(start) < 25*time.Millisecond {
		t.Fatalf("Read returned after %v, before its deadline", time.Since(start))
	}
	// A deadline already past fails at once, and a cleared one reads again.
	if _, err := rc.Read(make([]byte, 8)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("second Read: %v", err)
	}
}

func TestCloseEndsABlockedRead(t *testing.T) {
	rc, _ := pair(t)
	errc := make(chan error, 1)
	go func() {
		_, err := rc.Read(make([]byte, 8))
		errc <- err
	}()
	time.Sleep(20 * time.Millisecond)
	rc.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("err = %v; want net.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Read did not end when the connection closed")
	}
	if _, err := rc.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Write after Close: %v; want net.ErrClosed", err)
	}
}

// TestWriteToAResetPeer: a peer that reset the connection makes Write
// fail with the system call's error, as net.Conn's does.
func TestWriteToAResetPeer(t *testing.T) {
	rc, peer := pair(t)
	peer.SetLinger(0) // close sends RST
	peer.Close()
	var err error
	for range 100 {
		if _, err = rc.Write(make([]byte, 64<<10)); err != nil {
			break
		}
		time.Sleep(time.Millisecond)
	}
	var se *os.SyscallError
	var oe *net.OpError
	if !errors.As(err, &oe) || oe.Op != "write" || !errors.As(err, &se) {
		t.Fatalf("err = %v; want a *net.OpError for write around an *os.SyscallError", err)
	}
	if !errors.Is(err, syscall.EPIPE) && !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("err = %v; want EPIPE or ECONNRESET", err)
	}
}

func TestQuiet(t *testing.T) {
	rc, peer := pair(t)
	if !rc.Quiet() {
		t.Fatal("an idle connection is not quiet")
	}
	peer.Write([]byte("unasked"))
	waitFor(t, func() bool { return !rc.Quiet() }, "bytes waiting")
	b := make([]byte, 7)
	if _, err := io.ReadFull(rc, b); err != nil || string(b) != "unasked" {
		t.Fatalf("ReadFull after Quiet = %q, %v (Quiet must not consume)", b, err)
	}
	if !rc.Quiet() {
		t.Fatal("not quiet once the bytes were read")
	}
	peer.Close()
	waitFor(t, func() bool { return !rc.Quiet() }, "the peer's close")
	rc.Close()
	if rc.Quiet() {
		t.Fatal("a closed connection is quiet")
	}
}

func waitFor(t *testing.T, ok func() bool, what string) {
	t.Helper()
	for range 500 {
		if ok() {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("Quiet still true after %s", what)
}

func TestNetConn(t *testing.T) {
	rc, _ := pair(t)
	if _, ok := rc.NetConn().(*net.TCPConn); !ok {
		t.Fatalf("NetConn = %T; want *net.TCPConn", rc.NetConn())
	}
	if _, ok := any(rc).(io.ReaderFrom); ok {
		t.Fatal("Conn promotes ReadFrom: io.Copy would bypass its Write")
	}
}
