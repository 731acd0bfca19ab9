package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/gatehouse-dev/gatehouse/gateway"
)

// countingListener counts, on the server's side, the connections the
// process accepted and has not closed yet, the most it held at once, and
// how long each one lived.
type countingListener struct {
	net.Listener
	open, peak, accepted atomic.Int64

	mu    sync.Mutex
	lives []time.Duration // from accept to the server's close
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.accepted.Add(1)
	n := l.open.Add(1)
	for {
		p := l.peak.Load()
		if n <= p || l.peak.CompareAndSwap(p, n) {
			break
		}
	}
	return &countedConn{Conn: c, l: l, at: time.Now()}, nil
}

// reset forgets what was counted (between floods).
func (l *countingListener) reset() {
	l.peak.Store(l.open.Load())
	l.accepted.Store(0)
	l.mu.Lock()
	l.lives = nil
	l.mu.Unlock()
}

type countedConn struct {
	net.Conn
	l    *countingListener
	at   time.Time
	once sync.Once
}

// Close counts the connection closed, then closes it, so that its client
// sees it closed only once it is counted (and the server's limit gives its
// slot to another connection only after Close returns).
func (c *countedConn) Close() error {
	c.once.Do(func() {
		c.l.mu.Lock()
		c.l.lives = append(c.l.lives, time.Since(c.at))
		c.l.mu.Unlock()
		c.l.open.Add(-1)
	})
	return c.Conn.Close()
}

// TestListenerFlood floods each listener of `gatehouse serve` in turn
// (the console, the metrics endpoint, the MCP endpoint) with slow
// connections that send part of a request's header and stall, a few times
// more than its cap, and asserts, counting on the server's side, that the
// flooded listener never holds more connections than its cap; that every
// stalled connection is closed by the header timeout (short here:
// http.readTimeout 1s) and no later; and that while the flood holds (its
// listener full, connections still waiting), the other listeners answer:
// an MCP initialize and tools/list through the go-sdk client, the console's
// login page, the metrics.
func TestListenerFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("floods three listeners for a few seconds each; skipped with -short")
	}
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	const (
		readTimeout = time.Second
		mcpCap      = 32
		smallCap    = 64 // the console's and the metrics' caps
		rounds      = 6  // a flood is this many times its listener's cap
	)
	up := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
	mcp.AddTool(up, &mcp.Tool{Name: "ping", Description: "Answers pong."}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "pong"}}}, nil, nil
	})
	ups := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return up }, nil))
	defer ups.Close()

	// The listeners are opened here, on 127.0.0.1, and handed to serve
	// by their address, counted.
	lns := map[string]*countingListener{}
	addrOf := map[string]string{}
	for _, name := range []string{"listen", "console", "metrics"} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[ln.Addr().String()] = &countingListener{Listener: ln}
		addrOf[name] = ln.Addr().String()
	}
	listen := func(network, address string) (net.Listener, error) {
		if l, ok := lns[address]; ok && network == "tcp" {
			return l, nil
		}
		return nil, fmt.Errorf("the test opened no listener on %s", address)
	}
	defer func() {
		for _, l := range lns {
			_ = l.Close()
		}
	}()
	dir := t.TempDir()
	cfg, err := gateway.ParseConfig(fmt.Appendf(nil, `listen: %s
store: sqlite:%s
drift: {recheck: 0}
servers:
  up: {type: streamable-http, url: %q}
http: {readTimeout: %s, maxConnections: %d}
console: {listen: %s, admins: [{name: alice, sha256: %s}]}
metrics: {listen: %s}
`, addrOf["listen"], filepath.Join(dir, "g.db"), ups.URL+"/mcp", readTimeout, mcpCap, addrOf["console"], strings.Repeat("a", 64), addrOf["metrics"]),
		filepath.Join(dir, "gatehouse.yaml"), dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	g, err := gateway.New(ctx, cfg, &gateway.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ls, err := g.Listeners()
	if err != nil {
		t.Fatal(err)
	}
	caps := map[string]int{"listen": ls.MCP.MaxConns, "console": ls.Console.MaxConns, "metrics": ls.Metrics.MaxConns}
	if caps["listen"] != mcpCap || caps["console"] != smallCap || caps["metrics"] != smallCap ||
		ls.Console.ReadTimeout != readTimeout || ls.Metrics.ReadTimeout != readTimeout {
		t.Fatalf("the listeners' limits: %+v", ls)
	}
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- serveListeners(sctx, g, cfg, slog.New(slog.DiscardHandler), false, listen) }()
	defer func() {
		stop()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()

	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 20 * time.Second}
	get := func(url string) error {
		res, err := hc.Get(url)
		if err != nil {
			return err
		}
		defer res.Body.Close()
		_, _ = io.Copy(io.Discard, res.Body)
		if res.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s", url, res.Status)
		}
		return nil
	}
	checks := map[string]func() error{
		"listen": func() error {
			cctx, ccancel := context.WithTimeout(ctx, 20*time.Second)
			defer ccancel()
			cl := mcp.NewClient(&mcp.Implementation{Name: "flood-test", Version: "1"}, nil)
			cs, err := cl.Connect(cctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addrOf["listen"] + "/mcp", HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				return fmt.Errorf("initialize: %w", err)
			}
			defer cs.Close()
			res, err := cs.ListTools(cctx, nil)
			if err != nil {
				return fmt.Errorf("tools/list: %w", err)
			}
			if !slices.ContainsFunc(res.Tools, func(tl *mcp.Tool) bool { return tl.Name == "up__ping" }) {
				return fmt.Errorf("tools/list has no up__ping: %d tools", len(res.Tools))
			}
			return nil
		},
		"console": func() error { return get("http://" + addrOf["console"] + "/login") },
		"metrics": func() error { return get("http://" + addrOf["metrics"] + "/metrics") },
	}
	// Serving: every listener answers.
	deadline := time.Now().Add(30 * time.Second)
	for name, check := range checks {
		for err := check(); err != nil; err = check() {
			if time.Now().After(deadline) {
				t.Fatalf("%s does not answer: %v", name, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	for _, flooded := range []string{"console", "metrics", "listen"} {
		t.Run(flooded, func(t *testing.T) {
			l := lns[addrOf[flooded]]
			// The checks' connections closed first: only the flood's
			// are counted.
			tr.CloseIdleConnections()
			for end := time.Now().Add(10 * time.Second); l.open.Load() > 0; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(end) {
					t.Fatalf("%d connections still open before the flood", l.open.Load())
				}
			}
			l.reset()
			// The connections beyond the cap wait in the kernel's
			// backlog: no more than it holds.
			n := min(rounds*caps[flooded], caps[flooded]+backlog()*3/4)
			conns := make([]net.Conn, 0, n)
			closed := make(chan error, n) // nil: closed by the server
			var wg sync.WaitGroup
			defer func() {
				for _, c := range conns {
					_ = c.Close()
				}
				wg.Wait()
			}()
			for range n {
				c, err := net.DialTimeout("tcp", addrOf[flooded], 5*time.Second)
				if err != nil {
					t.Fatalf("dial %d: %v", len(conns), err)
				}
				conns = append(conns, c)
				// Part of a header, then nothing.
				if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n"); err != nil {
					t.Fatal(err)
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					_ = c.SetReadDeadline(time.Now().Add(time.Duration(rounds+20) * readTimeout * 2))
					_, err := io.Copy(io.Discard, c)
					var ne net.Error
					if errors.As(err, &ne) && ne.Timeout() {
						closed <- err
						return
					}
					closed <- nil // EOF or reset: the server closed it
				}()
			}
			// The flood holds: the listener is full, connections wait.
			for end := time.Now().Add(10 * time.Second); l.open.Load() < int64(caps[flooded]) && l.accepted.Load() < int64(n); time.Sleep(10 * time.Millisecond) {
				if time.Now().After(end) {
					t.Fatalf("%s accepted %d of the flood's %d connections in 10s", flooded, l.accepted.Load(), n)
				}
			}
			for name, check := range checks {
				if name == flooded {
					continue
				}
				if err := check(); err != nil {
					t.Errorf("while %s is flooded, %s: %v", flooded, name, err)
				}
			}
			if got := l.accepted.Load(); got >= int64(n) {
				t.Errorf("the flood was over before the other listeners were checked (%d of %d accepted)", got, n)
			}
			// Every stalled connection is closed by the server.
			for i := range n {
				if err := <-closed; err != nil {
					t.Fatalf("stalled connection %d not closed by the server: %v", i, err)
				}
			}
			if peak := l.peak.Load(); peak != int64(caps[flooded]) {
				t.Errorf("%s held %d connections at once; its cap is %d", flooded, peak, caps[flooded])
			}
			l.mu.Lock()
			lives := slices.Clone(l.lives)
			l.mu.Unlock()
			if len(lives) < n {
				t.Errorf("%d connections closed by the server, want %d", len(lives), n)
			}
			for _, d := range lives {
				if d < readTimeout-50*time.Millisecond || d > readTimeout+4*time.Second {
					t.Errorf("a stalled connection lived %v; the header timeout is %v", d.Round(time.Millisecond), readTimeout)
					break
				}
			}
			t.Logf("%s: %d stalled connections, at most %d open at once (cap %d)", flooded, n, l.peak.Load(), caps[flooded])
		})
	}
}

// backlog is the kernel's cap on a listener's backlog (Linux's somaxconn;
// 128, the older default, where it cannot be read).
func backlog() int {
	b, err := os.ReadFile("/proc/sys/net/core/somaxconn")
	if err != nil {
		return 128
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n <= 0 {
		return 128
	}
	return n
}
