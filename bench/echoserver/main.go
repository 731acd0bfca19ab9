package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/gatehouse-dev/gatehouse/bench/internal/echo"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "echoserver:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("echoserver", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8080", "loopback `host:port` to listen on (port 0 picks one)")
	jsonResp := fs.Bool("json", false, "answer POSTs with application/json instead of SSE (go-sdk JSONResponse)")
	stateless := fs.Bool("stateless", false, "serve without sessions (go-sdk Stateless)")
	stdio := fs.Bool("stdio", false, "serve one session over stdin/stdout instead of HTTP")
	delay := fs.Duration("delay", 0, "wait this long before answering each POST (a slower tool; 0: none)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *stdio {
		return echo.NewServer().Run(ctx, &mcp.StdioTransport{})
	}
	host, _, err := net.SplitHostPort(*addr)
	if err != nil {
		return fmt.Errorf("bad -addr: %w", err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("-addr %q is not a loopback address", *addr)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	var h http.Handler = echo.NewHandler(&echo.Options{JSONResponse: *jsonResp, Stateless: *stateless})
	if *delay > 0 {
		h = delayed(h, *delay)
	}
	mux.Handle("/mcp", h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	fmt.Fprintf(stdout, "url=http://%s/mcp\n", ln.Addr())
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	// Standalone SSE streams never go idle, so give Shutdown a bound and then
	// close whatever is left.
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// delayed waits d before handing each POST to h (or until the request
// ends).
func delayed(h http.Handler, d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}
