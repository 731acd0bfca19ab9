package toolset

//lint:file-ignore SA1019 forwarding sampling, elicitation, roots and logging (deprecated by SEP-2577, still in 2025-11-25) is this file's job.

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"

	"github.com/gatehouse-dev/gatehouse/internal/projection"
	"github.com/gatehouse-dev/gatehouse/pin"
	"github.com/gatehouse-dev/gatehouse/plugin"
)

// Caller is one calling session a Toolset forwards for (the gateway makes
// one per MCP session it serves). Its ID names it; Release ends it.
//
// A caller that can answer server-initiated requests (Dedicated: it
// advertised sampling or elicitation, or set a logging level) gets its own
// upstream session per server, created on first use, advertising the same
// client capabilities: whatever that upstream session sends (sampling,
// elicitation, roots, log messages, resource updates) belongs to this
// caller. Other callers share the server's one session, and what a shared
// session sends is routed by what identifies its caller: progress tokens
// (rewritten per call), resource subscriptions (fanned out to the
// subscribers), and the context of a multi round-trip request.
type Caller struct {
	// ID is unique among the Toolset's live callers.
	ID string
	// Capabilities are the caller's client capabilities, mirrored to its
	// dedicated upstream sessions.
	Capabilities *mcp.ClientCapabilities
	// Dedicated asks for upstream sessions of its own (see above).
	Dedicated bool
	// Handlers receive what upstream servers send for this caller. A nil
	// handler refuses (requests) or drops (notifications).
	Handlers CallerHandlers

	released atomic.Bool // by Release: a late request registers nothing
}

// CallerHandlers deliver upstream traffic to a caller. Each gets the
// context of the upstream message (for a multi round-trip request, the
// context of the caller's own request).
type CallerHandlers struct {
	CreateMessage   func(context.Context, *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error)
	Elicit          func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error)
	ListRoots       func(context.Context, *mcp.ListRootsParams) (*mcp.ListRootsResult, error)
	Log             func(context.Context, *mcp.LoggingMessageParams)
	Progress        func(context.Context, *mcp.ProgressNotificationParams)
	ResourceUpdated func(context.Context, *mcp.ResourceUpdatedNotificationParams)
}

// ListChange says which list of a server changed (Options.OnListChanged).
type ListChange string

// List changes an upstream announces.
const (
	ToolsChanged     ListChange = "tools"
	ResourcesChanged ListChange = "resources"
	PromptsChanged   ListChange = "prompts"
)

// ServerFilter reports whether a server's resources and prompts may be
// shown to the caller at hand (the gateway's authorization). Nil allows
// every server.
type ServerFilter func(server string) bool

func (f ServerFilter) allows(server string) bool { return f == nil || f(server) }

// forwarding is the Toolset's state for everything beyond tools.
type forwarding struct {
	mu        sync.Mutex
	callers   map[string]*callerState
	owners    map[*mcp.ClientSession]*callerState // dedicated sessions
	progress  map[string]progressRoute            // upstream token -> caller
	seq       atomic.Uint64
	uris      map[string]*conn // resource URI -> server (collisions removed)
	templates []routedTemplate
	prompts   map[string]promptRoute // projected name -> server and remote name
	// Prompts and templates whose contract changed after trust: not
	// listed, their requests refused (pinforward.go).
	qprompts   map[string]promptRoute
	qtemplates []routedTemplate
	subs       map[string]map[string]*callerState // URI -> caller ID -> caller (shared sessions)
}

type callerState struct {
	caller   *Caller
	client   *mcp.Client
	mu       sync.Mutex
	sessions map[int]*mcp.ClientSession // by conn index
	level    mcp.LoggingLevel
	closed   bool
}

type progressRoute struct {
	st    *callerState
	token any
}

type routedTemplate struct {
	tmpl *uritemplate.Template
	conn *conn
	gen  uint64 // conn.judged when listed
}

type promptRoute struct {
	conn   *conn
	remote string
	gen    uint64 // conn.judged when listed
}

// fresh reports whether no listing of the route's server was judged since
// the route was listed: a route to a prompt or template that was trusted
// then may have drifted since, so a stale one is listed (and judged)
// again before it is used.
func (r promptRoute) fresh() bool    { return r.gen == r.conn.judged.Load() }
func (r routedTemplate) fresh() bool { return r.gen == r.conn.judged.Load() }

type callerCtxKey struct{}

func (f *forwarding) init() {
	f.callers = map[string]*callerState{}
	f.owners = map[*mcp.ClientSession]*callerState{}
	f.progress = map[string]progressRoute{}
	f.uris = map[string]*conn{}
	f.prompts = map[string]promptRoute{}
	f.qprompts = map[string]promptRoute{}
	f.subs = map[string]map[string]*callerState{}
}

// clientOptions are the options of the shared client and, with caps and
// handlers, of a caller's dedicated client.
func (t *Toolset) clientOptions(caps *mcp.ClientCapabilities, dedicated bool) *mcp.ClientOptions {
	o := &mcp.ClientOptions{
		// Progress and log messages are routed as they are read
		// (routedConn), not by the go-sdk's handlers.
		Logger:                 t.log,
		ResourceUpdatedHandler: t.onResourceUpdated,
		ToolListChangedHandler: func(ctx context.Context, r *mcp.ToolListChangedRequest) {
			t.onListChanged(r.Session, ToolsChanged)
		},
		ResourceListChangedHandler: func(ctx context.Context, r *mcp.ResourceListChangedRequest) {
			t.onListChanged(r.Session, ResourcesChanged)
		},
		PromptListChangedHandler: func(ctx context.Context, r *mcp.PromptListChangedRequest) {
			t.onListChanged(r.Session, PromptsChanged)
		},
	}
	if !dedicated {
		// The shared session answers nothing on anyone's behalf.
		o.Capabilities = &mcp.ClientCapabilities{}
		return o
	}
	c := &mcp.ClientCapabilities{}
	if caps != nil {
		c.Experimental = caps.Experimental
		c.Sampling = caps.Sampling
		c.Elicitation = caps.Elicitation
		if caps.RootsV2 != nil {
			r := *caps.RootsV2
			c.RootsV2 = &r
		} else if caps.Roots.ListChanged {
			c.RootsV2 = &mcp.RootCapabilities{ListChanged: true}
		}
	}
	o.Capabilities = c
	if c.Sampling != nil {
		o.CreateMessageWithToolsHandler = t.onCreateMessage
	}
	if c.Elicitation != nil {
		o.ElicitationHandler = t.onElicit
	}
	return o
}

// newSharedClient returns the client of the shared upstream sessions. It
// answers roots/list only for the caller of a multi round-trip request in
// ctx; other server-initiated requests are refused by its empty
// capabilities.
func (t *Toolset) newSharedClient() *mcp.Client {
	c := mcp.NewClient(&mcp.Implementation{Name: "gatehouse", Version: "0.1.0"}, t.clientOptions(nil, false))
	c.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "roots/list" {
				return next(ctx, method, req)
			}
			st, _ := ctx.Value(callerCtxKey{}).(*callerState)
			if st == nil || st.caller.Handlers.ListRoots == nil {
				// Not the client's own (empty) list: nobody's roots.
				return nil, errNoSessionCaller
			}
			p, _ := req.GetParams().(*mcp.ListRootsParams)
			return st.caller.Handlers.ListRoots(ctx, p)
		}
	})
	return c
}

var errNoSessionCaller = &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
	Message: "roots/list: the gateway forwards server-to-client requests only to a caller with an upstream session of its own (a stateful caller that advertised sampling or elicitation)"}

// ownerOf finds the caller a client-side request belongs to: the caller of
// the request in ctx (a multi round-trip input request), else the owner of
// the dedicated session.
func (t *Toolset) ownerOf(ctx context.Context, sess *mcp.ClientSession) *callerState {
	if st, ok := ctx.Value(callerCtxKey{}).(*callerState); ok {
		return st
	}
	t.fwd.mu.Lock()
	defer t.fwd.mu.Unlock()
	return t.fwd.owners[sess]
}

var errNoCaller = &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "the gateway has no caller to route this request to"}

func (t *Toolset) onCreateMessage(ctx context.Context, r *mcp.CreateMessageWithToolsRequest) (*mcp.CreateMessageWithToolsResult, error) {
	st := t.ownerOf(ctx, r.Session)
	if st == nil || st.caller.Handlers.CreateMessage == nil {
		return nil, errNoCaller
	}
	return st.caller.Handlers.CreateMessage(ctx, r.Params)
}

func (t *Toolset) onElicit(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	st := t.ownerOf(ctx, r.Session)
	if st == nil || st.caller.Handlers.Elicit == nil {
		return nil, errNoCaller
	}
	return st.caller.Handlers.Elicit(ctx, r.Params)
}

// routeProgress delivers an upstream progress notification to the caller
// whose call carries its token, with the caller's own token.
func (t *Toolset) routeProgress(ctx context.Context, params *mcp.ProgressNotificationParams) {
	key, ok := progressKey(params.ProgressToken)
	if !ok {
		return
	}
	t.fwd.mu.Lock()
	route, ok := t.fwd.progress[key]
	t.fwd.mu.Unlock()
	if !ok || route.st.caller.Handlers.Progress == nil {
		return
	}
	p := *params
	p.ProgressToken = route.token
	route.st.caller.Handlers.Progress(ctx, &p)
}

func progressKey(tok any) (string, bool) {
	s, ok := tok.(string)
	return s, ok && strings.HasPrefix(s, "gatehouse/")
}

func (t *Toolset) onResourceUpdated(ctx context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
	if f := t.opts.OnResourceUpdated; f != nil {
		f(ctx, r.Params)
		return
	}
	t.fwd.mu.Lock()
	var targets []*callerState
	if st := t.fwd.owners[r.Session]; st != nil {
		targets = append(targets, st)
	} else {
		for _, st := range t.fwd.subs[r.Params.URI] {
			targets = append(targets, st)
		}
	}
	t.fwd.mu.Unlock()
	for _, st := range targets {
		if h := st.caller.Handlers.ResourceUpdated; h != nil {
			h(ctx, r.Params)
		}
	}
}

// onListChanged re-lists a server's tools (judged by the drift checks,
// then OnChange) and reports the change. A prompts or resources change
// re-lists the server too (coalesced), so its prompts and resource
// templates are judged against their pins and drift is reported; callers
// are told at once, and what they then list is judged as it is listed.
func (t *Toolset) onListChanged(sess *mcp.ClientSession, what ListChange) {
	var c *conn
	for _, x := range t.conns {
		x.mu.Lock()
		if x.session == sess {
			c = x
		}
		x.mu.Unlock()
	}
	if c == nil {
		return // a dedicated session: the shared one tells the same
	}
	if what == ToolsChanged {
		if !t.background(func() { _ = c.reconcile(t.life, false) }) {
			return
		}
	} else {
		c.relistSoon()
	}
	if f := t.opts.OnListChanged; f != nil {
		f(c.name, what)
	}
}

// callerState returns the state of caller, registering it.
func (t *Toolset) callerState(caller *Caller) *callerState {
	if caller == nil {
		return nil
	}
	t.fwd.mu.Lock()
	defer t.fwd.mu.Unlock()
	if caller.released.Load() {
		// A request that outlived its session: served, but through nothing
		// of the caller's own (sessionFor refuses a dedicated one).
		return &callerState{caller: caller, sessions: map[int]*mcp.ClientSession{}, closed: true}
	}
	st := t.fwd.callers[caller.ID]
	if st == nil {
		st = &callerState{caller: caller, sessions: map[int]*mcp.ClientSession{}}
		t.fwd.callers[caller.ID] = st
	}
	return st
}

// Shares reports whether caller's requests go through the shared upstream
// sessions: it asked for no sessions of its own (Caller.Dedicated) and set
// no logging level, and it is not released. A nil caller shares.
func (t *Toolset) Shares(caller *Caller) bool {
	if caller == nil {
		return true
	}
	if caller.released.Load() {
		return false
	}
	t.fwd.mu.Lock()
	st := t.fwd.callers[caller.ID]
	t.fwd.mu.Unlock()
	if st == nil {
		return !caller.Dedicated
	}
	return !st.dedicated()
}

func (st *callerState) dedicated() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.caller.Dedicated || st.level != ""
}

// Release ends a caller: its dedicated upstream sessions close and its
// subscriptions, progress routes and level are forgotten. Unknown IDs are
// ignored.
func (t *Toolset) Release(id string) {
	t.fwd.mu.Lock()
	st := t.fwd.callers[id]
	delete(t.fwd.callers, id)
	if st != nil {
		st.caller.released.Store(true)
	}
	var unsub []string
	if st != nil {
		for tok, r := range t.fwd.progress {
			if r.st == st {
				delete(t.fwd.progress, tok)
			}
		}
		for uri, m := range t.fwd.subs {
			if _, ok := m[id]; ok {
				delete(m, id)
				if len(m) == 0 {
					delete(t.fwd.subs, uri)
					unsub = append(unsub, uri)
				}
			}
		}
	}
	t.fwd.mu.Unlock()
	if st == nil {
		return
	}
	st.mu.Lock()
	st.closed = true
	sessions := st.sessions
	st.sessions = map[int]*mcp.ClientSession{}
	st.mu.Unlock()
	t.fwd.mu.Lock()
	for _, s := range sessions {
		delete(t.fwd.owners, s)
	}
	t.fwd.mu.Unlock()
	for _, s := range sessions {
		_ = s.Close()
	}
	// The last subscriber of a URI on a shared session: unsubscribe
	// upstream, unless someone subscribed meanwhile (see Subscribe).
	for _, uri := range unsub {
		c, _ := t.routeURI(uri)
		if c == nil {
			continue
		}
		c.subMu.Lock()
		t.fwd.mu.Lock()
		again := len(t.fwd.subs[uri]) > 0
		t.fwd.mu.Unlock()
		if sess := c.liveSession(); sess != nil && !again {
			if err := sess.Unsubscribe(t.life, &mcp.UnsubscribeParams{URI: uri}); err != nil {
				t.log.Debug("toolset: unsubscribing upstream", "server", c.name, "err", err)
			}
		}
		c.subMu.Unlock()
	}
}

func (c *conn) liveSession() *mcp.ClientSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.session
}

// sessionFor returns the session a caller's request to c goes through: its
// dedicated one (created now if needed), else the shared one.
func (t *Toolset) sessionFor(ctx context.Context, c *conn, st *callerState) (*mcp.ClientSession, bool, error) {
	// Upstream sessions outlive the caller's request and must not carry
	// its values: the go-sdk's HTTP server puts the caller's negotiated
	// revision in the request context, and its HTTP client sends that as
	// Mcp-Protocol-Version until the upstream session is initialized.
	ctx = valuesFree{ctx}
	if st == nil || !st.dedicated() {
		s, err := c.current(ctx)
		return s, false, err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed {
		return nil, true, &Error{Code: CodeClosed, Server: c.name, Err: errors.New("the caller was released")}
	}
	if s := st.sessions[c.idx]; s != nil {
		return s, true, nil
	}
	if st.client == nil {
		st.client = mcp.NewClient(&mcp.Implementation{Name: "gatehouse", Version: "0.1.0"}, t.clientOptions(st.caller.Capabilities, true))
		// roots/list is the caller's to answer, not the client's own list;
		// elicitation/create goes to the caller unjudged.
		st.client.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				switch method {
				case "roots/list":
					h := st.caller.Handlers.ListRoots
					if h == nil {
						return nil, errNoCaller
					}
					p, _ := req.GetParams().(*mcp.ListRootsParams)
					return h(ctx, p)
				case "elicitation/create":
					// Passed through as sent: the caller's client judges the
					// schema, not ours (the go-sdk client refuses schemas
					// newer clients accept).
					h := st.caller.Handlers.Elicit
					p, _ := req.GetParams().(*mcp.ElicitParams)
					if h == nil || p == nil {
						return nil, errNoCaller
					}
					return h(ctx, p)
				}
				return next(ctx, method, req)
			}
		})
	}
	if err := c.refreshToken(ctx); err != nil {
		return nil, true, err
	}
	cctx, cancel := c.connectContext(ctx)
	defer cancel()
	tr, err := c.transport(cctx)
	if err != nil {
		return nil, true, err
	}
	s, err := st.client.Connect(cctx, &routedTransport{inner: tr, t: t, owner: st}, t.sessionOptions())
	if err != nil {
		return nil, true, fmt.Errorf("connecting: %w", err)
	}
	if st.level != "" {
		if err := s.SetLoggingLevel(cctx, &mcp.SetLoggingLevelParams{Level: st.level}); err != nil {
			t.log.Debug("toolset: setting the log level upstream", "server", c.name, "err", err)
		}
	}
	st.sessions[c.idx] = s
	t.fwd.mu.Lock()
	t.fwd.owners[s] = st
	t.fwd.mu.Unlock()
	return s, true, nil
}

// valuesFree is a context with its parent's deadline and cancellation
// but none of its values.
type valuesFree struct{ context.Context }

func (valuesFree) Value(any) any { return nil }

// dropDedicated forgets a lost dedicated session.
func (t *Toolset) dropDedicated(c *conn, st *callerState, s *mcp.ClientSession) {
	st.mu.Lock()
	if st.sessions[c.idx] == s {
		delete(st.sessions, c.idx)
	}
	st.mu.Unlock()
	t.fwd.mu.Lock()
	delete(t.fwd.owners, s)
	t.fwd.mu.Unlock()
	_ = s.Close()
}

// forward runs op on the caller's session to c, re-establishing a lost
// session once (the shared one through the drift checks).
func (t *Toolset) forward(ctx context.Context, c *conn, st *callerState, op func(*mcp.ClientSession) error) error {
	if t.isClosed() {
		return &Error{Code: CodeClosed}
	}
	if st != nil {
		ctx = context.WithValue(ctx, callerCtxKey{}, st)
	}
	if err := c.refreshToken(ctx); err != nil {
		return &Error{Code: CodeAuthFailed, Server: c.name, Err: err}
	}
	for attempt := 0; ; attempt++ {
		sess, dedicated, err := t.sessionFor(ctx, c, st)
		if err != nil {
			return &Error{Code: CodeConnectionFailed, Server: c.name, Err: err}
		}
		err = op(sess)
		if err == nil || ctx.Err() != nil || attempt > 0 || !sessionLost(err) {
			return err
		}
		t.log.Info("toolset: session lost; reconnecting once", "server", c.name, "dedicated", dedicated, "err", err)
		if dedicated {
			t.dropDedicated(c, st, sess)
			// The server may have restarted: the shared session re-lists
			// and judges its tools before anything else goes out.
			if shared := c.liveSession(); shared != nil {
				if perr := shared.Ping(ctx, nil); perr != nil && sessionLost(perr) {
					if _, rerr := c.reconnect(valuesFree{ctx}, shared); rerr != nil {
						return &Error{Code: CodeConnectionFailed, Server: c.name, Err: fmt.Errorf("reconnecting: %w", rerr)}
					}
				}
			}
			continue
		}
		if _, err := c.reconnect(valuesFree{ctx}, sess); err != nil {
			return &Error{Code: CodeConnectionFailed, Server: c.name, Err: fmt.Errorf("reconnecting: %w", err)}
		}
		t.resubscribe(ctx, c)
	}
}

// resubscribe renews the shared subscriptions of c on its new session.
func (t *Toolset) resubscribe(ctx context.Context, c *conn) {
	t.fwd.mu.Lock()
	var uris []string
	for uri := range t.fwd.subs {
		if m, _ := t.matchTemplateLocked(uri); t.fwd.uris[uri] == c || m == c {
			uris = append(uris, uri)
		}
	}
	t.fwd.mu.Unlock()
	sess := c.liveSession()
	for _, uri := range uris {
		if sess != nil {
			_ = sess.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
		}
	}
}

// newProgressToken registers a route for the caller's progress token and
// returns the token sent upstream, with its release.
func (t *Toolset) newProgressToken(st *callerState, token any) (string, func()) {
	key := "gatehouse/" + strconv.FormatUint(t.fwd.seq.Add(1), 36)
	t.fwd.mu.Lock()
	t.fwd.progress[key] = progressRoute{st: st, token: token}
	t.fwd.mu.Unlock()
	return key, func() {
		t.fwd.mu.Lock()
		delete(t.fwd.progress, key)
		t.fwd.mu.Unlock()
	}
}

// servers returns the conns with a live listing the filter allows.
func (t *Toolset) forwardable(ctx context.Context, allow ServerFilter) ([]*conn, error) {
	if _, err := t.ensure(ctx); err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []*conn
	for i, c := range t.conns {
		if c.skip || c.asleep || !t.listings[i].ok || !allow.allows(c.name) {
			continue
		}
		out = append(out, c)
	}
	return out, nil
}

func (c *conn) capabilities() *mcp.ServerCapabilities {
	s := c.liveSession()
	if s == nil || s.InitializeResult() == nil || s.InitializeResult().Capabilities == nil {
		return &mcp.ServerCapabilities{}
	}
	return s.InitializeResult().Capabilities
}

// Capabilities returns the union of the upstream servers' resources,
// prompts, completions and logging capabilities (what a gateway should
// advertise).
func (t *Toolset) Capabilities(ctx context.Context) (*mcp.ServerCapabilities, error) {
	conns, err := t.forwardable(ctx, nil)
	if err != nil {
		return nil, err
	}
	out := &mcp.ServerCapabilities{}
	for _, c := range conns {
		caps := c.capabilities()
		if caps.Resources != nil {
			if out.Resources == nil {
				out.Resources = &mcp.ResourceCapabilities{ListChanged: true}
			}
			out.Resources.Subscribe = out.Resources.Subscribe || caps.Resources.Subscribe
		}
		if caps.Prompts != nil {
			out.Prompts = &mcp.PromptCapabilities{ListChanged: true}
		}
		if caps.Completions != nil {
			out.Completions = &mcp.CompletionCapabilities{}
		}
		if caps.Logging != nil {
			out.Logging = &mcp.LoggingCapabilities{}
		}
	}
	return out, nil
}

// ListResources lists the resources of every server the filter allows,
// URIs as the servers publish them. A URI published by two servers is
// withheld (both) and logged: nobody shadows anybody. Names, titles and
// descriptions are sanitized. The caller is accepted for symmetry with the
// other forwarded requests; listings do not depend on it.
func (t *Toolset) ListResources(ctx context.Context, _ *Caller, allow ServerFilter) ([]*mcp.Resource, error) {
	out, err := collectListed(ctx, t, allow, func(l *listed) map[*conn][]*mcp.Resource { return l.resources })
	sort.Slice(out, func(i, j int) bool { return out[i].URI < out[j].URI })
	return out, err
}

// ListResourceTemplates lists the resource templates of every allowed
// server.
func (t *Toolset) ListResourceTemplates(ctx context.Context, _ *Caller, allow ServerFilter) ([]*mcp.ResourceTemplate, error) {
	return collectListed(ctx, t, allow, func(l *listed) map[*conn][]*mcp.ResourceTemplate { return l.templates })
}

// ListPrompts lists the prompts of every allowed server under projected
// names (the tools' rules: prefix__name, or the name alone with prefix "").
func (t *Toolset) ListPrompts(ctx context.Context, _ *Caller, allow ServerFilter) ([]*mcp.Prompt, error) {
	out, err := collectListed(ctx, t, allow, func(l *listed) map[*conn][]*mcp.Prompt { return l.prompts })
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, err
}

// collectListed gathers one kind of listing from every server allow lets
// through, in server order.
// listEvery lists every page of one kind of c's items on its shared
// session (a lost session re-established once). On an error it returns
// what was read before it.
func listEvery[T any](ctx context.Context, t *Toolset, c *conn, list func(*mcp.ClientSession) iter.Seq2[T, error]) ([]T, error) {
	var out []T
	err := t.forward(ctx, c, nil, func(s *mcp.ClientSession) error {
		out = out[:0]
		for item, err := range list(s) {
			if err != nil {
				return err
			}
			out = append(out, item)
		}
		return nil
	})
	return out, err
}

func collectListed[T any](ctx context.Context, t *Toolset, allow ServerFilter, pick func(*listed) map[*conn][]T) ([]T, error) {
	conns, err := t.forwardable(ctx, allow)
	if err != nil {
		return nil, err
	}
	all, err := t.listAll(ctx, nil)
	if err != nil {
		return nil, err
	}
	byConn := pick(all)
	var out []T
	for _, c := range conns {
		out = append(out, byConn[c]...)
	}
	return out, nil
}

type listed struct {
	resources map[*conn][]*mcp.Resource
	templates map[*conn][]*mcp.ResourceTemplate
	prompts   map[*conn][]*mcp.Prompt
}

// listAll lists resources, templates and prompts of every live server
// (through the shared sessions) and rebuilds the routing maps. Prompts and
// templates are judged against their server's pins as they are listed:
// only trusted ones are listed and routed; changed ones are remembered for
// their refusal (admit).
func (t *Toolset) listAll(ctx context.Context, _ *callerState) (*listed, error) {
	conns, err := t.forwardable(ctx, nil)
	if err != nil {
		return nil, err
	}
	l := &listed{resources: map[*conn][]*mcp.Resource{}, templates: map[*conn][]*mcp.ResourceTemplate{}, prompts: map[*conn][]*mcp.Prompt{}}
	owner := map[string][]*conn{}
	powner := map[string][]promptRoute{}
	qprompts := map[string]promptRoute{}
	var tmpls, qtmpls []routedTemplate
	var relist []*conn
	for _, c := range conns {
		if c.liveSession() == nil {
			// A woken server is connected on first use: this is one.
			if _, err := c.current(valuesFree{ctx}); err != nil {
				t.log.Debug("toolset: connecting to list", "server", c.name, "err", err)
				continue
			}
		}
		gen := c.judged.Load() // before the listing: a judgement after it makes these routes stale
		caps := c.capabilities()
		pins := t.listingOf(c).items
		unjudged := false
		if caps.Resources != nil {
			rs, _ := listEvery(ctx, t, c, func(s *mcp.ClientSession) iter.Seq2[*mcp.Resource, error] { return s.Resources(ctx, nil) })
			l.resources[c] = make([]*mcp.Resource, 0, len(rs))
			for _, r := range rs {
				cp := *r
				cp.Name, cp.Title, cp.Description = projection.Sanitize(r.Name), projection.Sanitize(r.Title), projection.Sanitize(r.Description)
				l.resources[c] = append(l.resources[c], &cp)
			}
			live, err := listEvery(ctx, t, c, func(s *mcp.ClientSession) iter.Seq2[*mcp.ResourceTemplate, error] {
				return s.ResourceTemplates(ctx, nil)
			})
			if err == nil {
				a := admit(pins[kindTemplate], printsOfItems(c.name, kindTemplate, live, templatePrint, templateID))
				unjudged = unjudged || a.unjudged
				l.templates[c] = nil
				for _, r := range live {
					tm, terr := uritemplate.New(r.URITemplate)
					switch {
					case a.quarantined[r.URITemplate]:
						if terr == nil {
							qtmpls = append(qtmpls, routedTemplate{tmpl: tm, conn: c, gen: gen})
						}
						continue
					case !a.trusted[r.URITemplate]:
						continue
					}
					cp := *r
					cp.Name, cp.Title, cp.Description = projection.Sanitize(r.Name), projection.Sanitize(r.Title), projection.Sanitize(r.Description)
					l.templates[c] = append(l.templates[c], &cp)
					if terr == nil {
						tmpls = append(tmpls, routedTemplate{tmpl: tm, conn: c, gen: gen})
					}
				}
			}
			for _, r := range l.resources[c] {
				owner[r.URI] = append(owner[r.URI], c)
			}
		}
		if caps.Prompts != nil {
			live, err := listEvery(ctx, t, c, func(s *mcp.ClientSession) iter.Seq2[*mcp.Prompt, error] { return s.Prompts(ctx, nil) })
			if err == nil {
				a := admit(pins[kindPrompt], printsOfItems(c.name, kindPrompt, live, promptPrint, promptID))
				unjudged = unjudged || a.unjudged
				l.prompts[c] = nil
				for _, p := range live {
					if a.quarantined[p.Name] {
						qprompts[projection.Name(c.prefix, p.Name)] = promptRoute{conn: c, remote: p.Name, gen: gen}
						continue
					}
					if !a.trusted[p.Name] {
						continue
					}
					cp := *p
					cp.Name = projection.Name(c.prefix, p.Name)
					cp.Title, cp.Description = projection.Sanitize(p.Title), projection.Sanitize(p.Description)
					if len(p.Arguments) > 0 {
						cp.Arguments = make([]*mcp.PromptArgument, len(p.Arguments))
						for i, a := range p.Arguments {
							ac := *a
							ac.Title, ac.Description = projection.Sanitize(a.Title), projection.Sanitize(a.Description)
							cp.Arguments[i] = &ac
						}
					}
					l.prompts[c] = append(l.prompts[c], &cp)
					powner[cp.Name] = append(powner[cp.Name], promptRoute{conn: c, remote: p.Name, gen: gen})
				}
			}
		}
		if unjudged {
			relist = append(relist, c)
		}
	}
	for _, c := range relist {
		c.relistSoon()
	}
	uris := map[string]*conn{}
	for uri, cs := range owner {
		if len(cs) == 1 {
			uris[uri] = cs[0]
			continue
		}
		t.log.Warn("toolset: resource URI published by several servers; withheld from all", "uri", pin.SanitizeName(uri), "servers", len(cs))
		for _, c := range cs {
			l.resources[c] = withoutURI(l.resources[c], uri)
		}
	}
	prompts := map[string]promptRoute{}
	for name, rs := range powner {
		if len(rs) == 1 {
			prompts[name] = rs[0]
			continue
		}
		t.log.Warn("toolset: prompt name projected by several servers; withheld from all", "prompt", pin.SanitizeName(name))
		for _, r := range rs {
			l.prompts[r.conn] = withoutPrompt(l.prompts[r.conn], name)
		}
	}
	t.fwd.mu.Lock()
	t.fwd.uris, t.fwd.templates, t.fwd.prompts = uris, tmpls, prompts
	t.fwd.qprompts, t.fwd.qtemplates = qprompts, qtmpls
	t.fwd.mu.Unlock()
	return l, nil
}

func withoutURI(rs []*mcp.Resource, uri string) []*mcp.Resource {
	return slices.DeleteFunc(slices.Clone(rs), func(r *mcp.Resource) bool { return r.URI == uri })
}

func withoutPrompt(ps []*mcp.Prompt, name string) []*mcp.Prompt {
	return slices.DeleteFunc(slices.Clone(ps), func(p *mcp.Prompt) bool { return p.Name == name })
}

// matchTemplateLocked returns the server of the templates uri matches
// (nil when none, or several servers'), and whether one of them is stale
// (see promptRoute.fresh).
func (t *Toolset) matchTemplateLocked(uri string) (found *conn, stale bool) {
	for _, rt := range t.fwd.templates {
		if rt.tmpl.Regexp().MatchString(uri) {
			stale = stale || !rt.fresh()
			if found != nil && found != rt.conn {
				return nil, stale // ambiguous: nobody
			}
			found = rt.conn
		}
	}
	return found, stale
}

// routeURI returns the server of a resource URI from the last listing, and
// whether it was routed by a stale template.
func (t *Toolset) routeURI(uri string) (*conn, bool) {
	t.fwd.mu.Lock()
	defer t.fwd.mu.Unlock()
	if c := t.fwd.uris[uri]; c != nil {
		return c, false
	}
	return t.matchTemplateLocked(uri)
}

// resolveURI routes a URI, listing again once when it is unknown or was
// routed by a template listed before its server was last judged.
func (t *Toolset) resolveURI(ctx context.Context, uri string, allow ServerFilter) (*conn, error) {
	c, stale := t.routeURI(uri)
	if c == nil || stale {
		if _, err := t.listAll(ctx, nil); err != nil {
			return nil, err
		}
		c, _ = t.routeURI(uri)
	}
	if c == nil {
		if q, raw := t.quarantinedTemplate(uri, false); q != nil && allow.allows(q.name) {
			return nil, quarantinedItem(q, kindTemplate, raw)
		}
	}
	if c == nil || !allow.allows(c.name) {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	return c, nil
}

// quarantinedTemplate returns the server and URI template of a quarantined
// resource template that uri matches (or, with raw, that is uri).
func (t *Toolset) quarantinedTemplate(uri string, raw bool) (*conn, string) {
	t.fwd.mu.Lock()
	defer t.fwd.mu.Unlock()
	for _, rt := range t.fwd.qtemplates {
		if raw && rt.tmpl.Raw() == uri || !raw && rt.tmpl.Regexp().MatchString(uri) {
			return rt.conn, rt.tmpl.Raw()
		}
	}
	return nil, ""
}

// ReadResource reads a resource from the server that publishes its URI
// (or a template matching it). An unknown or hidden URI gets the
// resource-not-found error.
func (t *Toolset) ReadResource(ctx context.Context, caller *Caller, params *mcp.ReadResourceParams, allow ServerFilter) (*mcp.ReadResourceResult, error) {
	c, err := t.resolveURI(ctx, params.URI, allow)
	if err != nil {
		return nil, err
	}
	var res *mcp.ReadResourceResult
	err = t.forward(ctx, c, t.callerState(caller), func(s *mcp.ClientSession) error {
		p := *params
		p.Meta = forwardMeta(params.Meta)
		var err error
		res, err = s.ReadResource(ctx, &p)
		return err
	})
	return res, err
}

// Subscribe subscribes the caller to a resource's updates. On a shared
// session one upstream subscription serves every subscriber, and updates
// are fanned out to them.
func (t *Toolset) Subscribe(ctx context.Context, caller *Caller, uri string, allow ServerFilter) error {
	c, err := t.resolveURI(ctx, uri, allow)
	if err != nil {
		return err
	}
	st := t.callerState(caller)
	shared := st == nil || !st.dedicated()
	if shared {
		// On the shared session, subscribing and the last unsubscribing
		// of a server's URIs take turns: an unsubscribe decided before
		// this subscribe cannot reach the server after it.
		c.subMu.Lock()
		defer c.subMu.Unlock()
	}
	if shared && st != nil {
		t.fwd.mu.Lock()
		if !caller.released.Load() { // Release sets it under fwd.mu
			m := t.fwd.subs[uri]
			if m == nil {
				m = map[string]*callerState{}
				t.fwd.subs[uri] = m
			}
			m[caller.ID] = st
		}
		t.fwd.mu.Unlock()
	}
	return t.forward(ctx, c, st, func(s *mcp.ClientSession) error {
		if err := c.canPush(s); err != nil {
			return err
		}
		return s.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
	})
}

// ErrNoPush is returned by Subscribe when the upstream cannot deliver
// resource updates: a stateless streamable HTTP server spoken to over
// 2025-11-25 has no session and so no stream to send them on.
var ErrNoPush = &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
	Message: "resources/subscribe: the upstream server is stateless and was negotiated at 2025-11-25, so it cannot send resource updates (set upstreamProtocol: auto to use 2026-07-28 subscriptions)"}

// canPush reports whether s can receive server-initiated messages.
func (c *conn) canPush(s *mcp.ClientSession) error {
	if c.srv.transport != nil || c.srv.Config.Type != plugin.TransportStreamableHTTP {
		return nil
	}
	if ir := s.InitializeResult(); s.ID() == "" && ir != nil && ir.ProtocolVersion < "2026-07-28" {
		return ErrNoPush
	}
	return nil
}

// Unsubscribe ends the caller's subscription (upstream too when it was the
// last subscriber of a shared session).
func (t *Toolset) Unsubscribe(ctx context.Context, caller *Caller, uri string, allow ServerFilter) error {
	c, err := t.resolveURI(ctx, uri, allow)
	if err != nil {
		return err
	}
	st := t.callerState(caller)
	shared := st == nil || !st.dedicated()
	if shared {
		c.subMu.Lock() // see Subscribe
		defer c.subMu.Unlock()
	}
	if shared && st != nil {
		t.fwd.mu.Lock()
		m := t.fwd.subs[uri]
		delete(m, caller.ID)
		last := len(m) == 0
		if last {
			delete(t.fwd.subs, uri)
		}
		t.fwd.mu.Unlock()
		if !last {
			return nil
		}
	}
	return t.forward(ctx, c, st, func(s *mcp.ClientSession) error {
		return s.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
	})
}

// resolvePrompt routes a projected prompt name, listing again once when
// it is unknown. Unknown and hidden names get the same error.
func (t *Toolset) resolvePrompt(ctx context.Context, name string, allow ServerFilter) (promptRoute, error) {
	get := func() (promptRoute, bool) {
		t.fwd.mu.Lock()
		defer t.fwd.mu.Unlock()
		r, ok := t.fwd.prompts[name]
		return r, ok
	}
	r, ok := get()
	if !ok || !r.fresh() {
		if _, err := t.listAll(ctx, nil); err != nil {
			return promptRoute{}, err
		}
		r, ok = get()
	}
	if !ok {
		t.fwd.mu.Lock()
		q, quarantined := t.fwd.qprompts[name]
		t.fwd.mu.Unlock()
		if quarantined && allow.allows(q.conn.name) {
			return promptRoute{}, quarantinedItem(q.conn, kindPrompt, q.remote)
		}
	}
	if !ok || !allow.allows(r.conn.name) {
		return promptRoute{}, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q", name)}
	}
	return r, nil
}

// GetPrompt gets a prompt by its projected name.
func (t *Toolset) GetPrompt(ctx context.Context, caller *Caller, params *mcp.GetPromptParams, allow ServerFilter) (*mcp.GetPromptResult, error) {
	r, err := t.resolvePrompt(ctx, params.Name, allow)
	if err != nil {
		return nil, err
	}
	var res *mcp.GetPromptResult
	err = t.forward(ctx, r.conn, t.callerState(caller), func(s *mcp.ClientSession) error {
		p := *params
		p.Name = r.remote
		p.Meta = forwardMeta(params.Meta)
		var err error
		res, err = s.GetPrompt(ctx, &p)
		return err
	})
	return res, err
}

// Complete forwards completion/complete to the server of the prompt (by
// projected name) or resource template (by URI template) it refers to.
func (t *Toolset) Complete(ctx context.Context, caller *Caller, params *mcp.CompleteParams, allow ServerFilter) (*mcp.CompleteResult, error) {
	if params == nil || params.Ref == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "missing ref"}
	}
	p := *params
	p.Meta = forwardMeta(params.Meta)
	ref := *params.Ref
	p.Ref = &ref
	var c *conn
	switch ref.Type {
	case "ref/prompt":
		r, err := t.resolvePrompt(ctx, ref.Name, allow)
		if err != nil {
			return nil, err
		}
		c, ref.Name = r.conn, r.remote
	case "ref/resource":
		var stale bool
		c, stale = t.templateOwner(ref.URI)
		if c == nil || stale {
			if _, err := t.listAll(ctx, nil); err != nil {
				return nil, err
			}
			c, _ = t.templateOwner(ref.URI)
		}
		if c == nil {
			if q, raw := t.quarantinedTemplate(ref.URI, true); q != nil && allow.allows(q.name) {
				return nil, quarantinedItem(q, kindTemplate, raw)
			}
		}
		if c == nil {
			// A concrete URI in the ref: route it like a read.
			var err error
			if c, err = t.resolveURI(ctx, ref.URI, allow); err != nil {
				return nil, err
			}
		}
		if !allow.allows(c.name) {
			return nil, mcp.ResourceNotFoundError(ref.URI)
		}
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown ref type %q", ref.Type)}
	}
	var res *mcp.CompleteResult
	err := t.forward(ctx, c, t.callerState(caller), func(s *mcp.ClientSession) error {
		var err error
		res, err = s.Complete(ctx, &p)
		return err
	})
	return res, err
}

// templateOwner returns the server of a URI template (nil when none, or
// several servers'), and whether its route is stale.
func (t *Toolset) templateOwner(tmpl string) (found *conn, stale bool) {
	t.fwd.mu.Lock()
	defer t.fwd.mu.Unlock()
	for _, rt := range t.fwd.templates {
		if rt.tmpl.Raw() == tmpl {
			stale = stale || !rt.fresh()
			if found != nil && found != rt.conn {
				return nil, stale
			}
			found = rt.conn
		}
	}
	return found, stale
}

// SetLoggingLevel sets the caller's log level. The caller then gets
// dedicated upstream sessions (created with this level; existing ones are
// told), so the log messages of its requests reach it and no one else.
func (t *Toolset) SetLoggingLevel(ctx context.Context, caller *Caller, level mcp.LoggingLevel, allow ServerFilter) error {
	st := t.callerState(caller)
	if st == nil {
		return nil
	}
	st.mu.Lock()
	st.level = level
	st.mu.Unlock()
	conns, err := t.forwardable(ctx, allow)
	if err != nil {
		return err
	}
	for _, c := range conns {
		if c.capabilities().Logging == nil {
			continue
		}
		err := t.forward(ctx, c, st, func(s *mcp.ClientSession) error {
			return s.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: level})
		})
		if err != nil {
			t.log.Debug("toolset: setting the log level upstream", "server", c.name, "err", err)
		}
	}
	return nil
}

// forwardMeta copies _meta without reserved keys and progressToken.
func forwardMeta(m mcp.Meta) mcp.Meta {
	var out mcp.Meta
	for k, v := range m {
		if strings.HasPrefix(k, reservedMetaPrefix) || k == "progressToken" {
			continue
		}
		if out == nil {
			out = mcp.Meta{}
		}
		out[k] = v
	}
	return out
}
