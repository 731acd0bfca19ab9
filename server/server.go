package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/durable"
)

// Subject names a caller: whoever [Options.Identify] says the transport
// authenticated. The empty subject is the anonymous caller.
type Subject string

// RequestInfo is what the transport authenticated about one request, and
// nothing else: no header, no body, no session-opening context.
type RequestInfo struct {
	// TokenInfo is the verified bearer token of this HTTP request (from
	// auth.RequireBearerToken). It is nil when the transport verified no
	// token (no [HTTPOptions.Verifier], or an in-memory transport).
	TokenInfo *auth.TokenInfo
	// Local is true for a request served over a transport whose peer is
	// trusted as a whole ([Server.ServeStdio], [Server.ServeLocal]): its
	// subject is [Options.StdioSubject] and Identify is not asked.
	Local bool
	// ClientCapabilities are the capabilities the request's session
	// announced in its initialize request, or nil when none are known.
	ClientCapabilities *mcp.ClientCapabilities
}

// Caller is the sealed identity of one tool call: who calls which tool. Only
// this package makes one; a tool reads it with [CallerFromContext] (or
// receives it in a [ToolHandlerFor]) to check that an object belongs to the
// caller.
type Caller struct {
	subject Subject
	tool    string
	key     string
}

// Subject returns the caller's subject.
func (c Caller) Subject() Subject { return c.subject }

// Tool returns the name of the tool being called.
func (c Caller) Tool() string { return c.tool }

// IdempotencyKey returns the key of this call's unit of work
// ("runID:toolCallID", derived from the subject, the tool and the work key),
// or "" when the call is not deduplicated. A tool that calls another service
// passes it on so that service can deduplicate too.
func (c Caller) IdempotencyKey() string { return c.key }

type callerKey struct{}

// CallerFromContext returns the [Caller] of the tool call whose handler
// received ctx. It reports false outside a tool call served by a [Server].
func CallerFromContext(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(Caller)
	return c, ok
}

// ToolHandlerFor handles calls of a tool whose arguments the go-sdk has
// validated against the input schema and decoded into In. It is
// mcp.ToolHandlerFor with the sealed [Caller] added.
type ToolHandlerFor[In, Out any] func(ctx context.Context, c Caller, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error)

// Tool is one tool to serve: a definition and a handler registered with the
// go-sdk's mcp.AddTool, so schema inference, validation and structured
// output are the go-sdk's. Make one with [NewTool] or [SDKTool].
type Tool struct {
	def *mcp.Tool
	add func(s *mcp.Server, def *mcp.Tool)
}

// NewTool returns a tool whose handler receives the caller. def.Name may be
// empty: the key of [Options.Tools] names the tool.
func NewTool[In, Out any](def *mcp.Tool, h ToolHandlerFor[In, Out]) Tool {
	return Tool{def: def, add: func(s *mcp.Server, def *mcp.Tool) {
		mcp.AddTool(s, def, func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
			c, _ := CallerFromContext(ctx)
			return h(ctx, c, req, in)
		})
	}}
}

// SDKTool returns a tool with a plain go-sdk handler (which may still read
// the caller with [CallerFromContext]).
func SDKTool[In, Out any](def *mcp.Tool, h mcp.ToolHandlerFor[In, Out]) Tool {
	return Tool{def: def, add: func(s *mcp.Server, def *mcp.Tool) { mcp.AddTool(s, def, h) }}
}

// Counters is the atomic counter store a shared rate limit needs;
// store.CounterStore satisfies it.
type Counters interface {
	// IncrBy adds delta to the counter key and returns the new value in one
	// atomic step; a counter past its expiry restarts from zero.
	IncrBy(ctx context.Context, key string, delta int64, expiresAt time.Time) (int64, error)
}

// RateLimit allows each subject at most MaxCalls tools/call requests (and
// initialize requests: opening a session spends one) per fixed window of
// length Window (windows are aligned on the Unix epoch, so
// every process agrees on them).
type RateLimit struct {
	// MaxCalls is the number of calls a subject may make per window (> 0).
	MaxCalls int
	// Window is the window's length (>= 1ms).
	Window time.Duration
	// Counters, when set, holds the counts in a store shared by several
	// processes (key store.Key("rl", subject, window start in Unix ms),
	// expiring at the window's end), so they share one quota: together
	// they never allow more than MaxCalls per window. A process takes a
	// subject's permits from it in blocks (one IncrBy for many calls; the
	// first block of one permit, then doubling while the subject keeps
	// calling, at most MaxCalls/4) and spends them without the store. It
	// gives back what a block leaves unspent once the subject has not
	// called it for a second (Window/8 for windows under 8s, at least
	// 10ms), and at Close. The cost: until then a caller refused by one
	// process may have permits unspent on another, and a process the store
	// has refused refuses the subject for that long without asking again.
	// A store error refuses the call. Nil counts in this process.
	Counters Counters
}

// RateLimitFunc decides whether subject may call tool now. It returns
// ok=false and how long to wait to refuse the call with rate_limited. For
// a request that is not a tools/call, tool is its method: "initialize"
// for every session opened (or what [Server.RateLimit] is given).
type RateLimitFunc func(ctx context.Context, subject Subject, tool string) (ok bool, retryAfter time.Duration, err error)

// Options configure a [Server]. Every protection left unset is logged once,
// as a warning naming what is not protected, when the Server is made.
type Options struct {
	// Implementation names the server to clients. Nil means
	// {Name: "gatehouse-server", Version: "dev"}.
	Implementation *mcp.Implementation
	// ServerOptions are passed to mcp.NewServer (copied). Nil means defaults.
	// Its Logger gets the go-sdk's warnings, except the one per session that
	// a notification did not reach (a caller not listening), which is Debug.
	ServerOptions *mcp.ServerOptions
	// Tools maps a tool name to the tool.
	Tools map[string]Tool
	// Setup, when set, registers more on each underlying mcp.Server (once
	// for HTTP and other transports, once more for the local one of
	// [Server.ServeStdio] and [Server.ServeLocal], with local true):
	// resources, prompts, tools. Every tool, however registered, is
	// protected.
	Setup func(s *mcp.Server, local bool)

	// Identify maps what the transport authenticated to a subject. It is
	// called for each tools/list and tools/call on every transport but
	// stdio. An error means the caller cannot be placed: it sees no tools
	// and every call is answered as for an unknown tool. Nil makes every
	// caller the anonymous subject "". Its context carries cancellation
	// only, no values (in stateful HTTP the handler's context holds those of
	// the request that opened the session).
	Identify func(ctx context.Context, info RequestInfo) (Subject, error)
	// StdioSubject is the subject of every call served by [Server.ServeStdio].
	// On stdio the process boundary is the trust boundary: there is no
	// caller identity, Identify is not called.
	StdioSubject Subject
	// AllowTool reports whether subject may see and call the tool. It
	// filters tools/list and gates tools/call with the same answer. Nil
	// allows every tool to every caller.
	AllowTool func(name string, subject Subject) bool
	// AllowToolFor, when set, is asked instead of AllowTool, with what the
	// transport authenticated about the request as well: for authorization
	// that depends on the request's token (its scopes) and not only on
	// the subject. Same contract as AllowTool.
	AllowToolFor func(name string, subject Subject, info RequestInfo) bool
	// RateLimit limits calls per subject. RateLimitFunc, when set, is used
	// instead.
	RateLimit *RateLimit
	// RateLimitFunc is a custom rate limit.
	RateLimitFunc RateLimitFunc
	// DeferCallAdmission leaves the admission of tools/call (identity, the
	// rate limit, AllowTool) to the tool handlers: the middleware passes
	// every tools/call on unadmitted, and each handler must admit its call
	// with [Server.AdmitCall] before it does anything else. A gateway that
	// serves calls through more than one front (the go-sdk's, and its own
	// byte path) sets it, so that one pipeline admits every call in one
	// order. It cannot be combined with Journal (dedup runs after
	// admission).
	DeferCallAdmission bool

	// MaxSessionsPerSubject caps the sessions one subject may have open
	// (HTTP and Serve; stdio and ServeLocal are not counted). An initialize
	// beyond it is refused with a JSON-RPC error (CodeSessionLimit) that
	// says why; a session frees its slot when it ends (DELETE, idle
	// timeout, closed transport). Every initialize, counted or not, also
	// spends one call of the subject's RateLimit. With
	// HTTPOptions.Sessions the HTTP sessions are counted in the store, so
	// that the cap holds across replicas (two initializes racing on two
	// replicas may both pass it by one). Zero means no cap; negative is
	// invalid.
	MaxSessionsPerSubject int

	// WorkKey names the unit of work of a call; "" means the call is not
	// deduplicated. When set it replaces the client's key. Nil uses the
	// client's _meta.idempotencyKey. Either way the unit of work is scoped
	// to the subject and the tool.
	WorkKey func(req *mcp.CallToolRequest) string
	// Journal, when set, deduplicates calls that have a work key: the
	// unit of work is (subject, tool, work key) and the subject is the
	// record's owner.
	Journal *durable.Journal
	// Name is the server name recorded in journal fingerprints. Empty means
	// the Implementation's name.
	Name string

	// Logger receives the warnings and errors. Nil means slog.Default().
	Logger *slog.Logger
	// Clock is the time source of the rate limit's windows. Nil means
	// time.Now.
	Clock func() time.Time
	// OwnWarnings leaves the warnings about protections left unset to the
	// program: New and the HTTP handler do not log them. Set it when the
	// Server is configured from settings of the program's own, which it
	// names in its warnings (the gateway names its config fields, such as
	// rateLimit, not these Options).
	OwnWarnings bool
}

// Server is an MCP server with identity, authorization, rate limits and
// dedup applied to every tool. It is safe for concurrent use.
type Server struct {
	opts     Options
	name     string
	logger   *slog.Logger
	limiter  limiter
	sessions *sessionBook // nil: no cap
	remote   *mcp.Server
	// life ends at Close: the goroutines of the server's own end with it.
	life    context.Context
	endLife context.CancelFunc
	// shared keeps the HTTP handler's sessions in a store
	// (HTTPOptions.Sessions); nil without one.
	shared atomic.Pointer[sharedSessions]

	stdioOnce sync.Once
	stdio     *mcp.Server
	stdioErr  error
}

// ErrInvalidOptions reports options New cannot use.
var ErrInvalidOptions = errors.New("server: invalid options")

// New returns a server for opts.
func New(opts Options) (*Server, error) {
	if opts.Implementation == nil {
		opts.Implementation = &mcp.Implementation{Name: "gatehouse-server", Version: "dev"}
	}
	s := &Server{opts: opts, name: opts.Name, logger: opts.Logger}
	s.life, s.endLife = context.WithCancel(context.Background())
	if s.name == "" {
		s.name = opts.Implementation.Name
	}
	if s.logger == nil {
		s.logger = slog.Default()
	}
	clock := opts.Clock
	if clock == nil {
		clock = time.Now
	}
	switch {
	case opts.RateLimitFunc != nil:
		s.limiter = funcLimiter(opts.RateLimitFunc)
	case opts.RateLimit != nil:
		rl := *opts.RateLimit
		if rl.MaxCalls <= 0 || rl.Window < time.Millisecond {
			return nil, fmt.Errorf("%w: RateLimit needs MaxCalls > 0 and Window >= 1ms (got %d, %v)", ErrInvalidOptions, rl.MaxCalls, rl.Window)
		}
		if rl.Counters != nil {
			s.limiter = newSharedLimiter(rl.MaxCalls, rl.Window, rl.Counters, clock, s.logger)
		} else {
			s.limiter = newMemLimiter(rl.MaxCalls, rl.Window, clock)
		}
	}
	switch {
	case opts.MaxSessionsPerSubject < 0:
		return nil, fmt.Errorf("%w: MaxSessionsPerSubject %d is negative", ErrInvalidOptions, opts.MaxSessionsPerSubject)
	case opts.MaxSessionsPerSubject > 0:
		s.sessions = newSessionBook(opts.MaxSessionsPerSubject)
	}
	if opts.DeferCallAdmission && opts.Journal != nil {
		return nil, fmt.Errorf("%w: DeferCallAdmission cannot be combined with Journal", ErrInvalidOptions)
	}
	for name, t := range opts.Tools {
		if t.add == nil || t.def == nil {
			return nil, fmt.Errorf("%w: tool %q: make it with NewTool or SDKTool", ErrInvalidOptions, name)
		}
		if t.def.Name != "" && t.def.Name != name {
			return nil, fmt.Errorf("%w: tool %q is named %q in its definition", ErrInvalidOptions, name, t.def.Name)
		}
	}
	remote, err := s.build(false)
	if err != nil {
		return nil, err
	}
	s.remote = remote
	s.warnOpen()
	return s, nil
}

// warnOpen logs one warning per protection left unset.
func (s *Server) warnOpen() {
	o := s.opts
	if o.OwnWarnings {
		return
	}
	if o.Identify == nil {
		s.logger.Warn("server: not protected: caller identity (Options.Identify is not set): every caller is the same anonymous subject")
	}
	if o.AllowTool == nil && o.AllowToolFor == nil {
		s.logger.Warn("server: not protected: tool authorization (Options.AllowTool is not set): every caller may list and call every tool")
	}
	if s.limiter == nil {
		s.logger.Warn("server: not protected: rate limit (Options.RateLimit is not set): a caller may call without limit")
	}
	if s.sessions == nil {
		s.logger.Warn("server: not protected: sessions per subject (Options.MaxSessionsPerSubject is not set): a caller may open sessions without limit")
	}
	if o.Journal != nil && o.WorkKey == nil {
		s.logger.Warn("server: not protected: work keys (Options.WorkKey is not set): dedup uses the client's _meta.idempotencyKey, scoped to the caller and tool")
	}
}

// build makes one go-sdk server with the tools and the middleware. local
// marks the stdio server, whose calls all belong to StdioSubject.
func (s *Server) build(local bool) (m *mcp.Server, err error) {
	var so mcp.ServerOptions
	if s.opts.ServerOptions != nil {
		so = *s.opts.ServerOptions
	}
	so.Logger = sdkLogger(so.Logger) // a caller not listening is no warning
	m = mcp.NewServer(s.opts.Implementation, &so)
	defer func() {
		// mcp.AddTool panics on a definition it cannot use.
		if r := recover(); r != nil {
			m, err = nil, fmt.Errorf("%w: %v", ErrInvalidOptions, r)
		}
	}()
	for _, name := range slices.Sorted(maps.Keys(s.opts.Tools)) {
		t := s.opts.Tools[name]
		def := *t.def
		def.Name = name
		t.add(m, &def)
	}
	if !local {
		// Innermost: it sees what is written, after any other sending
		// middleware (Setup's) changed it.
		m.AddSendingMiddleware(s.sending)
	}
	if s.opts.Setup != nil {
		s.opts.Setup(m, local)
	}
	m.AddReceivingMiddleware(s.middleware(local))
	return m, nil
}

// MCPServer returns the underlying go-sdk server used for HTTP and for
// [Server.Serve]. Add to it only what needs no protection beyond these
// (tools added to it are still protected).
func (s *Server) MCPServer() *mcp.Server { return s.remote }

// Serve runs one session over t (for example an in-memory transport) until
// the client disconnects or ctx is done. Callers are identified as on HTTP:
// Identify gets the TokenInfo the transport attached, if any.
func (s *Server) Serve(ctx context.Context, t mcp.Transport) error {
	return s.remote.Run(ctx, t)
}

// ServeStdio serves one session over stdin/stdout until the client closes
// it or ctx is done. Every call belongs to [Options.StdioSubject].
func (s *Server) ServeStdio(ctx context.Context) error {
	return s.ServeLocal(ctx, &mcp.StdioTransport{})
}

// ServeLocal serves one session over a transport whose peer is trusted as a
// whole, like stdio: every call belongs to [Options.StdioSubject] and
// Identify is not called.
func (s *Server) ServeLocal(ctx context.Context, t mcp.Transport) error {
	s.stdioOnce.Do(func() { s.stdio, s.stdioErr = s.build(true) })
	if s.stdioErr != nil {
		return s.stdioErr
	}
	return s.stdio.Run(ctx, t)
}

// Close closes every open session (HTTP and local) and gives the
// rate-limit permits this process holds unspent back to the shared
// counters ([RateLimit.Counters]). Call it after the HTTP server has shut
// down; an HTTP client may still open a new session afterwards. A server
// that has not served locally before Close refuses ServeStdio and
// ServeLocal after it.
func (s *Server) Close() error {
	s.endLife()
	if l, ok := s.limiter.(*sharedLimiter); ok {
		l.close()
	}
	var errs []error
	servers := []*mcp.Server{s.remote}
	s.stdioOnce.Do(func() { s.stdioErr = errors.New("server: closed") })
	if s.stdio != nil {
		servers = append(servers, s.stdio)
	}
	for _, m := range servers {
		for ss := range m.Sessions() {
			if err := ss.Close(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}
