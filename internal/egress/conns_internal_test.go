package egress

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/rawio"
)

func (c *conns) idleCount() (n int, armed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range c.idle {
		n += len(l)
	}
	return n, c.sweep != nil
}

// The sweep closes idle connections past IdleConnTimeout and those the
// server closed, and stops once none is left: a pool holds no dead
// sockets after the calls stop.
func TestConnsSweep(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	for _, tc := range []struct {
		name    string
		idleFor time.Duration
		drop    bool // the server closes its side
	}{
		{"idle past the timeout", 30 * time.Millisecond, false},
		{"closed by the server", time.Hour, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := &http.Transport{IdleConnTimeout: tc.idleFor}
			c := newConns(base, (&net.Dialer{}).DialContext)
			c.every = 20 * time.Millisecond
			defer c.closeIdle()
			req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader("{}"))
			resp, err := c.roundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			if b, _ := io.ReadAll(resp.Body); string(b) != "ok" {
				t.Fatalf("answer %q", b)
			}
			if n, armed := c.idleCount(); n != 1 || !armed {
				t.Fatalf("after one call: %d idle, sweep armed %v; want 1 and true", n, armed)
			}
			if tc.drop {
				srv.CloseClientConnections()
			}
			deadline := time.Now().Add(5 * time.Second)
			for {
				n, armed := c.idleCount()
				if n == 0 && !armed {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("after 5 s: %d idle, sweep armed %v; want 0 and false", n, armed)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
	// A live connection within its timeout is kept by the sweep.
	c := newConns(&http.Transport{IdleConnTimeout: time.Hour}, (&net.Dialer{}).DialContext)
	c.every = 10 * time.Millisecond
	defer c.closeIdle()
	req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
	resp, err := c.roundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body)
	time.Sleep(80 * time.Millisecond)
	if n, armed := c.idleCount(); n != 1 || !armed {
		t.Fatalf("a live connection after sweeps: %d idle, armed %v; want 1 and true", n, armed)
	}
}

// countingConn counts the writes made to a connection.
type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// A small request, header and a body Request.Write cannot see the length
// of, goes out in one write; a body larger than maxGather in a few.
func TestConnsOneWriteASmallRequest(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		fmt.Fprint(w, n)
	}))
	defer srv.Close()
	var writes atomic.Int64
	c := newConns(&http.Transport{}, func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		return countingConn{nc, &writes}, err
	})
	defer c.closeIdle()
	send := func(size int) {
		t.Helper()
		// A reader of no known type: Request.Write would flush the
		// header before it on a *bufio.Writer.
		body := io.MultiReader(strings.NewReader(strings.Repeat("x", size)))
		req, _ := http.NewRequest(http.MethodPost, srv.URL, body)
		req.ContentLength = int64(size)
		resp, err := c.roundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		if string(b) != fmt.Sprint(size) {
			t.Fatalf("the server read %s bytes, want %d", b, size)
		}
	}
	for range 3 {
		writes.Store(0)
		send(200)
		if n := writes.Load(); n != 1 {
			t.Fatalf("a 200-byte request took %d writes, want 1", n)
		}
	}
	writes.Store(0)
	send(3 * maxGather)
	if n := writes.Load(); n < 2 || n > 5 {
		t.Fatalf("a %d-byte request took %d writes, want a few", 3*maxGather, n)
	}
}

// A connection dialed over TCP is read and written with raw system calls
// (on Linux), and after its answer, kept and found alive by their peek; a
// server's close is found by the same peek.
func TestConnsRawSocket(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer srv.Close()
	c := newConns(&http.Transport{}, (&net.Dialer{}).DialContext)
	defer c.closeIdle()
	addr := strings.TrimPrefix(srv.URL, "http://")
	pc, err := c.get(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, raw := pc.c.(*rawio.Conn); raw != (runtime.GOOS == "linux") {
		t.Fatalf("a dialed TCP connection is %T", pc.c)
	}
	pc.c.Close()
	for i := range 3 {
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		resp, err := c.roundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != "ok" {
			t.Fatalf("call %d: body %q", i, b)
		}
		if n, _ := c.idleCount(); n != 1 {
			t.Fatalf("call %d: %d idle connections; want the one kept", i, n)
		}
	}
	srv.CloseClientConnections()
	c.mu.Lock()
	var kept *pconn
	for _, l := range c.idle {
		kept = l[0]
	}
	c.mu.Unlock()
	deadline := time.Now().Add(5 * time.Second)
	for c.usable(kept, time.Now()) {
		if time.Now().After(deadline) {
			t.Fatal("a connection the server closed is still usable after 5 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
