package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/fdbudget"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"github.com/spf13/cobra"

	"github.com/gatehouse-dev/gatehouse/gateway"
	"github.com/gatehouse-dev/gatehouse/identity/upstream"
	"github.com/gatehouse-dev/gatehouse/internal/audit"
	"github.com/gatehouse-dev/gatehouse/internal/egress"
	"github.com/gatehouse-dev/gatehouse/internal/vault"
	"github.com/gatehouse-dev/gatehouse/server"
	"github.com/gatehouse-dev/gatehouse/store"
)

func newConnectCmd() *cobra.Command {
	var sf storeFlags
	var vf vaultFlags
	var listen string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "connect SERVER [--config FILE] [--store DSN] [--key-file FILE] [--listen 127.0.0.1:PORT]",
		Short: "Connect the gateway's own account to a server with auth: service (or the catalog of an auth: user server)",
		Long: "Runs the MCP authorization flow toward SERVER (a servers: entry of the config with auth: service or\n" +
			"auth: user) once, as the operator: discovers its authorization server from the server's 401 (RFC 9728,\n" +
			"RFC 8414), every request through the egress guard; prints the authorization URL to open in a browser;\n" +
			"waits for the redirect on a loopback callback (http://127.0.0.1:PORT/callback, PORT from --listen:\n" +
			"register that redirect URI with the client of servers.SERVER.oauth); stores the token set as the\n" +
			"server's service connection (subject \"\") in the token vault in the store, sealed with the key of\n" +
			"--key-file or $" + vault.EnvKey + ". A running gateway uses it for the server's shared session; for an\n" +
			"auth: user server that is how its tool catalog is listed (calls still carry each subject's own token).\n" +
			"Exit 0 when the token is stored and the server answered with it.",
		Args: exactArgs(1, "one SERVER (a servers: entry with auth: service or user)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			name := args[0]
			cfg, err := sf.loadConfig()
			if err != nil {
				return err
			}
			e, ok := cfg.Servers[name]
			switch {
			case !ok:
				return usagef("no servers: entry %q in the config", name)
			case e.Auth.Mode == "":
				return usagef("server %q has no auth: set auth: service (or user) and its oauth client first", name)
			case e.Auth.Mode == "exchange":
				return usagef("server %q has auth: exchange: the callers' tokens are exchanged; there is nothing to connect", name)
			}
			url, headers, err := inlineURL(cfg, name)
			if err != nil {
				return err
			}
			keys, err := vf.keys()
			if err != nil {
				return err
			}
			st, err := sf.open(ctx)
			if err != nil {
				return err
			}
			defer st.Close()
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return usagef("--listen %s: %v", listen, err)
			}
			defer ln.Close()
			if a, ok := ln.Addr().(*net.TCPAddr); !ok || !a.IP.IsLoopback() {
				return usagef("--listen must be a loopback address, such as 127.0.0.1:8765")
			}
			redirect := "http://" + ln.Addr().String() + "/callback"
			hc, err := egress.New(&egress.Options{AllowedHosts: cfg.AllowedHosts}).Client(url, headers, nil)
			if err != nil {
				return err
			}
			defer hc.CloseIdleConnections()
			o := e.Auth.OAuth
			opts := &upstream.Options{ClientIDMetadataURL: o.ClientMetadataURL, RedirectURL: redirect,
				Fetch:  loopbackFetch(ln, redirect, cmd.OutOrStdout()),
				Tokens: vault.New(st, keys, nil), Server: name, Subject: ""}
			if o.ClientID != "" {
				opts.Client = &oauthex.ClientCredentials{ClientID: o.ClientID}
				if o.ClientSecretEnv != "" {
					secret := os.Getenv(o.ClientSecretEnv)
					if secret == "" {
						return usagef("%s (servers.%s.oauth.clientSecretEnv) is empty", o.ClientSecretEnv, name)
					}
					opts.Client.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: secret}
				}
			}
			if len(o.Scopes) > 0 {
				opts.Scopes = func([]string) []string { return o.Scopes }
			}
			h, err := upstream.New(hc, opts)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			c := mcp.NewClient(&mcp.Implementation{Name: "gatehouse-connect", Version: "1"}, nil)
			cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, OAuthHandler: h, DisableStandaloneSSE: true}, nil)
			if err != nil {
				return fmt.Errorf("connecting %s: %w", name, err)
			}
			defer cs.Close()
			n := 0
			for _, err := range cs.Tools(ctx, nil) {
				if err != nil {
					return fmt.Errorf("listing the tools of %s: %w", name, err)
				}
				n++
			}
			auditOperator(ctx, &sf, st, cmd.ErrOrStderr(), store.AuditEntry{Kind: audit.KindConnectionsConnect, Subject: defaultOperator(),
				Server: name, Outcome: "ok", Detail: audit.Detail(map[string]any{"subject": "", "tools": n})})
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "connected %s: the service connection is in the vault (%d tools listed)\n", name, n)
			return err
		},
	}
	sf.add(cmd)
	vf.add(cmd)
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:8765", "the loopback address of the redirect URI's listener (http://ADDR/callback)")
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Minute, "how long to wait for the browser")
	return cmd
}

// inlineURL returns the url and headers of the servers: entry name.
func inlineURL(cfg *gateway.Config, name string) (string, map[string]string, error) {
	for _, s := range cfg.InlineServers() {
		if s.Config.Name == name {
			return s.Config.URL, s.Config.Headers, nil
		}
	}
	return "", nil, usagef("no servers: entry %q in the config", name)
}

// callbackMaxConns caps the callback listener's connections: one browser.
const callbackMaxConns = 16

// callbackLimits are the callback listener's: the listener policy of
// every listener (server.NewHTTPServer's timeouts, a cap within the
// process's file-descriptor limit), its cap callbackMaxConns.
func callbackLimits() (server.HTTPLimits, error) {
	lim := server.HTTPLimits{MaxConns: callbackMaxConns}
	fd, err := fdbudget.Limit()
	if err != nil {
		return lim, err
	}
	b, err := fdbudget.Split(fd, fdbudget.Listener{Name: "--listen", MaxConns: lim.MaxConns})
	if err != nil {
		return lim, err
	}
	lim.MaxConns = b.Listeners[0].MaxConns
	return lim, nil
}

// loopbackFetch prints the authorization URL and waits for the browser's
// redirect to redirect, served on ln.
func loopbackFetch(ln net.Listener, redirect string, out io.Writer) upstream.Fetcher {
	return func(ctx context.Context, _ *http.Client, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		got := make(chan *auth.AuthorizationResult, 1)
		lim, err := callbackLimits()
		if err != nil {
			return nil, err
		}
		srv, err := server.NewHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/callback" {
				http.NotFound(w, r)
				return
			}
			q := r.URL.Query()
			res := &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}
			if e := q.Get("error"); e != "" {
				res = nil
				fmt.Fprintf(w, "The authorization server refused: %s. You can close this window.\n", e)
			} else {
				fmt.Fprintln(w, "Gatehouse received the authorization. You can close this window.")
			}
			select {
			case got <- res:
			default:
			}
		}), &lim)
		if err != nil {
			return nil, err
		}
		done := make(chan struct{})
		go func() { defer close(done); _ = srv.Serve(ln) }()
		defer func() {
			// Gracefully: the browser's answer is written before the
			// listener goes.
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if srv.Shutdown(sctx) != nil {
				_ = srv.Close()
			}
			<-done
		}()
		fmt.Fprintf(out, "Open this URL in a browser to connect (waiting for %s):\n\n  %s\n\n", redirect, args.URL)
		select {
		case res := <-got:
			if res == nil {
				return nil, errors.New("the authorization server redirected with an error")
			}
			return res, nil
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for the browser: %w", ctx.Err())
		}
	}
}
