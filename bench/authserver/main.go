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
	"syscall"
	"time"

	"github.com/gatehouse-dev/gatehouse/internal/fixture/authserver"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// clientID is the one client of the server, which obtains the token.
const clientID = "bench"

// config is the parsed command line.
type config struct {
	resource  string
	scopes    []string
	subject   string
	lifetime  time.Duration
	tokenFile string
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

// scopeList is a repeatable -scope flag.
type scopeList []string

func (s *scopeList) String() string { return strings.Join(*s, " ") }

func (s *scopeList) Set(v string) error {
	if err := checkScope(v); err != nil {
		return err
	}
	*s = append(*s, v)
	return nil
}

func parseFlags(args []string, stderr io.Writer) (*config, error) {
	cfg := &config{}
	fs := flag.NewFlagSet("authserver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var scopes scopeList
	fs.StringVar(&cfg.resource, "resource", "", "the resource (RFC 8707) the token is for: the gateway's auth.resource")
	fs.Var(&scopes, "scope", "a scope of the token (repeatable; default mcp)")
	fs.StringVar(&cfg.subject, "subject", "bench", "the token's sub")
	fs.DurationVar(&cfg.lifetime, "lifetime", 24*time.Hour, "how long the token is valid")
	fs.StringVar(&cfg.tokenFile, "token-file", "", "where to write the token (mode 0600)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if err := checkResource(cfg.resource); err != nil {
		return nil, err
	}
	if cfg.tokenFile == "" {
		return nil, errors.New("-token-file is required")
	}
	if cfg.lifetime <= 0 {
		return nil, fmt.Errorf("-lifetime %v must be positive", cfg.lifetime)
	}
	if err := checkSubject(cfg.subject); err != nil {
		return nil, err
	}
	cfg.scopes = scopes
	if len(cfg.scopes) == 0 {
		cfg.scopes = []string{"mcp"}
	}
	return cfg, nil
}

// checkResource accepts what a gateway takes as auth.resource: an absolute
// http or https URL with a host, without user info, query or fragment.
func checkResource(s string) error {
	if s == "" {
		return errors.New("-resource is required")
	}
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("-resource: %w", err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("-resource %q: scheme must be http or https", s)
	case u.Host == "":
		return fmt.Errorf("-resource %q: no host", s)
	case u.User != nil:
		return fmt.Errorf("-resource %q: user info is not allowed", s)
	case u.RawQuery != "" || u.ForceQuery:
		return fmt.Errorf("-resource %q: a query is not allowed", s)
	case u.Fragment != "" || strings.Contains(s, "#"):
		return fmt.Errorf("-resource %q: a fragment is not allowed", s)
	}
	return nil
}

// checkScope accepts one scope token of RFC 6749 §3.3: one or more of
// %x21 / %x23-5B / %x5D-7E (printable ASCII but space, '"' and '\').
func checkScope(s string) error {
	if s == "" {
		return errors.New("-scope: empty scope")
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			return fmt.Errorf("-scope %q: byte %d (%#02x) is not allowed in a scope (RFC 6749 §3.3)", s, i+1, c)
		}
	}
	return nil
}

// checkSubject accepts 1 to 255 printable ASCII characters.
func checkSubject(s string) error {
	if s == "" || len(s) > 255 {
		return fmt.Errorf("-subject must have 1 to 255 characters, not %d", len(s))
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x21 || c > 0x7e {
			return fmt.Errorf("-subject: byte %d (%#02x) is not printable ASCII", i+1, c)
		}
	}
	return nil
}

// serve starts the server, mints and writes the token, prints the issuer
// and serves until ctx ends.
func serve(ctx context.Context, cfg *config, stdout io.Writer) error {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return fmt.Errorf("client secret: %w", err)
	}
	secret := hex.EncodeToString(b[:])
	srv, err := authserver.New(authserver.Options{
		Clients: []authserver.Client{{ID: clientID, Secret: secret, Subject: cfg.subject,
			Resources: []string{cfg.resource}, Scopes: cfg.scopes}},
		TokenLifetime: cfg.lifetime,
	})
	if err != nil {
		return err
	}
	defer srv.Close()
	tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	tok, err := srv.Token(tctx, clientID, secret, cfg.resource, cfg.scopes...)
	cancel()
	if err != nil {
		return err
	}
	if err := writeSecret(cfg.tokenFile, tok+"\n"); err != nil {
		return fmt.Errorf("-token-file: %w", err)
	}
	if _, err := fmt.Fprintf(stdout, "issuer=%s\n", srv.Issuer()); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}

// writeSecret writes s to a new file name readable by its owner only: an
// existing file is replaced, never written through (it may have other
// modes, or be a link).
func writeSecret(name, s string) error {
	if err := os.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(s); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
