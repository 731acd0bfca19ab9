package toolset

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/diag"
	"github.com/gatehouse-dev/gatehouse/internal/egress"
	"github.com/gatehouse-dev/gatehouse/internal/metatool"
	"github.com/gatehouse-dev/gatehouse/internal/projection"
	"github.com/gatehouse-dev/gatehouse/plugin"
	"github.com/gatehouse-dev/gatehouse/toolset/internal/relist"
	"github.com/gatehouse-dev/gatehouse/toolset/internal/transport"
	"github.com/gatehouse-dev/gatehouse/trust"
)

// Toolset is a set of MCP servers projected into one tool map. It is safe
// for concurrent use. Create it with Open; release it with Close.
type Toolset struct {
	opts   Options
	log    *slog.Logger
	client *mcp.Client
	conns  []*conn
	static []diag.Diagnostic // found by Open

	life     context.Context // ends at Close; aborts connections in progress
	stopLife context.CancelFunc
	inflight sync.WaitGroup

	ledger        *trust.Ledger  // the trust state, in Options.Store
	instance      string         // Options.Instance, or host:pid
	bg            sync.WaitGroup // background reconciles
	reconciled    chan struct{}  // closed when the wake's first reconcile round ended
	reconcileOnce sync.Once
	recheckOnce   sync.Once
	retrySem      chan struct{} // tries of unreachable servers (rejoin.go)

	loadMu   sync.Mutex // serializes loading
	mu       sync.Mutex // guards cat, listings and closed
	cat      *catalog
	listings []listing // one per conn: the current state the catalog is built from
	closed   bool

	finder metatool.Finder // the catalog's search index (Search)
}

// Open checks the wiring of servers and opts and returns a Toolset. It does
// no I/O: servers connect on first use (Tools, Call, SystemPrompt, Describe
// or Connect).
//
// Open returns an error only for wiring mistakes: a filter with both allow
// and block, Auth or AllowedHostsFunc without Session, both AllowedHosts
// and AllowedHostsFunc. Everything about a server itself (an unsupported
// transport, a host not allowed, a name collision) is a diagnostic, and the
// other servers go on.
func Open(ctx context.Context, servers []Server, opts *Options) (*Toolset, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Auth != nil && o.Session == "" {
		return nil, fmt.Errorf("%w: Options.Auth needs Options.Session (a toolset with an auth resolver belongs to one session)", ErrInvalidOptions)
	}
	if o.AllowedHostsFunc != nil {
		if o.Session == "" {
			return nil, fmt.Errorf("%w: Options.AllowedHostsFunc needs Options.Session", ErrInvalidOptions)
		}
		if o.AllowedHosts != nil {
			return nil, fmt.Errorf("%w: set Options.AllowedHosts or Options.AllowedHostsFunc, not both", ErrInvalidOptions)
		}
	}
	for _, s := range servers {
		if err := s.Filter.Validate(); err != nil {
			return nil, fmt.Errorf("%w: server %q: %w", ErrInvalidOptions, s.Config.Name, err)
		}
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = defaultConnectTimeout
	}
	if o.StopGrace <= 0 {
		o.StopGrace = defaultStopGrace
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	t := &Toolset{opts: o, log: log}
	t.client = t.newSharedClient()
	t.life, t.stopLife = context.WithCancel(context.Background())
	t.reconciled = make(chan struct{})
	t.retrySem = make(chan struct{}, recheckConcurrency)
	t.instance = o.Instance
	if t.instance == "" {
		host, _ := os.Hostname()
		t.instance = fmt.Sprintf("%s:%d", host, os.Getpid())
	}
	// Without a Store, the trust state is kept in this process for the
	// toolset's life (trust.NewLedger).
	t.ledger = trust.NewLedger(o.Store, t.instance, log)

	hosts := o.AllowedHosts
	if o.AllowedHostsFunc != nil {
		hosts = o.AllowedHostsFunc(o.Session)
		if hosts == nil {
			hosts = []string{} // a resolver that answers nothing allows nothing
		}
	}
	guard := egress.New(&egress.Options{AllowedHosts: hosts, LookupIP: o.LookupIP})

	refs := make([]projection.ServerRef, len(servers))
	for i, s := range servers {
		c := &conn{ts: t, srv: s, name: s.Config.Name, idx: i, id: s.ID}
		c.up = &Upstream{c: c}
		if c.id == "" {
			c.id = trust.RowID(s.Config)
		}
		t.conns = append(t.conns, c)
		refs[i] = projection.ServerRef{Name: s.Config.Name, Prefix: s.Prefix}
		if s.Transport != nil {
			refs[i].Identity = "internal:" + s.Config.Name
			continue
		}
		switch s.Config.Type {
		case plugin.TransportStdio:
			refs[i].Identity = transport.StdioIdentity(s.Config)
			if o.DisallowStdio {
				c.skip = true
				t.static = append(t.static, diag.New(diag.UnsupportedTransport, "7.2.2", c.name,
					"server %q uses the stdio transport, which this configuration does not run (subprocesses are disallowed); it is skipped", c.name))
			}
		case plugin.TransportStreamableHTTP, plugin.TransportSSE:
			refs[i].Identity = s.Config.URL
			if err := c.prepareHTTP(guard); err != nil {
				c.skip = true
				rule := diag.ConnectionFailure
				var ee *egress.Error
				if errors.As(err, &ee) {
					rule = ee.Rule
				}
				t.static = append(t.static, diag.New(rule, "7.2.2", c.name,
					"server %q is skipped: %v", c.name, err))
			}
		default:
			c.skip = true
			t.static = append(t.static, diag.New(diag.UnsupportedTransport, "7.2.2", c.name,
				"server %q has transport type %q, which this build does not run; it is skipped", c.name, s.Config.Type))
		}
	}
	prefixes, ds := projection.Prefixes(refs)
	for i, c := range t.conns {
		c.prefix = prefixes[i]
	}
	t.static = append(t.static, ds...)
	t.static = append(t.static, t.distinctIDs(refs)...)
	t.listings = make([]listing, len(t.conns))
	return t, nil
}

// distinctIDs gives two servers with one row ID distinct IDs (see ServerID).
func (t *Toolset) distinctIDs(refs []projection.ServerRef) []diag.Diagnostic {
	count := map[string]int{}
	for _, c := range t.conns {
		count[c.id]++
	}
	var ds []diag.Diagnostic
	for i, c := range t.conns {
		if count[c.id] < 2 {
			continue
		}
		old := c.id
		c.id = old + "#" + trust.IdentityHash(refs[i].Identity)
		ds = append(ds, diag.New(diag.ServerNameCollision, "", c.name,
			"two servers have the store row ID %q; this one is stored as %q", old, c.id))
	}
	return ds
}

// Connect connects every server now (it is otherwise done on first use) and
// builds the tool map. Failures are diagnostics; the error is non-nil only if
// ctx ended or the toolset is closed.
func (t *Toolset) Connect(ctx context.Context) error {
	_, err := t.ensure(ctx)
	return err
}

// Tools connects the servers if needed and returns the tool map, sorted by
// name. The slice is the caller's; the schemas in it must not be modified.
func (t *Toolset) Tools(ctx context.Context) ([]ToolInfo, error) {
	cat, err := t.ensure(ctx)
	if err != nil {
		return nil, err
	}
	return append([]ToolInfo(nil), cat.tools...), nil
}

// Diagnostics returns what Open and the connections found, in server order.
// Before the first connection it holds only Open's findings.
func (t *Toolset) Diagnostics() []diag.Diagnostic {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := append([]diag.Diagnostic(nil), t.static...)
	if t.cat != nil {
		out = append(out, t.cat.diags...)
	}
	return out
}

// Describe returns the summary of one projected tool: its full sanitized
// schema whatever its disclosure tier, its annotations (information only)
// and its contract hash. The error is ErrUnknownTool for a name not in the
// map.
func (t *Toolset) Describe(ctx context.Context, name string) (Summary, error) {
	cat, err := t.ensure(ctx)
	if err != nil {
		return Summary{}, err
	}
	e, ok := cat.byName[name]
	if !ok || e.conn == nil {
		return Summary{}, &Error{Code: CodeUnknownTool, Tool: name}
	}
	return e.summary(), nil
}

// SystemPrompt returns the MCP part of a system prompt (see
// the projection rules): sanitized descriptions, schemas only for servers
// within budget. Server instructions are never part of it.
func (t *Toolset) SystemPrompt(ctx context.Context) (string, error) {
	cat, err := t.ensure(ctx)
	if err != nil {
		return "", err
	}
	return projection.SystemPrompt(cat.prompt), nil
}

// Close disconnects every server, reaps every stdio child (see
// Options.StopGrace) and waits for the toolset's goroutines. It is
// idempotent; calls after Close fail with ErrClosed.
func (t *Toolset) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	t.stopLife()
	t.mu.Unlock()

	var wg sync.WaitGroup
	errs := make([]error, len(t.conns))
	for i, c := range t.conns {
		wg.Go(func() { errs[i] = c.close() })
	}
	wg.Wait()
	t.inflight.Wait()
	t.bg.Wait()
	return errors.Join(errs...)
}

func (t *Toolset) isClosed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.closed
}

// ensure loads the catalog once. A load interrupted by ctx is not kept.
func (t *Toolset) ensure(ctx context.Context) (*catalog, error) {
	t.mu.Lock()
	cat, closed := t.cat, t.closed
	t.mu.Unlock()
	if closed {
		return nil, &Error{Code: CodeClosed}
	}
	if cat != nil {
		return cat, nil
	}
	t.loadMu.Lock()
	defer t.loadMu.Unlock()
	t.mu.Lock()
	cat, closed = t.cat, t.closed
	if !closed {
		t.inflight.Add(1)
	}
	t.mu.Unlock()
	if closed {
		return nil, &Error{Code: CodeClosed}
	}
	defer t.inflight.Done()
	if cat != nil {
		return cat, nil
	}

	results := make([]listing, len(t.conns))
	if t.opts.Wake {
		for i, c := range t.conns {
			if !c.skip {
				results[i] = c.wake(ctx)
			}
		}
	} else {
		var wg sync.WaitGroup
		for i, c := range t.conns {
			if c.skip {
				continue
			}
			wg.Go(func() { results[i] = c.connectAndList(ctx) })
		}
		wg.Wait()
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil, &Error{Code: CodeClosed}
	}
	t.listings = results
	cat = t.build(results, nil)
	t.cat = cat
	t.mu.Unlock()
	if t.opts.Wake && !t.opts.DeferReconcile {
		t.startReconcile()
	}
	t.startRecheck()
	t.startRetries(results)
	return cat, nil
}

// listing is one server's current state: what it published (or what the
// store holds, while a wake is pending), judged against its baseline.
type listing struct {
	ok    bool             // tools are projected
	tools []*mcp.Tool      // as published (or as stored)
	diag  *diag.Diagnostic // why the server is absent, or a pending wake's trouble

	fp       trust.Prints  // the listing's prints, for re-judging
	print    string        // fp.Print()
	v        trust.Verdict // fp against the baseline, and the fleet's record
	drift    []DriftEvent  // v's events, typed
	version  int64         // baseline version the decisions were made with
	observed int64         // the highest drift observation applied
	pending  bool          // projected from the store; not yet reconciled
}

// conn is one configured server and its live session.
type conn struct {
	ts     *Toolset
	srv    Server
	name   string
	prefix string
	skip   bool
	idx    int         // index in ts.conns and ts.listings
	id     string      // store row ID
	up     *Upstream   // this server, as Upstreams and Target hand it out
	asleep bool        // a wake found no usable row: never connected
	quiet  atomic.Bool // retried after a Warn: its skips log at Debug

	relistMu sync.Mutex   // serializes reconciles and re-trusts of this server
	relist   relist.Pacer // relistSoon's single flight (pinforward.go)
	// judged counts the listings applied (update): a relay's routes made
	// before the last one are re-checked before use (Upstream.Generation).
	judged atomic.Uint64

	httpClient *http.Client           // the egress guard's client (Upstream.HTTP)
	sdkClient  *http.Client           // httpClient behind answerLimit, for the go-sdk's client
	token      atomic.Pointer[string] // current bearer, served by the egress hook
	oauth      auth.OAuthHandler      // Server.OAuth's, on the transport

	// others paces the re-judging of the server's sessions other than the
	// shared one that announced a changed list (*mcp.ClientSession ->
	// *relist.Pacer, while one is queued or running; sessions.go).
	others sync.Map

	mu      sync.Mutex
	session *mcp.ClientSession
	pipe    *Pipe // a stdio session's requests as bytes (the session's while pipe.s is session)
	// unjudged: session was connected and its listing not judged yet
	// (current judges it before handing it out).
	unjudged bool
	closed   bool
}

func (c *conn) prepareHTTP(guard *egress.Guard) error {
	if err := guard.CheckURL(c.srv.Config.URL); err != nil {
		return err
	}
	var dynamic func(*http.Request) http.Header
	if c.ts.opts.Auth != nil {
		dynamic = func(*http.Request) http.Header {
			if tok := c.token.Load(); tok != nil && *tok != "" {
				return http.Header{"Authorization": {"Bearer " + *tok}}
			}
			return nil
		}
	}
	hc, err := guard.Client(c.srv.Config.URL, c.srv.Config.Headers, dynamic)
	if err != nil {
		return err
	}
	c.httpClient, c.sdkClient = hc, transport.Limited(hc)
	if c.srv.OAuth != nil {
		if c.srv.Config.Type != plugin.TransportStreamableHTTP {
			return fmt.Errorf("OAuth needs the streamable HTTP transport, not %q", c.srv.Config.Type)
		}
		c.oauth, err = c.srv.OAuth(hc)
	}
	return err
}

func (c *conn) remote() bool {
	return c.srv.Transport == nil && (c.srv.Config.Type == plugin.TransportStreamableHTTP || c.srv.Config.Type == plugin.TransportSSE)
}

// refreshToken calls the Auth resolver for this server.
func (c *conn) refreshToken(ctx context.Context) error {
	o := &c.ts.opts
	if o.Auth == nil || !c.remote() {
		return nil
	}
	tok, err := o.Auth(ctx, c.name, o.Session)
	if err != nil {
		return err
	}
	c.token.Store(&tok)
	return nil
}

func (c *conn) connectAndList(ctx context.Context) listing {
	ctx, cancel := c.connectContext(ctx)
	defer cancel()
	sess, err := c.connect(ctx)
	if err != nil {
		var pe *plugin.Error
		if errors.As(err, &pe) && pe.Rule != diag.ConnectionFailure {
			d := pe.Diagnostic()
			d.Origin = c.name
			d.Message = fmt.Sprintf("server %q is skipped: %s", c.name, d.Message)
			return c.skipped(d)
		}
		rule := diag.ConnectionFailure
		var ee *egress.Error
		if errors.As(err, &ee) {
			// The egress guard refused (a dial to an unsafe address, a
			// redirect): its rule, not connection-failure.
			rule = ee.Rule
		}
		return c.skipped(diag.New(rule, "7.2.2", c.name, "server %q is skipped: %v", c.name, err))
	}
	p, err := trust.List(ctx, sess)
	if err != nil {
		return c.skipped(diag.New(diag.ConnectionFailure, "7.2.2", c.name, "server %q is skipped: %v", c.name, err))
	}
	l := c.record(ctx, p, trust.Fingerprint(c.name, p))
	if l.ok {
		c.judgedNow(sess)
	}
	c.logDrift(&l)
	return l
}

// connectContext bounds one connection attempt by ConnectTimeout and by
// the toolset's life (Close aborts it).
func (c *conn) connectContext(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(ctx, c.ts.opts.ConnectTimeout)
	stop := context.AfterFunc(c.ts.life, cancel)
	return ctx, func() { stop(); cancel() }
}

// connect returns the current session, establishing one if there is none
// (a load interrupted by its context may have left one behind).
func (c *conn) connect(ctx context.Context) (*mcp.ClientSession, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.session != nil {
		return c.session, nil
	}
	return c.connectLocked(ctx)
}

func (c *conn) connectLocked(ctx context.Context) (*mcp.ClientSession, error) {
	if c.closed {
		return nil, &Error{Code: CodeClosed, Server: c.name}
	}
	tr, err := c.transport(ctx)
	if err != nil {
		return nil, err
	}
	tapped := &transport.Tapped{Inner: tr, Tap: c.ts.sharedTap(c)}
	sess, err := c.ts.client.Connect(ctx, tapped, c.ts.sessionOptions())
	if err != nil {
		return nil, fmt.Errorf("connecting: %w", err)
	}
	c.pipe = nil
	if p := tapped.Pipe(); p != nil {
		c.pipe = &Pipe{p: p, s: sess}
	}
	if c.session != nil { // never orphan a live session
		_ = c.session.Close()
	}
	if res := sess.InitializeResult(); res != nil && res.Instructions != "" {
		// Instructions are withheld from the tool map and prompts; only their
		// size is logged, at debug level.
		c.ts.log.Debug("toolset: server instructions withheld", "server", c.name, "bytes", len(res.Instructions))
	}
	c.session, c.unjudged = sess, true
	return sess, nil
}

// judgedNow records that sess, if it is still the shared session, had its
// listing judged: current hands it out from now on.
func (c *conn) judgedNow(sess *mcp.ClientSession) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.session == sess {
		c.unjudged = false
	}
}

// judgedSession returns the shared session unless its listing is still to
// be judged (nil then). A woken server's, not reconciled yet, is returned
// as it is: its tools are judged before its first call (Target), its
// prompts and templates as they are listed (Upstream.AdmitPrompts).
func (c *conn) judgedSession() *mcp.ClientSession {
	c.mu.Lock()
	s, unjudged := c.session, c.unjudged
	c.mu.Unlock()
	if s != nil && unjudged && !c.ts.pending(c) {
		return nil
	}
	return s
}

func (c *conn) transport(ctx context.Context) (mcp.Transport, error) {
	if c.srv.Transport != nil {
		return c.srv.Transport()
	}
	cfg := c.srv.Config
	if cfg.Type == plugin.TransportStdio {
		var lines *slog.Logger
		if c.ts.opts.StderrLog != nil {
			lines = c.ts.opts.StderrLog.With("server", c.name)
		}
		return transport.Stdio(cfg, c.ts.opts.Env, c.ts.opts.StopGrace,
			transport.StdioOptions{Stderr: c.ts.opts.Stderr, StderrLog: lines})
	}
	if err := c.refreshToken(ctx); err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	return transport.Remote(c.ts.life, cfg, c.httpClient, c.sdkClient, c.oauth)
}

// current returns the shared session, judged: when there is none (a
// reconnect that failed) one is connected, listed and judged first, as a
// reconnect's is; one connected and not judged yet is judged now. A woken
// server not reconciled yet is connected as before (see judgedSession).
func (c *conn) current(ctx context.Context) (*mcp.ClientSession, error) {
	if s := c.judgedSession(); s != nil {
		return s, nil
	}
	if c.ts.pending(c) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.session != nil {
			return c.session, nil
		}
		ctx, cancel := c.connectContext(ctx)
		defer cancel()
		return c.connectLocked(ctx)
	}
	return c.reconnect(ctx, nil)
}

// reconnect replaces old (nil: none) with a new session, listed and judged
// before it is returned, unless another caller already did. A session
// connected but not judged yet is judged in place.
func (c *conn) reconnect(ctx context.Context, old *mcp.ClientSession) (*mcp.ClientSession, error) {
	sess, made, relisted, drop, err := c.reconnectLocked(ctx, old)
	if drop != nil {
		_ = drop.Close() // outside c.mu: closing waits for handlers, which take it
	}
	if relisted {
		c.ts.changed()
		if f := c.ts.hooks().Reconnected; made && f != nil && !c.ts.isClosed() {
			f(c.up)
		}
	}
	return sess, err
}

// reconnectLocked is reconnect under c.mu. made: a new session was
// connected; relisted: its listing was judged and applied; drop: a session
// that failed its listing, to be closed.
func (c *conn) reconnectLocked(ctx context.Context, old *mcp.ClientSession) (_ *mcp.ClientSession, made, relisted bool, drop *mcp.ClientSession, _ error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.session != old && c.session != nil && !c.unjudged {
		return c.session, false, false, nil, nil
	}
	ctx, cancel := c.connectContext(ctx)
	defer cancel()
	if c.session == old || c.session == nil {
		if c.session != nil {
			_ = c.session.Close()
			c.session = nil
		}
		c.ts.log.Info("toolset: reconnecting", "server", c.name)
		if _, err := c.connectLocked(ctx); err != nil {
			return nil, false, false, nil, err
		}
		made = true
	}
	// A new session may be a new server: re-list and judge its contracts
	// before it serves calls. One that fails is not kept: the next use
	// connects afresh, and judges that one.
	sess := c.session
	fail := func(err error) (*mcp.ClientSession, bool, bool, *mcp.ClientSession, error) {
		c.session = nil
		return nil, made, false, sess, err
	}
	p, err := trust.List(ctx, sess)
	if err != nil {
		return fail(err)
	}
	l := c.record(ctx, p, trust.Fingerprint(c.name, p))
	if !l.ok {
		return fail(errors.New(l.diag.Message))
	}
	c.unjudged = false
	c.logDrift(&l)
	c.ts.update(c, l)
	return sess, made, true, nil, nil
}

func (c *conn) close() error {
	c.mu.Lock()
	c.closed = true // no session from now on
	c.mu.Unlock()
	c.dropSession()
	if c.httpClient != nil {
		c.httpClient.CloseIdleConnections()
	}
	return nil
}

// sessionOptions are the options of every upstream session.
func (t *Toolset) sessionOptions() *mcp.ClientSessionOptions {
	if t.opts.ProtocolVersion == "" {
		return nil
	}
	return &mcp.ClientSessionOptions{ProtocolVersion: t.opts.ProtocolVersion}
}
