package egress_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gatehouse-dev/gatehouse/diag"
	"github.com/gatehouse-dev/gatehouse/internal/egress"
)

// server is a real HTTP server on 127.0.0.1 that counts requests and keeps
// the raw bytes it read from the wire.
type server struct {
	*httptest.Server
	requests atomic.Int32
	mu       sync.Mutex
	raw      bytes.Buffer
}

func (s *server) wire() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.raw.String()
}

// port returns the server's port as a string.
func (s *server) port() string {
	_, p, _ := net.SplitHostPort(s.Listener.Addr().String())
	return p
}

// newServer starts a server; h may be nil (answers 200 "ok").
func newServer(t testing.TB, h http.HandlerFunc) *server {
	t.Helper()
	return startServer(t, h, false)
}

func newTLSServer(t *testing.T, h http.HandlerFunc) *server {
	t.Helper()
	return startServer(t, h, true)
}

func startServer(t testing.TB, h http.HandlerFunc, tls bool) *server {
	t.Helper()
	s := &server{}
	if h == nil {
		h = func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		h(w, r)
	}))
	s.Listener = &recListener{Listener: ln, s: s}
	if tls {
		s.StartTLS()
	} else {
		s.Start()
	}
	t.Cleanup(s.Close)
	return s
}

type recListener struct {
	net.Listener
	s *server
}

func (l *recListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &recConn{Conn: c, s: l.s}, nil
}

type recConn struct {
	net.Conn
	s *server
}

func (c *recConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.s.mu.Lock()
		c.s.raw.Write(p[:n])
		c.s.mu.Unlock()
	}
	return n, err
}

// resolver maps made-up names to addresses and counts lookups per name. It
// never falls back to real DNS.
type resolver struct {
	mu    sync.Mutex
	names map[string][][]netip.Addr // successive answers; the last repeats
	calls map[string]int
}

func newResolver() *resolver {
	return &resolver{names: map[string][][]netip.Addr{}, calls: map[string]int{}}
}

// set makes name resolve to addrs (each call to set adds a successive answer).
func (r *resolver) set(name string, addrs ...string) *resolver {
	var as []netip.Addr
	for _, a := range addrs {
		as = append(as, netip.MustParseAddr(a))
	}
	r.mu.Lock()
	r.names[name] = append(r.names[name], as)
	r.mu.Unlock()
	return r
}

func (r *resolver) count(name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[name]
}

func (r *resolver) lookup(_ context.Context, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	answers, ok := r.names[host]
	if !ok {
		return nil, fmt.Errorf("test resolver: no such host %q", host)
	}
	i := r.calls[host]
	r.calls[host]++
	if i >= len(answers) {
		i = len(answers) - 1
	}
	return answers[i], nil
}

// dialer records every address the guard asks the inner dialer for. It only
// ever dials 127.0.0.1: an address listed in remap is dialed as
// 127.0.0.1 on the same port (to stand in for a public server), and any other
// non-loopback address fails the test and is not dialed.
type dialer struct {
	t     *testing.T
	mu    sync.Mutex
	seen  []string
	remap map[string]bool // IPs (no port) to redirect to 127.0.0.1
}

func newDialer(t *testing.T, remap ...string) *dialer {
	d := &dialer{t: t, remap: map[string]bool{}}
	for _, r := range remap {
		d.remap[r] = true
	}
	return d
}

func (d *dialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	d.seen = append(d.seen, addr)
	d.mu.Unlock()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		d.t.Errorf("inner dialer got a non ip:port address %q", addr)
		return nil, err
	}
	if d.remap[host] {
		host = "127.0.0.1"
	}
	if host != "127.0.0.1" {
		d.t.Errorf("guard let a dial to %q through", addr)
		return nil, errors.New("test dialer: refusing non-loopback dial")
	}
	var nd net.Dialer
	return nd.DialContext(ctx, network, net.JoinHostPort(host, port))
}

func (d *dialer) dials() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.seen...)
}

// transport returns a base transport whose inner dialer is d.
func (d *dialer) transport() *http.Transport {
	return &http.Transport{DialContext: d.dial}
}

// client builds a guard client for endpoint and closes its idle connections
// at the end of the test.
func client(t *testing.T, g *egress.Guard, endpoint string, headers map[string]string, dynamic func(*http.Request) http.Header) *http.Client {
	t.Helper()
	c, err := g.Client(endpoint, headers, dynamic)
	if err != nil {
		t.Fatalf("Client(%q): %v", endpoint, err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// get does a GET and returns the body, or the error.
func get(c *http.Client, u string) (string, error) {
	req, err := http.NewRequestWithContext(context.Background(), "GET", u, nil)
	if err != nil {
		return "", err
	}
	return do(c, req)
}

func do(c *http.Client, req *http.Request) (string, error) {
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// wantRule asserts that err wraps an *egress.Error with the given rule and
// returns it.
func wantRule(t *testing.T, err error, rule diag.Rule) *egress.Error {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %s", rule)
	}
	var e *egress.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) does not wrap *egress.Error", err, err)
	}
	if e.Rule != rule {
		t.Fatalf("rule = %s, want %s (error: %v)", e.Rule, rule, err)
	}
	return e
}
