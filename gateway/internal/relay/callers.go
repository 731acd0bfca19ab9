package relay

//lint:file-ignore SA1019 relaying sampling, elicitation, roots and logging (deprecated by SEP-2577, still in 2025-11-25) is this package's job.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gatehouse-dev/gatehouse/gateway/internal/relay/internal/upsub"
	"github.com/gatehouse-dev/gatehouse/toolset"
)

// Caller is one calling session the relay forwards for: the relay makes
// one per MCP session it serves (Begin, Direct hand it out).
//
// A caller that can answer server-initiated requests (it advertised
// sampling or elicitation on a stateful revision, or set a logging level)
// gets its own upstream session per server, created on first use,
// advertising the same client capabilities: whatever that upstream session
// sends (sampling, elicitation, roots, log messages) belongs to this
// caller. Such a session is judged against the server's trusted contracts
// before anything goes through it, and again when it announces a changed
// list (toolset.Upstream.Connect): one that publishes a trusted tool with
// another contract is refused (quarantined), and its drift quarantines the
// tool for every caller. Other callers share the server's one session, and what a shared
// session sends is routed by what identifies its caller: progress tokens
// (rewritten per call), resource subscriptions, and the context of a multi
// round-trip request.
type Caller struct {
	id           string
	capabilities *mcp.ClientCapabilities
	dedicated    bool
	handlers     handlers
	released     atomic.Bool // by release: a late request registers nothing
	// takesInput: the caller speaks 2026-07-28 and answers a server's
	// input requests itself, for the capabilities inputCaps (its
	// request's _meta) announces (input.go).
	takesInput bool
	inputCaps  *mcp.ClientCapabilities
	placed     atomic.Pointer[placement] // its subject, for the caps (place)
}

// handlers deliver upstream traffic to a caller's session. Each gets the
// context of the upstream message (for a multi round-trip request, the
// context of the caller's own request).
type handlers struct {
	createMessage func(context.Context, *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error)
	elicit        func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error)
	listRoots     func(context.Context, *mcp.ListRootsParams) (*mcp.ListRootsResult, error)
	log           func(context.Context, *mcp.LoggingMessageParams)
	progress      func(context.Context, *mcp.ProgressNotificationParams)
	// updated tells the caller's session alone of a resource update.
	updated func(*mcp.ResourceUpdatedNotificationParams)
}

// callerState is what the relay keeps for a caller that made a request.
type callerState struct {
	caller   *Caller
	client   *mcp.Client
	mu       sync.Mutex
	sessions map[*toolset.Upstream]*mcp.ClientSession
	level    mcp.LoggingLevel
	closed   bool
	held     *placement                 // whose slots its sessions hold (acquire)
	capped   map[*toolset.Upstream]bool // servers a cap kept it from (refused)
	// subs are the caller's subscriptions held on its own sessions (URI ->
	// server and session; see subscribe).
	subs map[string]ownSub
}

// ownSub is a subscription held on a caller's own upstream session.
type ownSub struct {
	up   *toolset.Upstream
	sess *mcp.ClientSession
}

type callerCtxKey struct{}

// errNotAnnounced answers a server's request, on a caller's own session,
// of a capability the caller did not announce (the session announces what
// the relay routes: newDedicatedClient).
func errNotAnnounced(capability string) *jsonrpc.Error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "the calling client did not announce the " + capability + " capability"}
}

// sharedMiddleware answers, on the shared sessions, the server-to-client
// requests of a call that carries its caller in its context (a multi
// round-trip request): roots/list goes to that caller. Everything else
// goes on (to the toolset's refusal). It also sees the acknowledgements
// of subscription streams (upsub.Book waits for them).
func (r *Relay) sharedMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "notifications/subscriptions/acknowledged" {
			s, _ := req.GetSession().(*mcp.ClientSession)
			p, _ := req.GetParams().(*mcp.SubscriptionsAcknowledgedParams)
			r.ups.Acknowledged(s, p)
		}
		if method != "roots/list" {
			return next(ctx, method, req)
		}
		st, _ := ctx.Value(callerCtxKey{}).(*callerState)
		if st == nil || st.caller.handlers.listRoots == nil {
			return next(ctx, method, req)
		}
		p, _ := req.GetParams().(*mcp.ListRootsParams)
		return st.caller.handlers.listRoots(ctx, p)
	}
}

// newDedicatedClient returns the client of a caller's own upstream
// sessions. It announces what the shared sessions announce (the
// capabilities the relay routes: RoutableCapabilities), so that a server
// lists on it what it lists on the shared session (a server may list tools
// by the client's capabilities: a narrower listing would read as drift),
// and answers the server's requests by the caller: those of a capability
// the caller announced go to it; the others are refused.
func (r *Relay) newDedicatedClient(st *callerState) *mcp.Client {
	caps := st.caller.capabilities
	has := NeedsOf(caps)
	c := &mcp.ClientCapabilities{}
	if r.caps != nil {
		cp := *r.caps
		c = &cp
	}
	if caps != nil {
		c.Experimental = caps.Experimental
	}
	o := &mcp.ClientOptions{
		// Progress and log messages are routed as they are read (the
		// toolset's tap), not by the go-sdk's handlers.
		Logger:       r.log,
		Capabilities: c,
		// A caller with sessions of its own holds its subscriptions there
		// (subscribe): an update on one reaches that caller alone, when it
		// holds a subscription to the URI on that session and the server
		// publishes the URI. Anything else is dropped.
		ResourceUpdatedHandler: func(ctx context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			if h := r.ownerOf(ctx, req.Session); h != nil {
				r.ownUpdate(h, req.Session, req.Params)
			}
		},
		// A changed list has the session judged again (toolset.Upstream.
		// Connect reads the announcement as it is read); these ask for the
		// announcements, which a server at 2026-07-28 sends only to a
		// session subscribed to them.
		ToolListChangedHandler:     func(context.Context, *mcp.ToolListChangedRequest) {},
		PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) {},
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) {},
	}
	if c.Sampling != nil {
		o.CreateMessageWithToolsHandler = func(ctx context.Context, req *mcp.CreateMessageWithToolsRequest) (*mcp.CreateMessageWithToolsResult, error) {
			return askSampling(ctx, r.ownerOf(ctx, req.Session), req.Params)
		}
	}
	if c.Elicitation != nil {
		// Multi round-trip input requests reach the handler directly.
		o.ElicitationHandler = func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return askElicitation(ctx, r.ownerOf(ctx, req.Session), req.Params)
		}
	}
	cl := mcp.NewClient(&mcp.Implementation{Name: "gatehouse", Version: "0.1.0"}, o)
	// roots/list is the caller's to answer, not the client's own list;
	// elicitation/create goes to the caller unjudged.
	cl.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			switch method {
			case "notifications/subscriptions/acknowledged":
				s, _ := req.GetSession().(*mcp.ClientSession)
				p, _ := req.GetParams().(*mcp.SubscriptionsAcknowledgedParams)
				r.ups.Acknowledged(s, p)
			case "roots/list":
				h := st.caller.handlers.listRoots
				if h == nil || has&NeedsRoots == 0 {
					return nil, errNotAnnounced("roots")
				}
				p, _ := req.GetParams().(*mcp.ListRootsParams)
				return h(ctx, p)
			case "elicitation/create":
				// Passed through as sent: the caller's client judges the
				// schema, not ours (the go-sdk client refuses schemas
				// newer clients accept).
				h := st.caller.handlers.elicit
				p, _ := req.GetParams().(*mcp.ElicitParams)
				if h == nil || p == nil || has&NeedsElicitation == 0 {
					return nil, errNotAnnounced("elicitation")
				}
				return h(ctx, p)
			}
			return next(ctx, method, req)
		}
	})
	return cl
}

// askSampling asks st's caller (nil: none) to sample, when it announced
// sampling.
func askSampling(ctx context.Context, st *callerState, p *mcp.CreateMessageWithToolsParams) (*mcp.CreateMessageWithToolsResult, error) {
	if st == nil || st.caller.handlers.createMessage == nil || NeedsOf(st.caller.capabilities)&NeedsSampling == 0 {
		return nil, errNotAnnounced("sampling")
	}
	return st.caller.handlers.createMessage(ctx, p)
}

// askElicitation asks st's caller (nil: none) for input, when it
// announced elicitation.
func askElicitation(ctx context.Context, st *callerState, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	if st == nil || st.caller.handlers.elicit == nil || NeedsOf(st.caller.capabilities)&NeedsElicitation == 0 {
		return nil, errNotAnnounced("elicitation")
	}
	return st.caller.handlers.elicit(ctx, p)
}

// ownerOf finds the caller a client-side request belongs to: the caller of
// the request in ctx (a multi round-trip input request), else the owner of
// the dedicated session.
func (r *Relay) ownerOf(ctx context.Context, sess *mcp.ClientSession) *callerState {
	if st, ok := ctx.Value(callerCtxKey{}).(*callerState); ok {
		return st
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.owners[sess]
}

// callerState returns the state of caller, registering it.
func (r *Relay) callerState(caller *Caller) *callerState {
	if caller == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if caller.released.Load() {
		// A request that outlived its session: served, but through nothing
		// of the caller's own (sessionFor refuses a dedicated one).
		return &callerState{caller: caller, sessions: map[*toolset.Upstream]*mcp.ClientSession{}, closed: true}
	}
	st := r.callers[caller.id]
	if st == nil {
		st = &callerState{caller: caller, sessions: map[*toolset.Upstream]*mcp.ClientSession{}}
		r.callers[caller.id] = st
	}
	return st
}

// shares reports whether caller's requests go through the shared upstream
// sessions: it asked for no sessions of its own and set no logging level,
// and it is not released. A nil caller shares.
func (r *Relay) shares(caller *Caller) bool {
	if caller == nil {
		return true
	}
	if caller.released.Load() {
		return false
	}
	r.mu.Lock()
	st := r.callers[caller.id]
	r.mu.Unlock()
	if st == nil {
		return !caller.dedicated
	}
	return !st.dedicated()
}

func (st *callerState) dedicated() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.caller.dedicated || st.level != ""
}

// release ends a caller: its dedicated upstream sessions close and its
// subscriptions, progress routes and level are forgotten. Unknown IDs are
// ignored.
func (r *Relay) release(id string) {
	r.mu.Lock()
	st := r.callers[id]
	delete(r.callers, id)
	if st != nil {
		st.caller.released.Store(true)
		r.releasing.Add(1) // under r.mu: Close's look at r.callers sees it or waits for it
		defer r.releasing.Done()
	}
	var unsub []string
	if st != nil {
		for tok, pr := range r.progress {
			if pr.st == st {
				delete(r.progress, tok)
			}
		}
		for uri, m := range r.subs {
			if _, ok := m[id]; ok {
				delete(m, id)
				if len(m) == 0 {
					delete(r.subs, uri)
					unsub = append(unsub, uri)
				}
			}
		}
	}
	r.mu.Unlock()
	if st == nil {
		return
	}
	st.mu.Lock()
	st.closed = true
	sessions := st.sessions
	st.sessions = map[*toolset.Upstream]*mcp.ClientSession{}
	st.subs = nil // they end with the sessions
	st.mu.Unlock()
	r.mu.Lock()
	for _, s := range sessions {
		delete(r.owners, s)
	}
	r.mu.Unlock()
	for u, s := range sessions {
		r.ups.Drop(s)
		_ = s.Close()
		r.free(u, st.held)
	}
	// The last subscriber of a URI on a shared session: unsubscribe
	// upstream, unless someone subscribed meanwhile (see subscribe).
	for _, uri := range unsub {
		u, _ := r.routeURI(uri)
		if u == nil {
			continue
		}
		mu := r.lock(u)
		mu.Lock()
		r.mu.Lock()
		again := len(r.subs[uri]) > 0
		r.mu.Unlock()
		if sess := u.Live(); sess != nil && !again && !r.closed() {
			if err := r.ups.Unsubscribe(r.life, sess, uri); err != nil {
				r.log.Debug("relay: unsubscribing upstream", "server", u.Name(), "err", err)
			}
		}
		mu.Unlock()
	}
}

// sessionFor returns the session a caller's request to u goes through: its
// dedicated one (created now if needed), else the shared one. A caller
// that a cap keeps from a session of its own (acquire) shares.
func (r *Relay) sessionFor(ctx context.Context, u *toolset.Upstream, st *callerState) (*mcp.ClientSession, bool, error) {
	return r.sessionOfCall(ctx, u, st, false)
}

// sessionOfCall is sessionFor; own asks for the caller's own session even
// when it has none so far (a call of a tool offered for a capability: the
// server's request must reach the caller).
func (r *Relay) sessionOfCall(ctx context.Context, u *toolset.Upstream, st *callerState, own bool) (*mcp.ClientSession, bool, error) {
	if st == nil || !own && !st.dedicated() {
		s, err := u.Session(ctx)
		return s, false, err
	}
	st.mu.Lock()
	s, own, fresh, err := r.dedicatedLocked(ctx, u, st)
	st.mu.Unlock()
	if s == nil && err == nil && !own {
		s, err = u.Session(ctx)
	}
	if fresh {
		r.adopt(ctx, u, st, s)
	}
	return s, own, err
}

// dedicatedLocked is sessionFor's part under st.mu: a nil session and
// error when a cap refused it; fresh when the session was made now.
func (r *Relay) dedicatedLocked(ctx context.Context, u *toolset.Upstream, st *callerState) (_ *mcp.ClientSession, own, fresh bool, _ error) {
	if st.closed {
		return nil, true, false, &toolset.Error{Code: toolset.CodeClosed, Server: u.Name(), Err: errors.New("the caller was released")}
	}
	if s := st.sessions[u]; s != nil {
		return s, true, false, nil
	}
	if why, ok := r.acquire(u, st); !ok {
		r.refused(u, st, why)
		return nil, false, false, nil
	}
	delete(st.capped, u)
	if st.client == nil {
		st.client = r.newDedicatedClient(st)
	}
	name := u.Name()
	s, err := u.Connect(ctx, st.client, func(method string, params json.RawMessage) { r.routeFrom(name, st, method, params) })
	if err != nil {
		r.free(u, st.held)
		return nil, true, false, err
	}
	if st.level != "" {
		if err := s.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: st.level}); err != nil {
			r.log.Debug("relay: setting the log level upstream", "server", u.Name(), "err", err)
		}
	}
	st.sessions[u] = s
	r.mu.Lock()
	r.owners[s] = st
	r.mu.Unlock()
	return s, true, true, nil
}

// serverOf returns the name of the server of st's own session s ("" when
// it is not one of st's).
func (r *Relay) serverOf(st *callerState, s *mcp.ClientSession) string {
	st.mu.Lock()
	defer st.mu.Unlock()
	for u, x := range st.sessions {
		if x == s {
			return u.Name()
		}
	}
	return ""
}

// dropDedicated forgets a lost dedicated session.
func (r *Relay) dropDedicated(u *toolset.Upstream, st *callerState, s *mcp.ClientSession) {
	st.mu.Lock()
	if st.sessions[u] == s {
		delete(st.sessions, u)
		r.free(u, st.held)
	}
	st.mu.Unlock()
	r.mu.Lock()
	delete(r.owners, s)
	r.mu.Unlock()
	r.ups.Drop(s)
	_ = s.Close()
}

// forward runs op on the caller's session to u, re-establishing a lost
// session once (the shared one through the drift checks).
func (r *Relay) forward(ctx context.Context, u *toolset.Upstream, st *callerState, op func(*mcp.ClientSession) error) error {
	if r.closed() {
		return &toolset.Error{Code: toolset.CodeClosed}
	}
	if st != nil {
		ctx = context.WithValue(ctx, callerCtxKey{}, st)
	}
	if err := u.Authorize(ctx); err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		sess, dedicated, err := r.sessionFor(ctx, u, st)
		if err != nil {
			return sessionErr(u, "", err)
		}
		err = op(sess)
		if err == nil || ctx.Err() != nil || attempt > 0 || !toolset.SessionLost(err) {
			return err
		}
		r.log.Info("relay: session lost; reconnecting once", "server", u.Name(), "dedicated", dedicated, "err", err)
		if dedicated {
			r.dropDedicated(u, st, sess)
			// The server may have restarted: the shared session re-lists
			// and judges its tools before anything else goes out.
			if shared := u.Live(); shared != nil {
				if perr := shared.Ping(ctx, nil); perr != nil && toolset.SessionLost(perr) {
					if _, rerr := u.Reconnect(ctx, shared); rerr != nil {
						return &toolset.Error{Code: toolset.CodeConnectionFailed, Server: u.Name(), Err: fmt.Errorf("reconnecting: %w", rerr)}
					}
				}
			}
			continue
		}
		if _, err := u.Reconnect(ctx, sess); err != nil {
			return &toolset.Error{Code: toolset.CodeConnectionFailed, Server: u.Name(), Err: fmt.Errorf("reconnecting: %w", err)}
		}
	}
}

// resubscribeTimeout bounds the renewal of a server's subscriptions.
const resubscribeTimeout = 10 * time.Second

// resubscribe renews the shared subscriptions of u on its new session
// (SessionHooks.Reconnected).
func (r *Relay) resubscribe(u *toolset.Upstream) {
	r.ups.Forget(u.Name(), u.Live())
	r.mu.Lock()
	var uris []string
	for uri := range r.subs {
		if m, _ := r.matchTemplateLocked(uri); r.uris[uri] == u || m == u {
			uris = append(uris, uri)
		}
	}
	r.mu.Unlock()
	sess := u.Live()
	if sess == nil || len(uris) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(r.life, resubscribeTimeout)
	defer cancel()
	for _, uri := range uris {
		if err := r.ups.Subscribe(ctx, sess, upsub.Target{Server: u.Name(), HTTP: u.Type() == "streamable-http"}, uri, false); err != nil {
			r.log.Debug("relay: subscribing again upstream", "server", u.Name(), "err", err)
		}
	}
}
