package console

import (
	"context"
	"crypto/ed25519"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gatehouse-dev/gatehouse/server"
	"github.com/gatehouse-dev/gatehouse/store"
)

// Defaults of Options.
const (
	// DefaultSessionTTL is how long a login lasts without Options.SessionTTL.
	DefaultSessionTTL = 8 * time.Hour
	// DefaultMaxStreams bounds the live-update streams served at once.
	DefaultMaxStreams = 32
	// DefaultPoll is how often a live-update stream reads the store.
	DefaultPoll = time.Second
	// maxSessions bounds the sessions held at once (expired ones are
	// dropped first).
	maxSessions = 1024
)

// CSP is the Content-Security-Policy of every response: nothing but the
// console's own script, style and images, no inline code, no framing.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// Admin is one operator who may log in.
type Admin struct {
	// Name is the operator's identity: recorded as the decider of an
	// approval and as the subject of the audit entries of their actions.
	Name string
	// SHA256 is the SHA-256 of the operator's token, in hex.
	SHA256 string
}

// ServerStatus is one configured server as the running gateway sees it.
type ServerStatus struct {
	// Name is the configured server name.
	Name string
	// State is "connected", "unavailable" (lost, in its restart backoff)
	// or "skipped" (Rule says why).
	State string
	// Rule is the diagnostic rule of a skipped server.
	Rule string
}

// Options configure New.
type Options struct {
	// Store is the gateway's store. Required.
	Store store.Store
	// Admins are the operators who may log in with a token of their own.
	// At least one is required unless VerifyAdmin is set.
	Admins []Admin
	// VerifyAdmin, when set, checks a login token that is no admin's: an
	// OAuth access token holding the admin scope. It returns the
	// operator's name (the token's subject) and when the token expires (a
	// session never outlives it; zero means no expiry of its own), or an
	// error for any refusal. Nil: admin tokens only.
	VerifyAdmin func(ctx context.Context, token string) (name string, expires time.Time, err error)
	// Servers reports the configured servers and their health (what only
	// the running gateway knows); nil shows the store's rows alone.
	Servers func(ctx context.Context) []ServerStatus
	// AuditKey, when set, must have signed every checkpoint the audit
	// page's verification reads (as `gatehouse audit verify
	// --public-key`).
	AuditKey ed25519.PublicKey
	// AuditSigningKey, when set, signs the checkpoint of the operators'
	// chain written after each action (the gateway's audit.signingKeyFile
	// or signingKeyEnv); nil writes an unsigned one, or none when the
	// store's checkpoints are signed (audit.AppendCheckpointed).
	AuditSigningKey ed25519.PrivateKey
	// SessionTTL is how long a login lasts; 0 means DefaultSessionTTL.
	SessionTTL time.Duration
	// SecureCookies marks the session cookie Secure over plain HTTP too
	// (TLS terminated by a proxy in front). Over TLS it is Secure anyway.
	SecureCookies bool
	// MaxStreams bounds the live-update streams served at once (beyond it
	// /events answers 503); 0 means DefaultMaxStreams.
	MaxStreams int
	// Poll is how often a live-update stream reads the store; 0 means
	// DefaultPoll.
	Poll time.Duration
	// Logger receives failed logins and the store's failures; nil
	// discards.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// console is the handler New returns.
type console struct {
	st       store.Store
	admins   []admin
	servers  func(context.Context) []ServerStatus
	verify   func(context.Context, string) (string, time.Time, error)
	auditKey ed25519.PublicKey
	signKey  ed25519.PrivateKey
	ttl      time.Duration
	secure   bool
	poll     time.Duration
	log      *slog.Logger
	now      func() time.Time

	pages   map[string]*template.Template
	static  http.Handler
	mux     *http.ServeMux
	origin  *http.CrossOriginProtection
	streams atomic.Int64
	maxStr  int64

	mu       sync.Mutex
	sessions map[[32]byte]*session // by the SHA-256 of the session ID

	throttle throttle // failed logins per client address
}

// admin is an Admin with its hash decoded.
type admin struct {
	name string
	hash [32]byte
}

// New returns the console's handler over o.Store. It starts nothing: the
// live-update streams run in their requests and end with them.
func New(o *Options) (http.Handler, error) {
	if o == nil || o.Store == nil {
		return nil, errors.New("console: Options.Store is required")
	}
	if len(o.Admins) == 0 && o.VerifyAdmin == nil {
		return nil, errors.New("console: at least one admin (Options.Admins) or Options.VerifyAdmin is required: nobody could log in")
	}
	c := &console{st: o.Store, servers: o.Servers, verify: o.VerifyAdmin, auditKey: o.AuditKey, signKey: o.AuditSigningKey, ttl: o.SessionTTL, secure: o.SecureCookies,
		poll: o.Poll, log: o.Logger, now: o.Now, maxStr: int64(o.MaxStreams), sessions: map[[32]byte]*session{}}
	seen := map[string]bool{}
	for i, a := range o.Admins {
		b, err := hex.DecodeString(strings.ToLower(a.SHA256))
		if err != nil || len(b) != 32 {
			return nil, fmt.Errorf("console: admin %d (%q): SHA256 must be 64 hexadecimal characters", i, a.Name)
		}
		if strings.TrimSpace(a.Name) == "" || seen[a.Name] {
			return nil, fmt.Errorf("console: admin %d: the name %q is empty or repeated", i, a.Name)
		}
		seen[a.Name] = true
		c.admins = append(c.admins, admin{name: a.Name, hash: [32]byte(b)})
	}
	if c.ttl <= 0 {
		c.ttl = DefaultSessionTTL
	}
	if c.poll <= 0 {
		c.poll = DefaultPoll
	}
	if c.maxStr <= 0 {
		c.maxStr = DefaultMaxStreams
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.now == nil {
		c.now = time.Now
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	c.pages = pages
	sub, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	c.static = http.StripPrefix("/static/", http.FileServerFS(sub))
	c.origin = http.NewCrossOriginProtection()
	c.routes()
	return c, nil
}

// routes registers every page. GETs only read; each POST is checked by
// c.action (origin, session, synchronizer token) before it runs.
func (c *console) routes() {
	m := http.NewServeMux()
	m.Handle("GET /static/", c.static)
	m.HandleFunc("GET /login", c.loginPage)
	m.HandleFunc("POST /login", c.login)
	m.HandleFunc("POST /logout", c.action(c.logout))
	m.HandleFunc("GET /{$}", c.page(func(w http.ResponseWriter, r *http.Request, s *session) {
		http.Redirect(w, r, "/approvals", http.StatusSeeOther)
	}))
	m.HandleFunc("GET /approvals", c.page(c.approvalsPage))
	m.HandleFunc("POST /approvals/decide", c.action(c.decide))
	m.HandleFunc("GET /drift", c.page(c.driftPage))
	m.HandleFunc("POST /drift/trust", c.action(c.trust))
	m.HandleFunc("GET /runs", c.page(c.runsPage))
	m.HandleFunc("POST /runs/purge", c.action(c.purge))
	m.HandleFunc("GET /servers", c.page(c.serversPage))
	m.HandleFunc("GET /audit", c.page(c.auditPage))
	m.HandleFunc("GET /audit/verify", c.page(c.verifyPage))
	m.HandleFunc("GET /events", c.events)
	c.mux = m
}

// ServeHTTP sets the security headers of every response, then routes.
func (c *console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", CSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	if !strings.HasPrefix(r.URL.Path, "/static/") {
		h.Set("Cache-Control", "no-store")
	}
	c.mux.ServeHTTP(w, r)
}

// page wraps a GET handler that needs a login: without a valid session the
// browser is sent to the login page and nothing else is said.
func (c *console) page(fn func(http.ResponseWriter, *http.Request, *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s := c.session(r)
		if s == nil {
			http.Redirect(w, r, "/login", http.StatusSeeOther)
			return
		}
		fn(w, r, s)
	}
}

// action wraps a POST handler: a cross-origin request is 403, one without
// a valid session 401, one without the session's synchronizer token (form
// field "csrf") 403; none of them runs fn.
func (c *console) action(fn func(http.ResponseWriter, *http.Request, *session)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := c.origin.Check(r); err != nil {
			http.Error(w, "forbidden: cross-origin request", http.StatusForbidden)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
		s := c.session(r)
		if s == nil {
			http.Error(w, "unauthorized: log in at /login", http.StatusUnauthorized)
			return
		}
		if err := r.ParseForm(); err != nil {
			http.Error(w, "bad request: the form cannot be read", http.StatusBadRequest)
			return
		}
		if !s.checkCSRF(r.PostForm.Get("csrf")) {
			http.Error(w, "forbidden: the form's token is missing or wrong (reload the page)", http.StatusForbidden)
			return
		}
		fn(w, r, s)
	}
}

// DefaultMaxConns caps the connections Serve holds open at once when its
// limits set no MaxConns: operators with a browser each, and their
// live-update streams (DefaultMaxStreams).
const DefaultMaxConns = 64

// Serve serves h on ln until ctx ends, then shuts down: every request's
// context derives from ctx, so the live-update streams end with it. It
// serves with server.NewHTTPServer, under limits (nil: the defaults of
// server.HTTPLimits; a MaxConns of 0: DefaultMaxConns): a request's header
// within 10s, the whole request within 30s, each write of an answer within
// 30s, idle connections closed after 10s (the console's requests never
// mark a connection authenticated), and at most MaxConns connections open,
// further ones waiting in the kernel's backlog.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, limits *server.HTTPLimits) error {
	var l server.HTTPLimits
	if limits != nil {
		l = *limits
	}
	if l.MaxConns == 0 {
		l.MaxConns = DefaultMaxConns
	}
	srv, err := server.NewHTTPServer(h, &l)
	if err != nil {
		return err
	}
	srv.BaseContext = func(net.Listener) context.Context { return ctx }
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = srv.Shutdown(sctx)
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}
