// Command authserver is a local OAuth 2.1 authorization server for trying
// Gatehouse as an OAuth resource server, and for testing against it: no
// identity provider, no program of your own.
//
//	go run ./examples/authserver
//
// It listens on 127.0.0.1 (-listen, default 127.0.0.1:9400) and prints its
// issuer URL, two clients, and the auth block to paste into the gateway's
// config:
//
//   - a confidential client (ID "mcp-agent" and a secret made at start) for
//     the client-credentials grant: a service or an agent;
//   - a public client (ID "mcp-cli", redirect URI -redirect, default
//     http://127.0.0.1:8090/callback) for the authorization-code grant with
//     PKCE S256: a person's client. There is no login page: every
//     authorization request is approved at once as -user (default "alice"),
//     and each approval is printed. That is what makes it a server for
//     trying only, and why it listens on loopback only.
//
// Tokens are RS256 JWTs with iss the issuer, aud the RFC 8707 resource the
// client asked for (the gateway's auth.resource, -gateway), sub the client
// ID for client credentials or the user for an authorization code, and
// scope the scopes requested. It serves OpenID discovery at
// /.well-known/openid-configuration, its keys at /keys, /authorize,
// /oauth/token and RFC 7662 introspection at /oauth/introspect. It is
// internal/fixture/authserver, which the project's tests use, as a program.
//
// docs/oauth.md's quick start takes the official TypeScript SDK client
// through the gateway with both grants against it.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/fixture/authserver"
)

// The clients the server registers.
const (
	// agentClientID is the confidential client: client credentials.
	agentClientID = "mcp-agent"
	// cliClientID is the public client: authorization code with PKCE.
	cliClientID = "mcp-cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// config is the parsed command line.
type config struct {
	listen, gateway, redirect, user, secret string
	lifetime                                time.Duration
}

// run is main without the process: it returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "authserver:", err)
		return 2
	}
	if err := serve(ctx, cfg, stdout); err != nil {
		fmt.Fprintln(stderr, "authserver:", err)
		return 1
	}
	return 0
}

func parseFlags(args []string, stderr io.Writer) (*config, error) {
	cfg := &config{}
	fs := flag.NewFlagSet("authserver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: go run ./examples/authserver [flags]\n\n"+
			"A local OAuth authorization server for trying Gatehouse: it approves every login without asking,\n"+
			"so it listens on loopback only. It prints its clients and the gateway's auth block.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	fs.StringVar(&cfg.listen, "listen", "127.0.0.1:9400", "the loopback address to listen on (its URL is the issuer)")
	fs.StringVar(&cfg.gateway, "gateway", "http://127.0.0.1:8080/mcp", "the gateway's MCP URL: its auth.resource, the only resource the clients may ask a token for")
	fs.StringVar(&cfg.redirect, "redirect", "http://127.0.0.1:8090/callback", "the redirect URI of the public client "+cliClientID)
	fs.StringVar(&cfg.user, "user", "alice", "the subject every authorization request is approved as")
	fs.StringVar(&cfg.secret, "secret", "", "the secret of the client "+agentClientID+" (default: a random one, printed)")
	fs.DurationVar(&cfg.lifetime, "lifetime", time.Hour, "how long an access token is valid")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q: every setting is a flag (see -help)", fs.Arg(0))
	}
	if err := checkURL("-gateway", cfg.gateway); err != nil {
		return nil, err
	}
	if err := checkURL("-redirect", cfg.redirect); err != nil {
		return nil, err
	}
	if strings.TrimSpace(cfg.user) == "" {
		return nil, errors.New("-user: give the subject logins are approved as")
	}
	if cfg.lifetime <= 0 {
		return nil, fmt.Errorf("-lifetime %v: give a positive duration such as 1h", cfg.lifetime)
	}
	if cfg.secret == "" {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, fmt.Errorf("client secret: %w", err)
		}
		cfg.secret = hex.EncodeToString(b[:])
	}
	return cfg, nil
}

// checkURL checks that v is an absolute http(s) URL without a fragment.
func checkURL(flagName, v string) error {
	u, err := url.Parse(v)
	if err != nil {
		return fmt.Errorf("%s %q: %w", flagName, v, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Fragment != "" {
		return fmt.Errorf("%s %q: give an absolute http(s) URL without a fragment, such as http://127.0.0.1:8080/mcp", flagName, v)
	}
	return nil
}

// serve starts the server, prints what a user needs and serves until ctx
// ends.
func serve(ctx context.Context, cfg *config, stdout io.Writer) error {
	var mu sync.Mutex // stdout is written by the server's handlers too
	srv, err := authserver.New(authserver.Options{
		Addr: cfg.listen,
		User: cfg.user,
		Clients: []authserver.Client{
			{ID: agentClientID, Secret: cfg.secret, Resources: []string{cfg.gateway}},
			{ID: cliClientID, RedirectURIs: []string{cfg.redirect}, Resources: []string{cfg.gateway}},
		},
		TokenLifetime: cfg.lifetime,
		OnLogin: func(clientID, subject string) {
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintf(stdout, "approved an authorization request of %s as %s (no page: this server asks nobody)\n", clientID, subject)
		},
	})
	if err != nil {
		return err
	}
	defer srv.Close()
	mu.Lock()
	_, err = io.WriteString(stdout, banner(srv.Issuer(), cfg.gateway, cfg.secret, cfg.redirect, cfg.user))
	mu.Unlock()
	if err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}

// banner is what the server prints when it is ready: its issuer, its
// clients, the variables docs/oauth.md's client script reads, and the
// gateway's auth block.
func banner(issuer, gateway, secret, redirect, user string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Local OAuth authorization server for trying Gatehouse. It approves every login as %q without asking:\n", user)
	fmt.Fprintf(&b, "never expose it; stop it with Ctrl-C.\n\n")
	fmt.Fprintf(&b, "issuer:  %s\n", issuer)
	fmt.Fprintf(&b, "client credentials:         client ID %s, secret %s\n", agentClientID, secret)
	fmt.Fprintf(&b, "authorization code + PKCE:  public client ID %s, redirect URI %s\n", cliClientID, redirect)
	fmt.Fprintf(&b, "tokens are for the resource %s only\n\n", gateway)
	fmt.Fprintf(&b, "For the client (paste into the client's shell):\n\n")
	fmt.Fprintf(&b, "export GATEWAY_URL=%s ISSUER=%s CLIENT_ID=%s CLIENT_SECRET=%s PUBLIC_CLIENT_ID=%s REDIRECT_URL=%s\n\n",
		gateway, issuer, agentClientID, secret, cliClientID, redirect)
	fmt.Fprintf(&b, "For the gateway (paste into gatehouse.yaml):\n\n")
	b.WriteString(authBlock(issuer, gateway))
	b.WriteString("\n")
	return b.String()
}

// authBlock is the gateway config's auth block for a server at issuer in
// front of the gateway at resource, requiring the scope mcp.
func authBlock(issuer, resource string) string {
	return fmt.Sprintf("auth:\n  resource: %s\n  oauth: {issuer: %s, requiredScopes: [mcp]}\n", resource, issuer)
}
