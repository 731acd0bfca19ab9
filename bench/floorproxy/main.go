// Command floorproxy is the floor of any MCP proxy built on net/http: a
// bare httputil.ReverseProxy in front of one upstream, with nothing a
// gateway does (no sessions of its own, no auth, no audit, no parsing).
// bench/peers.sh measures it as the "floor" row, so a proxy's figures can
// be read against what net/http's server and client cost on the machine.
//
//	floorproxy -addr 127.0.0.1:0 -upstream http://127.0.0.1:PORT
//
// It prints url=http://ADDR once it listens (the path is the caller's: a
// request for /mcp goes to the upstream's /mcp) and serves until SIGINT or
// SIGTERM. The upstream must be on a loopback address.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address (loopback)")
	upstream := flag.String("upstream", "", "the upstream's origin, http://127.0.0.1:PORT")
	flag.Parse()
	if err := run(*addr, *upstream); err != nil {
		fmt.Fprintln(os.Stderr, "floorproxy:", err)
		os.Exit(1)
	}
}

func run(addr, upstream string) error {
	u, err := url.Parse(upstream)
	if err != nil || u.Scheme != "http" || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return fmt.Errorf("-upstream must be an http:// origin without a path, got %q", upstream)
	}
	if ip := net.ParseIP(u.Hostname()); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("-upstream must be a loopback address, got %q", u.Hostname())
	}
	if host, _, err := net.SplitHostPort(addr); err != nil || net.ParseIP(host) == nil || !net.ParseIP(host).IsLoopback() {
		return fmt.Errorf("-addr must be a loopback address with a port, got %q", addr)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1 // SSE answers pass as they come
	rp.Transport = &http.Transport{MaxIdleConnsPerHost: 256, IdleConnTimeout: 90 * time.Second}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: rp, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	fmt.Printf("url=http://%s\n", ln.Addr())
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
