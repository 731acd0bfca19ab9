// Command conformance-server serves the official MCP conformance fixtures
// (tools, resources, prompts) through package server, with every
// protection configured, so the conformance suite checks that the
// protections leave the protocol intact. scripts/conformance.sh runs it.
//
// Usage:
//
//	conformance-server [-http 127.0.0.1:0] [-stateless] [-token T] [-stdio]
//
// It prints "listening on http://ADDR/mcp" on stdout once it accepts
// connections, and stops on SIGINT/SIGTERM or when stdin closes (with
// -exit-on-eof).
package main

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/gatehouse-dev/gatehouse/durable"
	"github.com/gatehouse-dev/gatehouse/server"
	"github.com/gatehouse-dev/gatehouse/store/memory"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "conformance-server:", err)
		os.Exit(1)
	}
}

func run() error {
	addr := flag.String("http", "127.0.0.1:0", "serve streamable HTTP at this address")
	stateless := flag.Bool("stateless", false, "serve the stateless (2026-07-28) revision")
	token := flag.String("token", "", "require this bearer token (subject \"conformance\"); required off loopback")
	stdio := flag.Bool("stdio", false, "serve one session over stdin/stdout instead of HTTP")
	exitOnEOF := flag.Bool("exit-on-eof", false, "stop when stdin closes (HTTP mode)")
	flag.Parse()

	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	st, err := memory.New(nil)
	if err != nil {
		return err
	}
	defer st.Close()
	journal, err := durable.NewJournal(st, &durable.JournalOptions{Scope: "conformance", Logger: logger})
	if err != nil {
		return err
	}
	srv, err := server.New(server.Options{
		Implementation: &mcp.Implementation{Name: "mcp-conformance-test-server", Version: "1.0.0"},
		ServerOptions: &mcp.ServerOptions{
			CompletionHandler:  completionHandler,
			SubscribeHandler:   subscribeHandler,
			UnsubscribeHandler: unsubscribeHandler,
		},
		Tools: fixtureTools(),
		Setup: func(s *mcp.Server, _ bool) {
			registerListChangers(s)
			registerResources(s)
			registerPrompts(s)
		},
		Identify: func(_ context.Context, info server.RequestInfo) (server.Subject, error) {
			if info.TokenInfo != nil {
				return server.Subject(info.TokenInfo.UserID), nil
			}
			if *token != "" {
				return "", errors.New("no verified token")
			}
			return "anonymous", nil // loopback only, see below
		},
		StdioSubject: "local",
		// Every fixture is for every caller; a real server decides here.
		AllowTool: func(string, server.Subject) bool { return true },
		RateLimit: &server.RateLimit{MaxCalls: 6000, Window: time.Minute},
		Journal:   journal,
		WorkKey: func(req *mcp.CallToolRequest) string {
			k, _ := req.Params.Meta["idempotencyKey"].(string)
			return k
		},
		Logger: logger,
	})
	if err != nil {
		return err
	}
	defer srv.Close()

	if *stdio {
		return srv.ServeStdio(ctx)
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !tcp.IP.IsLoopback() && *token == "" {
		ln.Close()
		return fmt.Errorf("refusing to serve %s without -token: only loopback addresses may be served unauthenticated", ln.Addr())
	}
	hopts := &server.HTTPOptions{Stateless: *stateless}
	if *token != "" {
		want := sha256.Sum256([]byte(*token))
		hopts.Verifier = func(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
			got := sha256.Sum256([]byte(tok))
			if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
				return nil, auth.ErrInvalidToken
			}
			return &auth.TokenInfo{UserID: "conformance", Expiration: time.Now().Add(time.Hour)}, nil
		}
	}
	h, err := srv.Handler(hopts)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}

	go watchedResourceUpdater(ctx, srv.MCPServer())
	if *exitOnEOF {
		go func() { io.Copy(io.Discard, os.Stdin); stop() }()
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	fmt.Printf("listening on http://%s/mcp\n", ln.Addr())

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return hs.Shutdown(sctx)
}

// watchedResourceUpdater sends resource update notifications every 3 seconds.
func watchedResourceUpdater(ctx context.Context, s *mcp.Server) {
	ticker := time.NewTicker(3 * time.Second)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			s.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: watchedResourceURI})
		}
	}
}
