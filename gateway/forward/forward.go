// Package forward carries everything of MCP beyond tools through the
// gateway: resources and resource templates (list, read, subscribe and
// updates), prompts (list, get), completion, logging levels and messages,
// progress, list_changed, and the server-to-client requests (sampling,
// elicitation, roots) routed back to the calling session that caused them.
//
// A Forwarder is a receiving middleware on the gateway's go-sdk server plus
// the per-session state the toolset needs to route upstream traffic: each
// calling session is a toolset.Caller. A session that can answer
// server-initiated requests (it advertised sampling or elicitation on a
// stateful revision) or that set a logging level gets upstream sessions of
// its own; the others share one per server.
//
// Authorization: a caller sees the resources, templates and prompts of a
// server when it may see at least one tool of that server (Options.Visible).
// Resource URIs are global identifiers and are not renamed: the toolset
// routes them by the map URI -> server of the last listing (then by
// template), and a URI two servers publish is withheld from both. Prompts
// are projected like tools (prefix__name, or the name alone with prefix
// "").
package forward

//lint:file-ignore SA1019 forwarding sampling, elicitation, roots and logging (deprecated by SEP-2577, still in 2025-11-25) is this file's job.

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/toolset"
)

// Options configure a Forwarder.
type Options struct {
	// Toolset is the gateway's toolset.
	Toolset *toolset.Toolset
	// Subject returns the caller's subject for a request (local: the
	// stdio server), or ok=false when the caller cannot be placed.
	Subject func(ctx context.Context, req mcp.Request, local bool) (subject string, ok bool)
	// Visible reports whether subject may see the resources and prompts
	// of server. Nil: every server.
	Visible func(server, subject string) bool
	// Logger receives debug logs. Nil discards them.
	Logger *slog.Logger
	// Limit, when set, is asked before a request that reaches an upstream
	// on the caller's behalf (resources/read, resources/subscribe,
	// prompts/get, completion/complete) is forwarded; an error refuses it
	// and is the answer. Lists are not limited (as tools/list).
	Limit func(ctx context.Context, subject, method string) error
	// Stateless tells that the HTTP server serves without sessions
	// (config http.stateless): each request is a session of its own, so
	// no HTTP caller gets upstream sessions of its own, whatever it
	// advertises or asks (logging/setLevel).
	Stateless bool
}

// Forwarder forwards non-tool MCP traffic. Make one with New.
type Forwarder struct {
	o   Options
	log *slog.Logger
	seq atomic.Uint64

	mu       sync.Mutex
	sessions map[*mcp.ServerSession]*session
	byID     map[string]*session // stateful HTTP sessions by Mcp-Session-Id
	servers  []*mcp.Server
}

// session is one calling session.
type session struct {
	ss     *mcp.ServerSession
	caller *toolset.Caller
	mu     sync.Mutex
	active map[uint64]context.Context // requests being served, for routing
	local  bool                       // served by the stdio server
	// stateless: the session lasts one request (http.stateless, or a
	// 2026-07-28 caller); nothing upstream is kept for it.
	stateless bool
	userID    string       // the token's user on the session's first request
	protocol  string       // the negotiated revision
	toolsSeen bool         // tools/list or tools/call went through the go-sdk
	lastSeen  atomic.Int64 // Unix ns of the last request the go-sdk served
}

// New returns a Forwarder.
func New(o Options) *Forwarder {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Forwarder{o: o, log: log, sessions: map[*mcp.ServerSession]*session{}, byID: map[string]*session{}}
}

// Setup adds the forwarding middleware to s. local marks the stdio
// server.
func (f *Forwarder) Setup(s *mcp.Server, local bool) {
	f.mu.Lock()
	f.servers = append(f.servers, s)
	f.mu.Unlock()
	s.AddReceivingMiddleware(f.middleware(local))
}

// ServerOptions sets, in so, the handlers the go-sdk needs to advertise and
// track subscriptions and completion on a server the Forwarder serves, and
// returns so.
func (f *Forwarder) ServerOptions(so *mcp.ServerOptions) *mcp.ServerOptions {
	// The go-sdk grants subscriptions (resources/subscribe and, on
	// 2026-07-28, subscriptions/listen) and list_changed listening only
	// for capabilities it believes it has; the gateway registers none of
	// the upstreams' resources or prompts, so it declares them here. What
	// callers see is the upstreams' union (advertise).
	caps := &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}}
	if so.Capabilities != nil {
		c := *so.Capabilities
		caps = &c
	}
	if caps.Resources == nil {
		caps.Resources = &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true}
	}
	if caps.Prompts == nil {
		caps.Prompts = &mcp.PromptCapabilities{ListChanged: true}
	}
	so.Capabilities = caps
	so.SubscribeHandler = func(ctx context.Context, req *mcp.SubscribeRequest) error {
		sess, allow := f.callerOf(ctx, req, f.isLocal(req))
		if err := f.limit(ctx, req, f.isLocal(req), "resources/subscribe"); err != nil {
			return err
		}
		return f.o.Toolset.Subscribe(ctx, sess.caller, req.Params.URI, allow)
	}
	so.UnsubscribeHandler = func(ctx context.Context, req *mcp.UnsubscribeRequest) error {
		sess, allow := f.callerOf(ctx, req, f.isLocal(req))
		return f.o.Toolset.Unsubscribe(ctx, sess.caller, req.Params.URI, allow)
	}
	so.CompletionHandler = func(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
		sess, allow := f.callerOf(ctx, req, f.isLocal(req))
		if err := f.limit(ctx, req, f.isLocal(req), "completion/complete"); err != nil {
			return nil, err
		}
		return f.o.Toolset.Complete(ctx, sess.caller, req.Params, allow)
	}
	return so
}

// OnListChanged tells every session that a server's resources or prompts
// changed (wire it to toolset.Options.OnListChanged). Tools are told by
// the gateway's refresh after the drift checks.
func (f *Forwarder) OnListChanged(_ string, what toolset.ListChange) {
	f.mu.Lock()
	servers := append([]*mcp.Server(nil), f.servers...)
	f.mu.Unlock()
	for _, s := range servers {
		// The go-sdk announces list changes when its registry changes; a
		// placeholder added and removed at once is never listed (the
		// middleware answers lists) but makes it tell every session.
		switch what {
		case toolset.ResourcesChanged:
			s.AddResource(&mcp.Resource{URI: placeholderURI, Name: "placeholder"}, placeholderRead)
			s.RemoveResources(placeholderURI)
		case toolset.PromptsChanged:
			s.AddPrompt(&mcp.Prompt{Name: placeholderPrompt}, placeholderPrompts)
			s.RemovePrompts(placeholderPrompt)
		}
	}
}

const (
	placeholderURI    = "gatehouse:placeholder"
	placeholderPrompt = "gatehouse__placeholder"
)

func placeholderRead(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	return nil, mcp.ResourceNotFoundError(placeholderURI)
}

func placeholderPrompts(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	return &mcp.GetPromptResult{}, nil
}

// OnResourceUpdated fans an upstream update out to the sessions subscribed
// to its URI (wire it to toolset.Options.OnResourceUpdated).
func (f *Forwarder) OnResourceUpdated(ctx context.Context, p *mcp.ResourceUpdatedNotificationParams) {
	f.mu.Lock()
	servers := append([]*mcp.Server(nil), f.servers...)
	f.mu.Unlock()
	for _, s := range servers {
		_ = s.ResourceUpdated(context.WithoutCancel(ctx), p)
	}
}

// Begin registers a request being served for its session (so upstream
// traffic about it travels on the request's own stream) and returns the
// session's caller and the function that ends the registration. Call it
// around tools/call.
func (f *Forwarder) Begin(ctx context.Context, req mcp.Request) (*toolset.Caller, func()) {
	sess := f.session(req)
	if sess == nil {
		return nil, func() {}
	}
	id := f.seq.Add(1)
	sess.mu.Lock()
	sess.active[id] = ctx
	sess.mu.Unlock()
	return sess.caller, func() {
		sess.mu.Lock()
		delete(sess.active, id)
		sess.mu.Unlock()
	}
}

// routeCtx is the context upstream traffic for sess is sent with: the
// context of a request of this session being served (its response stream),
// else a background one (the session's standalone stream).
func (sess *session) routeCtx(ctx context.Context) context.Context {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	var best context.Context
	var bestID uint64
	for id, c := range sess.active {
		if c.Err() == nil && id >= bestID {
			best, bestID = c, id
		}
	}
	if best != nil {
		return best
	}
	return context.WithoutCancel(ctx)
}

// session returns the state of the request's session, making it on first
// sight (the middleware sees every request first and says whether it is
// the stdio server's: sessionOf).
func (f *Forwarder) session(req mcp.Request) *session { return f.sessionOf(req, false) }

func (f *Forwarder) sessionOf(req mcp.Request, local bool) *session {
	ss, _ := req.GetSession().(*mcp.ServerSession)
	if ss == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if s := f.sessions[ss]; s != nil {
		return s
	}
	s := &session{ss: ss, active: map[uint64]context.Context{}, local: local, stateless: f.o.Stateless && !local}
	caller := &toolset.Caller{ID: "s" + strconv.FormatUint(f.seq.Add(1), 36)}
	ip := ss.InitializeParams()
	if ip == nil || ip.ProtocolVersion >= "2026-07-28" {
		s.stateless = true
	}
	if ip != nil {
		s.protocol = ip.ProtocolVersion
	}
	if ex := req.GetExtra(); ex != nil && ex.TokenInfo != nil {
		s.userID = ex.TokenInfo.UserID
	}
	if ip != nil && ip.Capabilities != nil && !s.stateless {
		caps := ip.Capabilities
		caller.Capabilities = caps
		// Server-initiated requests reach a stateful caller only through an
		// upstream session of its own.
		caller.Dedicated = caps.Sampling != nil || caps.Elicitation != nil
	}
	caller.Handlers = toolset.CallerHandlers{
		CreateMessage: func(ctx context.Context, p *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error) {
			return ss.CreateMessageWithTools(s.routeCtx(ctx), p)
		},
		Elicit: func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
			return ss.Elicit(s.routeCtx(ctx), p)
		},
		ListRoots: func(ctx context.Context, p *mcp.ListRootsParams) (*mcp.ListRootsResult, error) {
			return ss.ListRoots(s.routeCtx(ctx), p)
		},
		Log: func(ctx context.Context, p *mcp.LoggingMessageParams) {
			_ = ss.Log(s.routeCtx(ctx), p)
		},
		Progress: func(ctx context.Context, p *mcp.ProgressNotificationParams) {
			_ = ss.NotifyProgress(s.routeCtx(ctx), p)
		},
	}
	s.caller = caller
	f.sessions[ss] = s
	id := ss.ID()
	if id != "" && !s.stateless && !local {
		f.byID[id] = s
	}
	go func() {
		_ = ss.Wait()
		f.mu.Lock()
		delete(f.sessions, ss)
		if f.byID[id] == s {
			delete(f.byID, id)
		}
		f.mu.Unlock()
		f.o.Toolset.Release(caller.ID)
	}()
	return s
}

// callerOf returns the request's session and the server filter of its
// subject.
func (f *Forwarder) callerOf(ctx context.Context, req mcp.Request, local bool) (*session, toolset.ServerFilter) {
	sess := f.session(req)
	if sess == nil {
		sess = &session{caller: nil, active: map[uint64]context.Context{}}
	}
	subject, ok := "", true
	if f.o.Subject != nil {
		subject, ok = f.o.Subject(ctx, req, local)
	}
	allow := func(server string) bool {
		return ok && (f.o.Visible == nil || f.o.Visible(server, subject))
	}
	return sess, allow
}

// limit asks Options.Limit about a request of the caller's subject.
func (f *Forwarder) limit(ctx context.Context, req mcp.Request, local bool, method string) error {
	if f.o.Limit == nil {
		return nil
	}
	subject, ok := "", true
	if f.o.Subject != nil {
		subject, ok = f.o.Subject(ctx, req, local)
	}
	if !ok {
		return nil // an unplaced caller sees nothing: the request fails as for an unknown name
	}
	return f.o.Limit(ctx, subject, method)
}

// isLocal reports whether the request's session is served over stdio.
func (f *Forwarder) isLocal(req mcp.Request) bool {
	sess := f.session(req)
	if sess == nil {
		return false
	}
	sess.mu.Lock()
	defer sess.mu.Unlock()
	return sess.local
}

// Direct is what the gateway's raw path needs of a calling session.
type Direct struct {
	// Caller is the session's toolset caller.
	Caller *toolset.Caller
	// UserID is the verified token's user the session was opened with
	// ("" without auth): a request with another token is not the
	// session's.
	UserID string
	// ProtocolVersion is the revision the session asked for in initialize
	// (the one its requests carry once negotiated).
	ProtocolVersion string
	// LastSeen is when the go-sdk last served a request of the session
	// (its idle timer runs from there).
	LastSeen time.Time
}

// Direct returns the stateful HTTP session id when its tools/call requests
// may bypass the go-sdk's server: the session is initialized and has
// listed or called tools through it, is not the stdio one, keeps state
// across requests (a revision before 2026-07-28, not http.stateless), and
// has no upstream sessions of its own (it advertised neither sampling nor
// elicitation and set no logging level), so nothing upstream can need to
// reach it during a call. ok=false for any other or unknown session.
func (f *Forwarder) Direct(id string) (Direct, bool) {
	f.mu.Lock()
	s := f.byID[id]
	f.mu.Unlock()
	if s == nil {
		return Direct{}, false
	}
	s.mu.Lock()
	ok := s.toolsSeen && !s.local && !s.stateless
	s.mu.Unlock()
	if !ok || !f.o.Toolset.Shares(s.caller) {
		return Direct{}, false
	}
	return Direct{Caller: s.caller, UserID: s.userID, ProtocolVersion: s.protocol, LastSeen: time.Unix(0, s.lastSeen.Load())}, true
}
